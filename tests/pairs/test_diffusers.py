"""The diffusers generator of ``medscope pairs generate`` on a tiny random-initialised Stable
Diffusion pipeline built from config and loaded from a local folder (the real loading code):
seeded text-to-image is repeatable, and a shared base is edited (image-to-image) into both
photographs of a condition."""

from __future__ import annotations

import pytest

from medscope import config as cfgmod
from medscope.images import decode_png
from medscope.pairs import review as rv
from medscope.pairs.embedded import embedded_spec
from medscope.pairs.generators import build_generator
from medscope.pairs.spec import PairsSpec
from medscope.protocols.paired_modality.manifest import NEAR_COPY_DISTANCE, photo_distance, read_manifest


@pytest.fixture(scope="module")
def tiny_pipeline(tmp_path_factory, torch_one_thread):
    from medscope.testing.tiny_diffusers import build_tiny_sd

    return build_tiny_sd(str(tmp_path_factory.mktemp("tiny-sd")))


def test_diffusers_generator_shared_base_to_manifest(tiny_pipeline, tmp_path):
    spec = embedded_spec().model_dump(exclude_unset=True)
    spec["conditions"] = spec["conditions"][:1]
    for field in ("region", "matched", "mismatched"):  # marks and regions are the procedural generator's
        spec["conditions"][0].pop("region", None) if field == "region" else spec["conditions"][0][field].pop("mark")
    spec["generator"] = {"kind": "diffusers", "model_dir": tiny_pipeline, "steps": 2, "size": 32, "strength": 0.5}
    spec = cfgmod.parse(PairsSpec, spec)
    gen = build_generator(spec.generator)
    a, _ = gen.generate("clustered vesicles", 7)
    b, _ = gen.generate("clustered vesicles", 7)
    c, _ = gen.generate("clustered vesicles", 8)
    assert a == b and a != c  # the seed fixes the picture
    assert decode_png(a).shape == (32, 32, 3)
    work = str(tmp_path / "work")
    made = rv.generate_round(spec, work, gen)
    assert made["generated"] == 2
    review = rv.load_review(work)
    key = next(iter(review["bases"]))
    assert review["bases"][key]["seed"] == spec.conditions[0].seed
    assert all(c["parent"] == f"base:{key}" and c["generator_meta"]["strength"] == 0.5 for c in review["candidates"])
    rv.decide(work, ["all-pending"], "approve", reviewer="dr-d")
    manifest = rv.build(spec, work, str(tmp_path / "set"))["manifest"]
    # a random-initialised pipeline barely follows its prompt, so its two edits of one base may be
    # near-identical: `pairs check` refuses exactly when the photographs' distance says so
    photos, rejects = read_manifest(manifest, near_copy_distance=-1)  # the check off: the plumbing
    assert len(photos) == 2 and not rejects
    distance = photo_distance(photos[0].photo_png, photos[1].photo_png)
    refused = read_manifest(manifest)[1]
    assert {r["reason"] for r in refused} == ({"identical photos"} if distance <= NEAR_COPY_DISTANCE else set())
    assert photos[0].provenance["generator"] == "diffusers"


def test_diffusers_reference_and_edit_box_keep_the_person_outside_the_box(tiny_pipeline, tmp_path):
    """The paired-modality paper §3.3 strategies 2 and 4: a reference image of the finding pasted into the edit box
    and an inpainting edit confined to it; outside the box the base's pixels stay."""
    import numpy as np

    from medscope.images import encode_png

    (tmp_path / "bruise-ref.png").write_bytes(encode_png(np.full((8, 8, 3), (120, 40, 90), np.uint8)))
    spec = embedded_spec().model_dump(exclude_unset=True)
    cond = spec["conditions"][0]
    cond.pop("region")
    for pt in ("matched", "mismatched"):
        cond[pt].pop("mark")
    cond["matched"].update(reference="bruise-ref.png", edit_box=[0.25, 0.25, 0.75, 0.75])
    spec.update(conditions=[cond], generator={"kind": "diffusers", "model_dir": tiny_pipeline, "steps": 2, "size": 32,
                                              "strength": 0.9})
    spec = cfgmod.parse(PairsSpec, spec)
    work = str(tmp_path / "work")
    rv.generate_round(spec, work, build_generator(spec.generator), spec_dir=str(tmp_path))
    review = rv.load_review(work)
    base = decode_png(open(f"{work}/{next(iter(review['bases'].values()))['image']}", "rb").read()).astype(int)
    matched = next(c for c in review["candidates"] if c["photo_type"] == "matched")
    assert matched["generator_meta"]["edit_box"] == [0.25, 0.25, 0.75, 0.75] and matched["generator_meta"]["reference"]
    out = decode_png(open(f"{work}/{matched['image']}", "rb").read()).astype(int)
    inside = np.zeros(base.shape[:2], bool)
    inside[8:24, 8:24] = True
    assert (out[~inside] == base[~inside]).all() and (out[inside] != base[inside]).any()
    with pytest.raises(Exception, match="give edit_box"):
        bad = spec.model_dump(exclude_unset=True)
        bad["conditions"][0]["matched"].pop("edit_box")
        cfgmod.parse(PairsSpec, bad)
