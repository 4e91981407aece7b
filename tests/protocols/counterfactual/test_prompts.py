"""Prompt templates: versioning, paraphrase sets, few-shot examples (counterfactual paper §5.5, Appendix A)."""

import numpy as np
import pytest

from medscope.protocols.counterfactual import prompts
from medscope.answers.parser import parse_reply
from medscope.errors import MedScopeError
from medscope.models.classical import read_pixels


def test_version_follows_content(tmp_path):
    text = prompts.TEMPLATE_PATH.read_text()
    same = tmp_path / "same.yaml"
    same.write_text(text)
    edited = tmp_path / "edited.yaml"
    edited.write_text(text.replace("Keep the answer short.", "Keep the answer brief."))
    assert prompts.prompt_version(str(same)) == prompts.PROMPT_VERSION
    assert prompts.prompt_version(str(edited)) != prompts.PROMPT_VERSION
    assert prompts.PROMPT_VERSION.startswith("cf1-")


def test_bad_template_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: x\nagent: hi\n")
    with pytest.raises(MedScopeError, match="invalid PromptTemplates"):
        prompts.load_templates(str(bad))


def test_agent_prompt_keeps_the_papers_tags_tools_and_rules():
    agent = prompts.system_prompt("agent")
    for must in ('<tool>{"name": "zoom", "box": [x1, y1, x2, y2]}</tool>',
                 '<tool>{"name": "window", "center": 128, "width": 100}</tool>',
                 '<final>{"action": "clarify", "question": "..."}</final>',
                 '<final>{"action": "refer", "reason": "..."}</final>',
                 "3 calls", "0 to 1000", '"No" to "Is there ...?"', '"Yes" to "Is ... healthy?"',
                 '"No abnormality" to an open question'):
        assert must in agent, must
    # the two worked examples in the prompt parse as the actions they illustrate
    assert parse_reply(agent.split("A tool turn looks like this:")[1].split("\n\n")[0]).tool.name == "zoom"
    assert parse_reply(agent.split("A final turn looks like this:")[1].split("\n\n")[0]).final.answer == "Yes"


@pytest.mark.parametrize("kind", prompts.QUESTION_KINDS)
def test_held_out_wordings_never_appear_in_training(kind):
    tpl = prompts.load_templates()
    train, test = tpl.paraphrases[kind].train, tpl.paraphrases[kind].test
    assert len(train) == 4 and len(test) == 3 and not set(train) & set(test)
    for t in test:
        words_t = set(t.lower().split())
        for r in train:
            overlap = len(words_t & set(r.lower().split())) / len(words_t | set(r.lower().split()))
            assert overlap < 0.6, (t, r)


def test_paraphrase_keeps_the_question_kind_readable():
    from medscope.answers.matching import infer_question_kind

    for kind in prompts.QUESTION_KINDS:
        for split in ("train", "test"):
            for key in range(12):
                q = prompts.paraphrase_question(kind, "polyp", f"k{key}", split)
                assert infer_question_kind(q) == kind, q


def test_few_shot_examples_show_what_their_answers_say():
    ex = prompts.few_shot_examples()
    assert [e.reply.count("<final>") for e in ex] == [1, 1, 1, 1]
    lesion, erased, elsewhere, healthy = (e.image for e in ex)
    # erasure changes only the lesion's neighbourhood; the control edit leaves it untouched
    yy, xx = np.mgrid[0:256, 0:256]
    near_lesion = np.hypot(xx - 0.66 * 256, yy - 0.40 * 256) < 0.08 * 256 + 6
    assert np.array_equal(elsewhere[near_lesion], lesion[near_lesion])
    assert not np.array_equal(erased[near_lesion], lesion[near_lesion])
    assert np.array_equal(erased[~near_lesion], lesion[~near_lesion])
    # and a pixel reader agrees with the solved answers
    assert [read_pixels(im).decision for im in (lesion, erased, elsewhere, healthy)] == [
        "present", "absent", "present", "absent"]
