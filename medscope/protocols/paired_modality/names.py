"""Every file name this protocol and ``medscope pairs`` write, in one place (until
``medscope.layout`` owns them): move these constants there and nothing else changes."""

from __future__ import annotations

# A pair set (what ``medscope pairs build`` and the embedded generator write)
MANIFEST = "manifest.yaml"
MANIFEST_REJECTS = "manifest_rejects.parquet"

# A scored run (what ``PairedModalityProtocol.score`` writes)
LABELS = "labels.parquet"  # one row per episode: extracted findings, FP / FN per judge
METRICS = "metrics.parquet"  # records "metrics" schema: rates with Clopper-Pearson intervals
MCNEMAR = "mcnemar.parquet"  # exact McNemar, photo only vs paired, per model and pooled
AGREEMENT = "agreement.json"  # Cohen's kappa between judges, when a second judge is configured
RUN = "run.json"
REJECTS = "rejects.parquet"
JUDGE_CACHE = "judge_cache"  # one JSON file per judge request key

# Construction (``medscope pairs generate | review | build``)
CANDIDATES = "candidates"  # folder of candidate PNGs
REVIEW = "review.yaml"  # the file a person edits: approve / reject / retry + feedback
