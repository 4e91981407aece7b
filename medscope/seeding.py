"""Seeds derived from content, never from worker order (docs/design.md, "Reproducible under any
partitioning").

Every random choice -- placement, degradation, jitter, sampling -- takes its generator from
``rng_for(run_seed, case_id, view_kind, ...)``, so one config gives identical tables on one
worker or a hundred.
"""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(run_seed: int, *keys: object) -> int:
    """A 63-bit seed from the run seed and any number of keys (stable across processes)."""
    text = "\x1f".join([str(int(run_seed)), *(str(k) for k in keys)])
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def rng_for(run_seed: int, *keys: object) -> np.random.Generator:
    """A numpy Generator seeded by :func:`derive_seed`."""
    return np.random.default_rng(derive_seed(run_seed, *keys))


def stable_hash(*parts: object, length: int = 16) -> str:
    """A short hex digest of the parts, for ids and deterministic keys."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=length // 2).hexdigest()
