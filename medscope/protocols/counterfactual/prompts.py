"""Versioned prompt templates of the counterfactual protocol (counterfactual paper §3.1, §5.5, Appendix A).

The text lives in ``configs/prompts/counterfactual_v1.yaml``; this module loads it, derives
:data:`PROMPT_VERSION` from its content (any edit gives a new version, hence new request keys),
builds the system prompt of each condition, rewrites questions with the training or held-out
paraphrases, and generates the four solved few-shot examples' images.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from medscope.config import StrictModel, content_hash, load_yaml, parse, shipped
from medscope.errors import MedScopeError
from medscope.seeding import stable_hash

TEMPLATE_PATH = Path(shipped("prompts", "counterfactual_v1.yaml"))
QUESTION_KINDS = ("presence", "health", "open")


class _Wordings(StrictModel):
    train: list[str]
    test: list[str]


class _Example(StrictModel):
    image: str  # lesion | erased | edited_elsewhere | healthy
    reply: str


class _FewShot(StrictModel):
    seed: int
    question: str
    examples: list[_Example]


class PromptTemplates(StrictModel):
    version: str
    agent: str
    plain: str
    cautious_warning: str
    few_shot_intro: str
    tool_result: str
    tool_error: str
    tools_off: str
    tool_limit: str
    no_image: str
    paraphrases: dict[str, _Wordings]
    few_shot: _FewShot


@functools.lru_cache(maxsize=4)
def load_templates(path: str | None = None) -> PromptTemplates:
    """The templates of ``path`` (default: the repository's counterfactual_v1.yaml).

    Parameters
    ----------
    path : str, optional
        A template YAML file (path or URI); None for the repository's.

    Returns
    -------
    PromptTemplates
        The validated templates (cached per path).

    Raises
    ------
    MedScopeError
        When the file does not validate, or its paraphrases lack a question kind of :data:`QUESTION_KINDS`.

    References
    ----------
    .. [1] counterfactual paper, §3.1, §5.5, Appendix A.
    """
    uri = str(path or TEMPLATE_PATH)
    data = load_yaml(uri)
    tpl = parse(PromptTemplates, data, source=uri)
    missing = [k for k in QUESTION_KINDS if k not in tpl.paraphrases]
    if missing:
        raise MedScopeError(f"{uri}: paraphrases lack question kinds {missing}")
    return tpl


def prompt_version(path: str | None = None) -> str:
    """``<version>-<content hash>``: part of every request key.

    Parameters
    ----------
    path : str, optional
        A template YAML file; None for the repository's.

    Returns
    -------
    str
        The templates' ``version``, a hyphen and the first 8 characters of their content hash.
    """
    tpl = load_templates(path)
    return f"{tpl.version}-{content_hash(tpl)[:8]}"


PROMPT_VERSION = prompt_version()


def system_prompt(condition: str, path: str | None = None) -> str:
    """The system prompt of a condition: plain, cautious and few-shot differ; every other
    condition (agent, blind, blank, tools-off, paraphrase) uses the agent prompt.

    Parameters
    ----------
    condition : str
        A normalised condition name (``agent_episode.CONDITIONS``).
    path : str, optional
        A template YAML file; None for the repository's.

    Returns
    -------
    str
        ``plain``'s prompt for plain; the agent prompt and the cautious warning for cautious and
        few-shot; the agent prompt otherwise.

    References
    ----------
    .. [1] counterfactual paper, §3.1, §5.5, Appendix A.
    """
    tpl = load_templates(path)
    if condition == "plain":
        return tpl.plain
    if condition in ("cautious", "few-shot"):
        return f"{tpl.agent}\n\n{tpl.cautious_warning}"
    return tpl.agent


def _fill(template: str, finding: str) -> str:
    finding = finding.strip()
    return template.format(finding=finding, Finding=finding[:1].upper() + finding[1:])


def paraphrase_question(
    question_kind: str, finding: str, key: str, split: str = "test", path: str | None = None
) -> str:
    """A reworded question of ``question_kind`` about ``finding``.

    ``split="test"`` draws from the three held-out wordings (the ``paraphrase`` condition),
    ``"train"`` from the four training ones. The wording is chosen by a hash of ``key`` (an
    item id), so the same item always gets the same wording on every worker.

    Parameters
    ----------
    question_kind : {'presence', 'health', 'open'}
        The question's kind (one the templates paraphrase).
    finding : str
        The finding, filled into ``{finding}`` / ``{Finding}`` (capitalised).
    key : str
        What the wording is drawn by, e.g. the item id.
    split : {'test', 'train'}, optional
        Held-out or training wordings.
    path : str, optional
        A template YAML file; None for the repository's.

    Returns
    -------
    str
        The question.

    Raises
    ------
    MedScopeError
        When the templates have no paraphrases for ``question_kind``.

    References
    ----------
    .. [1] counterfactual paper, §5.5.
    """
    tpl = load_templates(path)
    if question_kind not in tpl.paraphrases:
        raise MedScopeError(f"no paraphrases for question kind {question_kind!r}")
    wordings = getattr(tpl.paraphrases[question_kind], split)
    idx = int(stable_hash("paraphrase", key), 16) % len(wordings)
    return _fill(wordings[idx], finding)


@dataclass(frozen=True)
class FewShotExample:
    image: np.ndarray  # uint8 gray (H, W)
    question: str
    reply: str


def _phantom_background(rng: np.random.Generator, size: int) -> np.ndarray:
    noise = rng.normal(0.0, 1.0, (size, size))
    smooth = cv2.GaussianBlur(noise, (0, 0), size / 16)
    smooth = (smooth - smooth.mean()) / (smooth.std() + 1e-9)
    yy, xx = np.mgrid[0:size, 0:size] / size
    organ = np.exp(-(((xx - 0.5) / 0.42) ** 2 + ((yy - 0.5) / 0.38) ** 2) ** 2)
    return 40 + 70 * organ + 10 * smooth + rng.normal(0, 4, (size, size))


def _disc(size: int, cx: float, cy: float, r: float) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size]
    d = np.sqrt((xx - cx * size) ** 2 + (yy - cy * size) ** 2)
    return np.clip((r * size - d) / 2.0 + 0.5, 0, 1)


def few_shot_images(seed: int, size: int = 256) -> dict[str, np.ndarray]:
    """The four example images: lesion, the same image erased, an edit elsewhere with the
    lesion intact, and a different healthy image. Generated, so never in a test set.

    The lesion sits at centre (0.66, 0.40), radius 0.08 of the side, matching the boxes
    [560, 300, 760, 500] of the example replies. Erasure replaces a dilated disc by the smooth
    background (cv2.inpaint, Telea); the control inpaints the same shape elsewhere.

    Parameters
    ----------
    seed : int
        Seed of the generated backgrounds (the healthy image uses ``seed + 1``).
    size : int, optional
        Side of the square images, in pixels.

    Returns
    -------
    dict of str to numpy.ndarray
        ``lesion``, ``erased``, ``edited_elsewhere``, ``healthy``: uint8 grey ``(size, size)`` images.
    """
    rng = np.random.default_rng(seed)
    base = _phantom_background(rng, size)
    lesion = _disc(size, 0.66, 0.40, 0.08)
    with_lesion = np.clip(base + 90 * lesion, 0, 255).astype(np.uint8)

    def _inpaint(img: np.ndarray, cx: float, cy: float) -> np.ndarray:
        mask = (_disc(size, cx, cy, 0.08 + 5 / size) > 0).astype(np.uint8)
        return cv2.inpaint(img, mask, 5, cv2.INPAINT_TELEA)

    erased = _inpaint(with_lesion, 0.66, 0.40)
    elsewhere = _inpaint(with_lesion, 0.28, 0.65)
    healthy = np.clip(_phantom_background(np.random.default_rng(seed + 1), size), 0, 255).astype(np.uint8)
    return {"lesion": with_lesion, "erased": erased, "edited_elsewhere": elsewhere, "healthy": healthy}


@functools.lru_cache(maxsize=2)
def few_shot_examples(path: str | None = None) -> tuple[FewShotExample, ...]:
    """The four solved examples of the few-shot condition, in the paper's order.

    Parameters
    ----------
    path : str, optional
        A template YAML file; None for the repository's.

    Returns
    -------
    tuple of FewShotExample
        The examples in the templates' order: image, the shared question, the reply (cached per path).

    Raises
    ------
    MedScopeError
        When an example names an image :func:`few_shot_images` does not make.

    References
    ----------
    .. [1] counterfactual paper, §5.5, Appendix A.
    """
    tpl = load_templates(path)
    images = few_shot_images(tpl.few_shot.seed)
    out = []
    for ex in tpl.few_shot.examples:
        if ex.image not in images:
            raise MedScopeError(f"few-shot example image {ex.image!r} is not one of {sorted(images)}")
        out.append(FewShotExample(images[ex.image], tpl.few_shot.question, ex.reply))
    return tuple(out)
