"""A classical pixel reader: an image-dependent baseline that reads only the pixels.

This is NOT a medical model. It is a deliberately simple detector that lets the demo report
show a policy that follows the image beside constant policies that cannot (seed 000 §3.2:
constant policies score ESG 0). It ignores the question's wording except for how to phrase
its answer, and answers in the agent action format:

- **clarify** when the image is unusable: no structure at all (a blank image), too noisy
  (Immerkær's noise estimate above ``max_noise`` grey levels), or too blurred (almost no
  noise and almost no fine detail left, as after Gaussian blur or down/up-sampling);
- **present** (with a box) when a compact blob stands out from its surroundings: the largest
  difference-of-Gaussians response over scales 3-12 px (on a 256-px copy), in units of the
  response's robust spread (median absolute deviation), exceeds ``blob_z``;
- **absent** otherwise; **refer** when there is no image at all (blind condition).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from medscope.agent.actions import FinalAction, format_final
from medscope.agent.matching import infer_question_kind
from medscope.images import decode_png
from medscope.models.base import Completion, Decoding, Message
from medscope.models.policies import last_question

_IMMERKAER = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], dtype=np.float32)
SCALES = (3.0, 5.0, 8.0, 12.0)


def noise_sigma(gray: np.ndarray) -> float:
    """Immerkær (1996) fast noise standard deviation of a grey image (grey levels)."""
    g = gray.astype(np.float32)
    if min(g.shape) < 3:
        return 0.0
    r = cv2.filter2D(g, -1, _IMMERKAER)[1:-1, 1:-1]
    return float(np.sqrt(np.pi / 2.0) * np.abs(r).mean() / 6.0)


def fine_detail(gray: np.ndarray) -> float:
    """Mean absolute difference to a 1-px Gaussian blur, relative to the image's spread."""
    g = gray.astype(np.float32)
    return float(np.abs(g - cv2.GaussianBlur(g, (0, 0), 1.0)).mean() / (g.std() + 1e-6))


def strongest_blob(gray: np.ndarray) -> tuple[float, tuple[float, float, float]]:
    """(z, (x, y, scale)): the largest |DoG| response in robust-z units and where it is."""
    g = gray.astype(np.float32)
    best_z, best = 0.0, (g.shape[1] / 2, g.shape[0] / 2, SCALES[0])
    for s in SCALES:
        dog = cv2.GaussianBlur(g, (0, 0), s) - cv2.GaussianBlur(g, (0, 0), 2.5 * s)
        spread = 1.4826 * float(np.median(np.abs(dog - np.median(dog))))
        if spread < 1e-3:  # flat response: a featureless image has no blob, whatever the max
            continue
        idx = int(np.argmax(np.abs(dog)))
        z = float(np.abs(dog).flat[idx]) / spread
        if z > best_z:
            y, x = divmod(idx, g.shape[1])
            best_z, best = z, (float(x), float(y), s)
    return best_z, best


def _blob_box(g: np.ndarray, x: float, y: float, s: float) -> tuple[int, int, int, int]:
    """Box (0-1000) of the connected region around the peak where the DoG keeps at least
    half the peak's value and sign (the peak of a small scale can sit on the blob's rim)."""
    dog = cv2.GaussianBlur(g, (0, 0), s) - cv2.GaussianBlur(g, (0, 0), 2.5 * s)
    peak = dog[int(y), int(x)]
    region = (dog * np.sign(peak) >= 0.5 * abs(peak)).astype(np.uint8)
    _, labels = cv2.connectedComponents(region)
    ys, xs = np.nonzero(labels == labels[int(y), int(x)])
    gh, gw = g.shape
    return (int(1000 * xs.min() / gw), int(1000 * ys.min() / gh),
            int(1000 * (xs.max() + 1) / gw), int(1000 * (ys.max() + 1) / gh))


@dataclass
class PixelReading:
    decision: str  # present | absent | clarify
    z: float
    noise: float
    detail: float
    box: tuple[int, int, int, int] | None  # 0-1000 on the image


def read_pixels(image: np.ndarray, blob_z: float = 9.0, max_noise: float = 20.0,
                min_noise: float = 0.6, min_detail: float = 0.02, size: int = 256) -> PixelReading:
    """The reader's decision on one image (uint8 grey or RGB)."""
    gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    h, w = gray.shape
    scale = size / max(h, w)
    g = cv2.resize(gray, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    g = g.astype(np.float32)
    noise, detail = noise_sigma(g), fine_detail(g)
    if g.std() < 1.0 or noise > max_noise or (noise < min_noise and detail < min_detail):
        return PixelReading("clarify", 0.0, noise, detail, None)
    z, (x, y, s) = strongest_blob(g)
    if z < blob_z:
        return PixelReading("absent", z, noise, detail, None)
    box = _blob_box(g, x, y, s)
    return PixelReading("present", z, noise, detail, box)


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
    max_noise: float = 20.0

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        image = _case_image(messages)
        if image is None:
            final = FinalAction("refer", reason="There is no image to read.")
            return Completion(format_final(final, "No image."), finish_reason="stop")
        r = read_pixels(image, blob_z=self.blob_z, max_noise=self.max_noise)
        kind = infer_question_kind(last_question(messages))
        if r.decision == "clarify":
            final = FinalAction("clarify", question="The image is unusable (blank, blurred or noisy); please provide a clearer one.")
        elif r.decision == "present":
            answer = {"health": "No", "open": "Abnormality present"}.get(kind, "Yes")
            final = FinalAction("answer", answer=answer, box=r.box, confidence=round(min(0.99, r.z / (2 * self.blob_z)), 2))
        else:
            answer = {"health": "Yes", "open": "No abnormality"}.get(kind, "No")
            final = FinalAction("answer", answer=answer, confidence=0.6)
        reason = f"Blob contrast z={r.z:.1f}, noise {r.noise:.1f}, detail {r.detail:.3f}."
        return Completion(format_final(final, reason), finish_reason="stop")
