"""The reply parser (counterfactual paper §3.1, §3.10): a table of real-looking replies and their reading."""

import pytest

from medscope.answers.actions import FinalAction, ToolCall, format_final, format_tool_call
from medscope.answers.parser import parse_reply, strip_reasoning

FINAL_YES = ("final", "answer", "Yes")
FINAL_NO = ("final", "answer", "No")

# reply -> (kind, action or tool name, answer / None)
TABLE = [
    ('The mass is visible. <final>{"action": "answer", "answer": "Yes", "box": [1, 2, 3, 4], "confidence": 0.8}</final>', FINAL_YES),
    ('<final>{"action": "answer", "answer": "No"}</final>', FINAL_NO),
    ('<FINAL>{"action": "ANSWER", "answer": "No"}</FINAL>', FINAL_NO),
    ('<final> {"action": "refer", "reason": "cannot decide"} </final>', ("final", "refer", None)),
    ('<final>{"action": "clarify", "question": "Better image?"}</final>', ("final", "clarify", None)),
    # reasoning blocks are stripped, including tags inside them
    ('<think>maybe <final>{"action": "answer", "answer": "Yes"}</final>? no.</think> <final>{"action": "answer", "answer": "No"}</final>', FINAL_NO),
    ('<thinking>long</thinking><final>{"action": "answer", "answer": "Yes"}</final>', FINAL_YES),
    ('stuff the template cut </think>\n<final>{"action": "answer", "answer": "No"}</final>', FINAL_NO),
    ('<reasoning>hmm</reasoning> Yes, a polyp.', ("free", None, None)),
    ('<think>never closed <final>{"action": "answer", "answer": "Yes"}</final>', ("unparseable", None, None)),
    # code fences, trailing text, slop
    ('```json\n<final>{"action": "answer", "answer": "Yes"}</final>\n```', FINAL_YES),
    ('<final>```json\n{"action": "answer", "answer": "No"}\n```</final>', FINAL_NO),
    ('<final>{"action": "answer", "answer": "No"}</final> I hope this helps! Let me know.', FINAL_NO),
    ("<final>{'action': 'answer', 'answer': 'Yes'}</final>", FINAL_YES),
    ('<final>{"action": "answer", "answer": "No",}</final>', FINAL_NO),
    ('<final>{"action": "answer", "answer": "No", "box": None}</final>', FINAL_NO),
    ('<final>{"action": "answer", "answer": "Yes", "confidence": 0.9}', FINAL_YES),  # no closing tag
    ('<final>{"action": "answer", "answer": "It\'s a polyp {left}"}</final>', ("final", "answer", "It's a polyp {left}")),
    ('<final>{"action": "answer", "answer": true}</final>', FINAL_YES),
    ('<final>{"answer": "No", "confidence": 0.7}</final>', FINAL_NO),  # action key left out
    # first action wins
    ('<final>{"action": "answer", "answer": "No"}</final> <final>{"action": "answer", "answer": "Yes"}</final>', FINAL_NO),
    ('<tool>{"name": "zoom", "box": [0, 0, 500, 500]}</tool> Result: ... <final>{"action": "answer", "answer": "Yes"}</final>', ("tool", "zoom", None)),
    ('<tool>{"name": "window", "center": 128, "width": 100}</tool>', ("tool", "window", None)),
    ('<tool>{"name": "zoom", "box": "[10, 20, 300, 400]"}</tool>', ("tool", "zoom", None)),
    # bare JSON actions without a tag
    ('{"action": "answer", "answer": "No"}', FINAL_NO),
    ('```json\n{"action": "refer", "reason": "x"}\n```', ("final", "refer", None)),
    # free text: read by the matcher later
    ("Yes, there is a pneumothorax.", ("free", None, None)),
    ("No abnormality", ("free", None, None)),
    # unparseable
    ("", ("unparseable", None, None)),
    ("<think>only thinking</think>", ("unparseable", None, None)),
    ("<final>Yes</final>", ("unparseable", None, None)),
    ('<final>{"action": "diagnose", "answer": "Yes"}</final>', ("unparseable", None, None)),
    ('<final>{"action": "answer"}</final>', ("unparseable", None, None)),
    ('<final>{"action": "answer", "answer": ""}</final>', ("unparseable", None, None)),
    ('<final>{"action": "answer", "answer": "Yes"</final>', ("unparseable", None, None)),
    ('{"action": "shrug"}', ("unparseable", None, None)),
    ('<final>{"action": "answer", "answer": {"present": true}}</final>', ("unparseable", None, None)),
    ('<final>{"reason": "unsure"}</final>', ("unparseable", None, None)),
]


@pytest.mark.parametrize("reply,expected", TABLE)
def test_parse_table(reply, expected):
    kind, what, answer = expected
    p = parse_reply(reply)
    assert p.kind == kind, (p, reply)
    if kind == "final":
        assert p.final.action == what
        if answer is not None:
            assert p.final.answer == answer
    if kind == "tool":
        assert p.tool is not None and p.tool.name == what and p.error is None


def test_box_and_confidence_are_read_and_bad_ones_dropped():
    p = parse_reply('<final>{"action": "answer", "answer": "Yes", "box": [10.4, 20, 300, 400.6], "confidence": "85%"}</final>')
    assert p.final.box == (10, 20, 300, 401) and p.final.confidence == pytest.approx(0.85)
    p = parse_reply('<final>{"action": "answer", "answer": "Yes", "box": [1, 2, 3], "confidence": 7}</final>')
    assert p.final.box is None and p.final.confidence == pytest.approx(0.07)
    p = parse_reply('<final>{"action": "answer", "answer": "Yes", "confidence": 250}</final>')
    assert p.final.confidence is None


@pytest.mark.parametrize(
    "reply,error_part",
    [
        ('<tool>{"name": "zoom", "box": [1, 2, 3]}</tool>', "four integers"),
        ('<tool>{"name": "zoom"}</tool>', "four integers"),
        ('<tool>{"name": "window", "center": "bright"}</tool>', "center and width"),
        ('<tool>{"name": "segment", "box": [0, 0, 1, 1]}</tool>', "unknown tool"),
    ],
)
def test_bad_tool_calls_are_tool_replies_with_an_error(reply, error_part):
    p = parse_reply(reply)
    assert p.kind == "tool" and p.tool is None and error_part in p.error


def test_formatted_actions_round_trip():
    calls = [ToolCall("zoom", box=(1, 2, 300, 400)), ToolCall("window", center=40, width=80.5)]
    for call in calls:
        assert parse_reply(format_tool_call(call, "Look closer.")).tool == call
    finals = [
        FinalAction("answer", answer="Yes", box=(10, 20, 30, 40), confidence=0.85),
        FinalAction("answer", answer="No abnormality"),
        FinalAction("refer", reason="cannot decide"),
        FinalAction("clarify", question="Which side?"),
    ]
    for final in finals:
        assert parse_reply(format_final(final, "Because.")).final == final


def test_strip_reasoning():
    assert strip_reasoning("<think>a</think>b<reflection>c</reflection>d") == "b d"
    assert strip_reasoning("x</think>y") == "y"
