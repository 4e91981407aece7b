"""Reading a model reply into one action (counterfactual paper §3.1, §3.10).

Rules, the same for every model:

1. Reasoning blocks (``<think>…</think>``, ``<thinking>``, ``<reasoning>``, ``<reflection>``)
   are removed first; a dangling ``</think>`` drops everything before it, an unclosed
   ``<think>`` everything after it.
2. The first action tag wins, ``<final>`` or ``<tool>`` (a model that writes a tool call and
   then keeps going has its continuation ignored, as a stop sequence would).
3. Inside a tag: code fences are dropped, the first JSON object is read; minor slop is
   tolerated where the meaning cannot change (single quotes, trailing commas, Python
   literals, a missing closing tag, text after the object).
4. No tag at all: a bare JSON action object is read as that action; otherwise the reply is
   ``free`` text, which the episode reads as the model's decision through the matcher.
5. Anything else — a tag whose content is not a JSON object, an unknown final action, an
   answer without text — is ``unparseable``, its own outcome.

Tool calls with bad arguments are still ``tool`` replies carrying an ``error``, so that the
episode answers them with an error turn instead of ending the episode.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

from medscope.answers.actions import FINAL_ACTIONS, TOOLS, FinalAction, ToolCall

_REASONING_TAGS = ("think", "thinking", "reasoning", "reflection", "thought")
_BLOCK = re.compile(
    r"<(?P<tag>" + "|".join(_REASONING_TAGS) + r")>.*?</(?P=tag)>", re.IGNORECASE | re.DOTALL
)
_DANGLING_CLOSE = re.compile(r"^.*</(?:" + "|".join(_REASONING_TAGS) + r")>", re.IGNORECASE | re.DOTALL)
_UNCLOSED_OPEN = re.compile(r"<(?:" + "|".join(_REASONING_TAGS) + r")>.*$", re.IGNORECASE | re.DOTALL)
_ACTION_TAG = re.compile(r"<\s*(final|tool)\s*>", re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z]*")


@dataclass(frozen=True)
class ParsedReply:
    kind: str  # final | tool | free | unparseable
    final: FinalAction | None = None
    tool: ToolCall | None = None
    text: str = ""  # the reply with reasoning blocks removed
    error: str | None = None  # why unparseable, or what is wrong with a tool call
    source: str = ""  # "tag" (a <final>/<tool> tag), "json" (a bare JSON action), "" (free / none)


def strip_reasoning(text: str) -> str:
    """The reply without reasoning blocks (rule 1).

    Parameters
    ----------
    text : str or None
        The raw reply.

    Returns
    -------
    str
        The stripped reply without reasoning blocks; empty for None.

    References
    ----------
    .. [1] Counterfactual paper, §3.1, §3.10.
    """
    text = _BLOCK.sub(" ", text or "")
    text = _DANGLING_CLOSE.sub(" ", text)
    text = _UNCLOSED_OPEN.sub(" ", text)
    return text.strip()


def _loads_lenient(blob: str):
    """A JSON value from slightly malformed text, or None."""
    for candidate in (blob, re.sub(r",\s*([}\]])", r"\1", blob)):
        try:
            return json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
            pass
        try:
            # Python literals: single quotes, True/False/None. literal_eval evaluates no code.
            return ast.literal_eval(candidate)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return None


def _first_object(text: str):
    """The first balanced ``{...}`` in ``text`` parsed leniently, or None."""
    text = _FENCE.sub(" ", text)
    start = text.find("{")
    while start != -1:
        depth, in_str, quote, esc = 0, False, "", False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == quote:
                    in_str = False
            elif ch in "\"'":
                in_str, quote = True, ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    obj = _loads_lenient(text[start : i + 1])
                    if isinstance(obj, dict):
                        return obj
                    break
        start = text.find("{", start + 1)
    return None


def _box(value) -> tuple[int, int, int, int] | None:
    if isinstance(value, str):
        value = _loads_lenient(value)
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        return None
    try:
        nums = [float(v) for v in value]
    except (TypeError, ValueError):
        return None
    if any(v != v for v in nums):  # NaN
        return None
    return tuple(int(round(v)) for v in nums)  # type: ignore[return-value]


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if v == v else None


def _confidence(value) -> float | None:
    if isinstance(value, str):
        value = value.strip().rstrip("%")
    v = _number(value)
    if v is None:
        return None
    if 1.0 < v <= 100.0:  # a percentage
        v /= 100.0
    return v if 0.0 <= v <= 1.0 else None


def read_final(obj: dict) -> tuple[FinalAction | None, str | None]:
    """A FinalAction from a parsed JSON object, or (None, why not).

    Parameters
    ----------
    obj : dict
        A parsed JSON object; ``action`` may be omitted when ``answer`` is given.

    Returns
    -------
    final : FinalAction or None
        The action; an answer's malformed ``box`` or ``confidence`` is dropped (a percentage
        confidence is scaled to 0-1).
    error : str or None
        Why no action was read (an unknown action, an answer without text); None on success.

    References
    ----------
    .. [1] Counterfactual paper, §3.1, §3.10.
    """
    action = str(obj.get("action", "")).strip().lower()
    if not action and "answer" in obj:
        action = "answer"  # {"answer": "No"} without the action key: the intent is unambiguous
    if action not in FINAL_ACTIONS:
        return None, f"unknown final action {action!r}"
    if action == "answer":
        answer = obj.get("answer")
        if isinstance(answer, bool):
            answer = "Yes" if answer else "No"
        if answer is None or (isinstance(answer, (dict, list))) or not str(answer).strip():
            return None, "answer action without an answer"
        # A malformed box or confidence is dropped, not fatal: both are optional.
        return FinalAction("answer", answer=str(answer).strip(), box=_box(obj.get("box")),
                           confidence=_confidence(obj.get("confidence"))), None
    if action == "refer":
        return FinalAction("refer", reason=str(obj.get("reason") or "").strip()), None
    return FinalAction("clarify", question=str(obj.get("question") or "").strip()), None


def read_tool(obj: dict) -> tuple[ToolCall | None, str | None]:
    """A ToolCall from a parsed JSON object, or (None, what is wrong with it).

    Parameters
    ----------
    obj : dict
        A parsed JSON object, the tool named by ``name`` (or ``tool``).

    Returns
    -------
    call : ToolCall or None
        A zoom with four rounded integers, or a window with numeric ``center`` and ``width``.
    error : str or None
        What is wrong with the call, worded for the model; None on success.

    References
    ----------
    .. [1] Counterfactual paper, §3.1, §3.10.
    """
    name = str(obj.get("name") or obj.get("tool") or "").strip().lower()
    if name not in TOOLS:
        return None, f"unknown tool {name!r}; the tools are zoom and window."
    if name == "zoom":
        box = _box(obj.get("box"))
        if box is None:
            return None, "zoom needs a box of four integers [x1, y1, x2, y2] from 0 to 1000."
        return ToolCall("zoom", box=box), None
    center, width = _number(obj.get("center")), _number(obj.get("width"))
    if center is None or width is None:
        return None, "window needs numbers center and width on the 0-255 scale."
    return ToolCall("window", center=center, width=width), None


def parse_reply(text: str) -> ParsedReply:
    """Read one reply (see the module docstring for the rules).

    Parameters
    ----------
    text : str
        The model's raw reply.

    Returns
    -------
    ParsedReply
        ``kind`` ``final``, ``tool``, ``free`` or ``unparseable``, with the action read, the reply
        without reasoning, any error, and ``source`` (``"tag"``, ``"json"`` or ``""``).

    References
    ----------
    .. [1] Counterfactual paper, §3.1, §3.10.
    """
    clean = strip_reasoning(text)
    m = _ACTION_TAG.search(clean)
    if m is None:
        obj = _first_object(clean) if clean.lstrip("`json \n").startswith("{") else None
        if isinstance(obj, dict) and ("action" in obj or "answer" in obj):
            final, err = read_final(obj)
            if final:
                return ParsedReply("final", final=final, text=clean, source="json")
            return ParsedReply("unparseable", text=clean, error=err, source="json")
        if isinstance(obj, dict) and ("name" in obj or "tool" in obj):
            tool, err = read_tool(obj)
            return ParsedReply("tool", tool=tool, text=clean, error=err, source="json")
        if not clean:
            return ParsedReply("unparseable", text=clean, error="empty reply")
        return ParsedReply("free", text=clean)
    tag = m.group(1).lower()
    body = clean[m.end():]
    close = re.search(rf"<\s*/\s*{tag}\s*>", body, re.IGNORECASE)
    inner = body[: close.start()] if close else body
    obj = _first_object(inner)
    if obj is None:
        return ParsedReply("unparseable", text=clean, error=f"<{tag}> holds no JSON object", source="tag")
    if tag == "final":
        final, err = read_final(obj)
        if final is None:
            return ParsedReply("unparseable", text=clean, error=err, source="tag")
        return ParsedReply("final", final=final, text=clean, source="tag")
    tool, err = read_tool(obj)
    return ParsedReply("tool", tool=tool, text=clean, error=err, source="tag")
