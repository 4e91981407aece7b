"""The tables and files this protocol and ``medscope pairs`` write: a pair set's from ``medscope.io.layout``
(``medscope pairs`` writes it), a scored run's own files declared here, beside the shared ones."""

from __future__ import annotations

from medscope.io import layout

# A pair set (what ``medscope pairs build`` and the embedded generator write)
MANIFEST = layout.PairSet.MANIFEST
MANIFEST_REJECTS = layout.PairSet.MANIFEST_REJECTS

# A scored run (what ``PairedModalityProtocol.score`` writes)
LABELS = "labels.parquet"  # one row per episode: extracted findings, FP / FN per judge
METRICS = "metrics.parquet"  # records "metrics" schema: rates with Clopper-Pearson intervals
MCNEMAR = "mcnemar.parquet"  # exact McNemar, photo only vs paired, per model and pooled
AGREEMENT = "agreement.json"  # Cohen's kappa between judges, when a second judge is configured
RUN = "run.json"
REJECTS = "rejects.parquet"
JUDGE_CACHE = "judge_cache"  # one JSON file per judge request key

# Construction (``medscope pairs generate | review | build``)
CANDIDATES = layout.PairSet.CANDIDATES  # folder of candidate PNGs
REVIEW = layout.PairSet.REVIEW  # the file a person edits: approve / reject / retry + feedback

# the shared names must agree with the layout's scored run
assert layout.ScoredRun("r").metrics.endswith(METRICS) and layout.ScoredRun("r").manifest.endswith(RUN)
assert layout.ScoredRun("r").rejects.endswith(REJECTS)
