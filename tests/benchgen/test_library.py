"""benchgen's library (no Ray): schema checkpoints, extraction, questions, grounded check,
reports and volumes input with rejects, montage geometry, DICOM reading (benchmark-MCQ paper Methods)."""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter

import numpy as np
import pytest

from medscope.benchgen import cohort, phantom, questions
from medscope.benchgen import schema as sch
from medscope.benchgen.extract import extract_rules, read_extraction
from medscope.errors import MedScopeError
from medscope.volumes.render import apply_window, montage_indices
from medscope.volumes.nifti import VolumeError, axial_slice

FINDINGS = ("LIVER: Two hypoattenuating lesions are seen in the right hepatic lobe, the largest measuring 2.4 cm. "
            "No washout. The portal and hepatic veins are patent.\nSPLEEN: Normal in size, measuring 11.0 cm.")
IMPRESSION = "1. Two hypoattenuating hepatic lesions in the right hepatic lobe, suspicious for metastatic disease."


@pytest.mark.parametrize("name", sorted(sch.SHIPPED))
def test_shipped_schemas_load(name):
    s = sch.load_schema(name)
    assert s.fields and all(f.question.endswith("?") for f in s.fields)


def test_build_refuses_unapproved_or_changed_schema(tmp_path):
    path = str(tmp_path / "liver.yaml")
    shutil.copyfile(sch.shipped_path("liver"), path)
    with pytest.raises(MedScopeError, match="schema not approved; templates not approved"):
        sch.require_approved(path, questions.REPORT_PROMPT)
    sch.approve(path, "schema", "Dr A", questions.REPORT_PROMPT)
    with pytest.raises(MedScopeError, match="templates not approved"):
        sch.require_approved(path, questions.REPORT_PROMPT)
    sch.approve(path, "templates", "Dr B", questions.REPORT_PROMPT)
    rec = sch.require_approved(path, questions.REPORT_PROMPT)
    assert rec["schema"]["by"] == "Dr A" and len(rec["templates"]["sha256"]) == 64
    # rewording a question changes what the template checkpoint approved, not the schema's
    text = open(path).read().replace("How many focal liver observations", "How many liver lesions")
    open(path, "w").write(text)
    with pytest.raises(MedScopeError, match="templates changed since it was approved"):
        sch.require_approved(path, questions.REPORT_PROMPT)
    # and a changed generation prompt is a changed template too
    sch.approve(path, "templates", "Dr B", questions.REPORT_PROMPT)
    with pytest.raises(MedScopeError, match="templates changed"):
        sch.require_approved(path, questions.REPORT_PROMPT + " Be brief.")


def test_rule_extraction_negation_bins_and_first_match():
    s = sch.load_schema("liver")
    got = {k: v[0] for k, v in extract_rules(s, FINDINGS, IMPRESSION).items()}
    assert got == {"observation_present": "yes", "observation_count": "two", "largest_size": "20 mm or larger",
                   "lobe": "right lobe", "washout": "no", "tumor_in_vein": "no"}
    # 2.4 cm -> 24 mm; 9 mm -> below 10; the spleen's 11 cm is no lesion size (context patterns)
    got = extract_rules(s, "LIVER: A hypodense lesion measuring 9 mm.", "")
    assert got["largest_size"][0] == "less than 10 mm" and got["observation_count"][0] == "one"
    got = extract_rules(s, "LIVER: No focal hepatic lesion.\nSPLEEN: measuring 14 cm.", "")
    assert got["observation_present"][0] == "no" and "largest_size" not in got


def test_llm_extraction_reply_is_validated():
    s = sch.load_schema("liver")
    reply = "Here you go: " + json.dumps({"observation_present": "yes", "lobe": "the moon", "washout": "no",
                                          "evidence": {"observation_present": "No such sentence."}})
    got, dropped = read_extraction(s, reply, FINDINGS, IMPRESSION)
    assert got == {"washout": ("no", "")}
    assert dict(dropped) == {"observation_present": "evidence_not_in_report", "lobe": "value_not_allowed:the moon"}
    assert read_extraction(s, "no json here", FINDINGS, IMPRESSION) == ({}, [("*", "reply_not_json")])


def test_schema_questions_binary_and_dataset_distractors():
    s = sch.load_schema("liver")
    fields = extract_rules(s, FINDINGS, IMPRESSION)
    pools = {"lobe": Counter({"right lobe": 3, "caudate lobe": 1}), "observation_count": Counter({"two": 2})}
    qs = {q["field"]: q for q in questions.schema_questions(s, "case1", fields, pools)}
    binary = qs["washout"]
    assert sorted(binary["options"]) == ["No", "Yes"] and binary["options"][ord(binary["answer"]) - 65] == "No"
    lobe = qs["lobe"]
    assert 3 <= lobe["k"] <= 5 and lobe["options"][ord(lobe["answer"]) - 65] == "right lobe"
    assert "caudate lobe" in lobe["options"]  # the distractor seen elsewhere in the dataset
    count = qs["observation_count"]
    assert count["k"] == 3 and set(count["options"]) == {"one", "two", "three or more"}
    again = questions.schema_questions(s, "case1", fields, pools)
    assert [q["options"] for q in again] == [q["options"] for q in qs.values()]  # deterministic


def _gen(qs):
    return json.dumps({"questions": qs})


def test_grounded_check_rejects_unsupported_and_keeps_supported():
    ok = {"question": "Where are the liver lesions located?", "options": ["left hepatic lobe", "right hepatic lobe",
          "caudate lobe", "both hepatic lobes"], "answer": 1, "level": "perception", "evidence": ""}
    wrong_size = {"question": "What is the size of the largest lesion?", "options": ["3.1 cm", "2.4 cm"], "answer": 0,
                  "level": "characterization", "evidence": ""}
    fake_quote = {**ok, "evidence": "Lesions are in the right hepatic lobe and invade the IVC."}
    splenomegaly = {"question": "Is there splenomegaly?", "options": ["Yes", "No"], "answer": 0,
                    "level": "perception", "evidence": "SPLEEN: Normal in size, measuring 11.0 cm."}
    negated = {"question": "Is there washout?", "options": ["Yes", "No"], "answer": 1, "level": "characterization",
               "evidence": "No washout."}
    one_option = {"question": "Which kidney is abnormal?", "options": ["left"], "answer": 0, "level": "perception"}
    dup = {"question": "Which lobe is involved?", "options": ["right", "Right"], "answer": 0, "level": "perception"}
    bad_level = {**ok, "level": "recall"}
    reply = _gen([ok, wrong_size, fake_quote, splenomegaly, negated, one_option, dup, bad_level])
    kept, rejects = questions.report_questions("c1", reply, FINDINGS, IMPRESSION)
    assert [q["question"] for q in kept] == [ok["question"], negated["question"]]
    assert kept[0]["options"][ord(kept[0]["answer"]) - 65] == "right hepatic lobe"
    assert kept[0]["subcategory"] == "anatomic distribution" and "right hepatic lobe" in kept[0]["evidence"]
    assert {r[0]: r[1] for r in rejects} == {
        "c1/report/1": "grounding:quantity_not_stated", "c1/report/2": "grounding:evidence_not_in_report",
        "c1/report/3": "grounding:contradicted_by_report", "c1/report/5": "structure:option_count_outside_2_5",
        "c1/report/6": "structure:duplicate_options", "c1/report/7": "structure:unknown_level"}
    assert questions.report_questions("c1", "sorry", FINDINGS, IMPRESSION) == ([], [("c1/report", "reply_not_json")])


def test_reports_reader_and_pairing_reject_bad_input(tmp_path):
    csv_path = tmp_path / "reports.csv"
    csv_path.write_text("case_id,study,findings,impression\n"
                        "c1,CT,Lesion in liver.,Metastasis.\n"
                        ",CT,text,text\n"
                        "c2,CT,,Impression only.\n"
                        "c1,CT,Again.,Again.\n"
                        "c3,CT,Findings.,\n"
                        "c4,CT,Findings.,Impression.\n")
    rows, rejects = cohort.read_reports(str(csv_path))
    assert [r["case_id"] for r in rows] == ["c1", "c4"]
    assert [(r["item_id"], r["reason"]) for r in rejects] == [
        ("row 2", "no_case_id"), ("c2", "empty_findings"), ("c1", "duplicate_report"), ("c3", "empty_impression")]
    jl = tmp_path / "r.jsonl"
    jl.write_text('{"case_id": "c1", "findings": "f", "impression": "i"}\nnot json\n')
    rows, rejects = cohort.read_reports(str(jl))
    assert len(rows) == 1 and rejects[0]["reason"] == "not_json"
    vols = tmp_path / "vols"
    for case, seq in [("c1", "ct.nii.gz"), ("c5", "ct.nii.gz")]:
        (vols / case).mkdir(parents=True)
        (vols / case / seq).write_bytes(b"x")
    (vols / "c1" / "t2").mkdir()
    index = cohort.index_volumes(str(vols))
    assert set(index["c1"]) == {"ct", "t2"}
    studies, rejects = cohort.pair_studies([{"case_id": "c1", "findings": "f", "impression": "i"},
                                            {"case_id": "c4", "findings": "f", "impression": "i"}], index, {"ct"}, "x")
    assert [s["case_id"] for s in studies] == ["c1"] and list(studies[0]["sequences"]) == ["ct"]
    assert {(r["item_id"], r["reason"]) for r in rejects} == {("c4", "report_without_study"),
                                                              ("c5", "study_without_report")}


def test_montage_geometry_and_windows():
    vol = np.zeros((96, 80, 40), dtype=np.float32)
    for z in range(40):
        vol[:, :, z] = z * 10.0  # each slice its own HU, so tiles identify their slice
    img = cohort.sequence_montage(vol, sch.SequenceSpec(modality="CT", window=(400.0, 200.0)))
    tile_h, tile_w = 80, 96  # axial display: rows = anterior-posterior (Y), columns = X
    assert img.shape == (12 * tile_h, 12 * tile_w, 3)
    idx = montage_indices(40)
    assert len(idx) == 144 and idx[0] == 0 and idx[-1] == 39 and np.all(np.diff(idx) >= 0)
    for n in (0, 13, 77, 143):
        r, c = divmod(n, 12)
        tile = img[r * tile_h:(r + 1) * tile_h, c * tile_w:(c + 1) * tile_w, 0]
        assert np.all(tile == apply_window(np.float32(idx[n] * 10.0), 400.0, 200.0))
    big = cohort.sequence_montage(np.zeros((256, 200, 30), np.float32), sch.SequenceSpec(modality="CT"))
    assert max(big.shape[:2]) == 1536 and big.shape[1] == 1536 and big.shape[0] == round(1536 * 200 / 256)
    mr = np.random.default_rng(0).gamma(2.0, 100.0, (32, 32, 20)).astype(np.float32)
    width, level = cohort.percentile_window(mr)
    lo, hi = np.percentile(mr[mr > 0], [1, 99])
    assert level - width / 2 == pytest.approx(lo) and level + width / 2 == pytest.approx(hi)
    out = cohort.sequence_montage(mr, sch.SequenceSpec(modality="MR"))
    assert out.shape == (384, 384, 3) and out.max() == 255 and out.min() == 0
    # 3D ultrasound has no calibrated units either: the same percentile rendering as MR
    us = cohort.sequence_montage(mr, sch.SequenceSpec(modality="US"))
    assert np.array_equal(us, out)
    with pytest.raises(ValueError):
        sch.SequenceSpec(modality="PET")


def _dicom_slice(pixels: np.ndarray, z: float, n: int) -> bytes:
    import pydicom
    from pydicom.dataset import FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = pydicom.Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Modality, ds.InstanceNumber = "CT", n
    ds.Rows, ds.Columns = pixels.shape
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
    ds.ImagePositionPatient = [0, 0, z]
    ds.RescaleSlope, ds.RescaleIntercept = 1, -1024
    ds.PixelData = pixels.astype(np.int16).tobytes()
    buf = io.BytesIO()
    pydicom.dcmwrite(buf, ds, enforce_file_format=True)
    return buf.getvalue()


def test_dicom_series_reads_in_ras_order(tmp_path):
    series = tmp_path / "c1" / "ct"
    series.mkdir(parents=True)
    rows, cols = 6, 5
    for n, z in enumerate([10.0, 0.0, 5.0]):  # files out of order: sorted by position
        px = np.full((rows, cols), 1024 + int(z), np.int16)
        px[0, 0] = 2000  # pixel (row 0, col 0): the patient's right-anterior corner in LPS
        (series / f"{n}.dcm").write_bytes(_dicom_slice(px, z, n))
    vol = cohort.read_sequence(str(series))
    assert vol.shape == (cols, rows, 3)
    assert list(vol[1, 1, :]) == [0.0, 5.0, 10.0]  # HU after rescale, inferior to superior
    # RAS: x grows to the patient's right and y to anterior, so LPS (row 0, col 0) lands at max x, max y
    assert vol[cols - 1, rows - 1, 0] == 2000 - 1024
    (series / "bad.dcm").write_bytes(b"not dicom")
    with pytest.raises(Exception, match="unreadable_dicom"):
        cohort.read_sequence(str(series))


@pytest.mark.parametrize("name, text", [("reports.jsonl", ""), ("reports.jsonl", "\n  \n"),
                                        ("reports.csv", "case_id,study,findings,impression\n")])
def test_a_reports_file_with_no_report_is_one_error_naming_it(tmp_path, name, text):
    # issue 51: an empty export went on to fail on the build's own empty items table
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(MedScopeError, match=rf"^{path}: no reports in this file \(it is empty, blank or a CSV "
                                            r"header alone\)"):
        cohort.read_reports(str(path))


def test_phantom_reports_match_label_maps(tmp_path):
    out = phantom.phantom_cohort(str(tmp_path), n_cases=3, shape=(64, 64, 24))
    import nibabel as nib

    reports = [json.loads(line) for line in open(out["reports"])]
    for r in reports:
        lab = np.asarray(nib.load(str(tmp_path / "labels" / f"{r['case_id']}.nii.gz")).dataobj)
        spacing = nib.load(str(tmp_path / "labels" / f"{r['case_id']}.nii.gz")).header.get_zooms()
        lesions = phantom.measure_lesions(lab, spacing)
        if not lesions:
            assert "No focal hepatic lesion" in r["findings"]
            continue
        assert f"{lesions[0]['size_mm'] / 10:.1f} cm" in r["findings"]
        assert phantom.NUMBER_WORDS[len(lesions)] in r["findings"]
    assert any("No focal hepatic lesion" in r["findings"] for r in reports)
    assert any("hypoattenuating" in r["findings"] for r in reports)
    png = cohort.sequence_montage(cohort.read_sequence(str(tmp_path / "volumes" / reports[1]["case_id"] / "ct.nii.gz")),
                                  sch.load_schema("liver").sequences["ct"])
    assert png.shape[:2] == (12 * 64, 12 * 64)


def test_unreadable_series_becomes_a_reject_and_its_questions_are_not_shown(tmp_path):
    from medscope.benchgen.build import render_study, study_questions

    out = phantom.phantom_cohort(str(tmp_path), n_cases=2, shape=(32, 32, 12))
    s = sch.load_schema("liver")
    good = str(tmp_path / "volumes" / "phantom-001" / "ct.nii.gz")
    bad = tmp_path / "volumes" / "phantom-001" / "t2.nii.gz"
    bad.write_bytes(b"\x1f\x8b not really gzip")
    report = json.loads(open(out["reports"]).read().splitlines()[1])
    study = {**report, "sequences": {"ct": good, "t2": str(bad)}}
    montages, rejects = render_study(study, s)
    assert [m["sequence"] for m in montages] == ["ct"]
    assert [(r["item_id"], r["reason"]) for r in rejects] == [("phantom-001", "corrupt_nifti")]
    fields = extract_rules(s, report["findings"], report["impression"])
    rows, qrej = study_questions(study, s, fields, {}, None, {"ct"}, {"name": "c", "private": True})
    assert rows and all(r["sequences"] == ["ct"] for r in rows)  # only what was rendered is shown
    # a field that needs the arterial phase this case lacks is rejected, never shown without it
    needs = {**fields, "arterial_hyperenhancement": ("yes", "APHE.")}
    rows2, qrej2 = study_questions(study, s, needs, {}, None, {"ct"}, {"name": "c", "private": True})
    assert len(rows2) == len(rows) and [r["reason"] for r in qrej2] == ["missing_sequence"]


def test_mammographic_view_is_one_image_never_tiled():
    # A projection (MG) is shown whole: a 1-slice volume renders as that slice in radiological
    # display, percentile-scaled (1st percentile -> 0, 99th -> 255), at most max_side on its long side.
    rng = np.random.default_rng(3)
    view = rng.gamma(2.0, 100.0, (60, 40, 1)).astype(np.float32)
    img = cohort.sequence_montage(view, sch.SequenceSpec(modality="MG"))
    lo, hi = np.percentile(view[view > 0], [1, 99])
    want = apply_window(axial_slice(view, 0), float(hi - lo), float(hi + lo) / 2.0)
    assert img.shape == (40, 60, 3) and np.array_equal(img[:, :, 0], want)
    assert np.array_equal(cohort.sequence_montage(view[:, :, 0], sch.SequenceSpec(modality="MG")), img)
    small = cohort.sequence_montage(view, sch.SequenceSpec(modality="MG"), max_side=30)
    assert small.shape == (20, 30, 3)
    with pytest.raises(VolumeError) as err:  # a tomosynthesis-like stack is no mammographic view
        cohort.sequence_montage(np.zeros((60, 40, 5), np.float32), sch.SequenceSpec(modality="MG"))
    assert err.value.reason == "projection_with_slices" and "5 slices" in err.value.detail


def test_render_study_rejects_a_stacked_mammographic_view_and_keeps_the_others(tmp_path):
    import nibabel as nib

    schema = sch.Schema.model_validate({
        "name": "breast_t", "organ": "breast", "framework": "t",
        "sequences": {"cc": {"modality": "MG"}, "mlo": {"modality": "MG"}},
        "fields": [{"name": "lesion_present", "type": "binary", "subcategory": "s", "question": "q?",
                    "no_patterns": ["no mass"], "yes_patterns": ["mass"]}]})
    cc, mlo = tmp_path / "cc.nii.gz", tmp_path / "mlo.nii.gz"
    nib.save(nib.Nifti1Image(np.arange(24 * 16, dtype=np.float32).reshape(24, 16, 1), np.eye(4)), cc)
    nib.save(nib.Nifti1Image(np.ones((24, 16, 3), np.float32), np.eye(4)), mlo)
    from medscope.benchgen.build import render_study
    rows, rejects = render_study({"case_id": "b1", "sequences": {"cc": str(cc), "mlo": str(mlo)}}, schema)
    assert [(r["sequence"], r["height"], r["width"], r["slices"]) for r in rows] == [("cc", 16, 24, 1)]
    assert len(rejects) == 1 and rejects[0]["reason"] == "projection_with_slices" and "mlo" in rejects[0]["source"]
