"""A classical pixel reader: an image-dependent baseline that reads only the pixels.

This is NOT a medical model. It is a deliberately simple detector that lets the demo report
show a policy that follows the image beside constant policies that cannot (seed 000 §3.2:
constant policies score ESG 0). It ignores the question's wording except for how to phrase
its answer, and answers in the agent action format. On a 256-px grey copy, inside the
foreground (dark fan / scope corners excluded):

- **clarify** when the image is unusable (seed 000 §3.2 degradations): no structure (blank);
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

Thresholds were set on generated images (tests/test_models_policies.py) and the phantom's
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
from medscope.models.policies import last_question

_IMMERKAER = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], dtype=np.float32)
SCALES = (3.0, 5.0, 8.0, 12.0)


def foreground(gray: np.ndarray, level: float = 10.0, margin: int = 9) -> np.ndarray:
    """Pixels inside the imaged region: smoothed level above ``level``, eroded by ``margin``
    so that the border of an ultrasound fan or an endoscope's black corners is not read."""
    g = gray.astype(np.float32)
    mask = (cv2.GaussianBlur(g, (0, 0), 3) > level).astype(np.uint8)
    inner = cv2.erode(mask, np.ones((margin, margin), np.uint8)) > 0
    return inner if inner.sum() >= 64 else np.ones_like(inner)


def noise_sigma(gray: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Immerkær (1996) fast noise standard deviation of a grey image (grey levels)."""
    g = gray.astype(np.float32)
    if min(g.shape) < 3:
        return 0.0
    r = np.abs(cv2.filter2D(g, -1, _IMMERKAER))
    r = r[mask] if mask is not None else r[1:-1, 1:-1]
    return float(np.sqrt(np.pi / 2.0) * r.mean() / 6.0)


def detail_peak(gray: np.ndarray, mask: np.ndarray | None = None) -> float:
    """99.9th percentile of |I - G_1 * I| (grey levels): what survives of the finest detail."""
    g = gray.astype(np.float32)
    band = np.abs(g - cv2.GaussianBlur(g, (0, 0), 1.0))
    return float(np.percentile(band[mask] if mask is not None else band, 99.9))


def blockiness(gray: np.ndarray, block: int = 8) -> float:
    """Mean absolute jump across ``block``-px borders over the mean jump elsewhere (both axes);
    about 1 for natural images, well above for JPEG or nearest-neighbour up-sampling."""
    g = gray.astype(np.float32)
    ratios = []
    for d in (np.abs(np.diff(g, axis=1)), np.abs(np.diff(g, axis=0)).T):
        if d.shape[1] < 2 * block:
            continue
        on = (np.arange(d.shape[1]) % block) == block - 1
        ratios.append(d[:, on].mean() / (d[:, ~on].mean() + 1e-3))
    return float(max(ratios)) if ratios else 1.0


def _masked_blur(g: np.ndarray, m: np.ndarray, sigma: float) -> np.ndarray:
    """Normalised convolution: a Gaussian blur that only averages pixels inside ``m``, so the
    black outside of a fan or scope does not darken the inside near its border."""
    num = cv2.GaussianBlur(g * m, (0, 0), sigma)
    den = cv2.GaussianBlur(m, (0, 0), sigma)
    return num / np.maximum(den, 1e-3)


def dog(g: np.ndarray, s: float, m: np.ndarray | None = None) -> np.ndarray:
    """Difference of Gaussians at scale ``s`` (surround 2.5 s), inside ``m`` if given."""
    if m is None:
        return cv2.GaussianBlur(g, (0, 0), s) - cv2.GaussianBlur(g, (0, 0), 2.5 * s)
    mf = m.astype(np.float32)
    return (_masked_blur(g, mf, s) - _masked_blur(g, mf, 2.5 * s)) * mf


def strongest_blob(gray: np.ndarray, mask: np.ndarray | None = None) -> tuple[float, tuple[float, float, float]]:
    """(z, (x, y, scale)): the largest |DoG| response inside ``mask`` in robust-z units."""
    g = gray.astype(np.float32)
    best_z, best = 0.0, (g.shape[1] / 2, g.shape[0] / 2, SCALES[0])
    for s in SCALES:
        d = dog(g, s, mask)
        vals = d[mask] if mask is not None else d
        spread = 1.4826 * float(np.median(np.abs(vals - np.median(vals))))
        if spread < 1e-3:  # flat response: a featureless image has no blob, whatever the max
            continue
        idx = int(np.argmax(np.abs(d)))
        z = float(np.abs(d).flat[idx]) / spread
        if z > best_z:
            y, x = divmod(idx, g.shape[1])
            best_z, best = z, (float(x), float(y), s)
    return best_z, best


def _blob_box(g: np.ndarray, x: float, y: float, s: float, mask: np.ndarray | None = None) -> tuple[int, int, int, int]:
    """Box (0-1000) of the connected region around the peak where the DoG keeps at least
    half the peak's value and sign (the peak of a small scale can sit on the blob's rim)."""
    d = dog(g, s, mask)
    peak = d[int(y), int(x)]
    region = (d * np.sign(peak) >= 0.5 * abs(peak)).astype(np.uint8)
    _, labels = cv2.connectedComponents(region)
    ys, xs = np.nonzero(labels == labels[int(y), int(x)])
    gh, gw = g.shape
    return (int(1000 * xs.min() / gw), int(1000 * ys.min() / gh),
            int(1000 * (xs.max() + 1) / gw), int(1000 * (ys.max() + 1) / gh))


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
    connected region around the maximum where the logit stays above the threshold."""
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
    classical_fit.fit_reader) replaces the unfitted blob rule after the quality gates."""
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
