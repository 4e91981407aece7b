"""The paper's own cohorts (counterfactual paper §4.1) written in their releases' exact layouts, with the bad
files real downloads contain. As in ``cohort_layouts``: each writer returns what a correct loader
must produce, worked out here from what the writer drew — ``good`` maps ``source_file`` to
(lesion area fraction, bbox) or None (lesion-free), ``bad`` maps the rejects' item id to reason.
"""

from __future__ import annotations

import gzip
import json
import os

import nibabel as nib
import numpy as np

from cohort_layouts import _save, colour_image, expect, gray_image, rect_mask, truncated_bytes


def _json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f)


def _bytes(path, data: bytes):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


# --------------------------------------------------------------------------- SLAKE


def _slake_q(img, qid, q, a, kind, modality, lang="en", content="Abnormality"):
    return {"img_id": int(img[5:]), "img_name": f"{img}/source.jpg", "question": q, "answer": a, "q_lang": lang,
            "location": "Abdomen", "modality": modality, "answer_type": kind, "base_type": "vqa",
            "content_type": content, "triple": ["vhead", "_", "_"], "qid": qid}


def write_slake(root):
    """Slake1.0: imgs/xmlab<N>/{source.jpg, mask.png, detection.json}, train/validate/test.json.

    mask.png holds each object as its own gray value; detection.json boxes are [x, y, w, h].
    Returns (cases good, cases bad, vqa good {item key: (split, answer_type)}, vqa bad).
    """
    h, w = 40, 48
    good, bad = {}, {}
    modality = {}

    def folder(n, objects, mask, mod, image=None):
        d = f"{root}/imgs/xmlab{n}"
        img = image if image is not None else gray_image(h, w, n)
        _save(f"{d}/source.jpg", img, "JPEG", quality=95)
        if mask is not None:
            _save(f"{d}/mask.png", mask, "PNG")
        if objects is not None:
            _json(f"{d}/detection.json", [{k: v} for k, v in objects])
        modality[n] = mod
        return f"imgs/xmlab{n}/source.jpg"

    # 0: CT liver with a cancer inside it; the liver's own box must not be taken for the lesion
    m = np.zeros((h, w), np.uint8)
    m[5:35, 4:40] = 50  # liver: x 4..39, y 5..34
    cancer = rect_mask(h, w, 12, 10, 21, 17)
    m[cancer] = 100
    rel = folder(0, [("Liver", [4, 5, 36, 30]), ("Liver Cancer", [12, 10, 10, 8])], m, "CT")
    good[f"{rel}#Liver Cancer"] = expect(cancer)
    # 1: MRI brain, two lesion objects -> two question-cases on one image file
    m = np.zeros((h, w), np.uint8)
    m[2:38, 2:46] = 20  # brain
    edema, tumour = rect_mask(h, w, 10, 8, 29, 25), rect_mask(h, w, 15, 12, 22, 19)
    m[edema] = 60
    m[tumour] = 90
    rel = folder(1, [("Brain", [2, 2, 44, 36]), ("Brain Edema", [10, 8, 20, 18]),
                     ("Brain Enhancing Tumor", [15, 12, 8, 8])], m, "MRI")
    good[f"{rel}#Brain Edema"] = expect(edema & ~tumour)
    good[f"{rel}#Brain Enhancing Tumor"] = expect(tumour)
    # 2: CT with organs only -> lesion-free; its modality only in its own question.json
    m = np.zeros((h, w), np.uint8)
    m[5:35, 4:40] = 50
    rel = folder(2, [("Liver", [4, 5, 36, 30])], m, None)
    _json(f"{root}/imgs/xmlab2/question.json", [_slake_q("xmlab2", 900, "Is this a CT?", "Yes", "CLOSED", "CT")])
    good[rel] = None
    # 10: the same as 0 but a colour mask: liver red, cancer green (equal max channel, other colour)
    m = np.zeros((h, w, 3), np.uint8)
    m[5:35, 4:40] = (255, 0, 0)
    m[cancer] = (0, 255, 0)
    rel = folder(10, [("Liver", [4, 5, 36, 30]), ("Liver Cancer", [12, 10, 10, 8])], m, "CT")
    good[f"{rel}#Liver Cancer"] = expect(cancer)
    # 12: as 0, but the lesion box re-exported in corner form [x1, y1, x2, y2]
    m = np.zeros((h, w), np.uint8)
    m[5:35, 4:40] = 50
    m[cancer] = 100
    rel = folder(12, [("Liver", [4, 5, 36, 30]), ("Liver Cancer", [12, 10, 21, 17])], m, "CT")
    good[f"{rel}#Liver Cancer"] = expect(cancer)
    # 11: a soft (blurred) mask: hundreds of grey levels, no object values to read
    m = np.tile(np.arange(w, dtype=np.uint8) * 5, (h, 1)) + np.arange(h, dtype=np.uint8)[:, None]
    bad[folder(11, [("Liver Cancer", [12, 10, 10, 8])], m, "CT")] = "not a label mask"
    # 3: chest X-ray: not a kept modality
    bad[folder(3, [("Lung", [1, 1, 20, 20])], np.zeros((h, w), np.uint8), "X-Ray")] = "excluded modality"
    # 4: lesion listed, mask.png missing
    bad[folder(4, [("Liver Cancer", [12, 10, 10, 8])], None, "CT")] = "missing mask"
    # 5: detection.json truncated mid-write
    rel = folder(5, None, np.zeros((h, w), np.uint8), "CT")
    _bytes(f"{root}/imgs/xmlab5/detection.json", b'[{"Liver": [4, 5, 36')
    bad[rel] = "corrupt JSON"
    # 6: lesion box reaches past the image edge
    m = np.zeros((h, w), np.uint8)
    m[30:40, 40:48] = 100
    bad[folder(6, [("Liver Cancer", [40, 30, 12, 10])], m, "CT")] = "box outside image"
    # 7: mask of another size than its image
    bad[folder(7, [("Liver Cancer", [12, 10, 10, 8])], np.zeros((h + 2, w), np.uint8), "CT")] = "mask size differs"
    # 8: lesion box where the mask has nothing of that shape
    m = np.zeros((h, w), np.uint8)
    m[5:35, 4:40] = 50
    bad[folder(8, [("Liver", [4, 5, 36, 30]), ("Liver Cancer", [12, 10, 10, 8])], m, "CT")] = "lesion not in mask"
    # 9: source.jpg truncated
    rel = folder(9, [("Liver", [4, 5, 36, 30])], m, "CT")
    _bytes(f"{root}/{rel}", truncated_bytes(gray_image(h, w, 9), "JPEG"))
    bad[rel] = "unreadable image"

    # question files: English and Chinese; validate.json broken; test holds closed + open
    train = [_slake_q(f"xmlab{n}", 10 + n, "Which modality?", mod, "OPEN", mod, content="Modality")
             for n, mod in modality.items() if mod is not None and n != 9]
    train.append(_slake_q("xmlab0", 40, "图片中有肝癌吗?", "是", "CLOSED", "CT", lang="zh"))
    train.append(_slake_q("xmlab1", 41, "Is there an abnormality?", "  ", "CLOSED", "MRI"))  # blank answer
    train.append(_slake_q("xmlab9", 42, "Is the liver healthy?", "No", "CLOSED", "CT"))  # truncated image
    train.append(_slake_q("xmlab77", 43, "Where is the liver?", "Left", "OPEN", "CT"))  # no such image
    test = [_slake_q("xmlab0", 100, "Does the liver look abnormal?", "Yes", "CLOSED", "CT"),
            _slake_q("xmlab0", 101, "Where is the abnormality?", "Liver", "OPEN", "CT"),
            _slake_q("xmlab1", 102, "Is there a brain tumor?", "yes", "closed", "MRI")]
    _json(f"{root}/train.json", train)
    _json(f"{root}/test.json", test)
    _bytes(f"{root}/validate.json", b'[{"img_id": 1, "img_name": "xmlab1/sou')
    vqa_good = {(q["img_name"], str(q["qid"])): ("train", "open") for q in train[: len(train) - 4]}
    vqa_good.update({(q["img_name"], str(q["qid"])): ("test", q["answer_type"].lower()) for q in test})
    vqa_bad = {"validate.json": "corrupt JSON", "imgs/xmlab1/source.jpg#41": "empty answer",
               "imgs/xmlab9/source.jpg#42": "unreadable image", "imgs/xmlab77/source.jpg#43": "missing image"}
    return good, bad, vqa_good, vqa_bad


# --------------------------------------------------------------------------- ChestX-Det


def film_image(h, w, seed):
    """A smooth chest-film-like gray image (two dark lung fields on a bright body, a spine):
    unlike noise it survives re-sizing, as real films do, so near-copy tests mean something."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w] / np.array([h, w])[:, None, None]
    img = 170 + 40 * yy
    for cx in (0.3, 0.7):
        cx += rng.uniform(-0.03, 0.03)
        img -= 90 * np.exp(-(((xx - cx) / 0.14) ** 2 + ((yy - 0.45) / 0.28) ** 2))
    img += 30 * np.exp(-(((xx - 0.5) / 0.04) ** 2))
    return np.clip(img, 0, 255).astype(np.uint8)


def _poly(x1, y1, x2, y2):
    return [[x1, y1], [x2, y1], [x2, y2], [x1, y2]]


def write_chestx_det(root):
    """ChestX_Det_{train,test}.json + train/*.png; polygons as [[x, y], ...] in pixels."""
    h, w = 64, 64
    good, bad, recs = {}, {}, []

    def rec(name, syms, polys, boxes=None, write=True, image=None):
        if write:
            _save(f"{root}/train/{name}", image if image is not None else gray_image(h, w, len(recs)), "PNG")
        recs.append({"file_name": name, "syms": syms, "boxes": boxes or [[0, 0, 1, 1]] * len(syms), "polygons": polys})
        return f"train/{name}"

    rel = rec("36199.png", ["Nodule", "Consolidation"], [_poly(10, 10, 20, 18), _poly(30, 30, 50, 50)])
    good[f"{rel}#Nodule"] = expect(rect_mask(h, w, 10, 10, 20, 18))  # consolidation excluded (diffuse)
    rel = rec("36200.png", ["Effusion", "Pneumothorax", "Effusion"],
              [_poly(5, 40, 15, 55), _poly(40, 2, 60, 12), _poly(48, 40, 58, 50)])
    good[f"{rel}#Effusion"] = expect(rect_mask(h, w, 5, 40, 15, 55) | rect_mask(h, w, 48, 40, 58, 50))
    good[f"{rel}#Pneumothorax"] = expect(rect_mask(h, w, 40, 2, 60, 12))
    good[rec("36201.png", [], [], [], image=film_image(h, w, 1))] = None  # no finding -> lesion-free
    rgb = np.repeat(gray_image(h, w, 99)[..., None], 3, axis=2)
    rgb[..., 0] = np.clip(rgb[..., 0].astype(int) + 7, 0, 255).astype(np.uint8)  # an RGB re-export, not gray
    good[rec("36207.png", [], [], [], image=rgb)] = None
    bad[rec("36202.png", ["Fibrosis"], [_poly(10, 10, 30, 30)])] = "excluded category"
    bad[rec("36203.png", ["Lung Opacity"], [_poly(10, 10, 30, 30)])] = "unknown category"
    bad[rec("36204.png", ["Mass"], [_poly(50, 50, 70, 60)])] = "polygon outside image"
    bad[rec("36205.png", ["Mass"], [_poly(5, 5, 9, 9)], write=False)] = "missing image"
    rel = rec("36206.png", ["Mass"], [_poly(5, 5, 9, 9)])
    _bytes(f"{root}/{rel}", truncated_bytes(gray_image(h, w, 6), "PNG"))
    bad[rel] = "unreadable image"
    bad[rec("36208.png", ["Nodule"], [[[3, 3], [9, 9]]])] = "bad polygon"
    _json(f"{root}/ChestX_Det_train.json", recs)
    _bytes(f"{root}/ChestX_Det_test.json", b'[{"file_name": "40001.png", "syms": ["Nodu')
    bad["ChestX_Det_test.json"] = "corrupt JSON"
    return good, bad


# --------------------------------------------------------------------------- HyperKvasir


def write_hyperkvasir(root):
    base = f"{root}/labeled-images"
    good, bad = {}, {}
    for i, cls in enumerate(["cecum", "ileum", "retroflex-rectum"]):
        rel = f"labeled-images/lower-gi-tract/anatomical-landmarks/{cls}/{i:08x}-0d1e-4c2b.jpg"
        _save(f"{root}/{rel}", colour_image(36, 44, i), "JPEG", quality=90)
        good[rel] = None
    _save(f"{base}/lower-gi-tract/pathological-findings/polyps/aa11.jpg", colour_image(36, 44, 7), "JPEG")
    _save(f"{base}/upper-gi-tract/anatomical-landmarks/pylorus/bb22.jpg", colour_image(36, 44, 8), "JPEG")
    rel = "labeled-images/lower-gi-tract/anatomical-landmarks/cecum/zero-length.jpg"
    _bytes(f"{root}/{rel}", b"")  # interrupted download
    bad[rel] = "unreadable image"
    _bytes(f"{base}/lower-gi-tract/anatomical-landmarks/cecum/.DS_Store", b"\0\0\0\1Bud1")
    _bytes(f"{base}/image-labels.csv", b"Video file,Organ,Finding,Classification\n")
    return good, bad


# --------------------------------------------------------------------------- TCGA-LGG (kaggle_3m)


def _lgg_slice(size, tissue_half, seed):
    """RGB slice: a centred square of brain (side 2*tissue_half) on a zero background."""
    img = np.zeros((size, size, 3), np.uint8)
    c = size // 2
    if tissue_half:
        rng = np.random.default_rng(seed)
        img[c - tissue_half : c + tissue_half, c - tissue_half : c + tissue_half] = rng.integers(
            90, 140, size=(2 * tissue_half, 2 * tissue_half, 3), dtype=np.uint8)
    return img


def write_lgg(root):
    """lgg-mri-segmentation/kaggle_3m/<TCGA_xx_xxxx_date>/<..>_<n>.tif + _mask.tif, the tree
    shipped twice as in the Kaggle archive. Patient A (slices 1..14) is built so that the rule
    (3 lesion slices by area, 2 lesion-free by tissue, gap 3, tissue >= 0.25) must pick lesion
    slices 5, 8, 11 and lesion-free slices 2, 14 (worked out in the comments below)."""
    size = 32
    base = f"{root}/lgg-mri-segmentation/kaggle_3m"
    good, bad = {}, {}
    pa_dir, pa = "TCGA_CS_4941_19960909", "lgg-mri-segmentation/kaggle_3m/TCGA_CS_4941_19960909"
    # tissue share = (2*half)^2 / 1024: half 5 -> 0.098 (too little), 9 -> 0.316, 10 -> 0.39, 12 -> 0.5625
    halves = {1: 5, 2: 9, 14: 10}
    # tumour (side lengths) on 5..11; areas 8 > 5 > 11 > 6, 7, 9, 10. By area: 8, then 9 and 7
    # (within 3 of 8: skipped), 5 (3 from 8: taken), 11 (taken) -> 5, 8, 11. Lesion-free need
    # no tumour within 3 slices of 5..11 -> only 1, 2, 14 qualify; 1 has too little tissue.
    sides = {5: 8, 6: 3, 7: 4, 8: 10, 9: 5, 10: 3, 11: 6}
    for n in range(1, 15):
        img = _lgg_slice(size, halves.get(n, 12), n)
        m = np.zeros((size, size), bool)
        if n in sides:
            m = rect_mask(size, size, 8, 8, 8 + sides[n] - 1, 8 + sides[n] - 1)
        _save(f"{base}/{pa_dir}/{pa_dir}_{n}.tif", img, "TIFF")
        rel = f"{pa}/{pa_dir}_{n}.tif"
        if n == 3:  # mask never written
            bad[rel] = "missing mask"
            continue
        mask = m.astype(np.uint8) * 255
        if n == 4:
            mask = np.zeros((size, size + 4), np.uint8)
            bad[rel] = "mask size differs"
        if n == 12:
            mask[0, 0], mask[1, 1] = 128, 255
            bad[rel] = "non-binary mask"
        _save(f"{base}/{pa_dir}/{pa_dir}_{n}_mask.tif", mask, "TIFF")
        if n == 13:
            _bytes(f"{base}/{pa_dir}/{pa_dir}_{n}.tif", truncated_bytes(img, "TIFF"))
            bad[rel] = "unreadable image"
        if n in (5, 8, 11):
            good[rel] = expect(m)
        if n in (2, 14):
            good[rel] = None
    # a stray copy made by a file manager
    _save(f"{base}/{pa_dir}/{pa_dir}_7 (copy).tif", _lgg_slice(size, 12, 7), "TIFF")
    bad[f"{pa}/{pa_dir}_7 (copy).tif"] = "unexpected file name"
    # patient B: every slice nearly empty -> no eligible slice
    pb_dir = "TCGA_DU_5851_19950428"
    for n in (1, 2, 3):
        _save(f"{base}/{pb_dir}/{pb_dir}_{n}.tif", _lgg_slice(size, 4, n), "TIFF")
        _save(f"{base}/{pb_dir}/{pb_dir}_{n}_mask.tif", np.zeros((size, size), np.uint8), "TIFF")
    bad[f"lgg-mri-segmentation/kaggle_3m/{pb_dir}"] = "no eligible slice"
    # the archive's second copy of the tree: patient B again, one level deeper
    dup = f"{root}/lgg-mri-segmentation/lgg-mri-segmentation/kaggle_3m/{pb_dir}"
    for n in (1, 2, 3):
        for suffix in ("", "_mask"):
            name = f"{pb_dir}_{n}{suffix}.tif"
            _save(f"{dup}/{name}", np.zeros((size, size), np.uint8), "TIFF")
            bad[f"lgg-mri-segmentation/lgg-mri-segmentation/kaggle_3m/{pb_dir}/{name}"] = "duplicate copy"
    _bytes(f"{base}/data.csv", b"Patient,RNASeqCluster\nTCGA_CS_4941,2\n")
    _bytes(f"{base}/README.md", b"LGG segmentation dataset\n")
    return good, bad


# --------------------------------------------------------------------------- BraTS


def _nii(path, data, affine=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    nib.save(nib.Nifti1Image(data, np.eye(4) if affine is None else affine), path)


def _brats_volumes(seed, labels_used):
    """(flair, seg) 24x24x16: brain box on z 1..14 with the tissue share per slice below, tumour
    on z 4..10 with areas 7 > 4 > 10 > 5, 6, 8, 9. Rule: lesion 4, 7, 10 (7 first; 5, 6, 8, 9 are
    within 3 of it or of 4 / 10); lesion-free only z <= 1 or z >= 13 qualify: 0 and 15 have no
    brain, 1 has 0.17 < 0.25, 13 (0.44) beats 14 (0.34) and 14 is within 3 of 13 -> 13 only."""
    rng = np.random.default_rng(seed)
    flair = np.zeros((24, 24, 16), np.float32)
    seg = np.zeros((24, 24, 16), np.uint8)
    half = {1: 5, 13: 8, 14: 15 // 2}
    for z in range(1, 15):
        hh = half.get(z, 10)
        flair[12 - hh : 12 + hh, 12 - hh : 12 + hh, z] = rng.uniform(90, 110, size=(2 * hh, 2 * hh))
    sides = {4: 8, 5: 3, 6: 4, 7: 10, 8: 5, 9: 3, 10: 6}
    for z, s in sides.items():
        seg[6 : 6 + s, 7 : 7 + s, z] = labels_used[0]
        seg[6, 7, z] = labels_used[-1]  # a second label value inside the same tumour
        flair[6 : 6 + s, 7 : 7 + s, z] = 160
    return flair, seg


def _brats_expect(seg):
    out = {}
    for z in (4, 7, 10):
        m = np.ascontiguousarray((seg[:, :, z] > 0).T[::-1, ::-1])  # RAS+ axial, radiological display
        out[z] = expect(m)
    return out


def write_brats(root):
    good, bad = {}, {}
    # 2021: BraTS2021_00000 with all four modalities
    d = "BraTS2021_Training_Data/BraTS2021_00000"
    flair, seg = _brats_volumes(0, (1, 4))
    _nii(f"{root}/{d}/BraTS2021_00000_flair.nii.gz", flair)
    for mod in ("t1", "t1ce", "t2"):
        _nii(f"{root}/{d}/BraTS2021_00000_{mod}.nii.gz", flair * 0.5)
    _nii(f"{root}/{d}/BraTS2021_00000_seg.nii.gz", seg)
    for z, want in _brats_expect(seg).items():
        good[f"{d}/BraTS2021_00000_flair.nii.gz#z={z}"] = want
    good[f"{d}/BraTS2021_00000_flair.nii.gz#z=13"] = None
    # 2020 case 355: its segmentation shipped under another name, uncompressed
    d = "MICCAI_BraTS2020_TrainingData/BraTS20_Training_355"
    flair, seg = _brats_volumes(1, (2, 4))
    _nii(f"{root}/{d}/BraTS20_Training_355_flair.nii", flair)
    _nii(f"{root}/{d}/W39_1998.09.19_Segm.nii", seg)
    for z, want in _brats_expect(seg).items():
        good[f"{d}/BraTS20_Training_355_flair.nii#z={z}"] = want
    good[f"{d}/BraTS20_Training_355_flair.nii#z=13"] = None
    # 2023 meningioma: -t2f / -seg naming, labels 0..3
    d = "BraTS2023-MEN-Train/BraTS-MEN-00012-001"
    flair, seg = _brats_volumes(2, (1, 3))
    _nii(f"{root}/{d}/BraTS-MEN-00012-001-t2f.nii.gz", flair)
    _nii(f"{root}/{d}/BraTS-MEN-00012-001-t1c.nii.gz", flair)
    _nii(f"{root}/{d}/BraTS-MEN-00012-001-seg.nii.gz", seg)
    for z, want in _brats_expect(seg).items():
        good[f"{d}/BraTS-MEN-00012-001-t2f.nii.gz#z={z}"] = want
    good[f"{d}/BraTS-MEN-00012-001-t2f.nii.gz#z=13"] = None
    # 2023 file with a 2021 label value (4): another release's label map slipped in
    d = "BraTS2023-MEN-Train/BraTS-MEN-00013-000"
    flair, seg = _brats_volumes(3, (1, 4))
    _nii(f"{root}/{d}/BraTS-MEN-00013-000-t2f.nii.gz", flair)
    _nii(f"{root}/{d}/BraTS-MEN-00013-000-seg.nii.gz", seg)
    bad[f"{d}/BraTS-MEN-00013-000-t2f.nii.gz"] = "unexpected label value"
    # validation-style folder: no segmentation
    d = "BraTS2021_Training_Data/BraTS2021_00001"
    _nii(f"{root}/{d}/BraTS2021_00001_flair.nii.gz", flair)
    bad[f"{d}/BraTS2021_00001_flair.nii.gz"] = "missing segmentation"
    # truncated download of a FLAIR
    d = "BraTS2021_Training_Data/BraTS2021_00002"
    _nii(f"{root}/{d}/BraTS2021_00002_seg.nii.gz", seg)
    buf = gzip.compress(nib.Nifti1Image(flair, np.eye(4)).to_bytes())
    _bytes(f"{root}/{d}/BraTS2021_00002_flair.nii.gz", buf[: len(buf) // 2])
    bad[f"{d}/BraTS2021_00002_flair.nii.gz"] = "corrupt NIfTI"
    # segmentation of another shape
    d = "BraTS2021_Training_Data/BraTS2021_00003"
    _nii(f"{root}/{d}/BraTS2021_00003_flair.nii.gz", flair)
    _nii(f"{root}/{d}/BraTS2021_00003_seg.nii.gz", seg[:, :, :12])
    bad[f"{d}/BraTS2021_00003_flair.nii.gz"] = "segmentation shape differs"
    return good, bad


# --------------------------------------------------------------------------- QaTa-COV19


def write_qata(root):
    h, w = 40, 40
    good, bad = {}, {}
    for split, name, box in [("Train Set", "covid_1", (4, 6, 15, 20)),
                             ("Test Set", "sub-S09393_ses-E16849_run-1_bp-chest_vp-ap_cr", (10, 10, 25, 22))]:
        rel = f"QaTa-COV19-v2/{split}/Images/{name}.png"
        _save(f"{root}/{rel}", gray_image(h, w, len(good)), "PNG")
        m = rect_mask(h, w, *box)
        _save(f"{root}/QaTa-COV19-v2/{split}/Ground-truths/mask_{name}.png", m.astype(np.uint8) * 255, "PNG")
        good[rel] = expect(m)
    base = "QaTa-COV19-v2/Train Set"

    def case(name, mask):
        rel = f"{base}/Images/{name}.png"
        _save(f"{root}/{rel}", gray_image(h, w, 50), "PNG")
        if mask is not None:
            _save(f"{root}/{base}/Ground-truths/mask_{name}.png", mask, "PNG")
        return rel

    bad[case("covid_2", None)] = "missing mask"
    bad[case("covid_3", np.zeros((h, w), np.uint8))] = "empty mask"
    bad[case("covid_4", np.zeros((h, w + 8), np.uint8))] = "mask size differs"
    bad[case("covid_5", np.full((h, w), 255, np.uint8))] = "whole-image mask"
    soft = np.zeros((h, w), np.uint8)
    soft[5:10, 5:10], soft[12:20, 12:20] = 128, 255
    bad[case("covid_6", soft)] = "non-binary mask"
    return good, bad
