"""Shared set-up of the reader-study tests: a small real views build and scripted readers.

The scripted answers are laid out per image kind, 4 images each (in the key's order of opaque
names), so every figure the analysis reports can be worked out by hand (see test_reader_*.py).
"""

from __future__ import annotations

import json

from medscope.io import records
from medscope.views.recipe import Recipe
from medscope.views.synthetic_cases import synthetic_cases
from pipelines.views import build_views

# per kind: (edit ratings 1-4, clinical answers); kinds in the order lesion, lesion_free, erased, control
RATING = ("definitely_real", "probably_real", "probably_edited", "definitely_edited")
READER_A = {
    "lesion": ([1, 2, 2, 3], ["yes", "yes", "yes", "cannot_tell"]),
    "lesion_free": ([1, 1, 2, 4], ["no", "no", "no", "yes"]),
    "erased": ([4, 3, 2, 1], ["no", "yes", "no", "no"]),
    "control": ([3, 3, 1, 2], ["yes", "yes", "no", "yes"]),
}
READER_B = {
    "lesion": ([1, 1, 3, 3], ["yes", "yes", "no", "yes"]),
    "lesion_free": ([2, 1, 1, 1], ["no", "no", "cannot_tell", "no"]),
    "erased": ([3, 4, 2, 2], ["yes", "yes", "no", "no"]),
    "control": ([4, 2, 1, 3], ["yes", "yes", "yes", "no"]),
}


def build_small_views(root, n_cases: int = 48, seed: int = 3) -> str:
    """A real (local-engine) views build of synthetic cases from two sources, most of them in
    the test split; returns the views folder."""
    rows = synthetic_cases(n_cases, seed=seed, size=64)
    for i, r in enumerate(rows):
        r["source"] = ("alpha", "beta")[i % 2]
        r["split"] = None
    cases = str(root / "cases.parquet")
    records.write_table("cases", rows, cases)
    recipe = Recipe(seed=1, tools=["telea"], edit_detector=False, insertion=False, degradations=["blur"],
                    unmatched_control=False, split_fractions={"train": 0.1, "validation": 0.1, "test": 0.8})
    out = str(root / "views")
    build_views(cases, out, recipe, engine="local", quiet=True)
    return out


def scripted(key: dict, script: dict) -> dict[str, tuple[str, str]]:
    """image -> (edit rating, clinical answer) for the first 4 images of each kind."""
    out = {}
    for kind, (ratings, clinical) in script.items():
        images = sorted(i["image"] for i in key["items"] if i["reader_kind"] == kind)[:4]
        for img, r, c in zip(images, ratings, clinical):
            out[img] = (RATING[r - 1], c)
    return out


def answer_file(key: dict, reader: str, answers: dict[str, tuple[str, str]], **extra) -> str:
    """An answer file in the page's format (what the page's download writes)."""
    doc = {"format": "medscope-reader-answers", "version": 1, "pack_hash": key["pack_hash"], "pack_name": key["name"],
           "reader": {"id": reader, "specialty": "Radiology", "years_experience": 7},
           "saved_at": "2026-11-30T20:00:00Z", "complete": True, "order": sorted(answers),
           "answers": [{"image": i, "edit": e, "clinical": c, "answered_at": "2026-11-30T20:00:00Z"}
                       for i, (e, c) in sorted(answers.items())]}
    doc.update(extra)
    return json.dumps(doc)
