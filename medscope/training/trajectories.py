"""Label-derived training trajectories (counterfactual paper §3.5).

A trajectory is built from a view's labels alone: optionally a zoom on a jittered box
around the lesion (always when the lesion covers under 2% of the image), a windowing call on
30% of grey-scale images, then the expected final action with short templated reasoning.
Every action is written with :mod:`medscope.answers.actions`, so it parses back through the
evaluation parser. Half of the questions are reworded with one of the four training wordings
of their kind; the wordings live in the agent protocol's prompt templates
(``configs/prompts``), whose three held-out ``test`` wordings per kind serve the evaluation
``paraphrase`` condition and never appear in training.

Parameters: ``small_frac`` 0.02, ``p_window`` 0.3, ``p_paraphrase`` 0.5 (the paper's, §3.5) and
``p_zoom`` 0.5 for larger lesions (addition: §3.5 says "optionally a zoom" without a rate). Every random choice comes from
``rng_for(seed, view_id, "trajectory")``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from medscope import images
from medscope.answers.actions import FinalAction, ToolCall, format_final, format_tool_call
from medscope.seeding import rng_for

def _wordings(kind: str, split: str) -> tuple[str, ...]:
    # one source for training and held-out wordings: the agent protocol's prompt templates
    from medscope.protocols.counterfactual.prompts import load_templates

    return tuple(getattr(load_templates().paraphrases[kind], split))


TRAIN_PARAPHRASES = _wordings("presence", "train")  # presence-question wordings (4)
HELD_OUT_PARAPHRASES = _wordings("presence", "test")  # the evaluation's `paraphrase` condition (3)

SYSTEM_PROMPT = (
    "You are MedScope, a careful medical imaging assistant used for research. You look at a medical "
    "image and answer a question about it from what the image actually shows: you report a finding "
    "only when you can see it, and you say so when it is not there. On each turn, think briefly, then "
    "write exactly ONE action as a tagged JSON object and stop. Tools (at most 3 calls; boxes are "
    'integers 0-1000 on the original image): <tool>{"name": "zoom", "box": [x1, y1, x2, y2]}</tool>, '
    '<tool>{"name": "window", "center": 128, "width": 100}</tool>. Final actions: '
    '<final>{"action": "answer", "answer": "...", "box": [x1, y1, x2, y2], "confidence": 0.0-1.0}</final>, '
    '<final>{"action": "clarify", "question": "..."}</final>, <final>{"action": "refer", "reason": "..."}</final>.'
)
TOOL_RESULT_TEXT = "Result of {name}."
# A one-line prompt for CPU smoke runs of the byte-level tiny model, where the full agent
# prompt would make every sequence ~700 tokens; real recipes use "agent".
SHORT_PROMPT = "You are MedScope. Look at the image and reply with one tagged action."
PROMPTS = {"agent": SYSTEM_PROMPT, "short": SHORT_PROMPT}


@dataclass
class Trajectory:
    view_id: str
    case_id: str
    kind: str
    expected: str
    question: str
    paraphrase: int | None  # index into TRAIN_PARAPHRASES, None = original wording
    messages: list[dict] = field(default_factory=list)  # {role, text, image}
    final: FinalAction | None = None
    tools: list[ToolCall] = field(default_factory=list)


def paraphrase(question: str, finding: str, kind: str, rng: np.random.Generator, p: float) -> tuple[str, int | None]:
    """Reword a question with one of the four training wordings of its kind (presence, health,
    open), with probability ``p``; the held-out test wordings are never drawn.

    Parameters
    ----------
    question : str
        The original question.
    finding : str
        The finding, filled into the wording.
    kind : str
        The question kind: 'presence', 'health' or 'open'.
    rng : numpy.random.Generator
        Source of the draws.
    p : float
        Probability of rewording.

    Returns
    -------
    question : str
        The wording used.
    index : int or None
        Index of the training wording, None when the original is kept (or the kind has no wordings).
    """
    if rng.random() >= p:
        return question, None
    try:
        wordings = _wordings(kind, "train")
    except KeyError:
        return question, None
    i = int(rng.integers(len(wordings)))
    f = finding.strip()
    return wordings[i].format(finding=f, Finding=f[:1].upper() + f[1:]), i


def held_out_question(finding: str, index: int) -> str:
    """The ``index``-th held-out test wording of a presence question.

    Parameters
    ----------
    finding : str
        The finding, filled into the wording.
    index : int
        Which held-out wording (taken modulo their number).

    Returns
    -------
    str
        The question.
    """
    return HELD_OUT_PARAPHRASES[index % len(HELD_OUT_PARAPHRASES)].format(finding=finding)


def box_to_1000(box, width: int, height: int) -> tuple[int, int, int, int]:
    """Pixel box -> integers 0-1000 on the full image (the action format's coordinates).

    Parameters
    ----------
    box : sequence of float
        [x1, y1, x2, y2] in pixels.
    width, height : int
        The image's size in pixels.

    Returns
    -------
    tuple of int
        (x1, y1, x2, y2) rounded and clipped to [0, 1000].
    """
    x1, y1, x2, y2 = (float(v) for v in box)
    s = (1000.0 / width, 1000.0 / height)
    out = [round(x1 * s[0]), round(y1 * s[1]), round(x2 * s[0]), round(y2 * s[1])]
    return tuple(int(min(1000, max(0, v))) for v in out)  # type: ignore[return-value]


def jittered_box(box1000, rng: np.random.Generator, grow=(1.5, 3.0), shift=0.2) -> tuple[int, int, int, int]:
    """A zoom box around ``box1000``: enlarged ``grow``-fold, shifted by up to ``shift`` of its
    size, kept inside the image and always containing the lesion box.

    Parameters
    ----------
    box1000 : sequence of int
        The lesion box, 0-1000 coordinates.
    rng : numpy.random.Generator
        Source of the jitter.
    grow : tuple of float, optional
        Range of the enlargement factor (each side at least 20 before growing).
    shift : float, optional
        Largest shift of the centre, as a fraction of the grown box's size.

    Returns
    -------
    tuple of int
        (x1, y1, x2, y2) in 0-1000 coordinates.
    """
    x1, y1, x2, y2 = box1000
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    g = rng.uniform(*grow)
    w, h = max(x2 - x1, 20) * g, max(y2 - y1, 20) * g
    cx += rng.uniform(-shift, shift) * w
    cy += rng.uniform(-shift, shift) * h
    bx = [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]
    bx = [min(bx[0], x1), min(bx[1], y1), max(bx[2], x2), max(bx[3], y2)]
    return tuple(int(round(min(1000, max(0, v)))) for v in bx)  # type: ignore[return-value]


def expected_final(expected: str, question_kind: str, finding: str, box1000) -> FinalAction:
    """The expected final action for a view (Appendix A's answer conventions).

    Parameters
    ----------
    expected : str
        'present', 'absent' or 'clarify'.
    question_kind : str
        'presence', 'health' or 'open'.
    finding : str
        The finding (the answer to an open question when present).
    box1000 : sequence of int or None
        The lesion box, 0-1000 coordinates; given only with a "present" answer.

    Returns
    -------
    FinalAction
        A clarify action, or an answer with confidence 0.9.
    """
    if expected == "clarify":
        return FinalAction("clarify", question="The image is not usable; could you provide a clearer image?")
    present = expected == "present"
    if question_kind == "health":
        answer = "No" if present else "Yes"
    elif question_kind == "open":
        answer = finding.capitalize() if present else "No abnormality"
    else:
        answer = "Yes" if present else "No"
    return FinalAction("answer", answer=answer, box=tuple(box1000) if present and box1000 else None, confidence=0.9)


def _reasoning(expected: str, finding: str, zoomed: bool) -> str:
    where = "in the zoomed region" if zoomed else "in the image"
    if expected == "present":
        return f"I can see {finding} {where}."
    if expected == "absent":
        return f"I do not see {finding} {where}."
    return "The image is too degraded to judge."


def is_grayscale(image: np.ndarray) -> bool:
    """Whether an image is grey: one channel, or three equal channels.

    Parameters
    ----------
    image : numpy.ndarray
        Shape (h, w) or (h, w, c).

    Returns
    -------
    bool
    """
    return image.ndim == 2 or bool(np.all(image[..., 0] == image[..., 1]) and np.all(image[..., 1] == image[..., 2]))


def zoom_image(image: np.ndarray, box1000, out_side: int = 448) -> np.ndarray:
    """The region ``box1000`` of ``image`` enlarged to ``out_side`` on its long side.

    Parameters
    ----------
    image : numpy.ndarray
        Shape (h, w) or (h, w, c).
    box1000 : sequence of int
        The region, 0-1000 coordinates (at least one pixel is kept).
    out_side : int, optional
        Long side of the result in pixels.

    Returns
    -------
    numpy.ndarray
        The crop, resized with linear interpolation.
    """
    h, w = image.shape[:2]
    x1, y1, x2, y2 = box1000
    c = image[int(y1 * h / 1000) : max(int(y2 * h / 1000), int(y1 * h / 1000) + 1),
              int(x1 * w / 1000) : max(int(x2 * w / 1000), int(x1 * w / 1000) + 1)]
    s = out_side / max(c.shape[:2])
    return cv2.resize(c, (max(1, round(c.shape[1] * s)), max(1, round(c.shape[0] * s))), interpolation=cv2.INTER_LINEAR)


def window_image(image: np.ndarray, center: float, width: float) -> np.ndarray:
    """Linear window: [center - width/2, center + width/2] -> [0, 255].

    Parameters
    ----------
    image : numpy.ndarray
        Any shape; values in the image's own units.
    center, width : float
        The window (a width under 1 is taken as 1).

    Returns
    -------
    numpy.ndarray of uint8
        Same shape, clipped to [0, 255].
    """
    lo = center - width / 2
    out = (image.astype(np.float32) - lo) * (255.0 / max(width, 1.0))
    return np.clip(out, 0, 255).astype(np.uint8)


def build_trajectory(
    view: dict,
    seed: int,
    *,
    small_frac: float = 0.02,
    p_zoom: float = 0.5,
    p_window: float = 0.3,
    p_paraphrase: float = 0.5,
    question: str | None = None,
    system: str = SYSTEM_PROMPT,
    via_agent_loop: bool = True,
) -> Trajectory:
    """One label-derived trajectory for a views-table row (``view`` as a dict).

    With ``via_agent_loop`` (and the agent issue's ``episode.replay`` on this branch) the
    written replies are fed through the evaluation episode loop, so training sees exactly the
    system prompt, image sizes and tool results that evaluation produces; otherwise the
    messages are built here with ``system``.

    Parameters
    ----------
    view : dict
        A views row: view_id, case_id, kind, expected, question, question_kind, finding, image (PNG),
        width, height, lesion_bbox, lesion_area_frac.
    seed : int
        With the view id, the seed of every random choice.
    small_frac : float, optional
        Lesion area share under which a zoom is always made.
    p_zoom, p_window, p_paraphrase : float, optional
        Probabilities of a zoom (larger lesions), a window call (grey images) and a reworded question.
    question : str, optional
        A wording to use instead of the view's (no paraphrase then).
    system : str, optional
        The system prompt of messages built here.
    via_agent_loop : bool, optional
        Rebuild the messages through the evaluation loop when it is available.

    Returns
    -------
    Trajectory
        Its messages, tool calls and final action.

    References
    ----------
    .. [1] counterfactual paper, §3.5.
    """
    rng = rng_for(seed, view["view_id"], "trajectory")
    finding = view["finding"]
    q, pi = (question, None) if question else paraphrase(view["question"], finding, view["question_kind"], rng, p_paraphrase)
    image = images.decode_png(view["image"])
    box = box_to_1000(view["lesion_bbox"], view["width"], view["height"]) if view.get("lesion_bbox") else None
    traj = Trajectory(view["view_id"], view["case_id"], view["kind"], view["expected"], q, pi)
    traj.messages = [
        {"role": "system", "text": system, "image": None},
        {"role": "user", "text": q, "image": view["image"]},
    ]
    # draw every choice up front so a view's trajectory does not depend on which branch ran
    u_zoom, u_window = rng.random(), rng.random()
    center, width = float(rng.integers(90, 170)), float(rng.integers(120, 260))
    zoom_box = jittered_box(box, rng) if box else None
    shown = image
    if view["expected"] != "clarify" and is_grayscale(image) and u_window < p_window:
        call = ToolCall("window", center=center, width=width)
        shown = window_image(image, center, width)
        _tool_turn(traj, call, "Adjusting the window may make subtle densities clearer.", shown)
    zoomed = False
    if zoom_box and view["expected"] != "clarify" and (view["lesion_area_frac"] < small_frac or u_zoom < p_zoom):
        call = ToolCall("zoom", box=zoom_box)
        _tool_turn(traj, call, "I will look closer at the suspicious region.", zoom_image(shown, zoom_box))
        zoomed = True
    traj.final = expected_final(view["expected"], view["question_kind"], finding, box)
    traj.messages.append({"role": "assistant", "text": format_final(traj.final, _reasoning(view["expected"], finding, zoomed)), "image": None})
    if via_agent_loop:
        replies = [m["text"] for m in traj.messages if m["role"] == "assistant"]
        through_loop = agent_loop_messages(view, q, replies)
        if through_loop is not None:
            traj.messages = through_loop
    return traj


def agent_loop_messages(view: dict, question: str, replies: list[str]) -> list[dict] | None:
    """The messages the evaluation loop builds for ``replies`` on ``view`` (``None`` while the
    agent issue's ``medscope.protocols.counterfactual.agent_episode.replay`` is not on this branch).

    Parameters
    ----------
    view : dict
        A views row.
    question : str
        The question as asked.
    replies : list of str
        The assistant replies, in order.

    Returns
    -------
    list of dict or None
        {role, text, image} messages, or None when the replay is not importable.
    """
    try:
        from medscope.protocols.counterfactual.agent_episode import replay
        from medscope.items import Item
    except ImportError:
        return None
    item = Item(item_id=view["view_id"], case_id=view["case_id"], question=question, truth=view["expected"],
                images=(view["image"],), meta={"finding": view["finding"], "question_kind": view["question_kind"],
                                               "kind": view["kind"], "width": view["width"], "height": view["height"]})
    ep = replay(item, "agent", replies)
    out = []
    for m in ep.messages:
        png = next((p.png for p in m.parts if p.is_image), None)
        out.append({"role": m.role, "text": m.joined_text, "image": png})
    return out


def _tool_turn(traj: Trajectory, call: ToolCall, why: str, result: np.ndarray) -> None:
    traj.tools.append(call)
    traj.messages.append({"role": "assistant", "text": format_tool_call(call, why), "image": None})
    traj.messages.append({"role": "user", "text": TOOL_RESULT_TEXT.format(name=call.name), "image": images.encode_png(result)})


def reply_texts(view: dict) -> tuple[str, str]:
    """The single-turn "present" and "absent" final replies for a view (C4's s(x), C2's pairs).

    Parameters
    ----------
    view : dict
        A views row (question_kind, finding, width, height, lesion_bbox).

    Returns
    -------
    present : str
        The "present" final reply, with the lesion box when the view has one.
    absent : str
        The "absent" final reply.
    """
    box = box_to_1000(view["lesion_bbox"], view["width"], view["height"]) if view.get("lesion_bbox") else None
    kind, finding = view["question_kind"], view["finding"]
    present = format_final(expected_final("present", kind, finding, box), f"I can see {finding} in the image.")
    absent = format_final(expected_final("absent", kind, finding, None), f"I do not see {finding} in the image.")
    return present, absent
