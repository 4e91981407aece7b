"""The action format every model speaks (counterfactual paper §3.1, Appendix A).

Each turn ends with exactly one tagged JSON action:

- a tool call, ``<tool>{"name": "zoom", "box": [x1, y1, x2, y2]}</tool>`` or
  ``<tool>{"name": "window", "center": 128, "width": 100}</tool>``; boxes are integers
  0-1000 on the original full image;
- a final action, ``<final>{"action": "answer", "answer": "Yes", "box": [...],
  "confidence": 0.85}</final>``, ``<final>{"action": "refer", "reason": "..."}</final>`` or
  ``<final>{"action": "clarify", "question": "..."}</final>``.

This module holds the action types and how they are written; training trajectories are
written with these functions so that they parse back through the evaluation parser.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

FINAL_ACTIONS = ("answer", "refer", "clarify")
TOOLS = ("zoom", "window")


@dataclass(frozen=True)
class ToolCall:
    name: str  # zoom | window
    box: tuple[int, int, int, int] | None = None  # zoom, 0-1000 on the original image
    center: float | None = None  # window, 0-255
    width: float | None = None  # window, 0-255

    def to_json(self) -> dict:
        if self.name == "zoom":
            return {"name": "zoom", "box": [int(v) for v in (self.box or ())]}
        return {"name": "window", "center": _num(self.center), "width": _num(self.width)}


@dataclass(frozen=True)
class FinalAction:
    action: str  # answer | refer | clarify
    answer: str | None = None
    box: tuple[int, int, int, int] | None = None
    confidence: float | None = None
    reason: str | None = None  # refer
    question: str | None = None  # clarify

    def to_json(self) -> dict:
        out: dict = {"action": self.action}
        if self.action == "answer":
            out["answer"] = self.answer or ""
            if self.box is not None:
                out["box"] = [int(v) for v in self.box]
            if self.confidence is not None:
                out["confidence"] = round(float(self.confidence), 2)
        elif self.action == "refer":
            out["reason"] = self.reason or ""
        elif self.action == "clarify":
            out["question"] = self.question or ""
        return out


def format_tool_call(call: ToolCall, reasoning: str = "") -> str:
    """A tool turn: brief reasoning, then the tagged call.

    Parameters
    ----------
    call : ToolCall
        The tool call.
    reasoning : str, optional
        Text written before the tag; stripped, may be empty. Default ``""``.

    Returns
    -------
    str
        ``"<reasoning> <tool>{json}</tool>"``, or the tag alone without reasoning.

    References
    ----------
    .. [1] Counterfactual paper, §3.1, Appendix A.
    """
    tag = f"<tool>{json.dumps(call.to_json())}</tool>"
    return f"{reasoning.strip()} {tag}".strip()


def format_final(final: FinalAction, reasoning: str = "") -> str:
    """A final turn: brief reasoning, then the tagged final action.

    Parameters
    ----------
    final : FinalAction
        The final action.
    reasoning : str, optional
        Text written before the tag; stripped, may be empty. Default ``""``.

    Returns
    -------
    str
        ``"<reasoning> <final>{json}</final>"``, or the tag alone without reasoning.

    References
    ----------
    .. [1] Counterfactual paper, §3.1, Appendix A.
    """
    tag = f"<final>{json.dumps(final.to_json())}</final>"
    return f"{reasoning.strip()} {tag}".strip()


def _num(v: float | None) -> float | int | None:
    if v is None:
        return None
    return int(v) if float(v).is_integer() else float(v)
