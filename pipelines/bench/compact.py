"""``medscope bench compact``: listing and reading 10,000 write-once parts vs the compacted files,
on a loopback S3 server (moto), side by side in one run.

An eval run's episodes folder is filled with N one-episode parts (real episodes rows); then the
finished keys are listed (what a resumed sweep does), and the whole table is read (what
``score`` does), before and after ``medscope compact``. S3 requests are counted at the client
(botocore's ``before-send`` event: every HTTP request s3fs sends), not derived.
"""

from __future__ import annotations

import os
import time


class _Counter:
    """Counts the HTTP requests an s3fs filesystem sends, by operation."""

    def __init__(self, fs):
        fs.connect() if getattr(fs, "_s3", None) is None else None
        self.by_op: dict[str, int] = {}
        fs.s3.meta.events.register("before-send.s3.*", self._hit)

    def _hit(self, request, **kw):
        op = kw.get("event_name", "before-send.s3.?").rsplit(".", 1)[-1]
        self.by_op[op] = self.by_op.get(op, 0) + 1

    def take(self) -> dict[str, int]:
        out, self.by_op = dict(self.by_op), {}
        return out


def _rows(n: int) -> list[bytes]:
    """N one-row episode parts (Parquet bytes), keyed like a sweep's."""
    from medscope.io import records
    from medscope.testing import synthetic_runs as synthetic

    v = synthetic.views(4, 4, 1, seed=0)
    template = synthetic.episodes(v, synthetic.model_zoo(1), seed=0).to_pylist()
    out = []
    for i in range(n):
        row = dict(template[i % len(template)])
        # a reply of ~300 characters that does not compress to nothing
        row.update(request_key=f"bench-{i:06d}", item_id=f"{row['item_id']}#{i}",
                   raw_text=f"<final>{row['action']}</final> unit {i} " + os.urandom(150).hex())
        out.append(records.to_parquet_bytes(records.to_table("episodes", [row])))
    return out


def bench_compact(args) -> dict:
    """Write N one-episode parts to a loopback S3 folder, list and read them, compact, and list
    and read again; print the side-by-side table.

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace
        The ``medscope bench`` settings (:class:`pipelines.bench.BenchConfig`, or a namespace of its fields);
        reads ``parts`` if present (number of parts) and ``quick`` (1,000 parts instead of 10,000).

    Returns
    -------
    dict
        ``parts``, ``part_bytes``, ``write_parts_s``, ``compact_s``, ``compact_requests`` (S3 requests by
        operation), ``compacted_files``, ``compacted_bytes``, ``before`` / ``after`` (list and read seconds,
        S3 requests and objects in the folder) and ``same_rows_and_keys`` (bool).
    """
    from medscope.io import parts, records, storage
    from medscope.seeding import stable_hash

    n = getattr(args, "parts", None) or (1_000 if getattr(args, "quick", False) else 10_000)
    from pipelines.bench.loopback_s3 import loopback_s3

    with loopback_s3("medscope-bench"):
        folder = "s3://medscope-bench/eval/episodes"
        fs, path = storage.filesystem(folder)
        blobs = _rows(n)
        t0 = time.perf_counter()
        for start in range(0, n, 500):  # concurrent PUTs, 500 at a time (setup, not measured)
            fs.pipe({f"{path}/part-{stable_hash('bench', i, length=24)}.parquet": blobs[i]
                     for i in range(start, min(n, start + 500))})
        t_write = time.perf_counter() - t0
        part_bytes = sum(len(b) for b in blobs)
        counter = _Counter(fs)

        def measure():
            out = {}
            t = time.perf_counter()
            keys = records.part_keys(folder)
            out["list_s"], out["list_ops"] = time.perf_counter() - t, counter.take()
            out["list_requests"] = sum(out["list_ops"].values())
            t = time.perf_counter()
            table = records.read_table("episodes", folder)
            out["read_s"], out["read_ops"] = time.perf_counter() - t, counter.take()
            out["read_requests"] = sum(out["read_ops"].values())
            out["objects"] = len(storage.list_files(folder))
            counter.take()
            return out, keys, table

        before, keys_before, table_before = measure()
        t = time.perf_counter()
        res = parts.compact_folder(folder)
        t_compact = time.perf_counter() - t
        compact_requests = counter.take()
        after, keys_after, table_after = measure()
        same = keys_before == keys_after and table_before.sort_by("request_key").equals(table_after.sort_by("request_key"))
        compacted_bytes = sum(e["bytes"] for e in parts.manifest(folder)["files"])
    result = {
        "parts": n, "part_bytes": part_bytes, "write_parts_s": round(t_write, 1),
        "compact_s": round(t_compact, 1), "compact_requests": compact_requests,
        "compacted_files": res["compacted_files"], "compacted_bytes": compacted_bytes,
        "before": {k: round(v, 3) if isinstance(v, float) else v for k, v in before.items()},
        "after": {k: round(v, 3) if isinstance(v, float) else v for k, v in after.items()},
        "same_rows_and_keys": same,
    }
    rows = [("objects in the folder", before["objects"], after["objects"]),
            ("list finished keys: s", f"{before['list_s']:.3f}", f"{after['list_s']:.3f}"),
            ("list finished keys: S3 requests", before["list_requests"], after["list_requests"]),
            ("read the table: s", f"{before['read_s']:.2f}", f"{after['read_s']:.3f}"),
            ("read the table: S3 requests", before["read_requests"], after["read_requests"])]
    print(f"compact bench: {n} one-episode parts ({part_bytes / 2**20:.1f} MB) on a loopback S3 server (moto)")
    print(f"  {'':34s} {'parts':>10s} {'compacted':>10s} {'ratio':>8s}")
    for label, a, b in rows:
        ratio = float(a) / float(b) if float(b) else float("inf")
        print(f"  {label:34s} {a!s:>10s} {b!s:>10s} {ratio:>7.1f}x")
    print(f"  compaction: {t_compact:.1f} s, {res['compacted_files']} file(s) of {compacted_bytes / 2**20:.2f} MB, "
          f"requests {compact_requests}")
    print(f"  requests by operation, parts: list {before['list_ops']}, read {before['read_ops']}")
    print(f"  requests by operation, compacted: list {after['list_ops']}, read {after['read_ops']}")
    print(f"  same rows and finished keys after compaction: {same}")
    return result
