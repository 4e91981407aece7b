"""``medscope pairs generate | review | build`` (paired-modality paper §3.3): candidates from the procedural
generator and from a provider image endpoint on loopback, the review file (approve / reject /
retry with feedback), and a manifest holding only approved photographs with their provenance."""

from __future__ import annotations

import io

import numpy as np
import pytest
import yaml
from PIL import Image

from medscope import config as cfgmod
from medscope.images import decode_png
from medscope.pairs import review as rv
from medscope.pairs.embedded import embedded_spec
from medscope.pairs.generators import build_generator, ProceduralGenerator
from medscope.pairs.spec import PairsSpec
from medscope.protocols.paired_modality import tables
from medscope.protocols.paired_modality.manifest import read_manifest
from medscope.testing.images import FakeImageProvider


def _two_condition_spec(**generator) -> PairsSpec:
    spec = embedded_spec().model_dump(exclude_unset=True)
    spec["conditions"] = spec["conditions"][:2]
    spec["generator"] = {**spec["generator"], **generator}
    if spec["generator"]["kind"] != "procedural":  # marks and regions are the procedural generator's
        for c in spec["conditions"]:
            c.pop("region")
            c["matched"].pop("mark")
            c["mismatched"].pop("mark")
    return cfgmod.parse(PairsSpec, spec)


def test_review_round_trip_only_approved_photos_enter_the_manifest(tmp_path):
    spec = _two_condition_spec()
    work, out = str(tmp_path / "work"), str(tmp_path / "set")
    gen = ProceduralGenerator(spec.generator)
    first = rv.generate_round(spec, work, gen)
    assert (first["generated"], first["pending_review"]) == (4, 4)
    # nothing new while candidates wait for review
    assert rv.generate_round(spec, work, gen)["generated"] == 0
    ids = {(c["condition"], c["photo_type"]): c["id"] for c in rv.load_review(work)["candidates"]}
    a, b = spec.conditions[0].condition, spec.conditions[1].condition
    rv.decide(work, [ids[(a, "matched")], ids[(a, "mismatched")], ids[(b, "matched")]], "approve", reviewer="dr-a")
    rv.decide(work, [ids[(b, "mismatched")]], "retry", feedback="fewer papules, keep the same person", reviewer="dr-a")
    partial = rv.build(spec, work, out)
    assert partial["conditions"] == 1 and partial["incomplete"] == [{"condition": b, "missing": ["mismatched"]}]
    again = rv.generate_round(spec, work, gen)
    assert again["generated"] == 1  # only the retried slot
    cands = rv.load_review(work)["candidates"]
    retry = next(c for c in cands if c["attempt"] == 2)
    assert retry["parent"] == ids[(b, "mismatched")] and "Reviewer feedback: fewer papules" in retry["prompt"]
    assert retry["seed"] == spec.conditions[1].seed + 1000
    rv.decide(work, [retry["id"]], "reject", reviewer="dr-b")
    third = rv.generate_round(spec, work, gen)
    assert third["generated"] == 1  # a rejected slot gets a fresh attempt, feedback kept in its prompt
    last = rv.load_review(work)["candidates"][-1]
    assert last["attempt"] == 3 and last["parent"] is None and "fewer papules" in last["prompt"]
    rv.decide(work, ["all-pending"], "approve", reviewer="dr-b")
    built = rv.build(spec, work, out)
    assert built["conditions"] == 2 and not built["incomplete"]
    manifest = yaml.safe_load(open(built["manifest"]))
    prov = manifest["conditions"][1]["mismatched"]["provenance"]
    assert prov["candidate"] == last["id"] and prov["seed"] == last["seed"]
    assert [h["decision"] for h in prov["review_history"]] == ["retry", "reject", "approve"]
    assert prov["review_history"][0]["feedback"] == "fewer papules, keep the same person"
    photos, rejects = read_manifest(built["manifest"])
    assert len(photos) == 4 and not rejects
    # same person, other finding: the two photographs of a condition share the subject's pixels
    m, x = (decode_png(p.photo_png).astype(int) for p in photos[:2])
    assert (abs(m - x).max(axis=2) == 0).mean() > 0.6


def test_provider_endpoint_generates_and_edits_on_loopback(tmp_path, monkeypatch):
    server = FakeImageProvider(expected_key="img-key")
    monkeypatch.setenv("PAIRS_TEST_IMAGE_KEY", "img-key")
    try:
        spec = _two_condition_spec(kind="provider", model="image-model-1", base_url=server.url,
                                   api_key_env="PAIRS_TEST_IMAGE_KEY", size=256)
        spec = spec.model_copy(update={"conditions": [c.model_copy(update={"strategy": "edit_from_matched"})
                                                      for c in spec.conditions]})
        work = str(tmp_path / "work")
        gen = build_generator(spec.generator)
        first = rv.generate_round(spec, work, gen)
        # mismatched photographs wait for an approved matched one to edit
        assert (first["generated"], first["waiting_for_matched"]) == (2, 2)
        assert [r.path for r in server.requests] == ["/v1/images/generations"] * 2
        assert rv.generate_round(spec, work, gen)["generated"] == 0  # still waiting for review
        rv.decide(work, ["all-pending"], "approve", reviewer="dr-c")
        second = rv.generate_round(spec, work, gen)
        assert (second["generated"], second["waiting_for_matched"]) == (2, 0)
        cands = rv.load_review(work)["candidates"]
        assert len(cands) == 4
        edits = [r for r in server.requests if r.path == "/v1/images/edits"]
        assert len(edits) == 2 and all(r.has_image and r.model == "image-model-1" for r in edits)
        mism = [c for c in cands if c["photo_type"] == "mismatched"]
        assert all(c["parent"].endswith(":matched:a1:0") for c in mism)
        assert all(c["seed"] is None for c in cands)  # the endpoint takes no seed: none is claimed
        rv.decide(work, ["all-pending"], "approve", reviewer="dr-c")
        built = rv.build(spec, work, str(tmp_path / "set"))
        photos, rejects = read_manifest(built["manifest"])
        assert len(photos) == 4 and not rejects
        assert all(p.provenance["generator"] == "provider" for p in photos)
    finally:
        server.close()


def test_cli_check_reports_manifest_rejects(tmp_path, capsys):
    import json

    from medscope.pairs.embedded import write_embedded_set
    from pipelines.cli import main

    out = tmp_path / "set"
    write_embedded_set(str(out))
    manifest = yaml.safe_load((out / tables.MANIFEST).read_text())
    manifest["conditions"][0]["mismatched"]["caption"] = ""
    manifest["conditions"].append(dict(manifest["conditions"][1]))
    (out / tables.MANIFEST).write_text(yaml.safe_dump(manifest))
    assert main(["pairs", "check", str(out)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["photos"] == 11 and got["rejects"] == {"duplicate condition": 1, "photo without caption": 1}
    assert (out / tables.MANIFEST_REJECTS).exists()


# -- pairs that are really pairs --------------------------------------------------------------------------------


def test_procedural_candidates_and_retries_keep_the_subject(tmp_path):
    spec = _two_condition_spec().model_copy(update={"candidates_per_round": 2})
    spec = spec.model_copy(update={"conditions": spec.conditions[:1]})
    work = str(tmp_path / "work")
    gen = ProceduralGenerator(spec.generator)
    rv.generate_round(spec, work, gen)
    rv.decide(work, ["varicella-pneumonia:matched:a1:1"], "approve", reviewer="dr-a")
    rv.decide(work, ["varicella-pneumonia:mismatched:a1:1"], "retry", "fewer papules", reviewer="dr-a")
    rv.decide(work, ["all-pending"], "reject", reviewer="dr-a")
    rv.generate_round(spec, work, gen)  # a retry (edit) with two new candidates, new seeds
    rv.decide(work, ["varicella-pneumonia:mismatched:a2:1"], "approve", reviewer="dr-b")
    cands = rv.load_review(work)["candidates"]
    assert len({c["seed"] for c in cands}) == 4 and {c["subject"] for c in cands} == {"seed:11"}
    built = rv.build(spec, work, str(tmp_path / "set"))
    photos, rejects = read_manifest(built["manifest"])
    assert len(photos) == 2 and not rejects
    # the same person: the drawn skin tone agrees (the bug had (68,45,29) against (142,109,82))
    m, x = (decode_png(p.photo_png).reshape(-1, 3).astype(float) for p in photos)
    assert abs(np.median(m, 0) - np.median(x, 0)).max() < 8


def test_check_refuses_two_people_from_an_unseeded_endpoint(tmp_path, monkeypatch):
    server = FakeImageProvider()
    monkeypatch.setenv("PAIRS_TEST_IMAGE_KEY", "img-key")
    try:
        spec = _two_condition_spec(kind="provider", model="image-model-1", base_url=server.url,
                                   api_key_env="PAIRS_TEST_IMAGE_KEY", size=64)
        spec = spec.model_copy(update={"conditions": [c.model_copy(update={"strategy": "independent"})
                                                      for c in spec.conditions[:1]]})
        work = str(tmp_path / "work")
        rv.generate_round(spec, work, build_generator(spec.generator))
        rv.decide(work, ["all-pending"], "approve", reviewer="dr-c")
        built = rv.build(spec, work, str(tmp_path / "set"))
    finally:
        server.close()
    photos, rejects = read_manifest(built["manifest"])
    assert not photos and {r["reason"] for r in rejects} == {"subject differs"}


def test_generator_options_are_validated(tmp_path):
    import pytest

    from medscope.errors import MedScopeError

    example = yaml.safe_load(open("configs/pairs/example.yaml").read())
    # the reproduction: the example copied with kind procedural
    with pytest.raises(MedScopeError, match="does not use .*model_dir"):
        cfgmod.parse(PairsSpec, {**example, "generator": {**example["generator"], "kind": "procedural"}})
    with pytest.raises(MedScopeError, match="need an image model"):  # strategy 4 is no drawing option
        cfgmod.parse(PairsSpec, {**example, "generator": {"kind": "procedural"}})
    cond = dict(example["conditions"][0], matched={k: v for k, v in example["conditions"][0]["matched"].items()
                                                   if k != "edit_box"})
    example = {**example, "conditions": [cond]}
    with pytest.raises(MedScopeError, match="two different marks"):
        cfgmod.parse(PairsSpec, {**example, "generator": {"kind": "procedural"}})
    with pytest.raises(MedScopeError, match="not drawn on skin"):
        bad = dict(example["conditions"][0], matched={**example["conditions"][0]["matched"], "mark": "cyanosis"})
        cfgmod.parse(PairsSpec, {**example, "generator": {"kind": "procedural"}, "conditions": [bad]})
    with pytest.raises(MedScopeError, match="needs model_dir"):
        cfgmod.parse(PairsSpec, {**example, "generator": {"kind": "diffusers"}})
    with pytest.raises(MedScopeError, match="strategy must be one of"):
        cfgmod.parse(PairsSpec, {**example, "conditions": [dict(example["conditions"][0], strategy="shared")]})
    cfgmod.parse(PairsSpec, example)  # the example as written is valid


def test_cli_check_strict_fails_on_an_item_id_collision(tmp_path, capsys):
    import json

    from medscope.pairs.embedded import write_embedded_set
    from pipelines.cli import main

    out = tmp_path / "set"
    write_embedded_set(str(out))
    manifest = yaml.safe_load((out / tables.MANIFEST).read_text())
    manifest["conditions"].append({**manifest["conditions"][0], "condition": "Varicella-Pneumonia"})
    (out / tables.MANIFEST).write_text(yaml.safe_dump(manifest))
    assert main(["pairs", "check", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["rejects"] == {"item id collision": 1}
    assert main(["pairs", "check", str(out), "--strict"]) != 0


def test_build_waits_for_the_required_number_of_reviewers(tmp_path):
    spec = _two_condition_spec().model_copy(update={"approvals_required": 2})
    spec = spec.model_copy(update={"conditions": spec.conditions[:1]})
    work, out = str(tmp_path / "work"), str(tmp_path / "set")
    rv.generate_round(spec, work, ProceduralGenerator(spec.generator))
    rv.decide(work, ["all-pending"], "approve", reviewer="dr-a")
    ids = [c["id"] for c in rv.load_review(work)["candidates"]]
    rv.decide(work, ids, "approve", reviewer="dr-a")  # the same physician twice is one approval
    assert rv.build(spec, work, out)["conditions"] == 0
    assert rv.generate_round(spec, work, ProceduralGenerator(spec.generator))["generated"] == 0  # awaiting, not redrawn
    rv.decide(work, ids[:1], "approve", reviewer="dr-b")
    built = rv.build(spec, work, out)
    assert built["conditions"] == 0 and built["incomplete"][0]["missing"] == ["mismatched"]
    rv.decide(work, ids[1:], "approve", reviewer="dr-c")
    built = rv.build(spec, work, out)
    assert built["conditions"] == 1
    entry = yaml.safe_load(open(built["manifest"]).read())["conditions"][0]
    assert entry["matched"]["provenance"]["review_history"][0]["approvals"] == ["dr-a", "dr-b"]


def test_provider_gets_the_reference_and_a_mask_of_the_edit_box(tmp_path, monkeypatch):
    """The paired-modality paper §3.3 strategies 2 and 4 through an images endpoint: the edit carries the source, the
    reference image beside it, and a mask transparent exactly inside the box."""
    import io

    from PIL import Image

    from medscope.images import encode_png

    (tmp_path / "ref.png").write_bytes(encode_png(np.full((8, 8, 3), (120, 40, 90), np.uint8)))
    server = FakeImageProvider()
    monkeypatch.setenv("PAIRS_TEST_IMAGE_KEY", "img-key")
    try:
        spec = _two_condition_spec(kind="provider", model="image-model-1", base_url=server.url,
                                   api_key_env="PAIRS_TEST_IMAGE_KEY", size=64)
        cond = spec.conditions[0]
        matched = cond.matched.model_copy(update={"reference": "ref.png", "edit_box": [0.5, 0.0, 1.0, 0.5]})
        spec = spec.model_copy(update={"conditions": [cond.model_copy(update={"matched": matched})]})
        rv.generate_round(spec, str(tmp_path / "work"), build_generator(spec.generator), spec_dir=str(tmp_path))
    finally:
        server.close()
    edits = [r for r in server.requests if r.path == "/v1/images/edits"]
    with_ref = [r for r in edits if r.images == 2]
    assert len(edits) == 2 and len(with_ref) == 1 and with_ref[0].mask is not None  # matched: base + reference
    alpha = np.asarray(Image.open(io.BytesIO(with_ref[0].mask)))[..., 3]
    h, w = alpha.shape
    assert (alpha[: h // 2, w // 2:] == 0).all() and (alpha[h // 2:, :] == 255).all() and (alpha[:, : w // 2] == 255).all()
    plain = next(r for r in edits if r.images == 1)
    assert plain.mask is None  # the mismatched photo names no box


def test_subject_demographics_from_the_radiograph_else_a_reproducible_draw(tmp_path):
    from medscope.pairs.spec import US_2020_WEIGHTS, DemographicsSpec, subject_demographics

    spec = _two_condition_spec()
    from medscope.pairs.spec import RadiographMeta

    cond = spec.conditions[0].model_copy(update={"radiograph_meta": RadiographMeta(age=52, sex="female")})
    spec = spec.model_copy(update={"conditions": [cond]})
    work = str(tmp_path / "work")
    rv.generate_round(spec, work, ProceduralGenerator(spec.generator))
    first = rv.load_review(work)["candidates"][0]["prompt"]
    d = subject_demographics(spec.conditions[0], spec.demographics)
    assert f"Patient: 52-year-old female, {d['ethnicity']}." in first and d["ethnicity_source"] == "drawn"
    assert subject_demographics(spec.conditions[0], spec.demographics) == d  # the same draw every time
    # the metadata's own ethnicity wins over the draw
    known = spec.conditions[0].model_copy(update={"radiograph_meta": spec.conditions[0].radiograph_meta.model_copy(
        update={"ethnicity": "Asian"})})
    assert subject_demographics(known, spec.demographics)["ethnicity_source"] == "radiograph metadata"
    # over many conditions the draw follows the weights (binomial sd at n = 4000 is under 0.8 points)
    plans = [spec.conditions[0].model_copy(update={"condition": f"c{i}"}) for i in range(4000)]
    got = [subject_demographics(p, DemographicsSpec(seed=3))["ethnicity"] for p in plans]
    total = sum(US_2020_WEIGHTS.values())
    for group, w in US_2020_WEIGHTS.items():
        assert abs(got.count(group) / len(got) - w / total) < 0.03


@pytest.mark.timeout(120)
@pytest.mark.parametrize("damage,reason", [("delete", "unreadable file"), ("empty", "unreadable image")])
def test_pairs_build_with_a_damaged_approved_candidate(tmp_path, damage, reason):
    from medscope.pairs import review as rv
    from medscope.pairs.generators import ProceduralGenerator
    from tests.pairs.test_construction import _two_condition_spec

    spec = _two_condition_spec()
    work = tmp_path / "work"
    rv.generate_round(spec, str(work), ProceduralGenerator(spec.generator))
    rv.decide(str(work), ["all-pending"], "approve", reviewer="dr-a")
    cand = next(c for c in rv.load_review(str(work))["candidates"] if c["photo_type"] == "mismatched")
    path = work / cand["image"]
    path.unlink() if damage == "delete" else path.write_bytes(b"")
    built = rv.build(spec, str(work), str(tmp_path / "set"))
    assert built["conditions"] == 1
    [entry] = built["incomplete"]
    assert entry["unreadable"][0]["reason"] == reason


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_truncated_approved_candidate_is_never_copied_into_a_pair_set(tmp_path):
    import yaml

    from medscope.pairs import review as rv
    from medscope.pairs.generators import ProceduralGenerator
    from tests.pairs.test_construction import _two_condition_spec

    spec = _two_condition_spec()
    work, out = tmp_path / "work", tmp_path / "set"
    rv.generate_round(spec, str(work), ProceduralGenerator(spec.generator))
    rv.decide(str(work), ["all-pending"], "approve", reviewer="dr-a")
    cands = rv.load_review(str(work))["candidates"]
    a, b = spec.conditions[0].condition, spec.conditions[1].condition
    cut = next(c for c in cands if c["condition"] == b and c["photo_type"] == "matched")
    path = work / cut["image"]
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # a copy that stopped half-way
    with pytest.raises(Exception):  # Pillow itself cannot decode it: the premise, checked independently
        Image.open(io.BytesIO(path.read_bytes())).load()
    built = rv.build(spec, str(work), str(out))
    assert built["conditions"] == 1
    [entry] = built["incomplete"]
    assert entry["condition"] == b and entry["missing"] == []
    [bad] = entry["unreadable"]
    assert (bad["photo_type"], bad["candidate"], bad["reason"]) == ("matched", cut["id"], "unreadable image")
    assert bad["error_class"] not in ("", None, "InputRejected")  # Pillow's exception, by name
    manifest = yaml.safe_load(open(built["manifest"]))
    assert [c["condition"] for c in manifest["conditions"]] == [a]
    assert not (out / "photos" / f"{rv.slug(b)}-matched.png").exists()
    for pt in ("matched", "mismatched"):  # the good condition's photographs are whole copies
        rel = manifest["conditions"][0][pt]["image"]
        src = next(c for c in cands if c["condition"] == a and c["photo_type"] == pt)
        assert (out / rel).read_bytes() == (work / src["image"]).read_bytes()
