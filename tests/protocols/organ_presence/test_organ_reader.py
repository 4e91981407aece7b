"""The demo probe's pixel organ reader: fitted on train volumes, reads the image."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from medscope.io import records
from medscope.images import encode_png
from medscope.models.base import Decoding, Message, Part
from medscope.models.organ_reader import OrganReader, balanced_threshold, fit_centroid_rule, save_reader
from medscope.protocols.organ_presence.replies import FORMAT_INSTRUCTIONS, probe_prompt, read_reply


def test_balanced_threshold_worked_by_hand():
    # sorted scores 0.1 .35 .4 .8 -> candidates -0.9 .225 .375 .6 1.8; at .375 both classes are right
    t, bacc = balanced_threshold(np.array([0.1, 0.4, 0.35, 0.8]), np.array([False, True, False, True]))
    assert t == pytest.approx(0.375) and bacc == 1.0
    # no separating cut: the best is 3 of 4 right on each side's average (0.75)
    t, bacc = balanced_threshold(np.array([0.1, 0.4, 0.5, 0.8]), np.array([False, True, False, True]))
    assert bacc == pytest.approx(0.75)


def test_centroid_rule_worked_by_hand():
    x = np.array([[1, 0], [1, 0.2], [0, 1], [0.2, 1]])
    rule = fit_centroid_rule(x, np.array([True, True, False, False]))
    # present mean (1, .1), absent mean (.1, 1): w = (.9, -.9), midpoint (.55, .55) -> bias 0
    assert rule["weights"] == pytest.approx([0.9, -0.9]) and rule["bias"] == pytest.approx(0.0)
    assert rule["threshold"] == pytest.approx(0.0) and rule["train_balanced_accuracy"] == 1.0


def _reply(reader: OrganReader, image: np.ndarray | None, organ: str, fmt: str) -> str:
    prompt = probe_prompt(f"Is the {organ} visible in this axial CT slice?", fmt)
    parts = ((Part(png=encode_png(image)),) if image is not None else ()) + (Part(text=prompt),)
    text = reader.complete([Message("user", parts)], Decoding()).text
    return read_reply(text, fmt, [], organ=organ).verdict


def test_reader_answers_from_the_pixels_in_every_format(tmp_path):
    # a 2x2 grid: "kidney" is bright top-left, "left kidney" bright bottom-right
    art = {"kind": "organ_reader", "grid": 2, "skipped": [], "slices": 4, "organs": {
        "kidney": {"weights": [1, 0, 0, 0], "bias": 0.0, "threshold": 0.5},
        "left kidney": {"weights": [0, 0, 0, 1], "bias": 0.0, "threshold": 0.5}}}
    uri = str(tmp_path / "reader.json")
    save_reader(art, uri)
    reader = OrganReader(weights=uri)
    assert reader.organ_of("Is the left kidney visible?") == "left kidney"  # the longest name wins
    top_left = np.zeros((8, 8, 3), np.uint8)
    top_left[:4, :4] = 255
    for fmt in FORMAT_INSTRUCTIONS:
        assert _reply(reader, top_left, "kidney", fmt) == "present"
        assert _reply(reader, top_left, "left kidney", fmt) == "absent"
        assert _reply(reader, top_left[::-1, ::-1].copy(), "left kidney", fmt) == "present"
    assert _reply(reader, None, "kidney", "verdict_json") == "not_addressed"  # no image: declines
    assert _reply(reader, top_left, "spleen", "verdict_json") == "not_addressed"  # not fitted on it


@pytest.mark.slow
def test_demo_probe_step_has_no_failed_unit_and_a_reader_that_reads(ray_cluster, tmp_path):
    from medscope.volumes.synthetic_ct import write_synthetic_volumes
    from pipelines.demo import DemoContext, step_probe_build, step_probe_evaluate

    ctx = DemoContext(out=str(tmp_path / "demo"))
    ctx.paths["volumes"] = write_synthetic_volumes(str(tmp_path / "vols"), 4, shape=(48, 48, 24))
    step_probe_build(ctx)
    step_probe_evaluate(ctx)
    acc = json.loads((tmp_path / "demo" / "probe" / "eval" / "sweep.json").read_text())["accounting"]
    assert acc["failed"] == 0 and acc["refused"] == 0 and acc["done"] > 0
    items = {r["item_id"]: r for r in records.read_table("probe_items", ctx.uri("probe", "eval_items.parquet")).to_pylist()}
    assert {i["case_id"] for i in items.values()} == {"syn-0002", "syn-0003"}  # the held-out half only
    rows = records.read_table("episodes", ctx.uri("probe", "eval", "episodes")).to_pylist()
    sighted = [(items[r["item_id"]]["truth"], r["answer"]) for r in rows
               if r["model"] == "organ-reader" and r["condition"] == "verdict_json"]
    got = Counter(sighted)
    # non-constant, and better than either constant policy on both classes' hit rates together
    assert got[("present", "present")] > 0 and got[("absent", "absent")] > 0
    n_present = sum(1 for t, _ in sighted if t == "present")
    n_absent = len(sighted) - n_present
    balanced = 0.5 * (got[("present", "present")] / n_present + got[("absent", "absent")] / n_absent)
    assert balanced > 0.5, got
    assert any("Organ reader" in title for title, _ in ctx.report_sections)
