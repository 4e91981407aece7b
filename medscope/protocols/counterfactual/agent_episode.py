"""The episode loop: one item, one model, one condition (counterfactual paper §3.1, §3.10, §5.5).

Every model gets the same messages for a condition; adapters only translate them. Conditions:

- ``agent``: agent prompt, image, question; tools on.
- ``plain``: plain prompt, image, question; one free reply, no tools.
- ``cautious``: agent prompt + the warning that a question may name an absent finding.
- ``few-shot``: cautious + four solved examples (generated images) before the case.
- ``blind``: agent prompt and question, no image at all.
- ``blank``: agent prompt with a uniform grey image of the case's size.
- ``tools-off``: agent prompt; every tool call is refused with an error turn.
- ``paraphrase``: agent prompt with the question in a held-out wording.

Images go out as PNG with the long side at most ``resize_long_side`` (768); tools crop the
original full-size image. :class:`Episode` is a small state machine so that a batching
adapter can advance many episodes in lock step (:func:`run_episodes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from medscope.protocols.counterfactual import prompts
from medscope.answers.matching import infer_question_kind, read_decision
from medscope.answers.parser import parse_reply
from medscope.items import EpisodeResult, Item
from medscope.protocols.counterfactual.viewing_tools import MAX_TOOL_CALLS, ToolRunner
from medscope.errors import MedScopeError
from medscope.images import decode_png, encode_png, resize_long_side
from medscope.models.base import ChatModel, Completion, Decoding, Message, Part

CONDITIONS = ("agent", "plain", "cautious", "few-shot", "blind", "blank", "tools-off", "paraphrase")
# The conditions that never show the model the case's image, and what they show instead: whatever
# their ESG, a model in one of them cannot be following the image (the report files them apart).
IMAGE_BLIND_CONDITIONS = {"blind": "no image", "blank": "a uniform grey image in place of the case's"}


@dataclass(frozen=True)
class EpisodeSettings:
    """Shared by every model. ``max_turns`` counts model replies (3 tools + final + 1 spare)."""

    max_turns: int = 5
    max_tool_calls: int = MAX_TOOL_CALLS
    resize_long_side: int = 768
    blank_gray: int = 128
    templates: str | None = None  # a prompt template file; None = the repository default

    def __post_init__(self):
        if self.resize_long_side < 16:
            raise MedScopeError("images.resize_long_side must be at least 16 pixels")
        if self.max_turns < 1:
            raise MedScopeError("max_turns must be at least 1")


def normalize_condition(condition: str) -> str:
    """A condition's canonical name: lower case, hyphens for underscores, aliases resolved.

    Parameters
    ----------
    condition : str
        A condition name: one of :data:`CONDITIONS`, any case, with underscores or hyphens, or an alias
        (``fewshot``, ``toolsoff``, ``no-tools``).

    Returns
    -------
    str
        One of :data:`CONDITIONS`.

    Raises
    ------
    MedScopeError
        When the name is none of them.
    """
    c = condition.strip().lower().replace("_", "-")
    c = {"fewshot": "few-shot", "toolsoff": "tools-off", "no-tools": "tools-off"}.get(c, c)
    if c not in CONDITIONS:
        raise MedScopeError(f"unknown condition {condition!r}; choose from {', '.join(CONDITIONS)}")
    return c


def squeeze_gray(image: np.ndarray) -> np.ndarray:
    """A grey image stored as RGB -> (H, W); colour images unchanged.

    Parameters
    ----------
    image : numpy.ndarray
        ``(H, W)`` or ``(H, W, C)`` image.

    Returns
    -------
    numpy.ndarray
        ``(H, W)`` (the first channel, contiguous) when the three first channels are equal; otherwise
        ``image`` itself.
    """
    if image.ndim == 3 and np.array_equal(image[..., 0], image[..., 1]) and np.array_equal(image[..., 0], image[..., 2]):
        return np.ascontiguousarray(image[..., 0])
    return image


def _as_png(image: np.ndarray) -> bytes:
    # Grey images stay one channel (smaller, and what a grey study is).
    return encode_png(np.ascontiguousarray(squeeze_gray(image)))


def model_png(image: np.ndarray, max_side: int) -> bytes:
    """The PNG a model is shown: long side at most ``max_side``.

    Parameters
    ----------
    image : numpy.ndarray
        ``(H, W)`` or ``(H, W, 3)`` image.
    max_side : int
        Most pixels of the long side.

    Returns
    -------
    bytes
        PNG, one channel when the image is grey.
    """
    return _as_png(resize_long_side(image, max_side))


def item_fields(item: Item) -> tuple[str, str]:
    """(finding, question_kind) of an item, inferring the kind from the wording if absent.

    Parameters
    ----------
    item : Item
        A view item; reads ``meta['finding']`` and ``meta['question_kind']``.

    Returns
    -------
    finding : str
        The finding, "" when absent.
    question_kind : str
        The item's kind, else :func:`medscope.answers.matching.infer_question_kind` of its question.
    """
    finding = str(item.meta.get("finding") or "")
    kind = item.meta.get("question_kind") or infer_question_kind(item.question)
    return finding, kind


class Episode:
    """One episode's state: the conversation so far, the tool budget, and the result."""

    def __init__(self, item: Item, condition: str, settings: EpisodeSettings | None = None):
        self.item = item
        self.condition = normalize_condition(condition)
        self.settings = settings or EpisodeSettings()
        self.templates = prompts.load_templates(self.settings.templates)
        self.finding, self.kind = item_fields(item)
        # A view may carry its own synonyms of the finding (added to data/synonyms.yaml's).
        self.synonyms = tuple(str(s) for s in (item.meta.get("finding_synonyms") or ()))
        self.question = item.question
        if self.condition == "paraphrase":
            self.question = prompts.paraphrase_question(
                self.kind, self.finding or "abnormality", item.item_id, "test", self.settings.templates
            )
        self.messages: list[Message] = []
        self.turns: list[dict] = []
        self.replies = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.result: EpisodeResult | None = None
        self._build()

    # --- construction ---------------------------------------------------------------------
    def _case_image(self) -> np.ndarray | None:
        if self.condition == "blind":
            return None
        if not self.item.images:
            raise MedScopeError(f"item {self.item.item_id} has no image (condition {self.condition} needs one)")
        original = squeeze_gray(decode_png(self.item.images[0]))
        if self.condition == "blank":
            shown = resize_long_side(original, self.settings.resize_long_side)
            return np.full(shown.shape[:2], self.settings.blank_gray, dtype=np.uint8)
        return original

    def _build(self) -> None:
        s = self.settings
        system = prompts.system_prompt(self.condition, s.templates)
        if self.condition == "few-shot":
            system = f"{system}\n\n{self.templates.few_shot_intro}"
        image = self._case_image()
        self.messages.append(Message.text("system", system))
        if self.condition == "few-shot":
            for ex in prompts.few_shot_examples(s.templates):
                png = model_png(ex.image, s.resize_long_side)
                self.messages.append(Message("user", (Part(png=png), Part(text=ex.question))))
                self.messages.append(Message.text("assistant", ex.reply))
        parts: tuple[Part, ...] = (Part(text=self.question),)
        ref = None
        if image is not None:
            parts = (Part(png=model_png(image, s.resize_long_side)), Part(text=self.question))
            ref = "blank" if self.condition == "blank" else f"item:{self.item.item_id}"
        self.messages.append(Message("user", parts))
        self.turns.append({"role": "user", "text": self.question, "image_ref": ref})
        self.tools = ToolRunner(
            image=image,
            max_calls=s.max_tool_calls,
            enabled=self.condition not in ("tools-off", "plain"),
            max_side=s.resize_long_side,
        )

    # --- stepping -------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.result is not None

    def feed(self, completion: Completion) -> bool:
        """Take the model's reply; return True when the episode has ended."""
        if self.done:
            raise RuntimeError("episode already finished")
        text = completion.text or ""
        self.replies += 1
        self.input_tokens += int(completion.input_tokens or 0)
        self.output_tokens += int(completion.output_tokens or 0)
        self.messages.append(Message.text("assistant", text))
        self.turns.append({"role": "assistant", "text": text, "image_ref": None})
        parsed = parse_reply(text)
        # How the decision is read, recorded per episode: the action format (a <final> tag),
        # a bare JSON action, or the free-text rules.
        reading = "json" if parsed.source == "json" else "format"
        if parsed.kind == "final":
            self._finish_final(text, parsed.final, reading)
        elif parsed.kind == "free":
            r = read_decision(parsed.text, self.question, self.finding, self.kind, self.synonyms)
            answer = parsed.text if r.action == "answer" else None
            err = "no action tag and no readable decision" if r.action == "unparseable" else None
            self._finish(text, r.action, answer=answer, claims=r.claim, error=err, reading="rules", rule=r)
        elif parsed.kind == "unparseable":
            self._finish(text, "unparseable", error=parsed.error, reading=reading)
        elif self.condition == "plain":
            self._finish(text, "unparseable", error="tool call in the plain condition (one reply, no tools)")
        elif self.replies >= self.settings.max_turns:
            self._finish(text, "unparseable", error=f"no final action within {self.settings.max_turns} turns")
        else:
            res = self.tools.run(parsed.tool, parsed.error, self.templates)
            parts = (Part(text=res.text),) if res.png is None else (Part(png=res.png), Part(text=res.text))
            self.messages.append(Message("user", parts))
            ref = f"tool:{self.tools.calls}" if res.png is not None else None
            self.turns.append({"role": "user", "text": res.text, "image_ref": ref})
        return self.done

    def _finish_final(self, text: str, final, reading: str) -> None:
        if final.action != "answer":
            self._finish(text, final.action, reading=reading)
            return
        r = read_decision(final.answer or "", self.question, self.finding, self.kind, self.synonyms)
        # the answer field's text decides the claim; where its reading is unclear, so is the episode's
        action = "unclear" if r.action == "unclear" else "answer"
        self._finish(text, action, answer=final.answer, claims=r.claim if r.action == "answer" else None,
                     box=self._box_pixels(final.box), confidence=final.confidence, reading=reading, rule=r)

    def _box_pixels(self, box) -> list[int] | None:
        """Model boxes are 0-1000 on the original image; tables hold pixels (records.BOX)."""
        if box is None:
            return None
        w = int(self.item.meta.get("width") or 0)
        h = int(self.item.meta.get("height") or 0)
        if not (w and h) and self.item.images:
            h, w = decode_png(self.item.images[0], gray=True).shape[:2]
        if not (w and h):
            return None
        x1, y1, x2, y2 = (min(max(int(v), 0), 1000) for v in box)
        return [round(x1 * w / 1000), round(y1 * h / 1000), round(x2 * w / 1000), round(y2 * h / 1000)]

    def _finish(self, text, action, *, answer=None, claims=None, box=None, confidence=None, error=None,
                reading=None, rule=None) -> None:
        self.result = EpisodeResult(
            turns=self.turns,
            raw_text=text,
            action=action,
            answer=answer,
            claims_finding=claims if action == "answer" else None,
            box=box,
            confidence=confidence,
            tool_calls=self.tools.calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            parse_error=error,
            model_turns=self.replies,
            reading=reading,
            reading_rule=rule.rule if rule is not None else None,
            reading_note=(rule.evidence or None) if rule is not None else None,
        )


def run_episode(
    item: Item, model: ChatModel, condition: str, decoding: Decoding, settings: EpisodeSettings | None = None
) -> EpisodeResult:
    """Run one episode to its end. Model errors (TransientModelError, ...) propagate.

    Parameters
    ----------
    item : Item
        The view and its question.
    model : ChatModel
        The model asked.
    condition : str
        One of :data:`CONDITIONS` (or an alias, :func:`normalize_condition`).
    decoding : Decoding
        The decoding settings of every request.
    settings : EpisodeSettings, optional
        Turn and tool budgets, image size, templates (default: ``EpisodeSettings()``).

    Returns
    -------
    EpisodeResult
        The turns, the decision read from the final reply, tokens and tool calls.

    Raises
    ------
    MedScopeError
        When the condition is unknown, or the item has no image and the condition needs one.

    References
    ----------
    .. [1] counterfactual paper, §3.1, §3.10, §5.5.
    """
    ep = Episode(item, condition, settings)
    while not ep.feed(model.complete(list(ep.messages), decoding)):
        pass
    return ep.result  # type: ignore[return-value]


def run_episodes(
    jobs: list[tuple[Item, str]], model: ChatModel, decoding: Decoding, settings: EpisodeSettings | None = None
) -> list[EpisodeResult]:
    """Run several episodes; a model with ``complete_batch`` advances them in lock step, so a
    local GPU model generates one batch per turn instead of one request per episode.

    Parameters
    ----------
    jobs : list of tuple of (Item, str)
        (item, condition) of each episode.
    model : ChatModel
        The model asked; its ``complete_batch``, when it has one, takes every live episode's messages
        at once.
    decoding : Decoding
        The decoding settings of every request.
    settings : EpisodeSettings, optional
        Shared by every episode (default: ``EpisodeSettings()``).

    Returns
    -------
    list of EpisodeResult
        One per job, in order.

    Raises
    ------
    MedScopeError
        When a condition is unknown, or an item has no image and its condition needs one.
    """
    episodes = [Episode(item, cond, settings) for item, cond in jobs]
    batch = getattr(model, "complete_batch", None)
    while True:
        live = [ep for ep in episodes if not ep.done]
        if not live:
            break
        if batch is not None:
            completions = batch([list(ep.messages) for ep in live], decoding)
        else:
            completions = [model.complete(list(ep.messages), decoding) for ep in live]
        for ep, completion in zip(live, completions, strict=True):
            ep.feed(completion)
    return [ep.result for ep in episodes]  # type: ignore[misc]


def replay(item: Item, condition: str, replies: list[str], settings: EpisodeSettings | None = None) -> Episode:
    """Feed written replies (e.g. a label-derived trajectory's tool calls and final action)
    through the episode, so training sees exactly the messages, tool crops and error turns
    that evaluation produces. Replies after the episode has ended are an error.

    Parameters
    ----------
    item : Item
        The view and its question.
    condition : str
        One of :data:`CONDITIONS` (or an alias).
    replies : list of str
        The model's replies, in order.
    settings : EpisodeSettings, optional
        As in evaluation (default: ``EpisodeSettings()``).

    Returns
    -------
    Episode
        The episode after the replies: its ``messages``, ``turns`` and, when it ended, ``result``.

    Raises
    ------
    MedScopeError
        When a reply comes after the episode ended, or the episode cannot be built.
    """
    ep = Episode(item, condition, settings)
    for i, text in enumerate(replies):
        if ep.done:
            raise MedScopeError(f"replay of {item.item_id}: reply {i + 1} comes after the episode ended")
        ep.feed(Completion(text=text))
    return ep
