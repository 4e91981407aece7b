"""A classical pixel reader: an image-dependent baseline that reads only the pixels.

This is NOT a medical model. It is a deliberately simple detector that lets the demo report
show a policy that follows the image beside constant policies that cannot (counterfactual paper §3.2:
constant policies score ESG 0). It ignores the question's wording except for how to phrase
its answer, and answers in the agent action format. On a 256-px grey copy, inside the
foreground (dark fan / scope corners excluded):

- **clarify** when the image is unusable (counterfactual paper §3.2 degradations): no structure (blank);
  too noisy (Immerkær noise estimate above ``max_noise`` grey levels); blocky (JPEG or
  nearest-neighbour down/up-sampling: mean jump across 8-px block borders over ``max_block``
  times the jump elsewhere); or blurred (the 99.9th percentile of the finest detail band,
  |I - G_1 * I|, below ``min_peak`` grey levels);
- **present** (with a box) when a compact blob stands out: the largest |difference of
  Gaussians| over scales 3-12 px, in units of the response's robust spread (MAD), exceeds
  ``blob_z``;
- **absent** otherwise; **refer** when there is no image at all (blind condition).

With ``weights`` (a reader fitted on a train split by ``medscope.models.classical_fit``), the
fitted lesion score replaces the blob rule after the same quality gates: present (box around
the strongest evidence) when it exceeds the fitted threshold, absent otherwise. Either way it
reads only the pixels of the image it answers.

Thresholds were set on generated images (tests/models/test_policies.py) and the phantom's
degradations; as a lesion detector on structured backgrounds it is weak by design.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from medscope.answers.actions import FinalAction, format_final
from medscope.answers.matching import infer_question_kind
from medscope.images import decode_png
from medscope.models.base import Completion, Decoding, Message
from medscope.models.pixel_filters import (  # noqa: F401 - part of the reader's interface
    SCALES, _blob_box, blockiness, detail_peak, dog, foreground, noise_sigma, strongest_blob)
from medscope.models.policies import last_question



@dataclass
class PixelReading:
    decision: str  # present | absent | clarify
    reason: str  # what decided it
    z: float = 0.0
    box: tuple[int, int, int, int] | None = None  # 0-1000 on the image


def fitted_reading(image: np.ndarray, artifact: dict) -> PixelReading:
    """present / absent from a fitted lesion-score map (medscope.models.classical_fit): the
    maximum of the smoothed per-pixel logit against the fitted threshold of the image's pixel
    family; the box is the
    connected region around the maximum where the logit stays above the threshold.

    Parameters
    ----------
    image : numpy.ndarray
        uint8 grey (h, w) or RGB (h, w, 3) image.
    artifact : dict
        A fitted reader (``classical_fit.fit_reader`` / ``load_artifact``): ``weights`` and per-family
        ``thresholds``.

    Returns
    -------
    PixelReading
        "present" with a 0-1000 box, or "absent"; ``z`` is the score's margin over the threshold.
    """
    from medscope.models.classical_fit import score_map

    z, fg, family = score_map(image, np.asarray(artifact["weights"], np.float32))
    thr = float(artifact["thresholds"][family])
    z = z - float(np.median(z[fg]))  # pooled(): the score is the max over the median
    zin = np.where(fg, z, -np.inf)
    idx = int(np.argmax(zin))
    top = float(zin.flat[idx])
    if top <= thr:
        return PixelReading("absent", f"lesion score {top:.2f} <= {thr:.2f}", top - thr)
    y, x = divmod(idx, z.shape[1])
    _, labels = cv2.connectedComponents((zin > thr).astype(np.uint8))
    ys, xs = np.nonzero(labels == labels[y, x])
    gh, gw = z.shape
    box = (int(1000 * xs.min() / gw), int(1000 * ys.min() / gh), int(1000 * (xs.max() + 1) / gw), int(1000 * (ys.max() + 1) / gh))
    return PixelReading("present", f"lesion score {top:.2f} > {thr:.2f}", top - thr, box)


def read_pixels(image: np.ndarray, blob_z: float = 9.0, max_noise: float = 9.0, max_block: float = 2.0,
                min_peak: float = 10.0, size: int = 256, fitted: dict | None = None) -> PixelReading:
    """The reader's decision on one image (uint8 grey or RGB); ``fitted`` (an artifact of
    classical_fit.fit_reader) replaces the unfitted blob rule after the quality gates.

    Parameters
    ----------
    image : numpy.ndarray
        uint8 grey (h, w) or RGB (h, w, 3) image.
    blob_z : float, optional
        Least blob strength, in robust-spread units, for "present" (unfitted rule).
    max_noise : float, optional
        Highest noise estimate, in grey levels, before "clarify".
    max_block : float, optional
        Highest block-border jump ratio before "clarify".
    min_peak : float, optional
        Least fine-detail peak, in grey levels, before "clarify".
    size : int, optional
        Long side, in pixels, of the grey copy read.
    fitted : dict or None, optional
        A fitted reader artifact; None for the blob rule.

    Returns
    -------
    PixelReading
        ``decision`` "present", "absent" or "clarify", the ``reason``, ``z`` and, for present, a 0-1000 box.
    """
    gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    h, w = gray.shape
    block = blockiness(gray)  # at the stored resolution, where the 8-px grid lives
    scale = size / max(h, w)
    g = cv2.resize(gray, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    g = g.astype(np.float32)
    fg = foreground(g)
    if g[fg].std() < 1.0:
        return PixelReading("clarify", "no structure")
    noise = noise_sigma(g, fg)
    if noise > max_noise:
        return PixelReading("clarify", f"noise {noise:.1f}")
    if block > max_block:
        return PixelReading("clarify", f"blockiness {block:.1f}")
    peak = detail_peak(g, fg)
    if peak < min_peak:
        return PixelReading("clarify", f"detail {peak:.1f}")
    if fitted is not None:
        return fitted_reading(image, fitted)
    z, (x, y, s) = strongest_blob(g, fg)
    if z < blob_z:
        return PixelReading("absent", f"strongest blob z={z:.1f}", z)
    return PixelReading("present", f"blob z={z:.1f}", z, _blob_box(g, x, y, s, fg))


def _case_image(messages: list[Message]) -> np.ndarray | None:
    """The first image of the last non-tool user turn: the case image."""
    for m in reversed(messages):
        if m.role != "user" or m.joined_text.strip().startswith("Tool "):
            continue
        for p in m.parts:
            if p.is_image:
                return decode_png(p.png)
        return None
    return None


@dataclass
class ClassicalReader:
    """The pixel reader as a ChatModel (provider "classical", no tokens, no tools)."""

    name: str = "classical/dog-blob"
    provider: str = "classical"
    endpoint: str = "local"
    blob_z: float = 9.0
    max_noise: float = 9.0
    weights: str | None = None  # URI of a fitted artifact (classical_fit); None: unfitted blob rule
    _fitted: dict | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.weights:
            from medscope.models.classical_fit import load_artifact

            self._fitted = load_artifact(self.weights)

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        image = _case_image(messages)
        if image is None:
            final = FinalAction("refer", reason="There is no image to read.")
            return Completion(format_final(final, "No image."), finish_reason="stop")
        r = read_pixels(image, blob_z=self.blob_z, max_noise=self.max_noise, fitted=self._fitted)
        kind = infer_question_kind(last_question(messages))
        if r.decision == "clarify":
            final = FinalAction("clarify", question="The image is unusable (blank, blurred or noisy); please provide a clearer one.")
        elif r.decision == "present":
            answer = {"health": "No", "open": "Abnormality present"}.get(kind, "Yes")
            final = FinalAction("answer", answer=answer, box=r.box, confidence=self._confidence(r.z))
        else:
            answer = {"health": "Yes", "open": "No abnormality"}.get(kind, "No")
            final = FinalAction("answer", answer=answer, confidence=0.6)
        reason = f"Pixel reading: {r.reason}."
        return Completion(format_final(final, reason), finish_reason="stop")

    def _confidence(self, z: float) -> float:
        if self._fitted is not None:  # z is the logit margin over the fitted threshold
            return round(float(min(0.99, 1.0 / (1.0 + np.exp(-z)))), 2)
        return round(min(0.99, z / (2 * self.blob_z)), 2)
