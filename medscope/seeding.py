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
    """A 63-bit seed from the run seed and any number of keys (stable across processes).

    Parameters
    ----------
    run_seed : int
        The run's seed (converted with ``int``).
    *keys : object
        Any number of keys (case id, view kind, ...), each taken by its ``str``.

    Returns
    -------
    int
        A non-negative seed below ``2**63``: the big-endian BLAKE2b digest (8 bytes) of the run seed and
        keys joined by the unit separator (U+001F), shifted right by one bit.
    """
    text = "\x1f".join([str(int(run_seed)), *(str(k) for k in keys)])
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def rng_for(run_seed: int, *keys: object) -> np.random.Generator:
    """A numpy Generator seeded by :func:`derive_seed`.

    Parameters
    ----------
    run_seed : int
        The run's seed.
    *keys : object
        Keys passed on to :func:`derive_seed`.

    Returns
    -------
    numpy.random.Generator
        ``np.random.default_rng(derive_seed(run_seed, *keys))``.
    """
    return np.random.default_rng(derive_seed(run_seed, *keys))


def stable_hash(*parts: object, length: int = 16) -> str:
    """A short hex digest of the parts, for ids and deterministic keys.

    Parameters
    ----------
    *parts : object
        Any number of parts, each taken by its ``str``; joined by the unit separator (U+001F).
    length : int, optional
        Number of hex characters wanted (even; the BLAKE2b digest has ``length // 2`` bytes). Default 16.

    Returns
    -------
    str
        The lowercase hex digest, ``length`` characters long.
    """
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=length // 2).hexdigest()
