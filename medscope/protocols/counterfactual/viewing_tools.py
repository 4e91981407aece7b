"""The agent's two tools, zoom and window (counterfactual paper §3.1), and their per-episode budget.

Both act on the ORIGINAL image of the case (not on an earlier tool result), so that boxes in
0-1000 always refer to the same frame. A call past the limit, with a bad box or with bad
window settings comes back as an error turn; nothing here raises on model input.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from medscope.answers.actions import ToolCall
from medscope.images import encode_png, resize_long_side

MAX_TOOL_CALLS = 3


class ToolInputError(ValueError):
    """A tool call whose arguments cannot be applied (bad box, bad window)."""


def zoom(image: np.ndarray, box: tuple[int, int, int, int], max_side: int = 768, upscale: int = 4) -> np.ndarray:
    """Crop ``box`` (x1, y1, x2, y2 in 0-1000 of the full image) and enlarge it for viewing.

    The crop covers every pixel the box touches (floor/ceil), so a box narrower than a pixel
    still returns one pixel. It is enlarged (bicubic) by up to ``upscale`` times, never past
    ``max_side`` on its long side, and shrunk to ``max_side`` if larger.

    Parameters
    ----------
    image : numpy.ndarray
        ``(H, W)`` or ``(H, W, C)`` full-size image.
    box : tuple of 4 int
        (x1, y1, x2, y2) in 0-1000 of the image.
    max_side : int, optional
        Most pixels of the result's long side.
    upscale : int, optional
        Largest enlargement factor.

    Returns
    -------
    numpy.ndarray
        The enlarged crop.

    Raises
    ------
    ToolInputError
        When the box is missing, has not four values, lies outside 0-1000 or is empty.

    References
    ----------
    .. [1] counterfactual paper, §3.1.
    """
    if box is None or len(box) != 4:
        raise ToolInputError("zoom needs a box [x1, y1, x2, y2].")
    x1, y1, x2, y2 = (float(v) for v in box)
    if not all(0 <= v <= 1000 for v in (x1, y1, x2, y2)):
        raise ToolInputError(f"box {list(box)} is outside 0-1000.")
    if not (x1 < x2 and y1 < y2):
        raise ToolInputError(f"box {list(box)} is empty: it needs x1 < x2 and y1 < y2.")
    h, w = image.shape[:2]
    px1, py1 = int(np.floor(x1 * w / 1000)), int(np.floor(y1 * h / 1000))
    px2, py2 = max(px1 + 1, int(np.ceil(x2 * w / 1000))), max(py1 + 1, int(np.ceil(y2 * h / 1000)))
    crop = image[py1:min(py2, h), px1:min(px2, w)]
    ch, cw = crop.shape[:2]
    target = min(max_side, upscale * max(ch, cw))
    if max(ch, cw) < target:
        scale = target / max(ch, cw)
        size = (max(1, round(cw * scale)), max(1, round(ch * scale)))
        crop = cv2.resize(crop, size, interpolation=cv2.INTER_CUBIC)
    return resize_long_side(np.ascontiguousarray(crop), max_side)


def window(image: np.ndarray, center: float, width: float) -> np.ndarray:
    """Linear grey-level window: ``center - width/2`` maps to 0, ``center + width/2`` to 255.

    Parameters
    ----------
    image : numpy.ndarray
        The image, grey levels 0-255.
    center : float
        Window centre, in 0-255.
    width : float
        Window width, above 0 and at most 510.

    Returns
    -------
    numpy.ndarray
        uint8 image of the same shape, rounded and clipped to 0-255.

    Raises
    ------
    ToolInputError
        When ``center`` or ``width`` is out of range.

    References
    ----------
    .. [1] counterfactual paper, §3.1.
    """
    center, width = float(center), float(width)
    if not (0 <= center <= 255):
        raise ToolInputError(f"window center {center:g} is outside 0-255.")
    if not (0 < width <= 510):
        raise ToolInputError(f"window width {width:g} must be above 0 and at most 510.")
    low = center - width / 2.0
    out = (image.astype(np.float32) - low) * (255.0 / width)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


@dataclass
class ToolResult:
    ok: bool
    text: str  # what the model is told
    png: bytes | None = None


@dataclass
class ToolRunner:
    """Runs the tool calls of one episode against its image, within the call budget.

    ``enabled=False`` is the tools-off condition: every call is refused. ``image=None`` is the
    blind condition: there is nothing to zoom on. ``calls`` counts every call the model made,
    refused or not (each call beyond the first has a cost in scoring).
    """

    image: np.ndarray | None
    max_calls: int = MAX_TOOL_CALLS
    enabled: bool = True
    max_side: int = 768
    calls: int = 0
    executed: int = 0

    def run(self, call: ToolCall | None, error: str | None, messages) -> ToolResult:
        """``messages``: the prompt templates (tool_result, tool_error, ... strings)."""
        self.calls += 1
        if not self.enabled:
            return ToolResult(False, messages.tools_off)
        if self.calls > self.max_calls:
            return ToolResult(False, messages.tool_limit.format(limit=self.max_calls))
        if call is None:
            return ToolResult(False, messages.tool_error.format(reason=error or "the tool call could not be read."))
        if self.image is None:
            return ToolResult(False, messages.tool_error.format(reason=messages.no_image))
        try:
            if call.name == "zoom":
                out = zoom(self.image, call.box, self.max_side)
                detail = f"zoom on box {list(call.box)}, shown at {out.shape[1]}x{out.shape[0]} px."
            else:
                out = resize_long_side(window(self.image, call.center, call.width), self.max_side)
                detail = f"window center {call.center:g}, width {call.width:g} on the full image."
        except ToolInputError as err:
            return ToolResult(False, messages.tool_error.format(reason=str(err)))
        self.executed += 1
        return ToolResult(True, messages.tool_result.format(name=call.name, detail=detail), encode_png(out))
