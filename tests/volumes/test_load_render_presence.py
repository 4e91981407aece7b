"""Volumes, rendering and presence of the organ-presence probe against hand-worked values."""

from __future__ import annotations

import json

import nibabel as nib
import numpy as np
import pytest

from medscope.seeding import rng_for
from medscope.volumes import presence as P
from medscope.volumes.config import ProbeConfig
from medscope.volumes.nifti import VolumeError, axial_slice, load_volume
from medscope.volumes.render import apply_window, montage_indices, render_gray, render_montage, render_triple
from tests.fixtures.probe_volumes import ORGAN_MAP, hand_labels, write_pair


def test_window_against_hand_values():
    # W400/L40 -> [-160, 240] HU maps linearly onto 0..255.
    hu = np.array([-1000, -160, 40, 240, 1000, -60], dtype=np.float32)
    assert apply_window(hu, 400, 40).tolist() == [0, 0, 128, 255, 255, 64]  # -60: 100/400*255=63.75
    rgb = render_gray(hu.reshape(2, 3))
    assert rgb.shape == (2, 3, 3) and (rgb[..., 0] == rgb[..., 2]).all()
    tri = render_triple(np.array([[0.0, 80.0]]), [(2048, 0), (350, 40), (80, 40)])
    # R: (0+1024)/2048*255=127.5 -> 128; G: (0+135)/350*255=98.36 -> 98; B: 0 HU is the floor -> 0
    assert tri[0, 0].tolist() == [128, 98, 0]
    # 80 HU: R (1104/2048*255=137.46 -> 137), G (215/350*255=156.6 -> 157), B top of window -> 255
    assert tri[0, 1].tolist() == [137, 157, 255]


def test_montage_shape_and_sampling():
    assert montage_indices(10, 144)[[0, -1]].tolist() == [0, 9]
    idx = montage_indices(287, 144)
    assert len(idx) == 144 and idx[0] == 0 and idx[-1] == 286 and np.all(np.diff(idx) == 2)
    vol = np.zeros((200, 150, 50), dtype=np.float32)
    vol[:, :, 49] = 240.0
    m = render_montage(vol, "soft_tissue")
    # 12 tiles of 150 rows x 200 cols -> 1800 x 2400, scaled to long side 1536 -> 1152 x 1536.
    assert m.shape == (1152, 1536, 3)
    assert m[-5, -5, 0] == 255 and m[5, 5, 0] == 102  # last tile = last slice (240 HU); 0 HU: 160/400*255 = 102
    small = render_montage(np.zeros((8, 8, 3), dtype=np.float32), (400, 40))
    assert small.shape == (96, 96, 3)  # never upscaled


def test_load_reorients_to_canonical(tmp_path):
    lab = hand_labels()
    # Store the volume flipped along x and z (LAI-ish); canonical loading must undo it.
    flip = np.diag([-1.0, 1.0, -5.0, 1.0])
    flip[0, 3], flip[2, 3] = 19.0, 45.0
    row = write_pair(str(tmp_path), "c1", labels=lab[::-1, :, ::-1].copy(), affine=flip)
    vol = load_volume("c1", row["image_uri"], row["label_uri"], row["organ_map"])
    assert nib.aff2axcodes(vol.affine) == ("R", "A", "S")
    assert np.array_equal(vol.labels, lab)
    assert vol.z_mm.tolist() == [0, 5, 10, 15, 20, 25, 30, 35, 40, 45]
    # Radiological display: anterior at the top, patient's right on the viewer's left.
    a = np.arange(6).reshape(3, 2, 1)  # x=3, y=2
    assert axial_slice(a, 0).tolist() == [[5, 3, 1], [4, 2, 0]]


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda d: _truncated(write_pair(d, "t"), gz=True), "corrupt_nifti"),
        (lambda d: _truncated(write_pair(d, "t", gz=False), gz=False), "corrupt_nifti"),
        (lambda d: write_pair(d, "s", image=np.zeros((20, 20, 9), np.float32)), "shape_mismatch"),
        (lambda d: write_pair(d, "a", label_affine=np.diag([1.0, 1.0, 4.0, 1.0])), "affine_mismatch"),
        (lambda d: write_pair(d, "n", labels=hand_labels().astype(np.float32) * 1.5), "non_integer_labels"),
        (lambda d: write_pair(d, "u", organ_map={k: v for k, v in ORGAN_MAP.items() if k != 4}), "unmapped_label"),
        (lambda d: write_pair(d, "x", image=_with_nan()), "nan_voxels"),
        (lambda d: write_pair(d, "4d", image=np.zeros((20, 20, 10, 2), np.float32)), "not_3d"),
    ],
)
def test_bad_volumes_raise_with_reason(tmp_path, make, reason):
    row = make(str(tmp_path))
    with pytest.raises(VolumeError) as err:
        load_volume(row["case_id"], row["image_uri"], row["label_uri"], row["organ_map"])
    assert err.value.reason == reason


@pytest.mark.parametrize("gz", [True, False])
def test_a_corrupt_volume_is_named_once(tmp_path, gz):
    row = _truncated(write_pair(str(tmp_path), "t", gz=gz), gz=gz)
    with pytest.raises(VolumeError) as err:
        load_volume(row["case_id"], row["image_uri"], row["label_uri"], row["organ_map"])
    assert err.value.detail.startswith(row["label_uri"] + ": ")
    assert err.value.detail.count(row["label_uri"]) == 1


def _truncated(row, gz):
    with open(row["label_uri"], "rb") as fh:
        data = fh.read()
    with open(row["label_uri"], "wb") as fh:
        fh.write(data[: len(data) // 2] if gz else data[:400])
    return row


def _with_nan():
    from tests.fixtures.probe_volumes import hand_image

    img = hand_image(hand_labels())
    img[3, 3, 3] = np.nan
    return img


def _hand_states():
    lab = hand_labels()
    organs, counts = P.organ_voxel_counts(lab, ORGAN_MAP)
    return organs, counts, P.presence_states(counts, 50, 5)


def test_hysteretic_presence_by_hand():
    organs, counts, st = _hand_states()
    assert organs == ["liver", "spleen", "aorta", "kidney", "pancreas"]
    assert counts[:, 0].tolist() == [0, 10, 60, 60, 60, 60, 60, 3, 0, 0]
    # present >= 50, absent < 5, excluded (-1) between.
    assert st[:, 0].tolist() == [0, -1, 1, 1, 1, 1, 1, 0, 0, 0]
    assert st[:, 1].tolist() == [0, 0, 0, 0, 1, 1, 0, 0, 0, 0]
    assert st[:, 3].tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1, 0]
    assert (st[:, 4] == 0).all() and (st[:, 2] == 1).all()


def test_frequency_and_cooccurrence_by_hand():
    organs, _, st = _hand_states()
    stats = P.CohortStats()
    stats.add_volume(organs, st)
    assert [stats.frequency(o) for o in organs] == [0.5, 0.2, 1.0, 0.4, 0.0]
    # liver & spleen share z4, z5; liver & kidney z5, z6; spleen & kidney z5.
    assert stats.conditional("liver", "spleen") == pytest.approx(2 / 5)
    assert stats.conditional("spleen", "liver") == 1.0
    assert stats.conditional("kidney", "liver") == pytest.approx(2 / 4)
    assert stats.conditional("kidney", "spleen") == pytest.approx(1 / 4)
    assert stats.conditional("aorta", "kidney") == pytest.approx(0.4)
    assert stats.conditional("pancreas", "liver") == 0.0
    names, m = stats.matrix()
    assert names == sorted(organs) and m[names.index("spleen"), names.index("liver")] == 1.0
    # A second volume adds to the counts.
    stats.add_volume(organs, st)
    assert stats.frequency("spleen") == 0.2 and stats.slices["liver"] == 20
    assert P.CohortStats.from_dict(json.loads(json.dumps(stats.to_dict()))).to_dict() == stats.to_dict()


def test_strata_by_hand():
    organs, _, st = _hand_states()
    z = np.arange(10) * 5.0
    # liver range 10..30 mm: with a 0 mm band only the end slices are transitions.
    assert [P.item_stratum(z, st[:, 0], k, 0.0) for k in range(10)] == [
        "out_of_range", "out_of_range", "transition", "mid", "mid", "mid", "transition",
        "out_of_range", "out_of_range", "out_of_range"]
    # a 5 mm band widens the transition by one slice on each side.
    assert [P.item_stratum(z, st[:, 0], k, 5.0) for k in (0, 1, 3, 4, 7, 8)] == [
        "out_of_range", "transition", "transition", "mid", "transition", "out_of_range"]
    assert P.item_stratum(z, st[:, 4], 5, 5.0) == "out_of_range"  # never present
    strata = P.slice_strata(z, st, 0.0, skip=[2])  # aorta ignored
    assert strata == ["out_of_range", "out_of_range", "transition", "mid", "transition", "transition",
                      "transition", "mid", "transition", "out_of_range"]
    # quotas: 7 slices -> T3 M2 O2 (round robin, a full stratum passes its share on)
    picked = P.sample_slices(strata, 7, rng_for(0, "c", "slices"))
    got = [strata[k] for k in picked]
    assert (got.count("transition"), got.count("mid"), got.count("out_of_range")) == (3, 2, 2)
    picked9 = P.sample_slices(strata, 9, rng_for(0, "c", "slices"))
    got9 = [strata[k] for k in picked9]
    assert (got9.count("transition"), got9.count("mid"), got9.count("out_of_range")) == (4, 2, 3)
    assert P.sample_slices(strata, 50, rng_for(0, "c")) == list(range(10))


def _hand_cohort():
    s = P.CohortStats()
    s.slices = {o: 100 for o in ("aorta", "liver", "gallbladder", "stomach", "kidney")}
    diag = {"aorta": 90, "liver": 40, "gallbladder": 10, "stomach": 30, "kidney": 35}
    s.joint = {o: {o: n} for o, n in diag.items()}
    s.joint["liver"].update(gallbladder=10, stomach=4, kidney=2, aorta=40)
    s.joint["aorta"].update(gallbladder=10, stomach=30, kidney=35, liver=40)
    return s


def test_negative_strategies_by_hand():
    s = _hand_cohort()
    absent = ["gallbladder", "stomach", "kidney"]
    # popular: slice frequency kidney .35 > stomach .30 > gallbladder .10
    assert P.popular_negatives(absent, s, 2) == ["kidney", "stomach"]
    # adversarial conditions on liver only (aorta is a vessel): P(.|liver) = .25, .10, .05
    assert P.adversarial_negatives(absent, ["liver", "aorta"], s, 2, ["aorta"]) == ["gallbladder", "stomach"]
    # without the vessel exclusion the aorta drags it back to the popular choice:
    # gb (.25+.111)/2=.181, stomach (.1+.333)/2=.217, kidney (.05+.389)/2=.219
    assert P.adversarial_negatives(absent, ["liver", "aorta"], s, 2, []) == ["kidney", "stomach"]
    # a vessel is never an adversarial negative: P(aorta | liver) = 40/40 = 1 would top the ranking
    assert P.adversarial_negatives(absent + ["aorta"], ["liver"], s, 2, ["aorta"]) == ["gallbladder", "stomach"]
    assert P.adversarial_negatives(absent + ["aorta"], ["liver"], s, 1, []) == ["aorta"]
    # (popular and random may still ask about an absent vessel: the paper excludes them from the adversarial setting)
    assert P.popular_negatives(absent + ["aorta"], s, 1) == ["aorta"]
    # only a vessel present: nothing localised to condition on -> the popular ranking (kidney .35, stomach .30),
    # not P(.|aorta); nothing present: popular too
    assert P.adversarial_negatives(absent, ["aorta"], s, 2, ["aorta"]) == ["kidney", "stomach"]
    assert P.adversarial_negatives(["gallbladder", "stomach"], ["aorta"], s, 1, ["aorta"]) == ["stomach"]
    assert P.adversarial_negatives(absent, [], s, 2, ["aorta"]) == ["kidney", "stomach"]
    # random: uniform over the absent organs -> each of 3 picked in 2/3 of draws
    hits = {o: 0 for o in absent}
    for i in range(600):
        for o in P.random_negatives(absent, 2, rng_for(1, i)):
            hits[o] += 1
    assert all(abs(h / 600 - 2 / 3) < 0.07 for h in hits.values())
    assert P.random_negatives(["a"], 2, rng_for(0)) == ["a"]


def test_build_items_by_hand():
    organs, _, st = _hand_states()
    stats = P.CohortStats()
    stats.add_volume(organs, st)
    z = np.arange(10) * 5.0
    items = P.build_items("c1", z, organs, st, stats, seed=3, slices_per_volume=10,
                          vessels=("aorta",), transition_mm=0.0)
    assert items == P.build_items("c1", z, organs, st, stats, seed=3, slices_per_volume=10,
                                  vessels=("aorta",), transition_mm=0.0)
    by = {(i["z"], i["organ"], i["strategy"]): i for i in items}
    # excluded liver at z1 (10 voxels) is never asked about
    assert not [i for i in items if i["z"] == 1 and i["organ"] == "liver"]
    # z3: liver + aorta present; popular picks kidney (.4) and spleen (.2)
    assert {o for (k, o, s) in by if k == 3 and s == "positive"} == {"liver", "aorta"}
    assert {o for (k, o, s) in by if k == 3 and s == "popular"} == {"kidney", "spleen"}
    # z7: kidney + aorta present; adversarial given kidney: liver .5, spleen .25, pancreas 0
    assert {o for (k, o, s) in by if k == 7 and s == "adversarial"} == {"liver", "spleen"}
    # z-distances: liver at z7 -> nearest presence z6 (5 mm); spleen at z7 -> z5 (10 mm)
    assert by[(7, "liver", "adversarial")]["z_distance_mm"] == 5.0
    assert by[(7, "spleen", "adversarial")]["z_distance_mm"] == 10.0
    assert by[(0, "kidney", "popular")]["z_distance_mm"] == 25.0
    assert by[(7, "liver", "adversarial")]["stratum"] == "out_of_range"
    assert by[(6, "liver", "positive")]["stratum"] == "transition"
    assert by[(6, "liver", "positive")]["z_distance_mm"] is None
    # pancreas is absent from the whole volume: flagged, no distance
    panc = [i for i in items if i["organ"] == "pancreas"]
    assert panc and all(i["absent_from_volume"] and i["z_distance_mm"] is None for i in panc)
    # an organ with 5-49 voxels on one slice and never 50 is not absent from the volume (organ-presence paper:
    # absent only below 5 everywhere); it has no presence slice, so no distance either
    st2 = st.copy()
    st2[0, 4] = P.EXCLUDED
    faint = [i for i in P.build_items("c1", z, organs, st2, stats, seed=3, slices_per_volume=10, vessels=("aorta",),
                                      transition_mm=0.0) if i["organ"] == "pancreas"]
    assert faint and not any(i["absent_from_volume"] for i in faint) and all(i["z_distance_mm"] is None for i in faint)
    # POPE's balance: one positive a slice, drawn from the present organs; negatives unchanged
    one = P.build_items("c1", z, organs, st, stats, seed=3, slices_per_volume=10, positives_per_slice=1,
                        vessels=("aorta",), transition_mm=0.0)
    pos = [i for i in one if i["strategy"] == "positive"]
    assert len(pos) == len({i["z"] for i in items if i["strategy"] == "positive"})
    assert {(i["z"], i["organ"]) for i in pos} <= {(i["z"], i["organ"]) for i in items if i["strategy"] == "positive"}
    assert [i for i in one if i["strategy"] != "positive"] == [i for i in items if i["strategy"] != "positive"]
    assert all(i["truth"] == "absent" for i in panc)
    # two negatives per slice and strategy (z3 has three absent organs)
    assert sum(1 for (k, o, s) in by if k == 3 and s == "random") == 2


BTCV_EXTENTS = {  # a synthetic abdomen: each organ's presence range as fractions of the volume's z extent
    "spleen": (0.55, 0.90), "right kidney": (0.30, 0.60), "left kidney": (0.32, 0.62), "gallbladder": (0.50, 0.65),
    "esophagus": (0.85, 1.00), "liver": (0.45, 0.95), "stomach": (0.50, 0.90), "aorta": (0.00, 1.00),
    "inferior vena cava": (0.05, 0.95), "portal vein and splenic vein": (0.50, 0.65), "pancreas": (0.45, 0.60),
    "right adrenal gland": (0.60, 0.70), "left adrenal gland": (0.58, 0.68),
}


def test_default_scale_gives_the_papers_item_counts():
    """The organ-presence paper: 3,639 positives and 3,951 negatives per strategy over 30 cases and 13 organs. The
    defaults (66 slices a volume, 2 negatives and at most 2 positives a slice) on a synthetic cohort
    of that size (30 volumes of 90-177 slices, the BTCV range; no pixels, only the item sampler)."""
    cfg = ProbeConfig()
    organs = list(BTCV_EXTENTS)
    vols = []
    for v in range(30):
        n = 90 + 3 * v
        f = (np.arange(n) + 0.5) / n
        st = np.stack([np.where((f >= lo) & (f <= hi), P.PRESENT, P.ABSENT) for lo, hi in BTCV_EXTENTS.values()], 1)
        vols.append((f"case{v:02d}", np.arange(n) * 2.5, st.astype(np.int8)))
    stats = P.CohortStats()
    for _, _, st in vols:
        stats.add_volume(organs, st)
    items, expect_pos, expect_neg, expect_adv = [], 0, 0, 0
    vessel = np.array([P.normalise_name(o) in {P.normalise_name(x) for x in cfg.vessels} for o in organs])
    for case, z, st in vols:
        got = P.build_items(case, z, organs, st, stats, seed=cfg.seed, slices_per_volume=cfg.slices_per_volume,
                            negatives_per_slice=cfg.negatives_per_slice, positives_per_slice=cfg.positives_per_slice,
                            vessels=tuple(cfg.vessels), transition_mm=cfg.transition_mm)
        items += got
        ks = sorted({i["z"] for i in got})
        assert len(ks) == 66
        # independent arithmetic per sampled slice: min(2, present), min(2, absent), min(2, absent non-vessel)
        for k in ks:
            expect_pos += min(2, int((st[k] == P.PRESENT).sum()))
            expect_neg += min(2, int((st[k] == P.ABSENT).sum()))
            expect_adv += min(2, int(((st[k] == P.ABSENT) & ~vessel).sum()))
    count = {s: sum(i["strategy"] == s for i in items) for s in ("positive", "random", "popular", "adversarial")}
    assert count == {"positive": expect_pos, "random": expect_neg, "popular": expect_neg, "adversarial": expect_adv}
    assert 30 * 66 == 1980 and count["random"] == 2 * 1980  # every slice has >= 2 absent organs here
    assert abs(count["random"] - 3951) / 3951 < 0.005  # the paper's negatives a strategy, within 0.5%
    assert abs(count["positive"] - 3639) / 3639 < 0.10  # positives depend on the anatomy: within 10% here
    assert not [i for i in items if i["strategy"] == "adversarial" and i["organ"] in cfg.vessels]


@pytest.mark.parametrize("n, workers, per_block", [
    (4, 2, 1), (16, 2, 1), (16, 1, 2), (64, 2, 4), (64, 1, 8), (1000, 2, 8), (0, 2, 1), (64, 0, 8)])
def test_volumes_per_block_by_hand(n, workers, per_block):
    from pipelines.probe import volumes_per_block

    # n // (8 blocks a worker x workers), between 1 and 8 volumes
    assert volumes_per_block(n, workers) == per_block


@pytest.mark.parametrize("workers, cpus, pool", [
    (None, 2, (2, 4)), (2, 2, (2, 4)), (1, 2, (1, 1)), (3, 2, (3, 6)), (None, 6, (6, 12)), (4, 6, (4, 4))])
def test_task_pool_by_hand(workers, cpus, pool):
    from pipelines.probe import task_pool

    # every CPU a worker: twice as many tasks in flight (one queued a worker); fewer: no queue
    assert task_pool(workers, cpus) == pool
