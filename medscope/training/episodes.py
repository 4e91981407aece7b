"""Sampling and scoring episodes of a local adapter, behind one small interface.

Stage 2 (rejection sampling) and the evaluations run the trained model through the agent loop
and score what it did. :class:`AgentLoopSampler` is the agent issue's episode loop with the
model in training as its local HF adapter (recipes with the "agent" prompt);
:class:`LocalEpisodeSampler` is a minimal loop with the same action format and tools for the
one-line "short" prompt of CPU smoke runs. Rewards come from ``medscope.protocols.counterfactual.rewards``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from medscope import images
from medscope.answers.actions import FinalAction, ToolCall
from medscope.training import trajectories as tj

_ACTION = re.compile(r"<(tool|final)>\s*(\{.*?\})\s*</\1>", re.S)
PRESENT_KINDS = ("original", "random_removal", "unmatched_control", "insertion")
ABSENT_KINDS = ("target_removal", "natural_negative")


def parse_action(text: str) -> ToolCall | FinalAction | None:
    """The first tagged action of a reply, or None when it is missing or malformed.

    Parameters
    ----------
    text : str
        A model reply (None is read as '').

    Returns
    -------
    ToolCall, FinalAction or None
        A zoom or window call, or an answer, refer or clarify action.
    """
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
    """Whether an answer asserts the finding (health questions read with their polarity).

    Parameters
    ----------
    answer : str
        The answer text.
    question_kind : str
        'presence', 'health' or 'open'.

    Returns
    -------
    bool
    """
    a = answer.strip().lower().rstrip(".")
    if question_kind == "health":
        return a.startswith("no")
    if question_kind == "open":
        return a not in {"no abnormality", "none", "normal", "no"}
    return a.startswith("yes")


def iou(a, b) -> float:
    """Intersection over union of two boxes.

    Parameters
    ----------
    a, b : sequence of float
        [x1, y1, x2, y2], same coordinates.

    Returns
    -------
    float
        In [0, 1]; 0 when the union is empty.
    """
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


@dataclass
class Outcome:
    action: str  # answer | refer | clarify | unparseable
    claims: bool | None
    correct: bool  # an answer whose claim matches the view (the scoring definition)
    reward: float
    tool_calls: int
    iou: float | None = None
    right: bool = False  # stage 2's "successful": the view's expected action (§3.2)
    present: bool | None = None  # the finding is visible in the view
    grounded: bool = False
    oversized: bool = False


def view_reward(view: dict, final: FinalAction | None, tool_calls: int, matrix=None, claims: bool | None = None) -> Outcome:
    """The view's reward under the scoring issue's cost matrix (counterfactual paper Table 2 by default,
    with its box bonus, critical penalty, unparseable score and tool-call cost).

    ``right`` is stage 2's "successful" episode (§3.5 does not define it; read as the view's
    expected action of §3.2): a clarify on a degraded view (an answer there, even a correct one,
    is not), a correct answer on every other view.

    Parameters
    ----------
    view : dict
        A views row (kind, question_kind, lesion_area_frac, lesion_bbox, width, height, critical).
    final : FinalAction or None
        The episode's final action; None: unparseable.
    tool_calls : int
        Tool calls made.
    matrix : CostMatrix, optional
        Default the shipped Table 2 matrix.
    claims : bool, optional
        Whether the answer claims the finding, as the agent loop's matcher decided; default read from
        the answer text.

    Returns
    -------
    Outcome
        Action, claim, correctness, reward, IoU and the rest.

    References
    ----------
    .. [1] counterfactual paper, Table 2.
    """
    from medscope.protocols.counterfactual import costs, rewards

    matrix = matrix or costs.load()
    kind = view["kind"]
    action = "unparseable" if final is None else final.action
    if action == "answer" and claims is None:  # the agent loop's matcher decides when it ran
        claims = bool(claims_finding(final.answer or "", view["question_kind"]))
    claims = bool(claims) if action == "answer" else None
    present = bool(rewards.lesion_present(np.array([kind], dtype=object), np.array([view["lesion_area_frac"]]),
                                          np.array([view.get("lesion_bbox") is not None]))[0])
    ov, area = float("nan"), float("nan")
    if action == "answer" and final.box is not None:
        area = (final.box[2] - final.box[0]) * (final.box[3] - final.box[1]) / 1e6
        if view.get("lesion_bbox"):
            ov = iou(final.box, tj.box_to_1000(view["lesion_bbox"], view["width"], view["height"]))
    reward, correct, grounded, oversized = rewards.view_rewards(
        np.array([kind], dtype=object), np.array([action], dtype=object), np.array([bool(claims)]), np.array([present]),
        np.array([bool(view["critical"])]), np.array([ov]), np.array([area]), np.array([tool_calls]), matrix)
    right = action == "clarify" if kind == "degraded" else bool(correct[0])  # addition: stage2_success
    return Outcome(action, claims, bool(correct[0]), float(reward[0]), tool_calls, None if ov != ov else ov,
                   right=right, present=present, grounded=bool(grounded[0]), oversized=bool(oversized[0]))


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


class AgentLoopSampler:
    """Episodes through the agent issue's loop (``medscope.protocols.counterfactual.agent_episode``, condition ``agent``)
    with the model in training wrapped as its local HF adapter: the evaluation prompt, tools,
    turn limit and parser, exactly."""

    def __init__(self, vlm, model, max_turns: int = 5, max_new_tokens: int = 256, name: str = "training"):
        from medscope.protocols.counterfactual.agent_episode import EpisodeSettings
        from medscope.models.local_hf import LocalHFModel

        if vlm.processor is None:
            raise ValueError("the agent loop needs the model's processor")
        p = next(model.parameters())
        # no prefix cache: the weights change between steps, and it is keyed by token ids only
        self.chat = LocalHFModel(name, path="", model=model, processor=vlm.processor, device=str(p.device),
                                 dtype=str(p.dtype).replace("torch.", ""), prefix_cache=False)
        self.settings = EpisodeSettings(max_turns=max_turns)
        self.max_new_tokens = max_new_tokens

    def __call__(self, view: dict, temperature: float, seed: int) -> Episode:
        from medscope.protocols.counterfactual.agent_episode import Episode as AgentEpisode
        from medscope.answers.parser import parse_reply
        from medscope.items import Item
        from medscope.models.base import Decoding

        item = Item(item_id=view["view_id"], case_id=view["case_id"], question=view["question"], truth=view["expected"],
                    images=(view["image"],), meta={"finding": view["finding"], "question_kind": view["question_kind"],
                                                   "kind": view["kind"], "width": view["width"], "height": view["height"]})
        ep = AgentEpisode(item, "agent", self.settings)
        decoding = Decoding(temperature=float(temperature), max_output_tokens=self.max_new_tokens, seed=int(seed) % (2**31))
        while not ep.feed(self.chat.complete(list(ep.messages), decoding)):
            pass
        res = ep.result
        final = None
        if res.action != "unparseable":
            parsed = parse_reply(res.raw_text)
            final = parsed.final if parsed.kind == "final" else FinalAction("answer", answer=res.answer or "")
        messages = [{"role": m.role, "text": m.joined_text, "image": next((q.png for q in m.parts if q.is_image), None)}
                    for m in ep.messages]
        out = Episode(view, messages, final, res.tool_calls, texts=[m["text"] for m in messages if m["role"] == "assistant"])
        out.outcome = view_reward(view, final, res.tool_calls, claims=res.claims_finding)
        return out


def sampler_for(vlm, model, prompt: str, max_turns: int, max_new_tokens: int):
    """The agent loop for the "agent" prompt (what evaluation runs); the minimal local loop for
    the one-line "short" prompt of CPU smoke runs.

    Parameters
    ----------
    vlm : VLM
        The loaded model bundle (``vlm.load_vlm``).
    model : torch.nn.Module
        The model in training.
    prompt : str
        'agent' or 'short' (``trajectories.PROMPTS``).
    max_turns : int
        Most model replies per episode.
    max_new_tokens : int
        Most tokens per reply.

    Returns
    -------
    AgentLoopSampler or LocalEpisodeSampler
        Called as ``sampler(view, temperature, seed)`` -> Episode.
    """
    if prompt == "agent":
        return AgentLoopSampler(vlm, model, max_turns=max_turns, max_new_tokens=max_new_tokens)
    return LocalEpisodeSampler(vlm, model, max_turns, max_new_tokens, system=tj.PROMPTS[prompt])


def _valid_box(b):
    if b is None:
        return None
    x1, y1, x2, y2 = (int(np.clip(v, 0, 1000)) for v in b)
    return (x1, y1, x2, y2) if x2 > x1 and y2 > y1 else None


def summarize(outcomes: list[tuple[dict, Outcome]]) -> dict:
    """The counterfactual paper §3.8 metrics over scored views: net utility, ESG, CCR, erased / healthy claims.

    Parameters
    ----------
    outcomes : list of tuple of (dict, Outcome)
        Scored views.

    Returns
    -------
    dict
        ``net_utility``, ``esg``, ``ccr``, ``erased_claims``, ``healthy_claims`` (NaN without the views
        they need), ``n_views``, and ``counts``: net utility's and healthy claims' ratios as text
        (``medscope.analysis.exact``; None without views), which the stage selection reads.

    References
    ----------
    .. [1] counterfactual paper, §3.8.
    """

    def rate(kinds, pred):
        sel = [o for v, o in outcomes if v["kind"] in kinds]
        return float(np.mean([pred(o) for o in sel])) if sel else float("nan")

    absent_or_refer = lambda o: (o.action == "answer" and o.claims is False) or o.action == "refer"  # noqa: E731
    from medscope.analysis import exact

    negatives = [o for v, o in outcomes if v["kind"] == "natural_negative"]
    # the counts §3.6's selection rule is decided on, exactly (medscope.analysis.exact)
    counts = {"net_utility": exact.counts_text([(1, sum(o.reward for _, o in outcomes), len(outcomes))]),
              "healthy_claims": exact.counts_text([(1, sum(bool(o.claims) for o in negatives), len(negatives))])}
    return {
        "counts": counts,
        "net_utility": float(np.mean([o.reward for _, o in outcomes])) if outcomes else float("nan"),
        "esg": rate(("target_removal",), absent_or_refer) - rate(("random_removal",), absent_or_refer),
        "ccr": rate(("original", "random_removal"), lambda o: o.correct),
        "erased_claims": rate(("target_removal",), lambda o: bool(o.claims)),
        "healthy_claims": rate(("natural_negative",), lambda o: bool(o.claims)),
        "n_views": len(outcomes),
    }
