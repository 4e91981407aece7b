"""Trivial policies and the classical pixel reader, through the shared episode loop."""

from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from medscope.protocols.counterfactual.agent_episode import run_episode
from medscope.protocols.counterfactual.prompts import few_shot_images
from medscope.protocols.base import Item
from medscope.errors import MedScopeError
from medscope.images import encode_png
from medscope.models.base import ChatModel, Decoding
from medscope.models.classical import ClassicalReader, blockiness, noise_sigma, read_pixels
from medscope.models.local_kinds import AGENT_MODEL_KINDS
from medscope.models.policies import POLICIES, TrivialPolicy
from tests.conftest import REPO_ROOT

DEC = Decoding()
QUESTIONS = {
    "presence": "Is there a lesion?",
    "health": "Is the brain healthy?",
    "open": "What abnormality is seen?",
}


def _item(img, kind="presence", item_id="v"):
    return Item(item_id=item_id, case_id="c", question=QUESTIONS[kind], truth="present",
                images=(encode_png(img),), meta={"finding": "lesion", "question_kind": kind})


@pytest.mark.parametrize("kind", list(QUESTIONS))
@pytest.mark.parametrize(
    "policy,action,claim",
    [("always-claims", "answer", True), ("always-absent", "answer", False),
     ("always-refers", "refer", None), ("always-clarifies", "clarify", None)],
)
def test_policies_mean_what_they_say_for_every_question_kind(policy, action, claim, kind):
    img = few_shot_images(1)["lesion"]
    for condition in ("agent", "plain", "blind", "few-shot", "paraphrase"):
        res = run_episode(_item(img, kind), TrivialPolicy(policy), condition, DEC)
        assert (res.action, res.claims_finding) == (action, claim), (condition, res.raw_text)
        assert res.tool_calls == 0


def test_policies_are_chat_models_and_unknown_is_an_error():
    assert isinstance(TrivialPolicy("always-claims"), ChatModel)
    assert TrivialPolicy("always-absent").name == "policy/always-absent"
    with pytest.raises(MedScopeError, match="unknown policy"):
        TrivialPolicy("always-guesses")
    assert len(POLICIES) == 4


def _degrade(img, how):
    h, w = img.shape
    if how == "blur":  # the counterfactual paper §3.2: sigma = max(h, w) / 40
        return cv2.GaussianBlur(img, (0, 0), max(h, w) / 40)
    if how == "noise":  # sigma 60
        rng = np.random.default_rng(0)
        return np.clip(img + rng.normal(0, 60, img.shape), 0, 255).astype(np.uint8)
    if how == "downup":  # 8x down and up
        small = cv2.resize(img, (w // 8, h // 8), interpolation=cv2.INTER_AREA)
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)
    if how == "downup-nearest":
        small = cv2.resize(img, (w // 8, h // 8), interpolation=cv2.INTER_AREA)
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_NEAREST)
    if how == "jpeg":  # quality 5
        ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 5])
        return cv2.imdecode(buf, cv2.IMREAD_GRAYSCALE)
    if how == "motion":  # a horizontal line kernel of max(h, w) / 15 px
        n = max(h, w) // 15
        return cv2.filter2D(img, -1, np.full((1, n), 1.0 / n, np.float32))
    raise ValueError(how)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_pixel_reader_follows_the_image(seed):
    ims = few_shot_images(seed, size=256)
    assert read_pixels(ims["lesion"]).decision == "present"
    assert read_pixels(ims["edited_elsewhere"]).decision == "present"  # lesion intact
    assert read_pixels(ims["erased"]).decision == "absent"
    assert read_pixels(ims["healthy"]).decision == "absent"
    for how in ("blur", "noise", "downup", "downup-nearest", "jpeg", "motion"):
        assert read_pixels(_degrade(ims["lesion"], how)).decision == "clarify", how
    assert read_pixels(np.full((200, 300), 128, np.uint8)).decision == "clarify"


def test_pixel_reader_box_covers_the_lesion():
    r = read_pixels(few_shot_images(1)["lesion"])
    x1, y1, x2, y2 = r.box
    # lesion centre (660, 400) in thousandths, radius 80
    assert x1 < 660 < x2 and y1 < 400 < y2
    assert x2 - x1 < 500 and y2 - y1 < 500


def test_blockiness_is_one_for_smooth_images_and_high_for_8px_blocks():
    rng = np.random.default_rng(3)
    smooth = cv2.GaussianBlur(rng.normal(128, 30, (128, 128)), (0, 0), 2).astype(np.uint8)
    assert blockiness(smooth) == pytest.approx(1.0, abs=0.15)
    blocks = np.kron(rng.integers(0, 256, (16, 16)), np.ones((8, 8))).astype(np.uint8)
    # every jump sits on a block border: the ratio is huge
    assert blockiness(blocks) > 100


def test_dark_border_is_not_read_as_a_blob():
    # an ultrasound-like fan: structure only inside a wedge, black outside
    img = few_shot_images(4)["healthy"].copy()
    yy, xx = np.mgrid[0:256, 0:256]
    img[np.abs(xx - 128) > (yy * 0.6 + 10)] = 0
    assert read_pixels(img).decision == "absent"


def test_noise_estimate_matches_added_gaussian_noise():
    rng = np.random.default_rng(5)
    flat = np.full((256, 256), 100.0) + rng.normal(0, 10, (256, 256))
    assert noise_sigma(flat) == pytest.approx(10, rel=0.05)


def test_classical_reader_through_the_episode_loop():
    ims = few_shot_images(2)
    reader = ClassicalReader()
    res = run_episode(_item(ims["lesion"]), reader, "agent", DEC)
    assert res.action == "answer" and res.claims_finding is True and res.box is not None
    res = run_episode(_item(ims["erased"], "health"), reader, "agent", DEC)
    assert res.action == "answer" and res.claims_finding is False
    res = run_episode(_item(ims["healthy"], "open"), reader, "agent", DEC)
    assert res.claims_finding is False
    assert run_episode(_item(ims["lesion"]), reader, "blank", DEC).action == "clarify"
    assert run_episode(_item(ims["lesion"]), reader, "blind", DEC).action == "refer"
    # few-shot: reads the case image, not the examples before it
    assert run_episode(_item(ims["healthy"]), reader, "few-shot", DEC).claims_finding is False


def test_factories_from_config_entries():
    entry = SimpleNamespace(name="p", kind="policy", model="always-refers", options={})
    assert AGENT_MODEL_KINDS["policy"](entry).policy == "always-refers"
    c = AGENT_MODEL_KINDS["classical"](SimpleNamespace(name="c", model=None, options={"blob_z": 12}))
    assert c.name == "c" and c.blob_z == 12.0
    with pytest.raises(MedScopeError):
        AGENT_MODEL_KINDS["classical"](SimpleNamespace(name="c", model=None, options={"zz": 1}))
    with pytest.raises(MedScopeError):
        AGENT_MODEL_KINDS["policy"](SimpleNamespace(name="p", model=None, options={}))
    # the spellings of configs/models/demo.yaml
    for spelled, canonical in [("always_present", "always-claims"), ("always_absent", "always-absent"),
                               ("always_refer", "always-refers"), ("always_clarify", "always-clarifies")]:
        m = AGENT_MODEL_KINDS["policy"](SimpleNamespace(name=spelled, model=spelled, options={}))
        assert m.policy == canonical and m.name == spelled
    reader = AGENT_MODEL_KINDS["classical_reader"](SimpleNamespace(name="r", model="intensity_outlier", options={}))
    assert reader.name == "r"
    with pytest.raises(MedScopeError, match="classical method"):
        AGENT_MODEL_KINDS["classical"](SimpleNamespace(name="r", model="deep_net", options={}))


def test_pixel_reader_on_the_phantom_cohort_flags_unusable_images():
    """On the project's phantom (ultrasound fans, endoscopy corners, radiographs) no original
    is called unusable, and the paper's blur, noise, down/up and JPEG degradations all are."""
    from medscope.cohorts.phantom import phantom_cases
    from medscope.images import decode_png

    rows, _ = phantom_cases(12, seed=3)
    for row in rows:
        img = decode_png(row["image"], gray=True)
        assert read_pixels(img).decision != "clarify", row["case_id"]
        for how in ("blur", "noise", "downup-nearest", "jpeg"):
            assert read_pixels(_degrade(img, how)).decision == "clarify", (row["case_id"], how)


def test_demo_model_config_builds_through_the_registry():
    """configs/models/demo.yaml's kinds (policy, classical_reader) resolve in MODEL_KINDS and
    each model answers as its name says on a lesion image."""
    import os

    from medscope import config as cfgmod
    from medscope.models.config import ModelsConfig
    from medscope.models.registry import MODEL_KINDS, build_model

    assert {"policy", "classical", "classical_reader", "local_hf"} <= set(MODEL_KINDS)
    path = os.path.join(REPO_ROOT, "configs", "models", "demo.yaml")
    entries = cfgmod.load(ModelsConfig, path).models
    # the classical reader's weights are fitted by the demo (pipelines/demo.py step_fit_reader);
    # the config holds a placeholder that is a clear error if built without that step
    reader = next(e for e in entries if e.name == "classical-reader")
    assert reader.options["weights"] == "fitted-by-demo"
    with pytest.raises(MedScopeError, match="fitted-by-demo not found"):
        build_model(reader)
    entries = [e if e is not reader else e.model_copy(update={"options": {}}) for e in entries]
    item = _item(few_shot_images(1)["lesion"])
    got = {e.name: run_episode(item, build_model(e), "agent", DEC) for e in entries}
    assert (got["always-present"].action, got["always-present"].claims_finding) == ("answer", True)
    assert (got["always-absent"].action, got["always-absent"].claims_finding) == ("answer", False)
    assert got["always-refer"].action == "refer" and got["always-clarify"].action == "clarify"
    assert got["classical-reader"].claims_finding is True
