"""The probe build on a real local Ray cluster, bad inputs as rejects, show, and score end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from medscope.io import records
from medscope.models.base import Decoding
from medscope.volumes.config import ProbeConfig
from medscope.protocols.organ_presence.protocol import OrganPresenceProtocol
from tests.fixtures.probe_volumes import hand_labels, write_pair
from tests.protocols.organ_presence.test_scoring import Scripted
from tests.conftest import REPO_ROOT

REPO = REPO_ROOT


def _cohort(tmp):
    good = write_pair(tmp, "good")
    # a second good volume, shifted by two slices, so the cohort statistics pool two volumes
    lab = np.roll(hand_labels(), 2, axis=2)
    good2 = write_pair(tmp, "good2", labels=lab)
    trunc = write_pair(tmp, "trunc")
    with open(trunc["image_uri"], "rb") as fh:
        data = fh.read()
    with open(trunc["image_uri"], "wb") as fh:
        fh.write(data[: len(data) // 3])
    shape = write_pair(tmp, "shape", image=np.zeros((20, 20, 8), np.float32))
    nan_img = np.zeros((20, 20, 10), np.float32)
    nan_img[0, 0, 0] = np.nan
    nan = write_pair(tmp, "nan", image=nan_img)
    unmapped = write_pair(tmp, "unmapped", organ_map={1: "liver", 2: "spleen", 3: "aorta"})
    missing = dict(good, case_id="missing", image_uri=os.path.join(tmp, "nope.nii.gz"))
    rows = [good, good2, trunc, shape, nan, unmapped, missing]
    uri = os.path.join(tmp, "volumes.parquet")
    records.write_table("volumes", rows, uri)
    return uri


def test_build_rejects_resume_show_and_score(ray_cluster, tmp_path, monkeypatch):
    import pipelines.probe
    from pipelines.probe import build, show
    from pipelines.score import score

    vols = _cohort(str(tmp_path / "in"))
    out = str(tmp_path / "out")
    cfg = ProbeConfig(slices_per_volume=10, transition_mm=0.0, vessels=["aorta"], renders=["gray", "triple"],
                      max_image_side=64, bootstrap_b=200, workers=2, montage=True)
    s = build(vols, out, cfg, progress=False)
    assert s["volumes"] == 7 and s["volumes_used"] == 2
    rej = records.read_table("rejects", os.path.join(out, "rejects.parquet")).to_pylist()
    by_case = {}
    for r in rej:
        by_case.setdefault(r["item_id"], set()).add(r["reason"])
    assert by_case == {
        "trunc": {"corrupt_nifti"}, "shape": {"shape_mismatch"}, "nan": {"nan_voxels"},
        "unmapped": {"unmapped_label"}, "missing": {"unreadable"},
        "good": {"organ_never_present"}, "good2": {"organ_never_present"},  # pancreas: noted, volume kept
    }
    slices = records.read_table("slices", os.path.join(out, "slices.parquet")).to_pylist()
    assert len(slices) == 20
    liver0 = [r for r in slices if r["case_id"] == "good"]
    assert [d["voxels"] for r in liver0 for d in r["organ_voxels"] if d["organ"] == "liver"] == [
        0, 10, 60, 60, 60, 60, 60, 3, 0, 0]
    stats = json.loads(open(os.path.join(out, "cohort_stats.json")).read())
    assert stats["slices"]["liver"] == 20 and stats["joint"]["liver"]["liver"] == 10  # two volumes pooled

    items = records.read_table("probe_items", s["probe_items"]).to_pylist()
    assert s["items_written"] == len(items) > 0
    # the run record states how items were drawn (POPE's positives-per-image balance included)
    assert s["sampling"] == {"slices_per_volume": 10, "positives_per_slice": 2, "negatives_per_slice": 2,
                             "strategies": ["random", "popular", "adversarial"], "adversarial_excludes_vessels": ["aorta"]}
    assert json.loads(open(os.path.join(out, "recipe.json")).read())["sampling"] == s["sampling"]
    gray = [i for i in items if i["render"] == "gray"]
    assert len(gray) * 2 == len(items)  # same items for both renders
    assert {(i["case_id"], i["z"], i["organ"], i["strategy"]) for i in gray} == {
        (i["case_id"], i["z"], i["organ"], i["strategy"]) for i in items if i["render"] == "triple"}
    it = next(i for i in gray if i["case_id"] == "good" and i["z"] == 7 and i["organ"] == "spleen")
    assert it["truth"] == "absent" and it["z_distance_mm"] == 10.0
    shifted = next(i for i in gray if i["case_id"] == "good2" and i["organ"] == "liver" and i["z"] == 9)
    assert shifted["z_distance_mm"] == 5.0  # rolled by two slices: liver now z4..z8
    assert all(i["absent_from_volume"] for i in items if i["organ"] == "pancreas")
    from medscope.images import decode_png

    img = decode_png(it["image"])
    assert img.shape == (20, 20, 3)  # 20x20 slices are never upscaled past their size

    from medscope.volumes.build import part_key

    montage = decode_png(open(os.path.join(out, "montages", part_key("good") + ".png"), "rb").read())
    assert montage.shape == (240, 240, 3)  # 12 x 12 tiles of 20 x 20

    # one worker gives the same items as two (seeds from content, never from worker order)
    one = build(vols, str(tmp_path / "one"), cfg.model_copy(update={"workers": 1, "montage": False}), progress=False)
    assert records.read_table("probe_items", one["probe_items"]).to_pylist() == items
    assert s["volumes_per_block"] == one["volumes_per_block"] == 1  # 7 volumes: a block each
    # two workers on the session's two CPUs: one more block each is queued in Ray (task_pool),
    # and Ray still runs no more volumes at once than there are workers
    assert (s["tasks_in_flight"], one["tasks_in_flight"]) == (4, 1)
    assert {t["most_at_once"] for t in s["timing"].values()} <= {1, 2}
    assert {t["most_at_once"] for t in one["timing"].values()} == {1}
    # all seven volumes, good and bad, in one Ray Data block: the same items, slices and rejects
    monkeypatch.setattr(pipelines.probe, "BLOCKS_PER_WORKER", 1)
    block = build(vols, str(tmp_path / "block"), cfg.model_copy(update={"workers": 1, "montage": False}),
                  progress=False)
    assert block["volumes_per_block"] == 7 and block["volumes_used"] == 2
    assert records.read_table("probe_items", block["probe_items"]).to_pylist() == items
    for name in ("slices", "rejects"):
        assert (records.read_table(name, str(tmp_path / "block" / f"{name}.parquet")).to_pylist()
                == records.read_table(name, os.path.join(out, f"{name}.parquet")).to_pylist())

    # resume: a rerun writes nothing new and leaves the items byte-identical
    s2 = build(vols, out, cfg, progress=False)
    assert s2["volumes_resumed"] == 2 and s2["items_written"] == 0
    assert records.read_table("probe_items", s["probe_items"]).to_pylist() == items

    shown = show(out)
    assert shown["items"] == len(items) and os.path.getsize(shown["heatmap"]) > 1000
    assert sum(v for k, v in shown["by_strategy"].items()) == len(items)

    # evaluation through the protocol with an always-"present" and a truthful scripted model
    proto = OrganPresenceProtocol(OrganPresenceProtocol.Options(
        probe_config=ProbeConfig(image_modes=["image", "no_image"], renders=["gray"])))
    pitems = [i for i in proto.load_items(s["probe_items"]) if i.meta["render"] == "gray"]
    yes = Scripted("yes-man", lambda t, im: "Yes, it is visible.")
    oracle_by_image = {(i.question, i.images[0]): i.truth for i in pitems}

    def oracle(t, im):
        q = t.split("?")[0] + "?"
        if not im:
            return "I cannot tell without an image."
        return "Yes, it is visible." if oracle_by_image[(q, im[0])] == "present" else "No, it is not visible."

    rows = []
    for model in (yes, Scripted("oracle", oracle)):
        for cond in proto.conditions()[:1] + ("free_text+no_image",):
            for item in pitems:
                r = proto.run_episode(item, model, cond, Decoding())
                rows.append({"run_id": "r", "protocol": proto.name, "model": model.name, "condition": cond,
                             "item_id": item.item_id, "case_id": item.case_id, "request_key": "k",
                             "prompt_version": proto.prompt_version, "decoding": Decoding().key(),
                             "turns": r.turns, "raw_text": r.raw_text, "action": r.action, "answer": r.answer,
                             "claims_finding": r.claims_finding, "box": None, "confidence": None, "tool_calls": 0,
                             "input_tokens": r.input_tokens, "output_tokens": r.output_tokens, "cost_usd": 0.0,
                             "latency_s": 0.0, "attempts": 1, "error": None})
    ep_uri = str(tmp_path / "episodes.parquet")
    records.write_table("episodes", rows, ep_uri)
    # `medscope score` reads the protocol from the episodes and takes the probe build folder as items
    sc = score(ep_uri, str(tmp_path / "scored"), items_uri=out, n_boot=200)
    metrics = records.read_table("metrics", sc["metrics"]).to_pylist()
    m = {(r["model"], r["condition"], r["breakdown"], r["metric"]): r["value"] for r in metrics}
    for strat in ("random", "popular", "adversarial"):
        key = f"strategy={strat};render=gray"
        assert m[("yes-man", "free_text", key, "specificity")] == 0.0
        assert m[("oracle", "free_text", key, "specificity")] == 1.0
        # no image: the oracle does not address the question -> never scored as absent
        assert m[("oracle", "free_text+no_image", key, "specificity")] is None
        assert m[("oracle", "free_text+no_image", key, "not_addressed_rate")] == 1.0
    assert m[("yes-man", "free_text", "strategy=positive;render=gray", "sensitivity")] == 1.0
    assert m[("oracle", "free_text", "strategy=all_negatives;render=gray;absent_from_volume", "specificity")] == 1.0

    from medscope.protocols.organ_presence.report import probe_report_section

    title, md, pngs = probe_report_section(metrics)
    assert "| oracle | free_text |" in md and len(pngs["probe_specificity.png"]) > 1000
    from medscope.render.document import to_markdown

    sections, _ = OrganPresenceProtocol().report_sections(str(tmp_path / "scored"), str(tmp_path / "report2"))
    text, files = to_markdown("r", sections)
    # yes-man says "present" to every question: a constant policy, marked as such
    assert "| yes-man (constant) | free_text |" in text and any(f.endswith("probe_specificity.png") for f in files)


def test_cli_build_errors_are_one_line(tmp_path, capsys):
    from pipelines import cli

    assert cli.main(["probe", "build", "--volumes", str(tmp_path / "none.parquet"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "no volumes table" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("present_voxels: 3\nabsent_voxels: 5\n")
    env = dict(os.environ, PYTHONPATH=REPO)
    r = subprocess.run([sys.executable, "-m", "pipelines.probe", "--config", str(bad)],
                       capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert r.returncode == 2 and "absent_voxels" in r.stderr and r.stderr.strip().count("\n") == 0


def test_demo_step_on_synthetic_volumes(ray_cluster, tmp_path):
    from medscope.volumes.synthetic_ct import write_synthetic_volumes
    from pipelines.demo import DemoContext, step_probe_build

    ctx = DemoContext(out=str(tmp_path / "demo"))
    ctx.paths["volumes"] = write_synthetic_volumes(str(tmp_path / "vols"), 2, shape=(48, 48, 24))
    step_probe_build(ctx)
    items = records.read_table("probe_items", ctx.paths["probe_items"]).to_pylist()
    assert ctx.summary["probe"]["volumes_used"] == 2 and len(items) == ctx.summary["probe"]["items_written"]
    assert {i["strategy"] for i in items} == {"positive", "random", "popular", "adversarial"}
    assert len({(i["case_id"], i["z"]) for i in items}) <= 2 * 4  # demo.yaml: 4 slices per volume
