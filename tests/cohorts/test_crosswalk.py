"""``medscope crosswalk`` (counterfactual paper §4.1) against values worked out here, not by the crosswalk:
tiny 64 px images (so the 64 px thumbnail is the image itself) whose Pearson correlation scipy
computes and whose 64-bit difference hash imagehash computes; exact copies, near-copies built to
correlate just above and just below the paper's 0.97, a byte-identical file in two sets, and the
cases that must move off a protected (test) image's near-copy group."""

from __future__ import annotations

import io
import itertools
import json

import cv2
import imagehash
import numpy as np
import pytest
from PIL import Image
from scipy.stats import pearsonr

from medscope.io import records
from medscope.errors import MedScopeError
from pipelines import cli
from pipelines import crosswalk as verb

PAPER_NEAR_COPY = 0.97  # §4.1: the same image or study; 0.90-0.97 is the looser tier
PAPER_SHARED_ANATOMY = 0.90
PAPER_MAX_BITS = 8


def _smooth(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    field = cv2.GaussianBlur(rng.normal(0, 1, (64, 64)), (0, 0), 5)
    field = (field - field.min()) / (field.max() - field.min())
    return np.round(40 + 175 * field).astype(np.uint8)  # 40..215: room for noise without clipping


def _noisy_copy(base: np.ndarray, target: float, seed: int) -> np.ndarray:
    """``base`` plus scaled white noise, the scale found by bisection so that scipy's Pearson r of
    the two uint8 images lands within 0.0015 of ``target``."""
    noise = np.random.default_rng(seed).normal(0, 1, base.shape)
    lo, hi = 0.0, 200.0
    for _ in range(60):
        s = (lo + hi) / 2
        img = np.clip(np.round(base + s * noise), 0, 255).astype(np.uint8)
        r = pearsonr(base.ravel().astype(float), img.ravel().astype(float))[0]
        lo, hi = (s, hi) if r > target else (lo, s)
    assert abs(r - target) < 0.0015
    return img


def _png(img: np.ndarray, level: int = 6) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG", compress_level=level)
    return buf.getvalue()


def _gray(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("L"))


def _case(case_id: str, png: bytes, split: str | None, source: str) -> dict:
    return {"case_id": case_id, "source": source, "imaging_type": "xray", "patient_id": None, "group_id": None,
            "split": split, "image": png, "mask": None, "width": 64, "height": 64, "finding": "nodule",
            "question": "Is there a nodule?", "question_kind": "presence", "has_lesion": False, "critical": False,
            "lesion_area_frac": 0.0, "lesion_bbox": None, "source_file": f"{case_id}.png", "private": False,
            "endpoint_allowlist": None}


def _view(case_id: str, kind: str, png: bytes, split: str) -> dict:
    return {"view_id": f"{case_id}-{kind}", "case_id": case_id, "kind": kind, "tool": "none", "degradation": None,
            "image": png, "edit_mask": None, "expected": "absent", "source": "siim", "imaging_type": "xray",
            "patient_id": None, "group_id": None, "split": split, "finding": "nodule",
            "question": "Is there a nodule?", "question_kind": "presence", "critical": False,
            "lesion_area_frac": 0.0, "lesion_bbox": None, "width": 64, "height": 64, "contrast_before": None,
            "contrast_after": None, "edit_score": None, "lesion_untouched": None, "passed": True,
            "reject_reason": None, "recipe_hash": "h", "private": False, "endpoint_allowlist": None}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("crosswalk")
    base, other, third = _smooth(1), _smooth(2), _smooth(3)
    above, below = _noisy_copy(base, 0.972, 11), _noisy_copy(base, 0.968, 12)
    shared_png = _png(third)
    # cohort "nih", a cases table in a cohort folder
    nih = [_case("n0", _png(base), "train", "nih"), _case("n1", _png(other), "train", "nih"),
           _case("n2", _png(above), "validation", "nih"), _case("n3", _png(below), "train", "nih"),
           _case("n4", shared_png, "train", "nih")]
    records.write_table("cases", nih, str(root / "nih" / "cases.parquet"))
    # "siim", a views table: its original is the base re-encoded (same pixels, other bytes), its
    # natural negative is n4's very file; an edited view of the base is not an unedited image
    siim = [_view("s0", "original", _png(base, level=1), "test"), _view("s1", "natural_negative", shared_png, "test"),
            _view("s0", "target_removal", _png(base), "test")]
    assert siim[0]["image"] != nih[0]["image"]
    records.write_table("views", siim, str(root / "siim.parquet"))
    labels = {f"nih:{c['case_id']}": c["image"] for c in nih} | {"siim:s0": siim[0]["image"], "siim:s1": shared_png}
    return root, labels


def _expected_pairs(labels: dict[str, bytes]) -> dict[frozenset, tuple[int, float, str]]:
    """Every pair of distinct files within 8 bits (imagehash's dHash), with scipy's r and the tier
    the paper's thresholds give it; byte-identical files are one file (n4 and s1)."""
    files: dict[bytes, str] = {}
    for label in sorted(labels):
        files.setdefault(labels[label], label)
    out = {}
    for (pa, a), (pb, b) in itertools.combinations(sorted(files.items(), key=lambda kv: kv[1]), 2):
        d = imagehash.dhash(Image.open(io.BytesIO(pa)).convert("L"), hash_size=8) - \
            imagehash.dhash(Image.open(io.BytesIO(pb)).convert("L"), hash_size=8)
        if d > PAPER_MAX_BITS:
            continue
        r = pearsonr(_gray(pa).ravel().astype(float), _gray(pb).ravel().astype(float))[0]
        tier = ("identical" if d == 0 and r >= 0.999 else "near_copy" if r >= PAPER_NEAR_COPY
                else "shared_anatomy" if r >= PAPER_SHARED_ANATOMY else "hash_only")
        out[frozenset((a, b))] = (int(d), float(r), tier)
    return out


def test_crosswalk_of_a_cohort_and_a_views_table(world, capsys):
    root, labels = world
    out = root / "cw.json"
    assert cli.main(["crosswalk", "--sets", f"{root / 'nih'},siim={root / 'siim.parquet'}", "--out", str(out)]) == 0
    rep = json.loads(out.read_text())
    # unedited images only (the target-removal view is left out); n4 and s1 are one file
    assert rep["images"] == {"nih": 5, "siim": 2} and rep["files"] == 6
    assert rep["same_file_in_several_sets"] == [{"file": rep["same_file_in_several_sets"][0]["file"],
                                                 "cases": ["nih:n4", "siim:s1"], "sets": ["nih", "siim"]}]
    want = _expected_pairs(labels)
    got = {frozenset((p["a"], p["b"])): (p["distance"], p["correlation"], p["tier"]) for p in rep["pairs"]}
    assert set(got) == {k for k, v in want.items() if v[2] != "hash_only"}
    for key, (d, r, tier) in got.items():
        assert d == want[key][0] and r == pytest.approx(want[key][1], abs=1e-4) and tier == want[key][2], key
    # the cases built for the boundary: exact copy, just above and just below 0.97
    assert got[frozenset(("nih:n0", "siim:s0"))][2] == "identical"
    assert got[frozenset(("nih:n0", "nih:n2"))][2] == "near_copy"
    assert got[frozenset(("nih:n0", "nih:n3"))][2] == "shared_anatomy"
    assert sum(rep["pairs_by_tier"].values()) == len(want)
    # protected: the test split (s0, s1). Their near-copy groups: {n0, s0, n2} and the file {n4, s1};
    # n3 (0.968) stays, n1 is unrelated
    assert [(m["case"], m["split"], m["because_of"]) for m in rep["to_move"]] == [
        ("nih:n0", "train", ["siim:s0"]), ("nih:n2", "validation", ["siim:s0"]), ("nih:n4", "train", ["siim:s1"])]
    printed = capsys.readouterr().out
    assert "6 distinct image files (7 images) in 2 sets" in printed and "3 cases to move" in printed


def test_by_split_and_protecting_a_set_by_name(world):
    root, _ = world
    cfg = verb.CrosswalkConfig(sets=[f"cohort={root / 'nih' / 'cases.parquet'}", str(root / "siim.parquet")],
                               by_split=True, protect=["cohort/validation"])
    rep = verb.run(cfg)
    assert rep["images"] == {"cohort/train": 4, "cohort/validation": 1, "siim/test": 2}
    # n2 (validation) is protected now: its group {n0, s0, n2} sends n0 (train) and s0 (test) away
    assert [(m["case"], m["because_of"]) for m in rep["to_move"]] == [
        ("cohort/train:n0", ["cohort/validation:n2"]), ("siim/test:s0", ["cohort/validation:n2"])]
    # the same settings as a job YAML: python -m pipelines.crosswalk --config F
    job = root / "job.yaml"
    job.write_text(json.dumps({"sets": cfg.sets, "by_split": True, "protect": ["cohort/validation"],
                               "out": str(root / "job.json")}))
    assert verb.main(["--config", str(job)]) == 0
    assert json.loads((root / "job.json").read_text())["to_move"] == rep["to_move"]


def test_names_and_inputs_are_checked(world, tmp_path, capsys):
    root, _ = world
    assert verb.set_name("cohorts/siim/") == "siim" and verb.set_name("c/siim/cases.parquet") == "siim"
    assert verb.set_name("views/main.parquet") == "main"
    with pytest.raises(MedScopeError, match="two sets are named 'nih'"):
        verb.named_sets([str(root / "nih"), f"nih={root / 'siim.parquet'}"])
    with pytest.raises(MedScopeError, match="neither a views nor a cases table"):
        verb.unedited_images(str(tmp_path))
    with pytest.raises(SystemExit):  # an input flag given twice is refused, never keep-the-last
        cli.main(["crosswalk", "--sets", str(root / "nih"), "--sets", str(root / "siim.parquet")])
    capsys.readouterr()
    bad = tmp_path / "cw.yaml"
    bad.write_text(f"sets: [{root / 'nih'}]\nmin_corr: 0.5\n")  # the thresholds are the paper's, not settings
    assert cli.main(["crosswalk", "--config", str(bad)]) != 0
    assert "min_corr" in capsys.readouterr().err


def test_the_old_cohort_crosswalk_says_where_it_moved(capsys):
    from pipelines import cli

    assert cli.main(["cohort", "crosswalk", "a", "b"]) == 2
    assert "has moved: medscope crosswalk --sets" in capsys.readouterr().err


def _template_site(root) -> tuple[list[bytes], dict]:
    """A site of 11 files: 8 noisy copies of one template (t3 in test, the others in train), a
    re-encoded pair u0 (train) / u1 (test), and v0 alone; returns the template PNGs and every
    file's hash by imagehash."""
    base = _smooth(7)
    template = [_png(_noisy_copy(base, 0.995, 100 + k)) for k in range(8)]  # one template, 8 files
    other = _smooth(8)
    rows = [_case(f"t{k}", png, "test" if k == 3 else "train", "site") for k, png in enumerate(template)]
    rows += [_case("u0", _png(other), "train", "site"), _case("u1", _png(other, level=1), "test", "site"),
             _case("v0", _png(_smooth(9)), "train", "site")]
    hashes = {r["case_id"]: imagehash.dhash(Image.open(io.BytesIO(r["image"])).convert("L"), hash_size=8) for r in rows}
    # preconditions, by imagehash: the template's files are hash-close, the others far from them
    assert max(hashes[f"t{a}"] - hashes[f"t{b}"] for a in range(8) for b in range(8)) <= PAPER_MAX_BITS
    assert min(hashes[f"t{a}"] - hashes[o] for a in range(8) for o in ("u0", "v0")) > PAPER_MAX_BITS
    records.write_table("cases", rows, str(root / "site" / "cases.parquet"))
    return template, hashes


def test_a_hash_close_group_over_the_cap_is_one_near_copy_group_reported_whole(tmp_path, capsys):
    template, hashes = _template_site(tmp_path)
    # a cap of 5: the 8 template files are a large group
    rep = verb.run(verb.CrosswalkConfig(sets=[str(tmp_path / "site")], large_group=5))
    (group,) = rep["large_groups"]
    assert (group["representative"], group["files"], group["images"], group["protected"]) == ("site:t0", 8, 8, 1)
    assert [m["cases"] for m in group["members"]] == [[f"site:t{k}"] for k in range(8)]
    t0 = _gray(template[0]).ravel().astype(float)
    for k, m in enumerate(group["members"]):
        assert m["correlation"] == pytest.approx(pearsonr(_gray(template[k]).ravel().astype(float), t0)[0], abs=1e-4)
        assert m["distance"] == hashes[f"t{k}"] - hashes["t0"]
    # no pair inside the group: the re-encoded u0 / u1 is the one pair
    assert [(p["a"], p["b"], p["tier"]) for p in rep["pairs"]] == [("site:u0", "site:u1", "identical")]
    assert rep["thresholds"]["large_group"] == 5
    # t3 (test) sends the whole template off test's way; u0 moves for its copy u1; v0 stays
    moved = [(m["case"], m["because_of"], m.get("large_group")) for m in rep["to_move"]]
    assert moved == [(f"site:t{k}", ["site:t3"], "site:t0") for k in (0, 1, 2, 4, 5, 6, 7)] + \
        [("site:u0", ["site:u1"], None)]
    print("\n".join(verb.summary_lines(rep)))
    assert "hash-close group of 8 files (8 images; over 5, so not paired" in capsys.readouterr().out

    # under the default cap the template's 28 pairs are made and confirmed: the same cases move
    paired = verb.run(verb.CrosswalkConfig(sets=[str(tmp_path / "site")]))
    assert paired["large_groups"] == [] and paired["pairs_by_tier"]["near_copy"] + \
        paired["pairs_by_tier"]["identical"] == 28 + 1
    assert [m["case"] for m in paired["to_move"]] == [m[0] for m in moved]


def test_the_verb_prints_the_large_group_and_the_cases_it_moves(tmp_path, capsys):
    """``medscope crosswalk --large-group 5`` on the template site: every line worked out by hand
    (11 files in one set; the one pair u0 ~ u1, identical; the template's 8 files over the cap of
    5 with t3 protected; 7 template cases and u0 to move)."""
    _template_site(tmp_path)
    assert cli.main(["crosswalk", "--sets", str(tmp_path / "site"), "--large-group", "5"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "11 distinct image files (11 images) in 1 sets; hash neighbours within 8 bits by tier: "
        "{'identical': 1, 'near_copy': 0, 'shared_anatomy': 0, 'hash_only': 0}",
        "0 near-copy pairs across sets (correlation >= 0.97 at 64 px); 0 shared-anatomy pairs across sets "
        "(0.9-0.97, not copies); 0 files in several sets",
        "hash-close group of 8 files (8 images; over 5, so not paired, one near-copy group) represented by "
        "site:t0: sets site; 1 protected",
        "8 cases to move (near-copy group holds a protected case; protected: test)",
        *(f"  site:t{k} (train): in the hash-close group of site:t0, with 1 protected" for k in (0, 1, 2, 4, 5, 6, 7)),
        "  site:u0 (train): copy of site:u1",
    ]
    # a cap the group is not over: no group line, its 28 pairs made
    assert cli.main(["crosswalk", "--sets", str(tmp_path / "site"), "--large-group", "8"]) == 0
    out = capsys.readouterr().out
    assert "hash-close group" not in out and "hash neighbours within 8 bits by tier: {'identical': 1, " in out


def test_a_cap_below_one_is_refused(tmp_path, capsys):
    assert cli.main(["crosswalk", "--sets", str(tmp_path / "site"), "--large-group", "0"]) == 2
    assert "large_group" in capsys.readouterr().err
