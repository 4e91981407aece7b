"""Views geometry, degradations and per-case building against hand-worked values (counterfactual paper §3.2)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from medscope.images import decode_mask, decode_png, encode_png
from medscope.seeding import rng_for
from medscope.views import degrade, geometry
from medscope.views.build import CaseContext, build_case_views
from medscope.views.recipe import Recipe, recipe_hash
from medscope.views.synthetic_cases import blob, case_row, synthetic_cases, tissue
from medscope.views.tools import make_eraser


def test_dilation_of_one_pixel_is_the_radius_5_lattice_disk():
    mask = np.zeros((21, 21), bool)
    mask[10, 10] = True
    grown = geometry.dilate_mask(mask, 5)
    # Gauss circle count N(5): integer points with x²+y² ≤ 25 is 81
    assert grown.sum() == 81
    assert grown[10, 15] and grown[10, 5] and not grown[10, 16]
    assert grown[13, 14] and not grown[14, 14]  # 3²+4²=25 inside, 4²+4²=32 outside


def test_dilation_of_a_square_grows_each_side_by_5():
    mask = np.zeros((40, 40), bool)
    mask[15:25, 15:25] = True
    grown = geometry.dilate_mask(mask, 5)
    rows = np.flatnonzero(grown.any(1))
    assert (rows[0], rows[-1]) == (10, 29)
    assert not grown[10, 10]  # the corner is rounded: distance √50 > 5


def _allowed_room(size=120):
    fg = np.zeros((size, size), bool)
    fg[5:-5, 5:-5] = True
    lesion = np.zeros((size, size), bool)
    lesion[50:62, 52:60] = True
    return fg, geometry.dilate_mask(lesion, 5)


def test_random_removal_is_the_same_shape_translated_and_never_touches_the_lesion():
    fg, dilated = _allowed_room()
    for k in range(20):
        region = geometry.random_removal_region(dilated, fg, rng_for(0, f"c{k}", "random_removal"))
        assert region is not None
        assert region.sum() == dilated.sum()
        assert np.array_equal(geometry.crop_to_shape(region)[0], geometry.crop_to_shape(dilated)[0])
        # no overlap and no 8-neighbour contact with the dilated lesion
        assert not (ndimage.binary_dilation(dilated, np.ones((3, 3), bool)) & region).any()
        assert not (region & ~fg).any()


def test_random_removal_has_no_room_when_foreground_is_only_the_lesion():
    fg, dilated = _allowed_room()
    assert geometry.random_removal_region(dilated, dilated | np.zeros_like(fg), rng_for(0, "x")) is None


def test_unmatched_control_is_half_or_twice_the_area_and_away_from_the_lesion():
    fg, dilated = _allowed_room(160)
    factors = set()
    for k in range(12):
        region, params = geometry.unmatched_control_region(dilated, fg, rng_for(0, f"c{k}", "uc"), away_px=5)
        assert region is not None
        factors.add(params["area_factor"])
        ratio = region.sum() / dilated.sum()
        assert ratio == pytest.approx(params["area_factor"], rel=0.12)
        dist = ndimage.distance_transform_edt(~dilated)
        assert dist[region].min() > 5
    assert factors == {0.5, 2.0}


def test_gaussian_blur_sigma_is_max_side_over_40():
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (80, 120), dtype=np.uint8)
    out = degrade.gaussian_blur(np.repeat(img[:, :, None], 3, 2))[:, :, 0].astype(float)
    ref = ndimage.gaussian_filter(img.astype(float), sigma=3.0, mode="reflect", truncate=4.0)  # 120/40
    assert np.abs(out - ref)[10:-10, 10:-10].max() <= 1.5


def test_noise_sigma_60_clips_instead_of_wrapping():
    img = np.full((200, 200, 3), 250, np.uint8)
    out = degrade.gaussian_noise(img, np.random.default_rng(0), 60.0)
    # wrap-around would turn 250 + x into x - 6 for every positive draw (~47% of pixels);
    # clipping leaves below 100 only draws under -2.5σ: Φ(-2.5) = 0.0062
    assert (out < 100).mean() == pytest.approx(0.0062, abs=0.003)
    # rounded values ≥ 254.5 clip to 255: P(Z > 4.5/60) = 1 - Φ(0.075) = 0.470
    assert (out == 255).mean() == pytest.approx(0.470, abs=0.01)
    mid = degrade.gaussian_noise(np.full((200, 200, 3), 128, np.uint8), np.random.default_rng(0), 60.0)
    assert mid.astype(float).std() == pytest.approx(60 * 0.96, rel=0.05)  # slight clip at ±2.1σ


def test_down_up_by_8_is_blockwise_constant_block_means():
    rng = np.random.default_rng(2)
    img = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    out = degrade.down_up(img, 8)
    block_means = img[:8, :8, 0].astype(float).mean()
    assert np.all(out[:8, :8, 0] == out[0, 0, 0])
    assert abs(int(out[0, 0, 0]) - block_means) <= 1


def test_other_type_and_jpeg_and_motion_keep_the_size():
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (50, 70, 3), dtype=np.uint8)
    donor = rng.integers(0, 256, (90, 90, 3), dtype=np.uint8)
    for kind in degrade.DEGRADATIONS:
        out = degrade.degrade(img, kind, np.random.default_rng(0), donor=donor)
        assert out.shape == img.shape and out.dtype == np.uint8
        assert not np.array_equal(out, img)


@pytest.mark.parametrize("tool", ["telea", "ns", "transplant"])
def test_controls_change_no_lesion_pixel_and_only_their_region(tool):
    rec = Recipe(tools=[tool], unmatched_control=True, control_tool={tool: tool})
    erasers = {tool: make_eraser(tool)}
    case = synthetic_cases(1, seed=5)[0]
    # the train split: unmatched controls are C1's training arm, built for training pools only
    rows, rejects = build_case_views(case, rec, erasers, CaseContext(split="train"), recipe_hash(rec))
    # only the target erasure may fail (its contrast QC); the controls never do
    assert {r["item_id"].split("/")[1] for r in rejects} <= {"target_removal"}
    original = decode_png(case["image"])
    mask = decode_mask(case["mask"])
    by_kind = {r["kind"]: r for r in rows}
    for kind in ("random_removal", "unmatched_control"):
        view = decode_png(by_kind[kind]["image"])
        region = decode_mask(by_kind[kind]["edit_mask"])
        assert by_kind[kind]["lesion_untouched"] is True
        assert np.array_equal(view[mask], original[mask])
        assert np.array_equal(view[~region], original[~region])
        assert not np.array_equal(view[region], original[region])
    target = by_kind["target_removal"]
    erased = decode_mask(target["edit_mask"])
    assert np.array_equal(erased, geometry.dilate_mask(mask, 5))
    assert target["contrast_after"] < target["contrast_before"]
    assert "insertion" not in by_kind  # test split: training-only view absent


def test_views_of_a_case_are_identical_on_rebuild_and_differ_by_seed():
    case = synthetic_cases(1, seed=7)[0]
    erasers = {t: make_eraser(t) for t in ("telea", "transplant")}
    a = build_case_views(case, Recipe(seed=1), erasers, CaseContext(), "h")[0]
    b = build_case_views(case, Recipe(seed=1), erasers, CaseContext(), "h")[0]
    c = build_case_views(case, Recipe(seed=2), erasers, CaseContext(), "h")[0]
    assert [r["image"] for r in a] == [r["image"] for r in b]
    assert [r["edit_mask"] for r in a if r["kind"] == "random_removal"] != [
        r["edit_mask"] for r in c if r["kind"] == "random_removal"
    ]


def test_insertion_moves_the_lesion_into_a_lesion_free_training_image():
    cases = synthetic_cases(4, seed=3)
    lesion, negative = cases[0], cases[3]
    erasers = {t: make_eraser(t) for t in ("telea", "transplant")}
    rows, _ = build_case_views(lesion, Recipe(), erasers,
                               CaseContext(split="train", recipient_id=negative["case_id"], recipient_image=negative["image"]), "h")
    ins = [r for r in rows if r["kind"] == "insertion"][0]
    out, base = decode_png(ins["image"]).astype(int), decode_png(negative["image"]).astype(int)
    region = decode_mask(ins["edit_mask"])
    assert ins["expected"] == "present"
    assert np.array_equal(out[~region], base[~region])
    assert out[region].mean() > base[region].mean() + 20  # the bright lesion arrived


def _case(image, mask, cid="bad"):
    return case_row(cid, image, mask)


@pytest.mark.parametrize(
    "name, reason",
    [
        ("small", "lesion_too_small"),
        ("large", "lesion_too_large"),
        ("border", "mask_touches_border"),
        ("black", "no_foreground"),
        ("noroom", "no_room_for_control"),
        ("corrupt", "unreadable_image"),
        ("mismatch", "mask_size_mismatch"),
        ("empty", "empty_mask"),
    ],
)
def test_bad_inputs_give_a_reason_never_a_crash(name, reason):
    rng = np.random.default_rng(0)
    img = tissue(rng, 100)
    if name == "small":
        case = _case(img, blob(100, (50, 50), 2.0))  # 13 px
    elif name == "large":
        case = _case(img, blob(100, (50, 50), 30.0))  # ~28% of the image
    elif name == "border":
        m = np.zeros((100, 100), bool)
        m[0:10, 40:50] = True
        case = _case(img, m)
    elif name == "black":
        case = _case(np.zeros((100, 100), np.uint8), blob(100, (50, 50), 5.0))
    elif name == "noroom":
        small = np.zeros((100, 100), np.uint8)
        small[35:66, 35:66] = 150  # tissue only around the lesion
        case = _case(small, blob(100, (50, 50), 6.0))
    elif name == "corrupt":
        case = _case(img, blob(100, (50, 50), 6.0))
        case["image"] = b"not a png"
    elif name == "mismatch":
        case = _case(img, blob(100, (50, 50), 6.0))
        case["mask"] = encode_png(blob(80, (40, 40), 6.0))
    else:
        case = _case(img, blob(100, (50, 50), 6.0))
        case["mask"] = encode_png(np.zeros((100, 100), bool))
    erasers = {t: make_eraser(t) for t in ("telea", "transplant")}
    rows, rejects = build_case_views(case, Recipe(), erasers, CaseContext(), "h")
    assert reason in [r["reason"] for r in rejects]
    assert all(not r["passed"] for r in rows)
