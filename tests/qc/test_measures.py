"""QC measures against hand-worked values (counterfactual paper, §3.3, §4.1)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import statsmodels.api as sm
from PIL import Image

from medscope.qc import detector, near_copies, splits
from medscope.qc.contrast import contrast_passes, ring_contrast


def test_ring_contrast_hand_example():
    # inside 150; outside: top half 90, bottom half 110. The square is centred on the
    # boundary, so the 6–14 px ring is half 90, half 110: mean 100, sd 10 -> contrast 5.
    img = np.full((60, 60), 90, np.uint8)
    img[30:] = 110
    mask = np.zeros((60, 60), bool)
    mask[25:35, 25:35] = True
    img[mask] = 150
    assert ring_contrast(img, mask) == pytest.approx(5.0)


def test_ring_is_6_to_14_px_by_brute_force_distance():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (41, 41), dtype=np.uint8)
    mask = np.zeros((41, 41), bool)
    mask[18:23, 19:22] = True
    pts = np.argwhere(mask)
    yy, xx = np.mgrid[:41, :41]
    d = np.min(np.hypot(yy[..., None] - pts[:, 0], xx[..., None] - pts[:, 1]), axis=-1)
    ring = (d >= 6) & (d <= 14)
    g = img.astype(float)
    expected = abs(g[mask].mean() - g[ring].mean()) / g[ring].std()
    assert ring_contrast(img, mask) == pytest.approx(expected)


def test_flat_ring_and_pass_rule():
    img = np.full((40, 40), 100, np.uint8)
    mask = np.zeros((40, 40), bool)
    mask[18:22, 18:22] = True
    assert ring_contrast(img, mask) == 0.0
    img[mask] = 120
    assert ring_contrast(img, mask) == float("inf")
    assert contrast_passes(10.0, 3.5) and not contrast_passes(10.0, 3.6)  # max(1, 0.35·10)
    assert contrast_passes(2.0, 1.0) and not contrast_passes(2.0, 1.01)  # max(1, 0.7)
    assert not contrast_passes(2.0, float("inf"))


def _dhash_by_definition(gray: np.ndarray) -> int:
    small = np.asarray(Image.fromarray(gray).resize((9, 8), Image.LANCZOS), dtype=np.int32)
    bits = (small[:, 1:] > small[:, :-1]).ravel()
    return sum(1 << (63 - i) for i, b in enumerate(bits) if b)


def test_dhash_is_64_bits_row_gradients_and_hamming_counts_bits():
    rng = np.random.default_rng(1)
    g = rng.integers(0, 256, (50, 70), dtype=np.uint8)
    assert near_copies.dhash64(g) == _dhash_by_definition(g)
    assert near_copies.hamming(0b1011, 0b0110) == 3
    assert near_copies.hamming(2**64 - 1, 0) == 64
    # a left-right mirror flips nearly every comparison
    assert near_copies.hamming(near_copies.dhash64(g), near_copies.dhash64(g[:, ::-1].copy())) > 20


def test_candidate_pairs_match_brute_force():
    rng = np.random.default_rng(2)
    base = rng.integers(0, 2**63, 30, dtype=np.int64).astype(np.uint64)
    hashes = np.concatenate([base, base[:10] ^ np.uint64(0b111), base[:5] ^ np.uint64((1 << 9) - 1)])
    got = set(near_copies.candidate_pairs(hashes, max_bits=8, block=7))
    want = {(i, j, bin(int(hashes[i]) ^ int(hashes[j])).count("1")) for i in range(len(hashes)) for j in range(i + 1, len(hashes))
            if bin(int(hashes[i]) ^ int(hashes[j])).count("1") <= 8}
    assert got == want
    # blocks sized by a comparison budget (one row at a time at budget 1, the default budget in
    # one block here) find the same pairs, in the same order
    assert near_copies.candidate_pairs(hashes, max_bits=8, budget=1) == sorted(want)
    assert near_copies.candidate_pairs(hashes, max_bits=8, budget=100) == sorted(want)
    assert near_copies.candidate_pairs(hashes, max_bits=8) == sorted(want)
    assert any(d == 3 for *_, d in got) and not any(d == 9 for *_, d in got)


def test_near_copy_tiers():
    import cv2

    rng = np.random.default_rng(3)
    a = cv2.GaussianBlur(rng.integers(0, 256, (128, 128), dtype=np.uint8), (0, 0), 3)
    resized = cv2.resize(cv2.resize(a, (96, 96), interpolation=cv2.INTER_AREA), (128, 128))
    other = cv2.GaussianBlur(rng.integers(0, 256, (128, 128), dtype=np.uint8), (0, 0), 3)
    imgs = {"a": a, "a_copy": a.copy(), "a_resized": resized, "b": other}
    ids = sorted(imgs)
    pairs = near_copies.find_near_copies(ids, [near_copies.dhash64(imgs[i]) for i in ids],
                                       [near_copies.thumbnail(imgs[i]) for i in ids])
    tiers = {(p.a, p.b): p.tier for p in pairs}
    assert tiers[("a", "a_copy")] == "identical"
    assert tiers[("a", "a_resized")] in ("identical", "near_copy")
    assert not any("b" in k for k in tiers)
    cross = near_copies.cross_cohort_pairs(pairs, {"a": "nih", "a_copy": "siim", "a_resized": "nih", "b": "siim"})
    assert {(p.a, p.b) for p in cross} == {("a", "a_copy"), ("a_copy", "a_resized")}


def _cases(n=60):
    rng = random.Random(0)
    out = []
    for i in range(n):
        pid = f"p{i // 3}" if i % 5 else None  # every fifth case lacks a patient id
        out.append({"case_id": f"c{i:03d}", "source": "s1" if i < n // 2 else "s2", "patient_id": pid, "split": None})
    rng.shuffle(out)
    return out


def test_group_splits_are_disjoint_by_patient_and_near_copy_group_and_stable():
    cases = _cases()
    pairs = [("c001", "c040"), ("c005", "c006"), ("c010", "c055")]  # near-copies, some across sources
    groups = splits.case_groups(cases, pairs)
    split = splits.assign_splits(cases, groups, seed=3)
    by_patient: dict = {}
    for c in cases:
        if c["patient_id"]:
            by_patient.setdefault((c["source"], c["patient_id"]), set()).add(split[c["case_id"]])
    assert all(len(s) == 1 for s in by_patient.values())
    for a, b in pairs:
        assert groups[a] == groups[b] and split[a] == split[b]
    # c001 (patient p0 of s1) is joined with c040 (no patient id) and, through p0, with c002
    assert groups["c002"] == groups["c040"]
    assert groups["c000"] != groups["c001"]  # c000 has no patient id and no near-copy
    # same patient id in another source is another patient
    assert groups["c003"] != groups["c033"] or ("c003", "c033") in pairs
    assert set(split.values()) == {"train", "validation", "test"}
    # stable: order does not matter, nor do unrelated extra cases
    again = splits.assign_splits(list(reversed(cases)), splits.case_groups(list(reversed(cases)), pairs), seed=3)
    assert again == split
    extra = cases + [{"case_id": "z999", "source": "s9", "patient_id": "q", "split": None}]
    more = splits.assign_splits(extra, splits.case_groups(extra, pairs), seed=3)
    assert all(more[c] == split[c] for c in split)


def test_official_test_cases_protect_their_whole_group():
    cases = _cases()
    for c in cases:
        if c["case_id"] == "c040":
            c["split"] = "test"
    groups = splits.case_groups(cases, [("c001", "c040")])
    split = splits.assign_splits(cases, groups, seed=0, fractions={"train": 1.0, "validation": 0.0, "test": 0.0})
    protected = {c for c, g in groups.items() if g == groups["c040"]}
    assert protected == {"c001", "c002", "c040"}
    assert all(split[c] == "test" for c in protected)
    assert all(split[c] == "train" for c in split if c not in protected)


def test_auc_is_mann_whitney_over_pairs():
    assert detector.auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)
    assert detector.auc([0.5, 0.5], [0, 1]) == pytest.approx(0.5)
    assert detector.auc([1, 2], [1, 1]) is None


def test_logistic_matches_statsmodels_without_penalty():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    y = (X @ [1.0, -2.0, 0.5] + rng.logistic(size=300) > 0).astype(float)
    ours = detector.Logistic(l2=0.0).fit(X, y)
    Z = (X - X.mean(0)) / X.std(0)
    ref = sm.Logit(y, sm.add_constant(Z)).fit(disp=0)
    assert np.allclose(ours.coef, ref.params, atol=1e-5)


def _features(n_cases, separable, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_cases):
        cid = f"c{i:03d}"
        shift = 3.0 if i < separable else 0.0
        for role, kind, mu in (("target", "target_removal", shift), ("edited", "random_removal", 0.0)):
            out.append({"view_id": f"{cid}/{kind}", "case_id": cid, "kind": kind, "tool": "telea", "role": role,
                        "x": list(rng.normal(mu, 1.0, 3))})
        out.append({"view_id": f"{cid}/random_removal", "case_id": cid, "kind": "random_removal", "tool": "telea",
                    "role": "unedited", "x": list(rng.normal(-2.0, 1.0, 3))})
    return out


def test_edit_detector_learns_edited_vs_unedited_and_records_heldout_auc():
    feats = _features(40, 0)
    model, report = detector.train_edit_detector(feats, seed=0)
    assert report["heldout_auc"] > 0.9 and report["n_heldout_cases"] > 0
    scores = detector.score_targets(model, feats)
    assert len(scores) == 40 and all(0 <= s <= 1 for s in scores.values())


def test_adversarial_filter_drops_easy_cases_until_auc_bound():
    feats = _features(60, 20, seed=1)
    cases = {f["case_id"] for f in feats}
    dropped, report = detector.adversarial_filter(feats, cases, max_auc=0.6, seed=0)
    assert report["auc_before"] > 0.6 >= report["auc_after"]
    assert report["reached"] and report["dropped"] == len(dropped) > 0
    # mostly the shifted (easy) cases go
    assert len({c for c in dropped if int(c[1:]) < 20}) >= 0.7 * len(dropped)
    none, rep2 = detector.adversarial_filter(_features(60, 0, seed=2), cases, max_auc=0.9, seed=0)
    assert none == set() and rep2["auc_after"] == rep2["auc_before"]


def test_crosswalk_tiers_follow_section_4_1_thresholds():
    """Same image at correlation >= 0.97; 0.90-0.97 is the looser 'shared anatomy' tier (reported,
    never a copy); below 0.90 the hashes alone matched. Same hash, thumbnails of set correlation."""
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1, (64, 64)).astype(np.float32)
    noise = rng.normal(0, 1, (64, 64)).astype(np.float32)
    # corr(base, base + s * noise) = 1 / sqrt(1 + s^2) for independent unit-variance fields
    thumbs = {"x": base, "r985": base + 0.175 * noise, "r93": base + 0.395 * noise, "r80": base + 0.75 * noise}
    got = {k: near_copies.pixel_correlation(base, t) for k, t in thumbs.items() if k != "x"}
    assert got["r985"] > 0.97 and 0.90 <= got["r93"] < 0.97 and got["r80"] < 0.90
    tiers = {}
    for k in ("r985", "r93", "r80"):
        (p,) = near_copies.find_near_copies(["x", k], [7, 7], [thumbs["x"], thumbs[k]])
        tiers[k] = p.tier
    assert tiers == {"r985": "near_copy", "r93": "shared_anatomy", "r80": "hash_only"}
    pairs = [near_copies.find_near_copies(["x", k], [7, 7], [thumbs["x"], thumbs[k]])[0] for k in tiers]
    assert [{p.a, p.b} for p in near_copies.confirmed(pairs)] == [{"x", "r985"}]
