"""Sampling and scoring episodes of a local adapter, behind one small interface.

Stage 2 (rejection sampling) and the sweep's evaluation need to run the trained model through
the agent loop and score what it did. Until the agent issue's episode loop and the scoring
issue's cost matrix are on this branch, this module holds a minimal loop (same action format,
zoom and window tools, at most ``max_turns`` turns) and seed 000 Table 2's reward; both are
reached only through :class:`EpisodeSampler` and :func:`view_reward`, so swapping in the shared
ones changes nothing else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from medscope import images
from medscope.agent.actions import FinalAction, ToolCall
from medscope.training import trajectories as tj

_ACTION = re.compile(r"<(tool|final)>\s*(\{.*?\})\s*</\1>", re.S)
PRESENT_KINDS = ("original", "random_removal", "unmatched_control", "insertion")
ABSENT_KINDS = ("target_removal", "natural_negative")


def parse_action(text: str) -> ToolCall | FinalAction | None:
    """The first tagged action of a reply, or None when it is missing or malformed."""
    m = _ACTION.search(text or "")
    if not m:
        return None
    try:
        obj = json.loads(m.group(2))
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    if m.group(1) == "tool":
        if obj.get("name") == "zoom" and _is_box(obj.get("box")):
            return ToolCall("zoom", box=tuple(int(v) for v in obj["box"]))
        if obj.get("name") == "window" and _num(obj.get("center")) and _num(obj.get("width")):
            return ToolCall("window", center=float(obj["center"]), width=float(obj["width"]))
        return None
    action = obj.get("action")
    if action == "answer" and isinstance(obj.get("answer"), str):
        box = tuple(int(v) for v in obj["box"]) if _is_box(obj.get("box")) else None
        conf = float(obj["confidence"]) if _num(obj.get("confidence")) else None
        return FinalAction("answer", answer=obj["answer"], box=box, confidence=conf)
    if action == "refer":
        return FinalAction("refer", reason=str(obj.get("reason", "")))
    if action == "clarify":
        return FinalAction("clarify", question=str(obj.get("question", "")))
    return None


def _is_box(b) -> bool:
    return isinstance(b, list) and len(b) == 4 and all(isinstance(v, (int, float)) for v in b)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def claims_finding(answer: str, question_kind: str) -> bool:
    """Whether an answer asserts the finding (health questions read with their polarity)."""
    a = answer.strip().lower().rstrip(".")
    if question_kind == "health":
        return a.startswith("no")
    if question_kind == "open":
        return a not in {"no abnormality", "none", "normal", "no"}
    return a.startswith("yes")


def iou(a, b) -> float:
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


@dataclass
class Outcome:
    action: str  # answer | refer | clarify | unparseable
    claims: bool | None
    correct: bool
    reward: float
    tool_calls: int
    iou: float | None = None


def view_reward(view: dict, final: FinalAction | None, tool_calls: int) -> Outcome:
    """Seed 000 Table 2 per-view reward (+0.5 box bonus at IoU ≥ 0.3 on answerable views,
    −1 unparseable, −0.05 per tool call beyond the first)."""
    try:
        from medscope.scoring.rewards import view_reward as shared  # type: ignore

        return shared(view, final, tool_calls)
    except ImportError:
        pass
    penalty = 0.05 * max(0, tool_calls - 1)
    if final is None:
        return Outcome("unparseable", None, False, -1.0 - penalty, tool_calls)
    kind = view["kind"]
    if final.action != "answer":
        table = {"refer": (-0.3, 0.5, 0.0), "clarify": (-0.3, -0.5, 0.5)}[final.action]
        r = table[0] if kind in PRESENT_KINDS else table[1] if kind in ABSENT_KINDS else table[2]
        correct = (final.action == "clarify" and kind == "degraded")
        return Outcome(final.action, None, correct, r - penalty, tool_calls)
    claims = claims_finding(final.answer or "", view["question_kind"])
    ov = None
    if kind in PRESENT_KINDS:
        correct = claims
        r = 1.0 if claims else (-4.0 if view["critical"] else -2.0)
        if claims and final.box and view.get("lesion_bbox"):
            gt = tj.box_to_1000(view["lesion_bbox"], view["width"], view["height"])
            ov = iou(final.box, gt)
            big = (final.box[2] - final.box[0]) * (final.box[3] - final.box[1]) > 0.5 * 1000 * 1000
            r += 0.5 if ov >= 0.3 and not big else 0.0
    elif kind in ABSENT_KINDS:
        correct = not claims
        r = 1.0 if correct else -2.0
    else:  # degraded: an answer is tolerated, a claim on an unusable image is not
        correct = not claims
        r = 0.25 if correct else -2.0
    return Outcome("answer", claims, correct, r - penalty, tool_calls, ov)


@dataclass
class Episode:
    view: dict
    messages: list[dict]  # the whole transcript, trainable as a trajectory
    final: FinalAction | None
    tool_calls: int
    outcome: Outcome | None = None
    texts: list[str] = field(default_factory=list)


class EpisodeSampler(Protocol):
    def __call__(self, view: dict, temperature: float, seed: int) -> Episode: ...


class LocalEpisodeSampler:
    """The minimal agent loop for a local model: generate, run a tool, repeat, stop at a final."""

    def __init__(self, vlm, model, max_turns: int = 4, max_new_tokens: int = 128, question: str | None = None,
                 system: str = tj.SYSTEM_PROMPT):
        self.vlm, self.model, self.max_turns, self.max_new_tokens = vlm, model, max_turns, max_new_tokens
        self.question, self.system = question, system

    def __call__(self, view: dict, temperature: float, seed: int) -> Episode:
        from medscope.training.vlm import generate_text

        image = images.decode_png(view["image"])
        shown = image
        msgs = [
            {"role": "system", "text": self.system, "image": None},
            {"role": "user", "text": self.question or view["question"], "image": view["image"]},
        ]
        ep = Episode(view, msgs, None, 0)
        for turn in range(self.max_turns):
            text = generate_text(self.vlm, self.model, msgs, self.max_new_tokens, temperature, seed * 31 + turn)
            ep.texts.append(text)
            msgs.append({"role": "assistant", "text": text, "image": None})
            act = parse_action(text)
            if isinstance(act, ToolCall) and turn < self.max_turns - 1:
                ep.tool_calls += 1
                if act.name == "window":
                    shown = tj.window_image(image, act.center, act.width)
                    result = shown
                else:
                    box = _valid_box(act.box)
                    result = tj.zoom_image(shown, box) if box else shown
                msgs.append({"role": "user", "text": tj.TOOL_RESULT_TEXT.format(name=act.name), "image": images.encode_png(result)})
                continue
            ep.final = act if isinstance(act, FinalAction) else None
            break
        ep.outcome = view_reward(view, ep.final, ep.tool_calls)
        return ep


def _valid_box(b):
    if b is None:
        return None
    x1, y1, x2, y2 = (int(np.clip(v, 0, 1000)) for v in b)
    return (x1, y1, x2, y2) if x2 > x1 and y2 > y1 else None


def summarize(outcomes: list[tuple[dict, Outcome]]) -> dict:
    """Seed 000 §3.8 metrics over scored views: net utility, ESG, CCR, erased / healthy claims."""

    def rate(kinds, pred):
        sel = [o for v, o in outcomes if v["kind"] in kinds]
        return float(np.mean([pred(o) for o in sel])) if sel else float("nan")

    absent_or_refer = lambda o: (o.action == "answer" and o.claims is False) or o.action == "refer"  # noqa: E731
    return {
        "net_utility": float(np.mean([o.reward for _, o in outcomes])) if outcomes else float("nan"),
        "esg": rate(("target_removal",), absent_or_refer) - rate(("random_removal",), absent_or_refer),
        "ccr": rate(("original", "random_removal"), lambda o: o.correct),
        "erased_claims": rate(("target_removal",), lambda o: bool(o.claims)),
        "healthy_claims": rate(("natural_negative",), lambda o: bool(o.claims)),
        "n_views": len(outcomes),
    }
