"""``medscope crosswalk``: the §4.1 near-copy crosswalk across cohorts and splits.

    medscope crosswalk --set main=views/main.parquet --set fresh_external=views/fresh.parquet \
        --set train=cases/train.parquet --out crosswalk.json [--by-split]

Each ``--set NAME=URI`` is a cases table (every image is unedited) or a views table (its
original and natural-negative views); ``--by-split`` splits each set by its ``split`` column.
The logic is ``medscope.qc.crosswalk.crosswalk_sets``.
"""

from __future__ import annotations

import json

from medscope import records, storage
from medscope.errors import MedScopeError
from medscope.qc import crosswalk

UNEDITED_KINDS = ("original", "natural_negative")


def unedited_images(uri: str, by_split: bool = False) -> dict[str, list[tuple[str, bytes]]]:
    """(id, PNG) of every unedited image in a cases or views table, keyed by split when asked."""
    try:
        table = records.read_table("views", uri, columns=["case_id", "kind", "split", "image"])
        is_views = True
    except MedScopeError:  # not a views table: a cases table, where every image is unedited
        table = records.read_table("cases", uri, columns=["case_id", "split", "image"])
        is_views = False
    out: dict[str, list[tuple[str, bytes]]] = {}
    for r in table.to_pylist():
        if (is_views and r["kind"] not in UNEDITED_KINDS) or not r["image"]:
            continue
        out.setdefault((r["split"] or "all") if by_split else "", []).append((r["case_id"], r["image"]))
    return out


def run(sets: list[str], out: str | None, by_split: bool = False) -> dict:
    named: dict[str, list[tuple[str, bytes]]] = {}
    for spec in sets:
        name, _, uri = spec.partition("=")
        if not name or not uri:
            raise MedScopeError(f"--set {spec!r}: use NAME=URI")
        for split, items in unedited_images(uri, by_split).items():
            named[f"{name}/{split}" if split else name] = items
    report = crosswalk.crosswalk_sets(named)
    if out:
        storage.write_text(out, json.dumps(report, indent=2) + "\n")
    return report


def register(sub) -> None:
    p = sub.add_parser("crosswalk", help="near-copy crosswalk across cohorts and splits (seed 000 §4.1)")
    p.add_argument("--set", action="append", required=True, help="NAME=URI of a cases or views table (repeat)")
    p.add_argument("--by-split", action="store_true", help="treat each split of each table as its own set")
    p.add_argument("--out", help="write the full report here (JSON)")

    def go(a):
        rep = run(a.set, a.out, a.by_split)
        print(f"{rep['files']} distinct image files in {len(rep['images'])} sets; pairs by tier {rep['pairs_by_tier']}")
        print(f"{len(rep['cross_set_copies'])} copies across sets (same image, correlation >= "
              f"{rep['thresholds']['same_image_corr']}); {len(rep['cross_set_shared_anatomy'])} shared-anatomy pairs "
              f"(0.90-0.97, not copies); {len(rep['same_file_in_several_sets'])} identical files in several sets")
        for j in rep["cross_set_copies"]:
            print(f"  {j['a']} ~ {j['b']}: distance {j['distance']}, correlation {j['correlation']:.3f}")

    p.set_defaults(func=go)
