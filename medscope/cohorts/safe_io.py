"""The guarded reader moved to :mod:`medscope.safe_io` (below both the cohort loaders and
``medscope.volumes``, which reads NIfTI through it); this name stays an alias for old imports."""

import sys

from medscope import safe_io as _safe_io

sys.modules[__name__] = _safe_io
