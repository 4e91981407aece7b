"""``medscope bench crosswalk``: the near-copy crosswalk's search (multi-index hashing) against
comparing every pair, and the rest of the driver-side plan, at institutional cohort sizes.

Each size runs in a fresh Python process, so that one process's peak is one size's peak
(``VmHWM``, pipelines/support/peak_memory.py). In it, on a hash-only synthetic cohort (no
pixels, so a million cases fit this machine):

- the search: ``hamming_search.pairs`` on n random 64-bit hashes, and, where affordable
  (``--all-pairs-up-to``, default 100,000), ``near_copies.candidate_arrays`` (every pair) on
  the same hashes, the two results compared array for array. Beyond that size every-pair is
  extrapolated from the largest measured size by n², and labelled so;
- the plan of ``views build`` (``views.plan.make_plan``: hash-close pairs confirmed by pixel
  correlation, patient and near-copy groups, splits, the ``near_copy_pairs`` table) on a cohort
  of the same size: random hashes, ~2 cases per patient (10 % without a patient id), 2 % of
  cases released as test, and 0.2 % planted near-copies (a copy of another case's picture, its
  hash 0-6 bits off) whose thumbnails correlate 1.0; other thumbnails are made on demand from a
  seed per picture, only for the hash-close pairs, as a staged cohort reads them from disk;
- the crosswalk's test protection (``near_copies.cases_to_move``) over the plan's copies;
- the tables written: ``near_copy_pairs.parquet``, a case -> split / group table and the cases to
  move (JSON).

Hashing itself (decode, dHash, 64 px thumbnail) needs pixels: it is measured per image on
synthetic PNGs in the bench process, and the cohort's hashing time derived from it.

``python -m pipelines.bench.crosswalk N [--all-pairs] [--equal-block K]`` prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping

import numpy as np

ALL_PAIRS_UP_TO = 100_000  # addition: every-pair above this takes minutes to hours here
COPY_SHARE = 0.002  # planted near-copies, share of the cohort
TEST_SHARE = 0.02  # cases released with a test split (protected)


class SyntheticHashes(Mapping):
    """case_id -> (dHash, 64 px thumbnail) of a hash-only cohort; a thumbnail is made when read,
    from a seed per picture (a planted copy shows its original's picture)."""

    def __init__(self, ids: list[str], hashes: np.ndarray, picture: np.ndarray) -> None:
        self._index = {c: k for k, c in enumerate(ids)}
        self._hash, self._picture = hashes, picture

    def hash_array(self, case_ids: list[str]) -> np.ndarray:
        """The hashes of ``case_ids``, without making a thumbnail (as ``HashStore.hash_array``).

        Parameters
        ----------
        case_ids : list of str
            Case ids of the cohort.

        Returns
        -------
        numpy.ndarray of uint64
            One hash per id.
        """
        return self._hash[np.array([self._index[c] for c in case_ids], np.int64)]

    def __getitem__(self, case_id: str) -> tuple[int, np.ndarray]:
        k = self._index[case_id]
        rng = np.random.default_rng(int(self._picture[k]))
        return int(self._hash[k]), rng.normal(128, 40, (64, 64)).astype(np.float32)

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def synthetic_cohort(n: int, seed: int = 0, equal: int = 0) -> tuple[list[dict], SyntheticHashes, int]:
    """A hash-only cohort of ``n`` cases (see the module docstring).

    Parameters
    ----------
    n : int
        Cases.
    seed : int, optional
        Seed of everything drawn.
    equal : int, optional
        The first ``equal`` cases show one picture with one hash (blank or templated images).

    Returns
    -------
    cases : list of dict
        Case rows without pixels, as ``make_plan`` reads them.
    hashes : SyntheticHashes
        case_id -> (hash, thumbnail).
    planted : int
        Planted near-copies (each a copy of a case that is not one).
    """
    rng = np.random.default_rng(seed)
    ids = [f"c{i:07d}" for i in range(n)]
    hashes = rng.integers(0, 2**64, n, dtype=np.uint64)
    picture = np.arange(n, dtype=np.int64)
    drawn = rng.permutation(n)
    copies = drawn[: int(n * COPY_SHARE)]
    # originals among the cases that are not copies: each planted pair stays a pair
    originals = drawn[len(copies):][rng.integers(0, n - len(copies), len(copies))] if len(copies) else copies
    for c, o in zip(copies.tolist(), originals.tolist()):
        flip = sum(1 << int(b) for b in rng.choice(64, int(rng.integers(0, 7)), replace=False))
        hashes[c], picture[c] = hashes[o] ^ np.uint64(flip), picture[o]
    hashes[:equal], picture[:equal] = hashes[0], picture[0]
    patient = rng.integers(0, max(1, n // 2), n)
    has_patient = rng.random(n) >= 0.10
    test = rng.random(n) < TEST_SHARE
    lesion = rng.random(n) < 0.3
    kinds = ("cxr", "ct", "mri")
    cases = [{"case_id": ids[i], "source": f"site{int(patient[i]) % 3}", "imaging_type": kinds[int(patient[i]) % 3],
              "patient_id": f"p{int(patient[i])}" if has_patient[i] else None, "split": "test" if test[i] else None,
              "has_lesion": bool(lesion[i])} for i in range(n)]
    return cases, SyntheticHashes(ids, hashes, picture), len(copies)


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, round(time.perf_counter() - w, 2), round(time.process_time() - c, 2)


def measure(n: int, all_pairs: bool) -> dict:
    """One size in this process: the search (and every-pair), the plan, protection, the tables.

    Parameters
    ----------
    n : int
        Cases.
    all_pairs : bool
        Also compare every pair (slow: n²/2 comparisons).

    Returns
    -------
    dict
        ``search`` and ``all_pairs`` (wall and CPU seconds, pairs; ``same_pairs``), ``plan``,
        ``to_move``, ``tables`` (seconds, counts, bytes) and ``memory`` (RSS and peak MB after
        each phase) and ``driver_peak_rss_mb``.
    """
    from medscope.qc import hamming_search, near_copies
    from medscope.views.plan import make_plan
    from medscope.views.recipe import Recipe
    from pipelines.support.peak_memory import memory_mb

    out: dict = {"cases": n, "memory": {"start": memory_mb()}}
    random_hashes = np.random.default_rng(1).integers(0, 2**64, n, dtype=np.uint64)
    found, wall, cpu = _timed(lambda: hamming_search.pairs(random_hashes, near_copies.MAX_BITS))
    out["search"] = {"wall_s": wall, "cpu_s": cpu, "pairs": len(found[0])}
    out["memory"]["search"] = memory_mb()

    cases, store, planted = synthetic_cohort(n)
    out["memory"]["cohort"] = memory_mb()
    (plan, report, pairs, _large), wall, cpu = _timed(lambda: make_plan(cases, store, Recipe(seed=0)))
    copies_mask = np.isin(np.asarray(pairs.column("tier").to_pylist()), near_copies.COPY_TIERS)
    out["plan"] = {"wall_s": wall, "cpu_s": cpu, "planted_copies": planted, "pairs_by_tier": report["pairs_by_tier"],
                   "groups": report["n_groups"], "split_counts": report["split_counts"],
                   "cross_cohort_pairs": len(report["cross_cohort_pairs"])}
    out["memory"]["plan"] = memory_mb()

    def protect():
        index = {c["case_id"]: k for k, c in enumerate(cases)}
        # the released splits, as the crosswalk verb sees sets: a test case protects its group
        files = [[{"label": c["case_id"], "set": c["source"], "split": c["split"], "source_file": None}] for c in cases]
        a, b = pairs.column("a").to_pylist(), pairs.column("b").to_pylist()
        copies = [(index[a[k]], index[b[k]]) for k in np.flatnonzero(copies_mask).tolist()]
        return near_copies.cases_to_move(files, copies, ("test",))

    to_move, wall, cpu = _timed(protect)
    out["to_move"] = {"wall_s": wall, "cpu_s": cpu, "cases": len(to_move)}
    out["memory"]["to_move"] = memory_mb()

    def write(folder: str) -> dict:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from medscope.io import records

        records.write_table("near_copy_pairs", pairs, os.path.join(folder, "near_copy_pairs.parquet"))
        ids = sorted(plan)
        pq.write_table(pa.table({"case_id": ids, "split": [plan[c]["split"] for c in ids],
                                 "group_id": [plan[c]["group_id"] for c in ids]}), os.path.join(folder, "splits.parquet"))
        with open(os.path.join(folder, "to_move.json"), "w") as fh:
            json.dump(to_move, fh)
        return {f: os.path.getsize(os.path.join(folder, f)) for f in sorted(os.listdir(folder))}

    with tempfile.TemporaryDirectory(prefix="medscope-bench-crosswalk-") as folder:
        sizes, wall, cpu = _timed(lambda: write(folder))
    out["tables"] = {"wall_s": wall, "cpu_s": cpu, "bytes": sizes, "pair_rows": pairs.num_rows}
    out["memory"]["tables"] = memory_mb()
    out["driver_peak_rss_mb"] = out["memory"]["tables"].get("peak")
    del plan, pairs, to_move, cases, store
    if all_pairs:  # after the peak is read: every-pair holds one 32 MB block besides its result
        want, wall, cpu = _timed(lambda: near_copies.candidate_arrays(random_hashes, near_copies.MAX_BITS))
        out["all_pairs"] = {"wall_s": wall, "cpu_s": cpu, "pairs": len(want[0]),
                            "same_pairs": all(np.array_equal(x, y) for x, y in zip(want, found))}
    return out


def measure_equal_block(n: int, k: int, block: int) -> dict:
    """A cohort of ``n`` random hashes of which ``k`` are one hash (blank or near-identical
    images): its k(k-1)/2 pairs streamed in blocks and counted, its groups found without
    any pair, and the views build's plan of such a cohort (the group over ``LARGE_GROUP``, not
    paired), in this process.

    Parameters
    ----------
    n : int
        Hashes.
    k : int
        Hashes that are equal.
    block : int
        Pairs per block.

    Returns
    -------
    dict
        ``pairs`` streamed, ``largest_block``, ``groups`` and ``largest_group``, seconds of each,
        ``held_if_listed_mb`` (what the pairs would take as arrays), ``plan`` (CPU seconds, pair
        rows, the large groups' sizes, their split) and ``driver_peak_rss_mb``.
    """
    from medscope.qc import hamming_search, near_copies
    from medscope.views.plan import make_plan
    from medscope.views.recipe import Recipe
    from pipelines.support.peak_memory import memory_mb

    h = np.random.default_rng(2).integers(0, 2**64, n, dtype=np.uint64)
    h[:k] = h[0]

    def stream():
        total, largest = 0, 0
        for i, _, _ in hamming_search.pair_blocks(h, near_copies.MAX_BITS, block):
            total, largest = total + len(i), max(largest, len(i))
        return total, largest

    (total, largest), wall_pairs, _ = _timed(stream)
    groups, wall_groups, _ = _timed(lambda: hamming_search.hash_groups(h, near_copies.MAX_BITS, block))
    sizes = np.bincount(groups)
    cases, store, _ = synthetic_cohort(n, equal=k)
    (_, report, pairs, large), _, plan_cpu = _timed(lambda: make_plan(cases, store, Recipe(seed=0)))
    plan = {"cpu_s": plan_cpu, "pair_rows": pairs.num_rows, "group_rows": large.num_rows,
            "large_group": near_copies.LARGE_GROUP,
            "large_groups": [g["cases"] for g in report["large_hash_groups"]],
            "splits": sorted({g["split"] for g in report["large_hash_groups"]})}
    return {"cases": n, "equal": k, "pairs": total, "largest_block": largest, "pairs_s": wall_pairs,
            "groups": len(sizes), "largest_group": int(sizes.max()), "groups_s": wall_groups,
            "held_if_listed_mb": round(total * 13 / 1e6, 1), "plan": plan, "driver_peak_rss_mb": memory_mb().get("peak")}


def hashing_per_image(side: int = 1024, images: int = 40) -> float:
    """CPU seconds to decode, dHash and thumbnail one ``side`` px grey PNG (smooth noise), the
    mean of ``images``: what staging does per case.

    Parameters
    ----------
    side : int, optional
        Image side in pixels.
    images : int, optional
        Images timed.

    Returns
    -------
    float
        Seconds per image.
    """
    import cv2

    from medscope.views.plan import hash_case

    rng = np.random.default_rng(3)
    pngs = [cv2.imencode(".png", cv2.GaussianBlur(rng.integers(0, 256, (side, side), dtype=np.uint8), (0, 0), 4))[1]
            .tobytes() for _ in range(images)]
    t = time.process_time()  # CPU: the shared machine's load stretches wall time, not this
    for p in pngs:
        hash_case(p)
    return (time.process_time() - t) / images


def _child(args: list[str]) -> dict:
    cmd = [sys.executable, "-m", "pipelines.bench.crosswalk", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode or not lines:
        raise RuntimeError(f"bench crosswalk {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(lines[-1])


def bench(args) -> list[dict]:
    """Run each size in a fresh process and print the search, the plan and the memory side by side.

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace
        Reads ``sizes`` (default 100,000 and 1,000,000; ``quick``: 10,000 and 40,000) and
        ``all_pairs_up_to`` (default 100,000; ``quick``: 40,000).

    Returns
    -------
    list of dict
        One row per size (:func:`measure`), then the equal-block row (:func:`measure_equal_block`).

    References
    ----------
    .. [1] counterfactual paper, §4.1 (the near-copy crosswalk)
    """
    quick = getattr(args, "quick", False)
    sizes = [int(s) for s in (getattr(args, "sizes", None) or ("10000,40000" if quick else "100000,1000000")).split(",")]
    up_to = getattr(args, "all_pairs_up_to", None) or (40_000 if quick else ALL_PAIRS_UP_TO)
    print(f"bench crosswalk: sizes {sizes}; every-pair measured up to {up_to:,} cases, extrapolated by n² beyond; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    for n in sorted(sizes):
        rows.append(_child([str(n)] + (["--all-pairs"] if n <= up_to else [])))
        print_search(rows[-1:], rows, header=len(rows) == 1)
    print()
    print_plan(rows, hashing_per_image())
    k = 5_000 if quick else 20_000
    block = _child(["100000", "--equal-block", str(k)])
    print(f"\none hash shared by {block['equal']:,} of {block['cases']:,} cases: {block['pairs']:,} pairs streamed in "
          f"{block['pairs_s']} s (wall), never more than {block['largest_block']:,} at once (listed: {block['held_if_listed_mb']} MB); "
          f"groups without pairs in {block['groups_s']} s: {block['groups']:,} groups, the largest {block['largest_group']:,}; "
          f"views plan of that cohort in {block['plan']['cpu_s']} CPU s: {block['plan']['pair_rows']:,} pair rows, "
          f"groups over {block['plan']['large_group']:,} cases not paired: {block['plan']['large_groups']} "
          f"({block['plan']['group_rows']:,} member rows, split {', '.join(block['plan']['splits'])}); "
          f"peak RSS {block['driver_peak_rss_mb']} MB")
    return rows + [block]


def _all_pairs_cpu(row: dict, rows: list[dict]) -> tuple[float | None, str]:
    if "all_pairs" in row:
        return row["all_pairs"]["cpu_s"], "measured"
    measured = [r for r in rows if "all_pairs" in r]
    if not measured:
        return None, "not run"
    ref = max(measured, key=lambda r: r["cases"])
    return ref["all_pairs"]["cpu_s"] * (row["cases"] / ref["cases"]) ** 2, f"extrapolated (n² from {ref['cases']:,})"


def _kb_per_case(row: dict) -> float:
    """Driver peak above the process's size before the cohort (imports), per case, in KB."""
    return (row["driver_peak_rss_mb"] - row["memory"]["start"].get("rss", 0)) * 1000 / row["cases"]


def print_search(new: list[dict], rows: list[dict], header: bool = True) -> None:
    """The search against every pair, one line per size.

    Parameters
    ----------
    new : list of dict
        The rows to print (:func:`measure`).
    rows : list of dict
        Every row so far (for the extrapolation).
    header : bool, optional
        Print the column header first.
    """
    if header:
        print(f"{'cases':>9} {'search CPU s':>12} {'wall s':>7} {'every-pair CPU s':>16} {'':<28} {'ratio':>7} "
              f"{'pairs (search)':>14} {'pairs (every)':>13} {'same':>5} {'peak MB':>8} {'KB/case':>8}")
    for r in new:
        ap, how = _all_pairs_cpu(r, rows)
        s = r["search"]
        ratio = f"{ap / s['cpu_s']:.{0 if ap >= 10 * s['cpu_s'] else 1}f}×" if ap and s["cpu_s"] else "—"
        every = r["all_pairs"]["pairs"] if "all_pairs" in r else "—"
        same = str(r["all_pairs"]["same_pairs"]) if "all_pairs" in r else "—"
        print(f"{r['cases']:>9,} {s['cpu_s']:>12} {s['wall_s']:>7} {ap if ap is None else round(ap, 1):>16} {how:<28} "
              f"{ratio:>7} {s['pairs']:>14,} {every:>13} {same:>5} {r['driver_peak_rss_mb']:>8} "
              f"{_kb_per_case(r):>8.2f}", flush=True)


def print_plan(rows: list[dict], hash_s: float) -> None:
    """The rest of the driver-side plan, one line per size, and the derived hashing time.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`measure`.
    hash_s : float
        Measured CPU seconds to hash one 1024 px image.
    """
    print(f"{'cases':>9} {'hash CPU s (derived)':>20} {'plan CPU s':>10} {'wall s':>7} {'to_move CPU s':>13} "
          f"{'tables CPU s':>12} {'tables MB':>9} "
          f"{'planted':>7} {'copy pairs':>10} {'all pairs':>9} {'groups':>8} {'to move':>7} {'peak MB':>8}")
    for r in rows:
        p, tiers = r["plan"], r["plan"]["pairs_by_tier"]
        copies = tiers.get("identical", 0) + tiers.get("near_copy", 0)
        print(f"{r['cases']:>9,} {hash_s * r['cases']:>20,.0f} {p['cpu_s']:>10} {p['wall_s']:>7} "
              f"{r['to_move']['cpu_s']:>13} {r['tables']['cpu_s']:>12} {sum(r['tables']['bytes'].values()) / 1e6:>9.1f} "
              f"{p['planted_copies']:>7,} "
              f"{copies:>10,} {r['tables']['pair_rows']:>9,} {p['groups']:>8,} {r['to_move']['cases']:>7,} "
              f"{r['driver_peak_rss_mb']:>8}")
    print("search: CPU seconds of this process (the machine is shared; wall beside it); ratio: every-pair / search "
          "CPU; KB/case: peak above the process's size after its imports, per case")
    print(f"hash (derived): {hash_s * 1000:.1f} CPU ms per 1024 px PNG (decode, dHash, 64 px thumbnail; measured here on "
          f"40 images) × cases, one core; plan: views.plan.make_plan (pairs confirmed, groups, splits, pair table); "
          f"peak: VmHWM of the size's own process")


def main(argv: list[str] | None = None) -> int:
    """Measure one size in this process and print it as one JSON line.

    Parameters
    ----------
    argv : list of str or None, optional
        ``N [--all-pairs] [--equal-block K]``; None reads ``sys.argv``.

    Returns
    -------
    int
        The exit status, 0.
    """
    p = argparse.ArgumentParser(prog="python -m pipelines.bench.crosswalk")
    p.add_argument("cases", type=int)
    p.add_argument("--all-pairs", action="store_true")
    p.add_argument("--equal-block", type=int, default=0)
    a = p.parse_args(argv)
    out = measure_equal_block(a.cases, a.equal_block, 1 << 20) if a.equal_block else measure(a.cases, a.all_pairs)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
