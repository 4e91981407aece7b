"""The phantom cohort: seeded, varied, with patients, near-copies, critical findings and CT volumes."""

import itertools
import json
from collections import Counter

import imagehash
import nibabel as nib
import numpy as np
import pytest
from PIL import Image

from medscope import images
from medscope.io import records, storage
from medscope.cohorts import phantom
from medscope.cohorts.phantom_ct import BTCV_ORGANS


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("phantom"))
    uris = phantom.generate(out, n_cases=48, seed=0, n_volumes=4)
    return out, uris


def test_same_seed_gives_byte_identical_tables(cohort, tmp_path):
    out, uris = cohort
    first = {k: storage.read_bytes(u) for k, u in uris.items()}
    nifti = {n: storage.read_bytes(f"{out}/volumes/{n}") for n in ("imagesTr/ct002.nii.gz", "labelsTr/ct004.nii.gz")}
    storage.delete(out)
    again = phantom.generate(out, n_cases=48, seed=0, n_volumes=4)  # same place: the volumes table holds URIs
    assert again == uris
    for key in ("cases", "cohort_rejects", "volumes"):
        assert storage.read_bytes(again[key]) == first[key]
    for name, data in nifti.items():
        assert storage.read_bytes(f"{out}/volumes/{name}") == data
    elsewhere = phantom.generate(str(tmp_path / "elsewhere"), n_cases=48, seed=0, n_volumes=0)
    assert storage.read_bytes(elsewhere["cases"]) == first["cases"]
    other = phantom.generate(str(tmp_path / "other"), n_cases=48, seed=1, n_volumes=0)
    assert storage.read_bytes(other["cases"]) != storage.read_bytes(uris["cases"])


def test_cases_are_varied(cohort):
    _, uris = cohort
    rows = records.read_table("cases", uris["cases"]).to_pylist()
    assert len(rows) == 48
    assert len({r["case_id"] for r in rows}) == 48
    by_type = Counter(r["imaging_type"] for r in rows)
    assert set(by_type) == {"breast ultrasound", "colonoscopy", "chest x-ray"}
    assert min(by_type.values()) >= 12
    free = [r for r in rows if not r["has_lesion"]]
    assert 0.25 <= len(free) / len(rows) <= 0.4
    assert all(r["mask"] is None and r["lesion_area_frac"] == 0 and r["lesion_bbox"] is None for r in free)
    fracs = [r["lesion_area_frac"] for r in rows if r["has_lesion"]]
    assert sum(f < 0.02 for f in fracs) >= 3 and max(fracs) > 0.06
    for r in rows:
        assert 192 <= r["width"] <= 256 and 192 <= r["height"] <= 256
        if r["has_lesion"]:
            mask = images.decode_mask(r["mask"])
            assert mask.shape == (r["height"], r["width"])
            assert r["lesion_area_frac"] == pytest.approx(mask.mean())
            ys, xs = np.nonzero(mask)
            assert r["lesion_bbox"] == [xs.min(), ys.min(), xs.max(), ys.max()]
    # the types look different: endoscopy is colour, the others gray with their own brightness
    colour = {t: [] for t in by_type}
    for r in rows:
        img = images.decode_png(r["image"])
        colour[r["imaging_type"]].append(float(np.abs(img[..., 0].astype(int) - img[..., 2]).mean()))
    assert min(colour["colonoscopy"]) > 20
    assert max(colour["breast ultrasound"]) == 0 and max(colour["chest x-ray"]) == 0
    critical = [r for r in rows if r["critical"]]
    assert critical and all(r["finding"] == "pneumothorax" and r["imaging_type"] == "chest x-ray" for r in critical)


def test_lesions_differ_from_their_surroundings(cohort):
    """Each lesion is visible to some degree, and contrasts vary (some subtle, some strong)."""
    _, uris = cohort
    contrasts = []
    for r in records.read_table("cases", uris["cases"]).to_pylist():
        if not r["has_lesion"]:
            continue
        img = images.to_gray(images.decode_png(r["image"])).astype(float)
        mask = images.decode_mask(r["mask"])
        ring = np.zeros_like(mask)
        x1, y1, x2, y2 = r["lesion_bbox"]
        ring[max(0, y1 - 8) : y2 + 9, max(0, x1 - 8) : x2 + 9] = True
        ring &= ~mask
        contrasts.append(abs(img[mask].mean() - img[ring].mean()) / (img[ring].std() + 1e-6))
    # contrast in units of the surroundings' standard deviation: none invisible, some subtle
    # (under half a standard deviation), some obvious (over two)
    assert min(contrasts) > 0.1
    assert sum(c < 0.5 for c in contrasts) >= 3 and sum(c > 2.0 for c in contrasts) >= 3


def test_patients_and_near_copies(cohort):
    out, uris = cohort
    rows = {r["case_id"]: r for r in records.read_table("cases", uris["cases"]).to_pylist()}
    per_patient = Counter(r["patient_id"] for r in rows.values())
    assert None not in per_patient
    assert sum(1 for c in per_patient.values() if c > 1) >= 5
    for pid in per_patient:  # a patient's images share one imaging type
        assert len({r["imaging_type"] for r in rows.values() if r["patient_id"] == pid}) == 1
    pairs = json.loads(storage.read_utf8(f"{out}/near_copies.json"))
    assert len(pairs) == 3
    hashes = {k: imagehash.dhash(Image.fromarray(images.decode_png(r["image"]))) for k, r in rows.items()}
    copies = {b for _, b in pairs}
    unrelated = [
        hashes[a] - hashes[b]
        for a, b in itertools.combinations([k for k in rows if k not in copies], 2)
        if rows[a]["imaging_type"] == rows[b]["imaging_type"]
    ]
    for orig, copy in pairs:
        assert rows[orig]["imaging_type"] == rows[copy]["imaging_type"]
        assert rows[orig]["patient_id"] != rows[copy]["patient_id"]  # the leak QC must find
        assert storage.read_bytes(uris["cases"])  # (file readable)
        assert rows[orig]["image"] != rows[copy]["image"]
        assert hashes[orig] - hashes[copy] <= 5 < min(unrelated)


def test_ct_volumes(cohort):
    out, uris = cohort
    vols = records.read_table("volumes", uris["volumes"]).to_pylist()
    assert len(vols) == 4
    present = []
    for v in vols:
        img, lab = nib.load(v["image_uri"]), nib.load(v["label_uri"])
        assert img.shape == lab.shape == tuple(v["shape"]) == (96, 96, 40)
        assert np.allclose(img.header.get_zooms(), v["spacing"])
        assert json.loads(v["organ_map"]) == {str(k): o for k, o in BTCV_ORGANS.items()}
        canon_img, canon_lab = nib.as_closest_canonical(img), nib.as_closest_canonical(lab)
        hu = np.asarray(canon_img.dataobj)
        labels = np.asarray(canon_lab.dataobj)
        assert np.issubdtype(labels.dtype, np.integer)
        assert hu.min() == -1000 and 600 < hu.max() < 800  # air and bone
        med = {o: np.median(hu[labels == k]) for k, o in BTCV_ORGANS.items() if (labels == k).any()}
        present.append(set(med))
        assert 45 < med["liver"] < 75 and 15 < med["right kidney"] < 45 and -5 < med.get("gallbladder", 10) < 25
        assert len(med) >= 8
        # anatomy in RAS: liver on the patient's right (higher x), spleen on the left, kidneys
        # behind the stomach (lower y), liver dome above the kidneys (higher z)
        centre = {o: np.argwhere(labels == k).mean(axis=0) for k, o in BTCV_ORGANS.items() if o in med}
        assert centre["liver"][0] > 48 > centre["spleen"][0]
        assert centre["right kidney"][0] > centre["left kidney"][0]
        assert centre["stomach"][1] > centre["left kidney"][1]
        assert centre["liver"][2] > centre["right kidney"][2]
        # organs appear and disappear across slices: z-extents differ
        extents = {o: np.nonzero((labels == k).any(axis=(0, 1)))[0] for k, o in BTCV_ORGANS.items() if o in med}
        assert extents["liver"].min() > extents["aorta"].min()
        assert extents["right kidney"].max() < extents["liver"].max()
    assert any(len(p) < len(BTCV_ORGANS) for p in present)  # one volume lacks an organ entirely
    assert {v["orientation"] for v in vols} == {"RAS", "LPS"}
