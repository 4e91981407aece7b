"""The episode loop and every condition's messages (counterfactual paper §3.1, §3.10, §5.5)."""

import cv2
import numpy as np
import pytest

from medscope.io import records
from medscope.protocols.counterfactual import prompts
from medscope.protocols.counterfactual.protocol import CounterfactualProtocol
from medscope.protocols.counterfactual.agent_episode import CONDITIONS, Episode, EpisodeSettings, run_episode, run_episodes
from medscope.protocols.base import Item
from medscope.errors import MedScopeError
from medscope.images import decode_png, encode_png
from medscope.models.base import Completion, Decoding

TPL = prompts.load_templates()
DEC = Decoding()


def _image(h=1000, w=1500, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (h, w), dtype=np.uint8)


def _item(h=1000, w=1500, question="Is there a nodule?", kind="presence", item_id="v1"):
    return Item(item_id=item_id, case_id="c1", question=question, truth="present",
                images=(encode_png(_image(h, w)),),
                meta={"finding": "nodule", "question_kind": kind, "width": w, "height": h})


class Scripted:
    """A ChatModel that replies from a script and keeps every request it was sent."""

    name, provider, endpoint = "scripted", "test", "local"

    def __init__(self, replies):
        self.replies = list(replies)
        self.seen = []

    def complete(self, messages, decoding):
        self.seen.append(messages)
        return Completion(self.replies[len(self.seen) - 1], input_tokens=100, output_tokens=10)


def _images(messages):
    return [decode_png(p.png) for m in messages for p in m.parts if p.is_image]


def _zoom(box=(0, 0, 500, 500)):
    return f'Closer. <tool>{{"name": "zoom", "box": {list(box)}}}</tool>'


ANSWER_YES = 'Seen. <final>{"action": "answer", "answer": "Yes", "box": [100, 200, 300, 400], "confidence": 0.8}</final>'


def test_agent_messages_and_image_size():
    ep = Episode(_item(), "agent")
    system, user = ep.messages
    assert system.role == "system" and system.joined_text == TPL.agent
    imgs = _images(ep.messages)
    assert len(imgs) == 1 and imgs[0].shape[:2] == (512, 768)  # 1000x1500 -> long side 768
    assert user.parts[-1].text == "Is there a nodule?"


def test_resize_long_side_is_configurable():
    ep = Episode(_item(), "agent", EpisodeSettings(resize_long_side=300))
    assert _images(ep.messages)[0].shape[:2] == (200, 300)
    small = Episode(_item(100, 50), "agent")  # never upscaled
    assert _images(small.messages)[0].shape[:2] == (100, 50)


def test_blind_has_no_image_and_blank_is_uniform_gray():
    blind = Episode(_item(), "blind")
    assert _images(blind.messages) == []
    assert blind.messages[-1].joined_text == "Is there a nodule?"
    blank = Episode(_item(), "blank")
    (img,) = _images(blank.messages)
    assert img.shape[:2] == (512, 768) and img.min() == img.max() == 128
    assert blank.turns[0]["image_ref"] == "blank"


def test_plain_cautious_fewshot_prompts():
    assert Episode(_item(), "plain").messages[0].joined_text == TPL.plain
    cautious = Episode(_item(), "cautious").messages[0].joined_text
    assert cautious.startswith(TPL.agent) and cautious.endswith(TPL.cautious_warning)
    few = Episode(_item(), "few-shot").messages
    assert few[0].joined_text.startswith(cautious)
    roles = [m.role for m in few]
    assert roles == ["system"] + ["user", "assistant"] * 4 + ["user"]
    assert len(_images(few)) == 5
    from medscope.answers.parser import parse_reply

    answers = [parse_reply(m.joined_text).final.answer for m in few if m.role == "assistant"]
    assert answers == ["Yes", "No", "Yes", "No"]  # lesion, erased, edit elsewhere, healthy


def test_paraphrase_uses_a_held_out_wording_deterministically():
    ep = Episode(_item(item_id="view-42"), "paraphrase")
    q = ep.messages[-1].parts[-1].text
    held_out = [w.format(finding="nodule", Finding="Nodule") for w in TPL.paraphrases["presence"].test]
    train = [w.format(finding="nodule", Finding="Nodule") for w in TPL.paraphrases["presence"].train]
    assert q in held_out and q not in train and q != "Is there a nodule?"
    assert Episode(_item(item_id="view-42"), "paraphrase").messages[-1].parts[-1].text == q
    qs = {Episode(_item(40, 60, item_id=f"v{i}"), "paraphrase").question for i in range(30)}
    assert qs == set(held_out)  # all three wordings are used


def test_unknown_condition_is_a_clear_error():
    with pytest.raises(MedScopeError, match="unknown condition"):
        Episode(_item(), "sideways")
    assert Episode(_item(), "tools_off").condition == "tools-off"
    assert len(CONDITIONS) == 8


def test_zoom_then_answer():
    model = Scripted([_zoom((0, 0, 500, 500)), ANSWER_YES])
    res = run_episode(_item(), model, "agent", DEC)
    assert res.action == "answer" and res.claims_finding is True and res.tool_calls == 1
    # second request carries the crop: top-left quarter of 1500x1000 = 750x500 pixels,
    # enlarged (bicubic) to the 768 px long side
    crop = _images(model.seen[1])[-1]
    assert crop.shape[:2] == (512, 768)
    expected = cv2.resize(_image()[:500, :750], (768, 512), interpolation=cv2.INTER_CUBIC)
    assert np.array_equal(crop[..., 0] if crop.ndim == 3 else crop, expected)
    # box 0-1000 -> pixels of the 1500x1000 original
    assert res.box == [150, 200, 450, 400] and res.confidence == 0.8
    assert res.input_tokens == 200 and res.output_tokens == 20 and res.model_turns == 2
    assert [t["role"] for t in res.turns] == ["user", "assistant", "user", "assistant"]
    assert res.turns[2]["image_ref"] == "tool:1"


def test_tools_off_refuses_every_call():
    model = Scripted([_zoom(), _zoom(), 'ok <final>{"action": "answer", "answer": "No"}</final>'])
    res = run_episode(_item(), model, "tools-off", DEC)
    assert res.action == "answer" and res.claims_finding is False and res.tool_calls == 2
    assert len(_images(model.seen[-1])) == 1  # only the case image, no tool output
    assert model.seen[-1][-1].joined_text == TPL.tools_off


def test_tool_limit_then_turn_limit_is_unparseable():
    model = Scripted([_zoom()] * 10)
    res = run_episode(_item(), model, "agent", DEC)
    assert res.action == "unparseable" and "within 5 turns" in res.parse_error
    assert res.tool_calls == 4 and res.model_turns == 5
    assert "limit of 3" in model.seen[-1][-1].joined_text


def test_bad_box_gets_an_error_turn_and_the_episode_goes_on():
    model = Scripted([_zoom((0, 0, 2000, 10)), '<final>{"action": "refer", "reason": "unsure"}</final>'])
    res = run_episode(_item(), model, "agent", DEC)
    assert res.action == "refer" and res.claims_finding is None
    assert "outside 0-1000" in model.seen[1][-1].joined_text


def test_plain_reads_free_text_and_rejects_tool_calls():
    res = run_episode(_item(), Scripted(["No nodule is seen."]), "plain", DEC)
    assert res.action == "answer" and res.claims_finding is False and res.answer == "No nodule is seen."
    res = run_episode(_item(), Scripted([_zoom()]), "plain", DEC)
    assert res.action == "unparseable"
    res = run_episode(_item(), Scripted(["The image is too blurry."]), "plain", DEC)
    assert res.action == "clarify"


def test_health_question_polarity_through_the_loop():
    item = _item(question="Is the lung healthy?", kind="health")
    res = run_episode(item, Scripted(['<final>{"action": "answer", "answer": "Yes"}</final>']), "agent", DEC)
    assert res.claims_finding is False


def test_unparseable_and_refusal_replies():
    res = run_episode(_item(), Scripted(["<final>not json</final>"]), "agent", DEC)
    assert res.action == "unparseable" and res.claims_finding is None
    # a refusal of the task declines to decide on a usable image: refer, never a claim or a denial
    # (issue 48 lists "refusals unparseable rather than refer" among the misreadings)
    res = run_episode(_item(), Scripted(["I'm sorry, I can't help with that."]), "agent", DEC)
    assert res.action == "refer" and res.claims_finding is None


class Batched(Scripted):
    def __init__(self, replies):
        super().__init__(replies)
        self.batches = []

    def complete_batch(self, convs, decoding):
        self.batches.append(len(convs))
        return [Completion(_zoom() if len(c) == 2 else ANSWER_YES, 5, 1) for c in convs]


def test_run_episodes_lock_step_matches_single_runs():
    items = [(_item(item_id=f"v{i}"), "agent") for i in range(3)]
    model = Batched([])
    batched = run_episodes(items, model, DEC)
    assert model.batches == [3, 3]
    single = run_episode(items[0][0], Scripted([_zoom(), ANSWER_YES]), "agent", DEC)
    assert [r.action for r in batched] == ["answer"] * 3
    assert batched[0].box == single.box and batched[0].tool_calls == single.tool_calls == 1


def test_counterfactual_protocol_loads_passed_views(tmp_path):
    img = encode_png(_image(64, 80))
    base = dict(case_id="c1", tool="lama", edit_mask=None, source="phantom", imaging_type="xray",
                finding="nodule", question="Is there a nodule?", question_kind="presence", critical=False,
                lesion_area_frac=0.01, lesion_bbox=[1, 2, 3, 4], width=80, height=64,
                recipe_hash="r", private=False, endpoint_allowlist=[])
    rows = [
        dict(base, view_id="a", kind="original", expected="present", image=img, passed=True),
        dict(base, view_id="b", kind="target_removal", expected="absent", image=img, passed=False),
        dict(base, view_id="c", kind="degraded", expected="clarify", image=None, passed=True),
    ]
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", rows, uri)
    proto = CounterfactualProtocol()
    items = proto.load_items(uri)
    assert [i.item_id for i in items] == ["a"]
    assert items[0].truth == "present" and items[0].meta["lesion_bbox"] == [1, 2, 3, 4]
    assert items[0].meta["kind"] == "original" and items[0].meta["width"] == 80
    assert [r["item_id"] for r in proto.rejects] == ["c"]
    assert proto.prompt_version == prompts.PROMPT_VERSION and "agent" in proto.conditions()
    res = proto.run_episode(items[0], Scripted([ANSWER_YES]), "agent", DEC)
    assert res.box == [8, 13, 24, 26]  # [100, 200, 300, 400] of 80x64


def test_protocol_options_build_episode_settings():
    from medscope import protocols

    proto = protocols.load("counterfactual", {"resize_long_side": 256, "max_turns": 3})
    assert proto.settings.resize_long_side == 256 and proto.settings.max_turns == 3
    ep = Episode(_item(), "agent", proto.settings)
    assert max(_images(ep.messages)[0].shape[:2]) == 256
    with pytest.raises(MedScopeError, match="protocol option 'resize': unknown key for counterfactual"):
        protocols.load("counterfactual", {"resize": 3})
    with pytest.raises(MedScopeError, match="protocol option 'resize_long_side' of counterfactual"):
        protocols.load("counterfactual", {"resize_long_side": 8})  # under 16 pixels


def test_replay_builds_the_training_conversation():
    from medscope.answers.actions import FinalAction, ToolCall, format_final, format_tool_call
    from medscope.protocols.counterfactual.agent_episode import replay

    replies = [format_tool_call(ToolCall("zoom", box=(0, 0, 500, 500)), "Closer."),
               format_final(FinalAction("answer", answer="Yes", box=(100, 200, 300, 400), confidence=0.9), "Seen.")]
    ep = replay(_item(), "agent", replies)
    assert ep.done and ep.result.action == "answer" and ep.result.claims_finding is True
    assert [m.role for m in ep.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert len(_images(ep.messages)) == 2  # the case image and the zoom crop
    with pytest.raises(MedScopeError, match="after the episode ended"):
        replay(_item(), "agent", replies + ["extra"])
