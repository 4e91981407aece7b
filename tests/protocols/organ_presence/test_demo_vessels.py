"""The demo's phantom volumes exercise the probe's vessel exclusion (issue 50): their aorta and
IVC reach the organ-presence paper's 50-voxel "present" threshold on every slice they cross, so
the probe leaves them out of the slice strata and of the adversarial conditioning set, and never
asks one as an adversarial negative.

Worked out from the phantom's geometry (``medscope.cohorts.phantom_ct``): each vessel is a disc of
radius 0.05 x 96 = 4.8 voxels per slice. A disc of radius r covers every voxel whose centre lies
within r - sqrt(2)/2 and none outside r + sqrt(2)/2, so a slice holds between
pi (4.8 - 0.707)^2 = 52.6 and pi (4.8 + 0.707)^2 = 95.3 voxels of it: 53 to 95, always >= 50. Along
z the aorta spans the whole volume and the IVC its lower 0.9, both shifted by the volume's
zshift in [-0.04, 0.04] (1.6 slices of 40): 38 to 40 aorta slices, 35 to 37 IVC slices.
"""

from __future__ import annotations

import math

import pytest

from medscope.cohorts import phantom, phantom_ct
from medscope.io import records
from medscope.volumes import presence as P
from medscope.volumes.build import load_row
from medscope.volumes.config import DEFAULT_VESSELS, ProbeConfig

VESSELS = ("aorta", "inferior vena cava")
R = phantom_ct.VESSEL_RADIUS * 96
LOW, HIGH = math.ceil(math.pi * (R - math.sqrt(2) / 2) ** 2), math.floor(math.pi * (R + math.sqrt(2) / 2) ** 2)
SLICES = {"aorta": (38, 40), "inferior vena cava": (35, 37)}


@pytest.fixture(scope="module")
def demo_volumes(tmp_path_factory):
    """The demo's volumes (``phantom.generate``'s default: 4 of 96 x 96 x 40, seed 0), each as
    (organs, per-slice voxel counts, presence states, z in mm)."""
    uri = phantom.write_volumes(str(tmp_path_factory.mktemp("cohort")), seed=0)
    cfg = ProbeConfig()
    out = []
    for row in records.read_table("volumes", uri).to_pylist():
        vol = load_row(row)
        organs, counts = P.organ_voxel_counts(vol.labels, vol.organ_map)
        out.append((organs, counts, P.presence_states(counts, cfg.present_voxels, cfg.absent_voxels), vol.z_mm))
    return out


def test_the_geometry_bounds_clear_the_papers_threshold():
    assert (LOW, HIGH) == (53, 95) and LOW > ProbeConfig().present_voxels == 50


def test_demo_vessels_are_present_on_every_slice_they_cross(demo_volumes):
    assert len(demo_volumes) == 4
    for organs, counts, states, _ in demo_volumes:
        for name in VESSELS:
            col = counts[:, organs.index(name)]
            crossed = col > 0
            assert LOW <= col[crossed].min() and col.max() <= HIGH, name
            assert SLICES[name][0] <= crossed.sum() <= SLICES[name][1], name
            st = states[:, organs.index(name)]
            assert (st[crossed] == P.PRESENT).all() and (st[~crossed] == P.ABSENT).all()


def test_the_probe_leaves_the_demo_vessels_out(demo_volumes):
    """Strata ignore the vessel columns, adversarial negatives are never vessels, and the
    exclusion changes what the demo's probe asks (with the vessels counted, the strata and the
    adversarial picks differ on some slice)."""
    stats = P.CohortStats()
    for organs, _, states, _ in demo_volumes:
        stats.add_volume(organs, states)
    vessel_names = {P.normalise_name(v) for v in DEFAULT_VESSELS}
    strata_moved = picks_moved = 0
    for organs, _, states, z_mm in demo_volumes:
        skip = [j for j, o in enumerate(organs) if P.normalise_name(o) in vessel_names]
        assert {organs[j] for j in skip} >= set(VESSELS)
        kept = P.slice_strata(z_mm, states, 10.0, skip)
        strata_moved += sum(a != b for a, b in zip(kept, P.slice_strata(z_mm, states, 10.0)))
        for k in range(states.shape[0]):
            present = [o for j, o in enumerate(organs) if states[k, j] == P.PRESENT]
            absent = [o for j, o in enumerate(organs) if states[k, j] == P.ABSENT]
            assert set(VESSELS) & set(present) or k in (0, states.shape[0] - 1)
            picks = P.adversarial_negatives(absent, present, stats, 2, list(DEFAULT_VESSELS))
            assert not {P.normalise_name(o) for o in picks} & vessel_names
            picks_moved += picks != P.adversarial_negatives(absent, present, stats, 2, [])
    assert strata_moved > 0 and picks_moved > 0
    items = [it for organs, _, states, z_mm in demo_volumes
             for it in P.build_items("v", z_mm, organs, states, stats, slices_per_volume=40,
                                     vessels=tuple(DEFAULT_VESSELS))]
    assert not any(it["organ"] in VESSELS for it in items if it["strategy"] == "adversarial")
    assert any(it["organ"] in VESSELS for it in items if it["strategy"] == "positive")
