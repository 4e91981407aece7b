"""``medscope pairs generate | review | build`` (seed 002 §3.3): candidates from the procedural
generator and from a provider image endpoint on loopback, the review file (approve / reject /
retry with feedback), and a manifest holding only approved photographs with their provenance."""

from __future__ import annotations

import yaml

from medscope import config as cfgmod
from medscope.images import decode_png
from medscope.pairs import review as rv
from medscope.pairs.embedded import embedded_spec
from medscope.pairs.generators import ProceduralGenerator, build_generator
from medscope.pairs.spec import PairsSpec
from medscope.protocols.paired_modality import names
from medscope.protocols.paired_modality.manifest import read_manifest
from medscope.testing.images import FakeImageProvider


def _two_condition_spec(**generator) -> PairsSpec:
    spec = embedded_spec().model_dump()
    spec["conditions"] = spec["conditions"][:2]
    spec["generator"] = {**spec["generator"], **generator}
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
    manifest = yaml.safe_load((out / names.MANIFEST).read_text())
    manifest["conditions"][0]["mismatched"]["caption"] = ""
    manifest["conditions"].append(dict(manifest["conditions"][1]))
    (out / names.MANIFEST).write_text(yaml.safe_dump(manifest))
    assert main(["pairs", "check", str(out)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["photos"] == 11 and got["rejects"] == {"duplicate condition": 1, "photo without caption": 1}
    assert (out / names.MANIFEST_REJECTS).exists()
