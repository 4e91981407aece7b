"""Paired-modality protocol (paired-modality paper): extraction, manifest rejects, image sizing, judge
labels, judge caching and resume on a loopback provider, and the statistics against scipy /
statsmodels and hand-worked values (the paper's own Table 1 intervals among them)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import yaml
from scipy import stats as sps

from medscope.io import records, storage
from medscope.images import decode_png, encode_png
from medscope.models.base import Completion
from medscope.protocols.paired_modality import PROTOCOL, tables
from medscope.protocols.paired_modality import judge as jd
from medscope.protocols.paired_modality.extraction import Extraction, extract_photo_findings
from medscope.protocols.paired_modality.manifest import fit_long_side, photo_distance, read_manifest, slug, vocabulary
from medscope.protocols.paired_modality.rates_and_agreement import clopper_pearson, cohen_kappa, mcnemar_exact
from medscope.testing.providers import FakeProvider, status

# -- extraction ---------------------------------------------------------------------------------


@pytest.mark.parametrize("reply, text, method", [
    ("Here is my read.\n\n**PHOTO FINDINGS:** Clustered vesicles with crusting.\n"
     "**RADIOGRAPH FINDINGS:** Diffuse nodular opacities.\n**SUGGESTIVE OF:** varicella pneumonia",
     "Clustered vesicles with crusting.", "section"),
    ("## Photograph findings\n- purple nail discolouration\n\n## Chest X-ray findings\nclear lungs\n## Impression\ncyanosis",
     "- purple nail discolouration", "section"),
    # sections out of order, numbered, underscored header as in the seed's text
    ("1. RADIOGRAPH FINDINGS - opacities\n2. PHOTO_FINDINGS: acne papules\n3. SUGGESTIVE OF: nothing",
     "acne papules", "section"),
    # reasoning removed first: the photo header inside <think> is not the answer
    # and with no photo section left, the photo findings cannot be isolated: nothing is judged
    ("<think>PHOTO FINDINGS: bruise</think>Radiograph findings: none\nSuggestive of: trauma", "", "extraction_failed"),
    # no header in a photo-only reply: the whole reply less its diagnostic sentences
    ("Some redness on the cheek. This is suggestive of rosacea.", "Some redness on the cheek.", "whole_reply"),
    # "photo findings" in prose is not a header
    ("The photo findings were subtle: faint redness.", "The photo findings were subtle: faint redness.", "whole_reply"),
    # a radiograph section first, then a bold "Clinical photograph:" header
    ("RADIOGRAPH FINDINGS: bilateral opacities\n**Clinical photograph:** irregular purple bruise (ecchymosis)\n"
     "**Suggestive of:** trauma", "irregular purple bruise (ecchymosis)", "section"),
    ("Photograph: scattered acne papules.\nChest X-ray: nodular opacities.\nImpression: varicella",
     "scattered acne papules.", "section"),
    ("**Skin:** crusted vesicles\n**CXR:** clear lungs", "crusted vesicles", "section"),
    ("Clinical photo - blue nail beds\nRadiograph - effusion", "blue nail beds", "section"),
    # a preamble and a radiograph section, no photo section: not guessed
    ("Here is my analysis of both images.\nRADIOGRAPH FINDINGS: opacities", "", "extraction_failed"),
    ("Photo-realistic view of acne.\nRadiograph: clear", "", "extraction_failed"),
    ('Constant policy. <final>{"action": "answer", "answer": "No abnormality"}</final>', "No abnormality", "final_action"),
    ('<final>{"action": "refer", "reason": "cannot tell"}</final>', "", "final_action"),
    ("", "", "empty"),
    ("Clinical photo findings — blue nail beds.\nX-ray findings: effusion", "blue nail beds.", "section"),
])
def test_extraction_keeps_only_the_photo_findings(reply, text, method):
    ext = extract_photo_findings(reply)
    assert (ext.text, ext.method) == (text, method)


@pytest.mark.parametrize("reply, text", [
    # the prompt's three sections on one line: only the photograph's words reach the judge
    ("PHOTO FINDINGS: Scattered acne papules on the back. RADIOGRAPH FINDINGS: Diffuse nodular opacities. "
     "SUGGESTIVE OF: Varicella pneumonia.", "Scattered acne papules on the back."),
    ("photo findings: purple nail polish. radiograph findings: patchy opacities. suggestive of: ARDS",
     "purple nail polish."),
    ("**Photo findings:** irregular bruise **Radiograph findings:** rib fracture **Suggestive of:** trauma",
     "irregular bruise"),
    ("**PHOTO FINDINGS**: a bruise. **RADIOGRAPH FINDINGS**: fracture.", "a bruise."),
    ("CLINICAL PHOTOGRAPH: blue nail beds. CHEST X-RAY: effusion. IMPRESSION: hypoxaemia", "blue nail beds."),
    ("RADIOGRAPH FINDINGS: nodules. PHOTO FINDINGS: crusted vesicles. SUGGESTIVE OF: varicella", "crusted vesicles."),
    ("PHOTO FINDINGS - acne papules | RADIOGRAPH FINDINGS - clear | SUGGESTIVE OF - nothing", "acne papules"),
    # a diagnosis appended inside the photo line is a section of its own, and goes
    ("PHOTO FINDINGS: crusted vesicles. Suggestive of: chickenpox\nRADIOGRAPH FINDINGS: nodules", "crusted vesicles."),
    # words of a header in prose, neither capitals, bold nor the prompt's names, split nothing
    ("PHOTO FINDINGS: vesicles; the overlying skin: otherwise normal.\nRADIOGRAPH FINDINGS: nodules",
     "vesicles; the overlying skin: otherwise normal."),
])
def test_extraction_splits_headers_wherever_they_stand_on_the_line(reply, text):
    for setting in ("paired", "photo_only"):
        assert extract_photo_findings(reply, setting) == Extraction(text, "section")


@pytest.mark.parametrize("reply, text", [
    # one header-like phrase inside a sentence names one kind of section only: prose, not sections
    ("Red papules on the cheek, suggestive of: acne.", ""),
    ("The overlying skin: dry. Nothing else.", "The overlying skin: dry. Nothing else."),
])
def test_a_lone_header_word_inside_a_sentence_starts_no_section(reply, text):
    assert extract_photo_findings(reply, "photo_only") == Extraction(text, "whole_reply")


def test_an_unsectioned_paired_reply_fails_extraction_but_a_photo_only_one_does_not():
    reply = "Purple nail polish on the nail. The lungs show a right effusion."
    assert extract_photo_findings(reply, "paired").method == "extraction_failed"
    assert extract_photo_findings(reply, "photo_only").method == "whole_reply"


def test_extraction_joins_two_photo_sections_and_drops_the_rest():
    reply = ("PHOTO FINDINGS: vesicles on the back.\nRADIOGRAPH FINDINGS: nodules.\n"
             "Photo findings (continued): some crusting.\nSUGGESTIVE OF: varicella")
    ext = extract_photo_findings(reply)
    assert "vesicles on the back." in ext.text and "some crusting." in ext.text
    assert "nodules" not in ext.text and "varicella" not in ext.text


# -- manifest, rejects, sizing ------------------------------------------------------------------------


def _png(h=64, w=48, color=(200, 150, 120)):
    return encode_png(np.full((h, w, 3), color, np.uint8))


def _photo(image, caption="a caption", findings=()):
    return {"image": image, "caption": caption, "findings": list(findings)}


def test_manifest_rejects_bad_entries_and_keeps_every_good_photo(tmp_path):
    for name in ("rx.png", "m.png"):
        (tmp_path / name).write_bytes(_png())
    # the mismatched photograph: the same skin with a purple patch (a flat picture in another colour
    # would be a colour-shifted copy of m.png)
    patched = np.full((64, 48, 3), (200, 150, 120), np.uint8)
    patched[20:40, 12:32] = (120, 60, 160)
    (tmp_path / "x.png").write_bytes(encode_png(patched))
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    good = {"condition": "varicella", "radiograph": "rx.png", "matched": _photo("m.png", findings=["vesicles"]),
            "mismatched": _photo("x.png")}
    entries = [
        good,
        {**good, "condition": "VARICELLA"},  # duplicate (case-insensitive); the first is kept
        {**good, "condition": "no radiograph", "radiograph": "missing.png"},
        {**good, "condition": "bad radiograph", "radiograph": "broken.png"},
        {**good, "condition": "uncaptioned", "mismatched": _photo("x.png", caption="  ")},
        {**good, "condition": "broken photo", "matched": _photo("broken.png")},
        {**good, "condition": "lost photo", "mismatched": _photo("gone.png")},
        {"condition": "malformed", "radiograph": "rx.png"},
        # pairs that are no pairs, and two names with one item id
        {**good, "condition": "same picture", "mismatched": _photo("m.png")},
        {**good, "condition": "Varicella!"},  # item ids varicella:* again, under another name
        {**good, "condition": "two people",
         "matched": {**_photo("m.png", findings=["vesicles"]), "provenance": {"subject": "seed:7"}},
         "mismatched": {**_photo("x.png"), "provenance": {"subject": "seed:1007"}}},
    ]
    (tmp_path / tables.MANIFEST).write_text(yaml.safe_dump({"conditions": entries}))
    photos, rejects = read_manifest(str(tmp_path))
    got = sorted((r["item_id"], r["reason"]) for r in rejects)
    assert got == sorted([
        ("same-picture:matched", "identical photos"), ("same-picture:mismatched", "identical photos"),
        ("Varicella!", "item id collision"),
        ("two-people:matched", "subject differs"), ("two-people:mismatched", "subject differs"),
        ("VARICELLA", "duplicate condition"), ("no radiograph", "missing file"),
        ("bad radiograph", "unreadable image"), ("uncaptioned:mismatched", "photo without caption"),
        ("broken-photo:matched", "unreadable image"), ("lost-photo:mismatched", "missing file"),
        ("malformed", "malformed entry"),
    ])
    # every good photograph arrives: 2 of varicella, 1 each of the three half-bad conditions
    assert sorted(p.item_id for p in photos) == sorted([
        "varicella:matched", "varicella:mismatched", "uncaptioned:matched", "broken-photo:mismatched",
        "lost-photo:matched"])
    records.to_table("rejects", rejects)  # the rows fit the shared rejects schema
    items = PROTOCOL().load_items(str(tmp_path / tables.MANIFEST))
    assert len(items) == 5 and all(len(i.images) == 2 for i in items)


def _encoded(image, fmt: str, **save) -> bytes:
    import io

    buf = io.BytesIO()
    image.save(buf, fmt, **save)
    return buf.getvalue()


def _near_copies(image):
    """The copies of one photograph a pair set must not pass off as its other photograph."""
    from PIL import Image, ImageEnhance

    w, h = image.size
    tinted = np.asarray(image).astype(int) + (18, 4, -16)  # a warm white balance, clipped
    copies = {
        "jpeg q85": _encoded(image, "JPEG", quality=85),
        "jpeg q95": _encoded(image, "JPEG", quality=95),
        "half size": _encoded(image.resize((w // 2, h // 2), Image.LANCZOS), "PNG"),
        "1.5x size": _encoded(image.resize((w * 3 // 2, h * 3 // 2), Image.BICUBIC), "PNG"),
        "warm tint": encode_png(np.clip(tinted, 0, 255).astype(np.uint8)),
        "darker": _encoded(ImageEnhance.Brightness(image).enhance(0.85), "PNG"),
        "lower contrast": _encoded(ImageEnhance.Contrast(image).enhance(0.8), "PNG"),
    }
    if w // 2 >= 128:  # JPEG blocks on a picture under 128 px may wipe out a few-pixel finding
        copies["jpeg q85 of a half-size tinted copy"] = _encoded(
            Image.fromarray(np.clip(tinted, 0, 255).astype(np.uint8)).resize((w // 2, h // 2), Image.LANCZOS),
            "JPEG", quality=85)
    return copies


# the embedded set's sign / look-alike pairs, each on one subject (the procedural drawing code)
GENUINE_PAIRS = [("skin", "vesicles", "acne"), ("nail", "cyanosis", "nail_polish"), ("face", "ecchymosis", "port_wine")]


def test_a_reencoded_resized_or_recoloured_copy_is_refused_as_identical_photos(tmp_path):
    from PIL import Image

    from medscope.protocols.paired_modality import draw

    (tmp_path / "rx.png").write_bytes(_png())
    entries, expected = [], []
    for region, sign, _ in GENUINE_PAIRS:
        for size in (128, 256):
            original = draw.photo(region, sign, seed=5, size=size)
            name = f"{region}-{size}"
            (tmp_path / f"{name}.png").write_bytes(encode_png(original))
            for i, (how, data) in enumerate(_near_copies(Image.fromarray(original)).items()):
                (tmp_path / f"{name}-copy{i}.bin").write_bytes(data)
                condition = f"{name} {how}"
                entries.append({"condition": condition, "radiograph": "rx.png",
                                "matched": _photo(f"{name}.png", findings=[sign]),
                                "mismatched": _photo(f"{name}-copy{i}.bin")})
                expected += [(f"{slug(condition)}:{t}", "identical photos") for t in ("matched", "mismatched")]
    (tmp_path / tables.MANIFEST).write_text(yaml.safe_dump({"conditions": entries}))
    photos, rejects = read_manifest(str(tmp_path))
    assert len(entries) == 3 * (7 + 8) and not photos  # 7 copies at 128 px, 8 at 256
    assert sorted((r["item_id"], r["reason"]) for r in rejects) == sorted(expected)


def test_photographs_of_one_subject_with_different_findings_stand(tmp_path):
    from medscope.protocols.paired_modality import draw

    (tmp_path / "rx.png").write_bytes(_png())
    entries = []
    for region, sign, look_alike in GENUINE_PAIRS:
        for seed in range(4):
            for size in (128, 256):
                name = f"{region}-{seed}-{size}"
                (tmp_path / f"{name}-m.png").write_bytes(encode_png(draw.photo(region, sign, seed, size)))
                (tmp_path / f"{name}-x.png").write_bytes(
                    encode_png(draw.photo(region, look_alike, seed, size, mark_seed=seed + 1000)))
                entries.append({"condition": name, "radiograph": "rx.png",
                                "matched": _photo(f"{name}-m.png", findings=[sign]), "mismatched": _photo(f"{name}-x.png")})
    (tmp_path / tables.MANIFEST).write_text(yaml.safe_dump({"conditions": entries}))
    photos, rejects = read_manifest(str(tmp_path))
    assert rejects == [] and len(photos) == 2 * 3 * 4 * 2


def test_photo_distance_is_the_largest_block_residual_hand_worked():
    from PIL import Image

    grey = np.full((128, 128, 3), 100, np.uint8)
    patch = grey.copy()
    patch[32:48, 32:48, 0] = 200  # a 16 x 16 red patch: 256 of 16,384 pixels
    # mapping the flat picture onto the patched one can only give its mean, 100 + 100 x 256 / 16384
    # in red; a block inside the patch keeps 200 minus that mean
    expected = 200 - (100 + 100 * 256 / 128 ** 2)
    assert photo_distance(encode_png(patch), encode_png(grey)) == pytest.approx(expected, abs=0.05)
    # a gain and offset per channel (contrast, brightness, tint) leaves only the rounding to whole
    # levels (of the copy and of each blurred picture: at most 1.5 levels a channel, sqrt(3) x 1.5 in all)
    texture = np.random.default_rng(0).integers(40, 200, (128, 128, 3)).astype(np.uint8)
    shifted = (texture.astype(int) * np.array([0.8, 0.9, 1.1]) + np.array([30, 10, -20])).round().astype(np.uint8)
    assert photo_distance(encode_png(texture), encode_png(shifted)) < 3 ** 0.5 * 1.5
    assert photo_distance(encode_png(texture), encode_png(texture)) == 0.0
    # the same pictures at another size compare on the smaller one's grid
    small = np.asarray(Image.fromarray(patch).resize((64, 64), Image.BOX))
    assert photo_distance(encode_png(small), encode_png(grey)) == pytest.approx(expected, abs=0.5)


def test_images_native_up_to_1568_else_downscaled():
    native = _png(1568, 900)
    assert fit_long_side(native) == native  # byte for byte
    big = fit_long_side(_png(1000, 2000))
    assert decode_png(big).shape[:2] == (784, 1568)
    import cv2

    ok, jpg = cv2.imencode(".jpg", np.full((100, 80, 3), 128, np.uint8))
    out = fit_long_side(jpg.tobytes())
    assert out.startswith(b"\x89PNG") and decode_png(out).shape[:2] == (100, 80)


# -- judge ----------------------------------------------------------------------------------------------

VOCAB = ["vesicles", "crusted", "cyanosis", "bruise", "ecchymosis"]
VESICLES = [("crusted vesicles", ["crusted vesicles", "vesicles", "crusted"])]


@pytest.mark.parametrize("description, findings, fp, fn", [
    ("Clustered vesicles, some crusted.", VESICLES, False, False),
    ("A few acne papules.", VESICLES, False, True),  # missed
    ("A few acne papules.", [], False, False),
    ("Vesicles, crusted.", [], True, False),  # invented on a benign photo
    ("No vesicles; no cyanosis.", [], False, False),  # negated mentions are not claims
    ("A bruise on the cheek; no vesicles.", VESICLES, True, True),  # both labels at once
    ("Abnormality present", [], True, False),  # an unnamed abnormality on a benign photo
    ("No abnormality", [], False, False),
    ("Abnormality present", VESICLES, False, True),  # not named: missed, not invented
])
def test_rule_judge_labels(description, findings, fp, fn):
    v = jd.RuleJudge(VOCAB).label(description, findings)
    assert (v.fp, v.fn) == (fp, fn)
    r = jd.read_verdict(v.raw)
    assert (r.fp, r.fn) == (fp, fn)
    # the same verdict when the judge reads its own prompt (the loopback judge path)
    prompt = jd.judge_prompt(description, "caption", findings)
    r = jd.read_verdict(jd.RuleJudge(VOCAB).ask(prompt))
    assert (r.fp, r.fn) == (fp, fn)


@pytest.mark.parametrize("reply, fp, fn", [
    ('```json\n{"false_positive": true, "false_negative": false, "rationale": "x"}\n```', True, False),
    ('Verdict: {"FP": false, "FN": true}', False, True),
    ("FALSE POSITIVE: yes\nFALSE NEGATIVE: no", True, False),
    ("I cannot judge this.", None, None),
    ('{"false_positive": "maybe", "false_negative": false}', None, None),
])
def test_read_verdict_from_messy_judge_replies(reply, fp, fn):
    v = jd.read_verdict(reply)
    assert (v.fp, v.fn) == (fp, fn)
    assert (v.error is None) == (fp is not None)


# -- scoring with a judge on a loopback server: caching and resume --------------------------------------


class Scripted:
    """A ChatModel that answers from a table of item ids (photo-only / paired) - no service."""

    provider, endpoint = "local", "local"

    def __init__(self, name, replies):
        self.name, self.replies = name, replies

    def complete(self, messages, decoding):
        images = [p.png for m in messages for p in m.parts if p.is_image]
        return Completion(text=self.replies(images))


def _episodes(protocol, items, models, out):
    from medscope.models.base import Decoding

    rows = []
    for model in models:
        for setting in protocol.conditions():
            for item in items:
                r = protocol.run_episode(item, model, setting, Decoding())
                rows.append({"run_id": "t", "protocol": protocol.name, "model": model.name, "condition": setting,
                             "item_id": item.item_id, "case_id": item.case_id,
                             "request_key": f"{model.name}|{setting}|{item.item_id}",
                             "prompt_version": protocol.prompt_version, "decoding": "d", "turns": r.turns,
                             "raw_text": r.raw_text, "action": r.action, "answer": r.answer, "tool_calls": 0,
                             "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0,
                             "attempts": 1, "error": None})
    records.write_table("episodes", rows, out)
    return rows


@pytest.fixture(scope="module")
def pair_set(tmp_path_factory):
    from medscope.pairs.embedded import write_embedded_set

    out = str(tmp_path_factory.mktemp("pairs"))
    return write_embedded_set(out)["manifest"]


def test_scoring_caches_judge_replies_and_resumes(pair_set, tmp_path, monkeypatch):
    protocol = PROTOCOL()
    items = protocol.load_items(pair_set)
    by_png = {i.images[0]: i for i in items}

    def swayed(images):  # honest alone; with a radiograph it calls every mismatched photo a sign
        item = by_png[images[0]]
        truth = {"matched": "Clustered vesicles, crusted. Bluish nail bed, cyanosis. A bruise (ecchymosis).",
                 "mismatched": "Acne papules; purple nail polish; a port-wine stain."}
        photo = truth["matched"] if len(images) > 1 else truth[item.meta["photo_type"]]
        return f"PHOTO FINDINGS: {photo}\nRADIOGRAPH FINDINGS: opacities\nSUGGESTIVE OF: varicella, hypoxaemia, trauma"

    models = [Scripted("swayed", swayed), Scripted("silent", lambda images: "")]
    episodes = str(tmp_path / "episodes.parquet")
    _episodes(protocol, items, models, episodes)
    photos, _ = read_manifest(pair_set)
    monkeypatch.setenv("PAIRS_TEST_JUDGE_KEY", "k-test")
    server = FakeProvider("openai", responder=jd.rule_judge_responder(vocabulary(photos)), expected_key="k-test")
    judge = {"name": "judge", "kind": "openai", "model": "judge-model", "base_url": server.url,
             "api_key_env": "PAIRS_TEST_JUDGE_KEY", "max_attempts": 3}
    opts = {"judge": judge, "second_judge": "rule", "judge_workers": 2}
    try:
        server.on("purple nail polish; a port-wine stain.", status(500))  # one transient failure, retried by the judge
        out1 = str(tmp_path / "run1")
        s1 = PROTOCOL(PROTOCOL.Options(**opts)).score(episodes, pair_set, out1)
        labels = records.read_table("metrics", storage.join(out1, tables.METRICS)).to_pylist()
        distinct = len({jd.judge_prompt(extract_photo_findings(r).text, p.caption,
                                        [(f.name, f.all_terms()) for f in p.findings])
                        for p in photos for r in ([swayed([p.photo_png]), swayed([p.photo_png, p.radiograph_png]), ""])})
        assert server.count("MODEL'S PHOTO FINDINGS") == distinct + 1  # +1: the retried 500
        assert s1["labelled"] == 2 * 2 * len(items) and s1["unjudged"] == 0
        # the same judgements again: nothing reaches the server
        s2 = PROTOCOL(PROTOCOL.Options(**opts, judge_cache=storage.join(out1, tables.JUDGE_CACHE))).score(
            episodes, pair_set, str(tmp_path / "run2"))
        assert server.count("MODEL'S PHOTO FINDINGS") == distinct + 1
        assert s2["labelled"] == s1["labelled"]
        # resume: two cached replies lost (a killed run) -> exactly two new requests
        cache = storage.join(out1, tables.JUDGE_CACHE)
        mine = [f for f in sorted(os.listdir(cache))
                if json.loads(open(os.path.join(cache, f)).read())["judge"] == "judge"]
        for f in mine[:2]:
            os.remove(os.path.join(cache, f))
        PROTOCOL(PROTOCOL.Options(**opts)).score(episodes, pair_set, out1)
        assert server.count("MODEL'S PHOTO FINDINGS") == distinct + 3
    finally:
        server.close()
    m = {(r["model"], r["condition"], r["breakdown"], r["metric"]): r for r in labels}
    # hand-worked: "silent" misses every matched sign (FN 6/6) and invents nothing
    assert m[("silent", "photo_only", "photo_type=matched", "fn_rate")]["value"] == 1.0
    assert m[("silent", "paired", "photo_type=mismatched", "fp_rate")]["value"] == 0.0
    # "swayed": faithful alone, every mismatched photo turns FP with a radiograph
    assert m[("swayed", "photo_only", "photo_type=mismatched", "fp_rate")]["value"] == 0.0
    fp = m[("swayed", "paired", "photo_type=mismatched", "fp_rate")]
    assert (fp["value"], fp["n_cases"]) == (1.0, 6)
    assert (fp["ci_low"], fp["ci_high"]) == pytest.approx((sps.beta.ppf(0.025, 6, 1), 1.0))
    import pyarrow.parquet as pq

    tests = {(t["model"], t["photo_type"], t["metric"]): t for t in pq.read_table(storage.join(out1, tables.MCNEMAR)).to_pylist()}
    t = tests[("swayed", "mismatched", "fp_rate")]
    assert (t["b"], t["c"], t["p_value"]) == (0, 6, pytest.approx(2 * 0.5**6))
    pooled = tests[("pooled", "mismatched", "fp_rate")]
    assert (pooled["n"], pooled["c"]) == (12, 6)
    agree = json.loads(storage.read_utf8(storage.join(out1, tables.AGREEMENT)))
    assert agree["fp"]["kappa"] == pytest.approx(1.0)  # the loopback judge is the same rule judge
    sections, _ = protocol.report_sections(out1, str(tmp_path))
    table = sections[0].blocks[1]
    row = next(r for r in table.rows if r[:2] == ["swayed", "Photo + radiograph"])
    assert row[5].startswith("**100.0 (54.1–100.0)**")  # mismatched FP, the higher setting in bold


def test_score_exits_3_on_unjudged_replies_unless_allowed(pair_set, tmp_path, monkeypatch, capsys):
    """``medscope score`` of a paired run: a reply the judge could not label is counted per cell,
    in no rate, and exits 3 as the demo does; --allow-unjudged accepts it (still counted)."""
    from pipelines import cli

    protocol = PROTOCOL()
    items = protocol.load_items(pair_set)
    by_png = {i.images[0]: i for i in items}
    truth = {"matched": "Clustered vesicles, crusted.", "mismatched": "Acne papules; purple nail polish."}
    model = Scripted("reader", lambda images: f"PHOTO FINDINGS: {truth[by_png[images[0]].meta['photo_type']]}\n"
                                              "RADIOGRAPH FINDINGS: opacities")
    episodes = str(tmp_path / "episodes.parquet")
    _episodes(protocol, items, [model], episodes)
    rule = jd.rule_judge_responder(vocabulary(read_manifest(pair_set)[0]))
    # the judge answers every prompt about purple nail polish in prose it cannot be read from
    server = FakeProvider("openai", responder=lambda text, images: "I would rather not say." if "purple nail polish"
                          in text else rule(text, images))
    monkeypatch.setenv("PAIRS_TEST_JUDGE_KEY", "k-test")
    judges = tmp_path / "judges.yaml"
    judges.write_text(yaml.safe_dump({"models": [{"name": "judge", "kind": "openai", "model": "judge-model",
                                                  "base_url": server.url, "api_key_env": "PAIRS_TEST_JUDGE_KEY"}]}))
    args = ["score", "--episodes", episodes, "--items", pair_set, "--judge", "judge", "--judge-models", str(judges)]
    try:
        refused = cli.main([*args, "--out", str(tmp_path / "strict")])
        err = capsys.readouterr().err
        allowed = cli.main([*args, "--out", str(tmp_path / "allowed"), "--allow-unjudged"])
    finally:
        server.close()
    # 6 mismatched photographs x 1 model, photo only and paired: the 12 mismatched replies name the
    # polish; every one of the 24 replies keeps its section, so 12 are judged and 12 are not
    assert (refused, allowed) == (3, 0)
    assert "left 12 replies unjudged" in err and "reader:paired:mismatched 6; reader:photo_only:mismatched 6" in err
    for out, allow in (("strict", False), ("allowed", True)):
        run = json.loads(storage.read_utf8(str(tmp_path / out / tables.RUN)))
        assert (run["unjudged"], run["labelled"], run["unjudged_allowed"]) == (12, 12, allow)
        cells = {(c["setting"], c["photo_type"]): c["unjudged"] for c in run["cells"]}
        assert cells == {("photo_only", "matched"): 0, ("photo_only", "mismatched"): 6,
                         ("paired", "matched"): 0, ("paired", "mismatched"): 6}
        metrics = records.read_table("metrics", str(tmp_path / out / tables.METRICS)).to_pylist()
        assert {r["breakdown"] for r in metrics} == {"photo_type=matched"}  # the unjudged are in no rate
    blocks = protocol.report_sections(str(tmp_path / "strict"), str(tmp_path))[0][0].blocks
    shown = next(b for b in blocks if "Unjudged" in getattr(b, "headers", []))
    column = shown.headers.index("Unjudged")
    assert {(r[1], r[2]): r[column] for r in shown.rows} == {
        ("Photo only", "matched"): "0", ("Photo only", "mismatched"): "6",
        ("Photo + radiograph", "matched"): "0", ("Photo + radiograph", "mismatched"): "6"}


# -- statistics ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k, n, lo, hi", [
    # the paired-modality paper Table 1 (percent, one decimal): 25.0 (12.7-41.2), 2.5 (0.1-13.2), 0.0 (0.0-8.8), 57.5 (40.9-73.0)
    (10, 40, 12.7, 41.2), (1, 40, 0.1, 13.2), (0, 40, 0.0, 8.8), (23, 40, 40.9, 73.0), (19, 40, 31.5, 63.9),
])
def test_clopper_pearson_matches_the_papers_table_and_scipy(k, n, lo, hi):
    low, high = clopper_pearson(k, n)
    assert (round(100 * low, 1), round(100 * high, 1)) == (lo, hi)
    ref_lo = sps.beta.ppf(0.025, k, n - k + 1) if k else 0.0
    ref_hi = sps.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    assert (low, high) == pytest.approx((ref_lo, ref_hi))


def test_clopper_pearson_of_nothing_is_undefined():
    assert all(np.isnan(clopper_pearson(0, 0)))


def test_mcnemar_exact_against_the_binomial():
    # hand-worked: 0 vs 6 discordant -> p = 2 * 0.5**6
    before = [False] * 10
    after = [True] * 6 + [False] * 4
    r = mcnemar_exact(before, after)
    assert (r["n"], r["b"], r["c"], r["rate_before"], r["rate_after"]) == (10, 0, 6, 0.0, 0.6)
    assert r["p_value"] == pytest.approx(0.03125)
    # 3 vs 12 discordant among 40, with concordant pairs that must not matter
    rng = np.random.default_rng(0)
    x = np.array([True] * 3 + [False] * 12 + [True] * 10 + [False] * 15)
    y = np.array([False] * 3 + [True] * 12 + [True] * 10 + [False] * 15)
    perm = rng.permutation(40)
    r = mcnemar_exact(x[perm], y[perm])
    assert (r["b"], r["c"]) == (3, 12)
    assert r["p_value"] == pytest.approx(sps.binomtest(3, 15, 0.5).pvalue)
    assert mcnemar_exact([True, False], [True, False])["p_value"] == 1.0


def test_cohen_kappa_hand_worked():
    # table [[20, 5], [10, 15]]: p_o = 0.7, p_e = (25*30 + 25*20) / 50**2 = 0.5, kappa = 0.4
    a = [True] * 25 + [False] * 25
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    r = cohen_kappa(a, b)
    assert (r["kappa"], r["agreement"], r["n"]) == (pytest.approx(0.4), pytest.approx(0.7), 50)
    assert cohen_kappa([True, False, True], [True, False, True])["kappa"] == pytest.approx(1.0)
    assert np.isnan(cohen_kappa([True, True], [True, True])["kappa"])  # chance agreement 1


def test_the_rule_judge_reads_mentions_with_the_shared_reply_reader():
    """The paired-modality paper's judge and every other protocol read a mention with one set of scope rules
    (medscope.answers): negated, hypothetical and historical mentions do not report a
    finding; affirmed and hedged ones do."""
    from medscope.answers.matching import mention_statuses
    from medscope.protocols.paired_modality.judge import affirmed

    assert affirmed("Clustered vesicles on the forearm.", "vesicles")
    assert affirmed("Possible vesicles near the wrist.", "vesicles")
    assert not affirmed("No vesicles; papules consistent with acne.", "vesicles")
    assert not affirmed("Acne rather than vesicles.", "vesicles")
    assert not affirmed("Look for vesicles at follow-up.", "vesicles")
    assert not affirmed("Pustules, but vesicles are absent.", "vesicles")
    assert mention_statuses("No cyanosis. Cyanosis of the nail bed is doubtful.", "cyanosis")[0] == "negated"


# -- pooled subjects, the judge never a subject, extraction failures, unverified findings --------


def test_rule_judge_reports_an_unnamed_hallucination_as_unverified():
    # the manifest names only vesicles: a bruise on an acne photograph is no FP the rule judge can see
    judge = jd.RuleJudge(["vesicle", "vesicles", "crusted"])
    caption = "Scattered small acne papules, a few with white heads; otherwise normal skin."
    v = judge.label("Scattered acne papules. Irregular purple bruise (ecchymosis) on the flank.", [], caption)
    assert (v.fp, v.fn) == (False, False)
    assert v.unverified == ("Irregular purple bruise (ecchymosis) on the flank",)
    # what the caption describes, negations and named findings are not "unverified"
    v = judge.label("Acne papules with white heads. No bruising. Crusted vesicles.", [], caption)
    assert (v.fp, v.unverified) == (True, ())
    v = judge.label("Abnormality present", [], caption)  # the generic claim: weighed as such, not unverified
    assert (v.fp, v.unverified) == (True, ())
    # the same verdict survives the loopback round trip (JSON reply read back)
    assert jd.read_verdict(judge.ask(jd.judge_prompt("A purple bruise.", caption, []))).unverified == ("A purple bruise",)


def test_pooled_tests_pool_named_subjects_and_never_the_judge_or_a_constant_policy(pair_set, tmp_path):
    protocol = PROTOCOL()
    items = protocol.load_items(pair_set)
    by_png = {i.images[0]: i for i in items}

    def honest(images):
        item = by_png[images[0]]
        sign = {"matched": "Clustered vesicles, crusted. Bluish nail bed, cyanosis. A bruise (ecchymosis).",
                "mismatched": "Acne papules; purple nail polish; a port-wine stain."}[item.meta["photo_type"]]
        if len(images) == 1:
            return f"PHOTO FINDINGS: {sign}\nSUGGESTIVE OF: nothing"
        # paired: the bruise / flank claim is out of every vocabulary; mismatched photos get no section
        if item.meta["photo_type"] == "mismatched":
            return f"{sign} The radiograph shows opacities."  # no sections: cannot be split
        return f"RADIOGRAPH FINDINGS: opacities\n**Clinical photograph:** {sign} Flank haematoma."

    models = [Scripted("reader-a", honest), Scripted("reader-b", honest),
              Scripted("always-claims", lambda images: "PHOTO FINDINGS: abnormality"),
              Scripted("judge-model", honest)]
    episodes = str(tmp_path / "episodes.parquet")
    _episodes(protocol, items, models, episodes)
    judge = jd.RuleJudge(vocabulary(read_manifest(pair_set)[0]), name="judge-model")
    from medscope.protocols.paired_modality import scoring

    rows = records.read_table("episodes", episodes).to_pylist()
    assert scoring.judge_subjects([judge], [], [r["model"] for r in rows]) == ["judge-model"]
    pool, left = scoring.pooled_subjects([], ["reader-a", "reader-b", "always-claims"], ["judge-model"])
    assert pool == ["reader-a", "reader-b"] and "constant policy" in left["always-claims"]
    pool, _ = scoring.pooled_subjects([{"name": "reader-a", "kind": "policy"}], ["reader-a", "reader-b"], [],
                                      named=["reader-a", "reader-b"])
    assert pool == ["reader-a", "reader-b"]  # a constant policy enters the pool when named
    with pytest.raises(Exception, match="not in this run"):
        scoring.pooled_subjects([], ["reader-a"], [], named=["nobody"])

    out = str(tmp_path / "scored")
    photos = read_manifest(pair_set)[0]
    server = FakeProvider("openai", responder=jd.rule_judge_responder(vocabulary(photos)))
    os.environ.setdefault("PAIRS_TEST_JUDGE_KEY", "k-test")
    entry = {"name": "judge-model", "kind": "openai", "model": "judge-model", "base_url": server.url,
             "api_key_env": "PAIRS_TEST_JUDGE_KEY"}
    try:
        s = PROTOCOL(PROTOCOL.Options(judge=entry)).score(episodes, pair_set, out)
    finally:
        server.close()
    run = json.loads(storage.read_utf8(storage.join(out, tables.RUN)))
    assert run["pooled_models"] == ["reader-a", "reader-b"]
    assert run["not_pooled"] == {"always-claims": "constant policy (name it in pooled_models to pool it)",
                                 "judge-model": "the judge (never a subject)"}
    import pyarrow.parquet as pq

    labels = pq.read_table(storage.join(out, tables.LABELS)).to_pylist()
    assert {r["model"] for r in labels} == {"reader-a", "reader-b", "always-claims"}  # the judge judged only
    # 6 mismatched photographs x 2 honest subjects, paired, without sections: failed, never judged
    assert s["extraction_failed"] == run["extraction_failed"] == 12
    assert server.count("The radiograph shows") == 0  # the 12 failures never reached the judge
    assert server.count("Flank haematoma") == 6  # one per matched photograph: both readers' replies share a key
    failed = [r for r in labels if r["extraction_method"] == "extraction_failed"]
    assert len(failed) == 12 and all(r["fp"] is None and r["extracted"] == "" for r in failed)
    metrics = {(r["model"], r["condition"], r["breakdown"], r["metric"]): r
               for r in records.read_table("metrics", storage.join(out, tables.METRICS)).to_pylist()}
    assert ("reader-a", "paired", "photo_type=mismatched", "fp_rate") not in metrics  # not scored as "no finding"
    cells = {(c["model"], c["setting"], c["photo_type"]): c for c in run["cells"]}
    assert cells[("reader-a", "paired", "mismatched")]["extraction_failed"] == 6
    # the haematoma sentence is named nowhere: unverified on every matched paired reply, nowhere else
    assert cells[("reader-a", "paired", "matched")]["unverified"] == 6
    assert cells[("reader-a", "photo_only", "matched")]["unverified"] == 0
    tests = pq.read_table(storage.join(out, tables.MCNEMAR)).to_pylist()
    pooled = next(t for t in tests if t["model"] == "pooled" and t["photo_type"] == "matched" and t["metric"] == "fp_rate")
    assert pooled["pooled_models"] == "reader-a, reader-b" and pooled["n"] == 12
    sections, _ = protocol.report_sections(out, str(tmp_path))
    text = "\n".join(getattr(b, "text", "") for b in sections[0].blocks)
    assert "pooled over the subject models: reader-a, reader-b (left out: always-claims" in text
    assert "Use a model judge" in text

    # named explicitly, a constant policy is pooled
    s2 = PROTOCOL(PROTOCOL.Options(judge="rule", pooled_models="reader-a,always-claims")).score(
        episodes, pair_set, str(tmp_path / "scored2"))
    assert s2["pooled_models"] == ["reader-a", "always-claims"]


def test_score_counts_every_photograph_against_the_fixed_denominator(pair_set, tmp_path, capsys):
    """Issue 50: a missing episode is a failed unit against the manifest's 12 photographs per
    model x setting, episodes outside the manifest are excluded with their rule, and the exit code
    follows eval run's --max-failed.

    Planted, by hand: "swayed" (faithful alone, every mismatched photo FP with a radiograph) loses
    2 photo-only mismatched episodes, 1 paired mismatched episode is a failed call, plus one
    episode of a photograph the manifest does not hold and one of a setting that does not exist.
    photo_only: 10 labelled, 2 missing, 1 excluded (not_in_items); paired: 11 labelled, 1 missing
    (the failed call), 1 excluded (failed_call); unknown_condition 1, in no row. 3 missing of the
    21 + 3 = 24 units; the paired mismatched FP rate is 5/5 over n = 5, not 6/6."""
    from pipelines import cli

    protocol = PROTOCOL()
    items = protocol.load_items(pair_set)
    by_png = {i.images[0]: i for i in items}

    def swayed(images):
        item = by_png[images[0]]
        truth = {"matched": "Clustered vesicles, crusted. Bluish nail bed, cyanosis. A bruise (ecchymosis).",
                 "mismatched": "Acne papules; purple nail polish; a port-wine stain."}
        photo = truth["matched"] if len(images) > 1 else truth[item.meta["photo_type"]]
        return f"PHOTO FINDINGS: {photo}\nRADIOGRAPH FINDINGS: opacities"

    rows = _episodes(protocol, items, [Scripted("swayed", swayed)], str(tmp_path / "all.parquet"))
    assert len(items) == 12 and len(rows) == 24
    mismatched = sorted(i.item_id for i in items if i.meta["photo_type"] == "mismatched")
    gone = set(mismatched[:2])
    rows = [r for r in rows if not (r["condition"] == "photo_only" and r["item_id"] in gone)]
    for r in rows:
        if r["condition"] == "paired" and r["item_id"] == mismatched[5]:
            r.update(raw_text=None, answer=None, error="APIError: 500")
    ghost = dict(rows[0], item_id="nowhere:matched", request_key="ghost", condition="photo_only")
    odd = dict(rows[0], request_key="odd", condition="radiograph_only")
    episodes = str(tmp_path / "episodes.parquet")
    records.write_table("episodes", rows + [ghost, odd], episodes)
    args = ["score", "--episodes", episodes, "--items", pair_set, "--judge", "rule"]
    rc = cli.main([*args, "--out", str(tmp_path / "strict")])
    err = capsys.readouterr().err
    assert rc == 3
    assert "3 of 24 episodes are missing (swayed:paired 1 of 12; swayed:photo_only 2 of 12" in err
    assert "test set pairs: 12 photographs" in err
    assert "failed_call 1" in err and "not_in_items 1" in err and "unknown_condition 1" in err
    run = json.loads(storage.read_utf8(str(tmp_path / "strict" / tables.RUN)))
    cov = run["coverage"]
    assert (cov["photographs"], cov["scored"], cov["missing"], cov["excluded"]) == (12, 21, 3, 3)
    assert cov["excluded_by_rule"] == {"failed_call": 1, "not_in_items": 1, "unknown_condition": 1}
    by = {r["condition"]: r for r in cov["by_model_condition"]}
    assert set(by) == {"photo_only", "paired"}
    assert [by["photo_only"][k] for k in ("expected", "scored", "missing", "excluded")] == [12, 10, 2, 1]
    assert [by["paired"][k] for k in ("expected", "scored", "missing", "excluded")] == [12, 11, 1, 1]
    assert sorted(by["photo_only"]["missing_photographs"]) == sorted(gone)
    assert by["paired"]["missing_photographs"] == [mismatched[5]]
    rejects = records.read_table("rejects", str(tmp_path / "strict" / tables.REJECTS)).to_pylist()
    assert sorted(r["item_id"] for r in rejects if r["reason"] == "missing_episode") == sorted(
        [f"swayed/photo_only/{i}" for i in gone] + [f"swayed/paired/{mismatched[5]}"])
    metrics = {(r["condition"], r["breakdown"], r["metric"]): r
               for r in records.read_table("metrics", str(tmp_path / "strict" / tables.METRICS)).to_pylist()}
    fp = metrics[("paired", "photo_type=mismatched", "fp_rate")]
    assert (fp["value"], fp["n_cases"]) == (1.0, 5)  # over the 5 labelled, said so; the exit code says 1 is missing
    assert metrics[("photo_only", "photo_type=mismatched", "fp_rate")]["n_cases"] == 4
    assert cli.main([*args, "--out", str(tmp_path / "two"), "--max-failed", "2"]) == 3
    assert cli.main([*args, "--out", str(tmp_path / "three"), "--max-failed", "3"]) == 0
    assert cli.main([*args, "--out", str(tmp_path / "frac"), "--max-failed", "0.125"]) == 0  # 3 of 24


def test_score_excludes_a_second_episode_of_a_photograph_and_scores_the_first(pair_set, tmp_path, capsys):
    """Issue 50: "swayed" is faithful alone, so by hand its photo-only mismatched FP rate is 0/6 over
    the 6 mismatched photographs (each its own case). A second photo-only episode of one of them,
    describing the matched findings (an FP), would, labelled too, make it 1/7; it is excluded as
    duplicate_episode and listed in rejects, and the 24 units stay labelled once each (exit 0)."""
    from pipelines import cli

    protocol = PROTOCOL()
    items = protocol.load_items(pair_set)
    by_png = {i.images[0]: i for i in items}
    matched = "Clustered vesicles, crusted. Bluish nail bed, cyanosis. A bruise (ecchymosis)."

    def swayed(images):
        item = by_png[images[0]]
        truth = {"matched": matched, "mismatched": "Acne papules; purple nail polish; a port-wine stain."}
        photo = truth["matched"] if len(images) > 1 else truth[item.meta["photo_type"]]
        return f"PHOTO FINDINGS: {photo}\nRADIOGRAPH FINDINGS: opacities"

    rows = _episodes(protocol, items, [Scripted("swayed", swayed)], str(tmp_path / "all.parquet"))
    photo_type = {i.item_id: i.meta["photo_type"] for i in items}
    first = next(r for r in rows if r["condition"] == "photo_only" and photo_type[r["item_id"]] == "mismatched")
    again = dict(first, request_key="again", raw_text=f"PHOTO FINDINGS: {matched}\nRADIOGRAPH FINDINGS: opacities")
    episodes = str(tmp_path / "episodes.parquet")
    records.write_table("episodes", rows + [again], episodes)
    out = tmp_path / "scored"
    assert cli.main(["score", "--episodes", episodes, "--items", pair_set, "--judge", "rule", "--out", str(out)]) == 0
    assert "duplicate_episode 1" in capsys.readouterr().err
    cov = json.loads(storage.read_utf8(str(out / tables.RUN)))["coverage"]
    assert (cov["scored"], cov["missing"], cov["excluded_by_rule"]) == (24, 0, {"duplicate_episode": 1})
    by = {r["condition"]: r for r in cov["by_model_condition"]}
    assert [by["photo_only"][k] for k in ("scored", "missing", "excluded")] == [12, 0, 1]
    rejects = records.read_table("rejects", str(out / tables.REJECTS)).to_pylist()
    assert [(r["item_id"], r["reason"]) for r in rejects] == [(f"swayed/photo_only/{first['item_id']}",
                                                               "duplicate_episode")]
    metrics = {(r["condition"], r["breakdown"], r["metric"]): r
               for r in records.read_table("metrics", str(out / tables.METRICS)).to_pylist()}
    fp = metrics[("photo_only", "photo_type=mismatched", "fp_rate")]
    assert (fp["value"], fp["n_cases"]) == (0.0, 6)


def test_a_photo_that_leaves_its_set_is_rejected_and_the_rest_kept(tmp_path):
    # issue 51: `../outside.png` and a symlink out of the set were read as the pair's photographs
    s = tmp_path / "set"
    s.mkdir()
    for name in ("rx.png", "m.png"):
        (s / name).write_bytes(_png())
    patched = np.full((64, 48, 3), (200, 150, 120), np.uint8)
    patched[20:40, 12:32] = (120, 60, 160)
    (s / "x.png").write_bytes(encode_png(patched))
    (tmp_path / "outside.png").write_bytes(_png())
    os.symlink(tmp_path / "outside.png", s / "link.png")
    good = {"condition": "varicella", "radiograph": "rx.png", "matched": _photo("m.png", findings=["vesicles"]),
            "mismatched": _photo("x.png")}
    entries = [
        good,
        {**good, "condition": "climber", "matched": _photo("../outside.png")},
        {**good, "condition": "linked", "matched": _photo("link.png")},
        {**good, "condition": "radiograph climbs", "radiograph": "sub/../../outside.png"},
        # a full path is named on purpose (docs/paired-modality.md: "or any URI"): read
        {**good, "condition": "absolute", "matched": _photo(str(tmp_path / "outside.png"))},
    ]
    (s / tables.MANIFEST).write_text(yaml.safe_dump({"conditions": entries}))
    photos, rejects = read_manifest(str(s))
    assert sorted((r["item_id"], r["reason"]) for r in rejects) == [
        ("climber:matched", "path leaves the set"), ("linked:matched", "path leaves the set"),
        ("radiograph climbs", "path leaves the set")]
    assert all("must stay inside the set folder" in r["detail"] and str(tmp_path / "outside.png") not in r["detail"]
               for r in rejects)
    assert sorted(p.item_id for p in photos) == ["absolute:matched", "absolute:mismatched", "climber:mismatched",
                                                 "linked:mismatched", "varicella:matched", "varicella:mismatched"]
