"""The file names this protocol and ``medscope pairs`` write; ``medscope.layout`` owns them."""

from __future__ import annotations

from medscope import layout

# A pair set (what ``medscope pairs build`` and the embedded generator write)
MANIFEST = layout.PairSet.MANIFEST
MANIFEST_REJECTS = layout.PairSet.MANIFEST_REJECTS

# A scored run (what ``PairedModalityProtocol.score`` writes)
LABELS = layout.PairedScoredRun.LABELS  # one row per episode: extracted findings, FP / FN per judge
METRICS = "metrics.parquet"  # records "metrics" schema: rates with Clopper-Pearson intervals
MCNEMAR = layout.PairedScoredRun.MCNEMAR  # exact McNemar, photo only vs paired, per model and pooled
AGREEMENT = layout.PairedScoredRun.AGREEMENT  # Cohen's kappa between judges, when a second judge is configured
RUN = "run.json"
REJECTS = "rejects.parquet"
JUDGE_CACHE = layout.PairedScoredRun.JUDGE_CACHE  # one JSON file per judge request key

# Construction (``medscope pairs generate | review | build``)
CANDIDATES = layout.PairSet.CANDIDATES  # folder of candidate PNGs
REVIEW = layout.PairSet.REVIEW  # the file a person edits: approve / reject / retry + feedback

# the shared names must agree with the layout's scored run
assert layout.ScoredRun("r").metrics.endswith(METRICS) and layout.ScoredRun("r").manifest.endswith(RUN)
assert layout.ScoredRun("r").rejects.endswith(REJECTS)
