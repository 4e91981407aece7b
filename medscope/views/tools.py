"""Erasure tools behind one interface (counterfactual paper, §3.2 and §5.4).

addition: the offline tools (graft, exemplar, texture, fsr_fast, shiftmap) stand in for LaMa, which needs a
GPU and downloaded weights; the paper's tools are LaMa, transplant, Telea and diffusion.

An eraser fills a boolean ``region`` of an RGB uint8 image and returns a new image in which
only the region's pixels differ: every tool's output is composited back over the input, so
the "no lesion pixel changes" guarantee of the control does not depend on the tool.

Tools: ``telea`` and ``ns`` (OpenCV inpainting), ``texture`` (offline, no weights: Telea for
the low-frequency structure plus the high-frequency texture of tissue from elsewhere in the
image, so the fill is not the smooth patch an edit detector flags), ``fsr_fast`` / ``fsr_best`` /
``shiftmap`` (OpenCV contrib's ``cv2.xphoto.inpaint``: frequency-selective reconstruction and
shift-map exemplar inpainting, offline, no weights), ``exemplar`` (transplant from the source
whose surrounding ring best matches the region's, of 64 random candidates), ``transplant`` (tissue from elsewhere in the
image, Poisson-blended with ``cv2.seamlessClone``), ``graft`` (transplant with the source
matched by its ring's structure, an exact membrane blend and the ring's noise level:
``medscope.views.graft``), ``lama`` (simple-lama-inpainting's
TorchScript model from ``LAMA_MODEL``) and ``sd`` (diffusers Stable Diffusion inpainting from
a local model directory). Model-holding tools load once per instance, so a Ray actor that
holds one loads it once.

References: ``telea``: A. Telea, "An image inpainting technique based on the fast marching
method", J. Graphics Tools 9(1), 2004. ``ns``: M. Bertalmio, A. L. Bertozzi, G. Sapiro,
"Navier-Stokes, fluid dynamics, and image and video inpainting", CVPR 2001. ``fsr_*``: J. Seiler
et al., "Resampling images to a regular grid from a non-regular subset of pixel positions using
frequency selective reconstruction", IEEE Trans. Image Process. 24(11), 2015. ``shiftmap``: K. He,
J. Sun, "Statistics of patch offsets for image completion", ECCV 2012. ``transplant``: P. Pérez,
M. Gangnet, A. Blake, "Poisson image editing", SIGGRAPH 2003. ``lama``: R. Suvorov et al.,
"Resolution-robust large mask inpainting with Fourier convolutions", WACV 2022. ``sd``:
R. Rombach et al., "High-resolution image synthesis with latent diffusion models", CVPR 2022.
"""

from __future__ import annotations

import os
from typing import Protocol

import cv2
import numpy as np

from medscope.errors import MedScopeError
from medscope.views import geometry

TOOLS = ("telea", "ns", "texture", "fsr_fast", "fsr_best", "shiftmap", "exemplar", "transplant", "graft", "lama", "sd")


class Eraser(Protocol):
    name: str

    def fill(self, image: np.ndarray, region: np.ndarray, rng: np.random.Generator, avoid: np.ndarray | None = None) -> np.ndarray:
        """Return ``image`` with ``region`` filled; ``avoid`` marks pixels not to copy from."""


def composite(original: np.ndarray, filled: np.ndarray, region: np.ndarray) -> np.ndarray:
    """``filled`` inside ``region``, ``original`` everywhere else.

    Parameters
    ----------
    original : numpy.ndarray
        The input image, shape (h, w) or (h, w, c).
    filled : numpy.ndarray
        An image of the same shape.
    region : numpy.ndarray
        Boolean mask, shape (h, w).

    Returns
    -------
    numpy.ndarray
        A new image: ``filled`` on ``region``, ``original`` elsewhere.
    """
    out = original.copy()
    out[region] = filled[region]
    return out


class OpenCVInpaint:
    """Telea (fast marching) or Navier–Stokes inpainting, ``cv2.inpaint``."""

    def __init__(self, method: str = "telea", radius: float = 3.0):
        self.name = method
        self.flag = cv2.INPAINT_TELEA if method == "telea" else cv2.INPAINT_NS
        self.radius = radius

    def fill(self, image, region, rng, avoid=None):
        filled = cv2.inpaint(image, region.astype(np.uint8) * 255, self.radius, self.flag)
        return composite(image, filled, region)


class XPhotoInpaint:
    """OpenCV contrib's exemplar / frequency-selective inpainting, ``cv2.xphoto.inpaint``.

    ``fsr_best`` / ``fsr_fast``: frequency-selective reconstruction (a sparse model of each block
    in the Fourier domain, fitted to the known pixels around it), which continues texture and
    noise into the region instead of the smooth fill of Telea; ``shiftmap``: exemplar-based, the
    region pieced together from shifted copies of the image. No weights; CPU only. Needs
    ``opencv-contrib-python-headless`` (cv2.xphoto). The fill is computed on a crop of the
    region's box with ``margin_px`` of context on each side (the methods read the pixels near
    the hole; the whole image would only cost time).
    """

    FLAGS = {"fsr_best": "INPAINT_FSR_BEST", "fsr_fast": "INPAINT_FSR_FAST", "shiftmap": "INPAINT_SHIFTMAP"}

    def __init__(self, method: str = "fsr_fast", margin_px: int = 24):
        xphoto = getattr(cv2, "xphoto", None)
        if xphoto is None:
            raise MedScopeError(f"the {method} tool needs OpenCV's contrib module (cv2.xphoto): install "
                                "opencv-contrib-python-headless (cluster/setup-env.sh does)")
        self.name, self.flag, self.margin = method, getattr(xphoto, self.FLAGS[method]), margin_px

    def fill(self, image, region, rng, avoid=None):
        h, w = region.shape
        rows, cols = np.flatnonzero(region.any(1)), np.flatnonzero(region.any(0))
        r0, r1 = max(0, rows[0] - self.margin), min(h, rows[-1] + self.margin + 1)
        c0, c1 = max(0, cols[0] - self.margin), min(w, cols[-1] + self.margin + 1)
        crop = np.ascontiguousarray(image[r0:r1, c0:c1])
        hole = region[r0:r1, c0:c1]
        gray = crop.ndim == 3 and bool((crop[:, :, 0] == crop[:, :, 1]).all() and (crop[:, :, 1] == crop[:, :, 2]).all())
        src = np.ascontiguousarray(crop[:, :, 0]) if gray else crop
        dst = np.zeros_like(src)
        # xphoto's mask marks the *known* pixels (non-zero), the reverse of cv2.inpaint's
        cv2.xphoto.inpaint(src, (~hole).astype(np.uint8) * 255, dst, self.flag)
        if gray:
            dst = np.repeat(dst[:, :, None], 3, axis=2)
        filled = image.copy()
        filled[r0:r1, c0:c1] = dst
        return composite(image, filled, region)


def best_matching_source(img: np.ndarray, region: np.ndarray, offsets: np.ndarray, top_left: tuple[int, int],
                         rng: np.random.Generator, candidates: int = 64, ring_px: int = 6) -> tuple[int, int]:
    """The exemplar: of ``candidates`` random source positions (top-left corners, ``offsets``),
    the one whose surrounding ring best matches the region's ring (mean squared difference), so
    copied tissue continues what surrounds the region.

    Parameters
    ----------
    img : numpy.ndarray
        The image (any dtype; compared as float32), shape (h, w) or (h, w, c).
    region : numpy.ndarray
        Boolean mask of the region to fill, shape (h, w).
    offsets : numpy.ndarray
        Allowed source positions, shape (n, 2), as from ``geometry.valid_offsets``.
    top_left : tuple of int
        (row, col) of the region's box.
    rng : numpy.random.Generator
        Draws the candidates, without replacement.
    candidates : int, optional
        How many random positions to compare.
    ring_px : int, optional
        Width of the compared ring, in pixels.

    Returns
    -------
    tuple of int
        (row, col) of the best source box; the first candidate when none has 80% of its ring inside
        the image.
    """
    ring = geometry.dilate_mask(region, ring_px) & ~region
    rr, cc = np.nonzero(ring)
    h, w = region.shape
    pick = offsets[rng.choice(len(offsets), size=min(candidates, len(offsets)), replace=False)]
    target = img[rr, cc].astype(np.float32)
    best, best_cost = pick[0], np.inf
    for sr, sc in pick:
        r2, c2 = rr + (sr - top_left[0]), cc + (sc - top_left[1])
        ok = (r2 >= 0) & (r2 < h) & (c2 >= 0) & (c2 < w)
        if ok.mean() < 0.8:
            continue
        cost = float(np.mean((img[r2[ok], c2[ok]].astype(np.float32) - target[ok]) ** 2))
        if cost < best_cost:
            best, best_cost = (sr, sc), cost
    return best


class TextureFill:
    """Structure + texture synthesis without network weights.

    The region's structure (its low frequencies) comes from Telea inpainting, which matches the
    surrounding grey levels; its texture is the high-frequency residual (image minus a Gaussian
    blur of ``sigma``) of a same-shaped patch of tissue elsewhere in the image that overlaps
    neither the region nor ``avoid`` (the lesion). Smooth fills are what the §3.3 edit
    detector catches; this fill keeps the surroundings' noise and fine structure.
    """

    name = "texture"

    def __init__(self, sigma: float = 8.0, radius: float = 5.0, candidates: int = 64, ring_px: int = 6):
        self.sigma, self.radius, self.candidates, self.ring_px = sigma, radius, candidates, ring_px

    def _best_source(self, img, region, offsets, top_left, rng):
        return best_matching_source(img, region, offsets, top_left, rng, self.candidates, self.ring_px)

    def fill(self, image, region, rng, avoid=None):
        base = cv2.inpaint(image, region.astype(np.uint8) * 255, self.radius, cv2.INPAINT_TELEA).astype(np.float32)
        img = image.astype(np.float32)
        residual = img - cv2.GaussianBlur(img, (0, 0), self.sigma)
        forbidden = geometry.touch_zone(region, 3)
        if avoid is not None:
            forbidden |= geometry.touch_zone(avoid, 3)
        shape, (r0, c0) = geometry.crop_to_shape(region)
        offsets = geometry.valid_offsets(shape, geometry.foreground_mask(image) & ~forbidden)
        if len(offsets) == 0:
            offsets = geometry.valid_offsets(shape, ~forbidden)
        if len(offsets) == 0:
            raise MedScopeError("texture: no source tissue of the region's size")
        sr, sc = self._best_source(img, region, offsets, (r0, c0), rng)
        h, w = region.shape
        warp = np.float32([[1, 0, c0 - sc], [0, 1, r0 - sr]])
        moved = cv2.warpAffine(residual, warp, (w, h), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REFLECT)
        if moved.ndim == 2 and base.ndim == 3:
            moved = moved[:, :, None]
        out = np.clip(base + moved.reshape(base.shape) + 0.5, 0, 255).astype(np.uint8)
        return composite(image, out, region)


class Transplant:
    """Tissue from elsewhere in the same image, Poisson-blended (counterfactual paper §3.2, ref. [20]).

    The source is the region translated to a random position on tissue that overlaps
    neither the region nor ``avoid`` (the lesion), so lesion tissue is never copied.
    """

    name = "transplant"

    def __init__(self, candidates: int = 0, name: str = "transplant"):
        # candidates 0: a random source (the paper's tool); > 0: the best ring match of that many
        # random sources (``exemplar``), so the blended tissue continues its surroundings
        self.candidates, self.name = candidates, name

    def fill(self, image, region, rng, avoid=None):
        h, w = region.shape
        forbidden = geometry.touch_zone(region, 3)
        if avoid is not None:
            forbidden |= geometry.touch_zone(avoid, 3)
        grown = geometry.dilate_mask(region, 2)  # a margin so the blend boundary lies outside the region
        shape, (r0, c0) = geometry.crop_to_shape(grown)
        allowed = geometry.foreground_mask(image) & ~forbidden
        offsets = geometry.valid_offsets(shape, allowed)
        if len(offsets) == 0:
            # no clean tissue big enough: fall back to any non-forbidden area of the image
            offsets = geometry.valid_offsets(shape, ~forbidden)
        if len(offsets) == 0:
            raise MedScopeError("transplant: no source tissue of the region's size")
        img = image.astype(np.float32)
        sr, sc = (best_matching_source(img, grown, offsets, (r0, c0), rng, self.candidates) if self.candidates
                  else offsets[int(rng.integers(len(offsets)))])
        moved = poisson_move(image, image, grown, (r0 - sr, c0 - sc))
        return composite(image, moved, region)


def poisson_move(src: np.ndarray, dst: np.ndarray, dst_region: np.ndarray, shift: tuple[int, int]) -> np.ndarray:
    """``dst`` with the pixels of ``src`` that lie at ``dst_region`` minus ``shift`` (rows, cols)
    moved onto ``dst_region`` and Poisson-blended (``cv2.seamlessClone``, normal clone).

    Where the region's box reaches the image border, where seamlessClone cannot work, the
    moved pixels are pasted unblended.

    Parameters
    ----------
    src : numpy.ndarray
        Image the pixels come from, uint8, shape (h, w, 3).
    dst : numpy.ndarray
        Image they go into, same shape.
    dst_region : numpy.ndarray
        Boolean mask of the destination, shape (h, w).
    shift : tuple of int
        (rows, cols) from source to destination.

    Returns
    -------
    numpy.ndarray
        A new image: ``dst`` with the moved pixels on ``dst_region`` only.
    """
    h, w = dst_region.shape
    dr, dc = shift
    warp = np.float32([[1, 0, dc], [0, 1, dr]])
    source = cv2.warpAffine(src, warp, (w, h), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REFLECT)
    x, y, bw, bh = cv2.boundingRect(dst_region.astype(np.uint8))
    if x < 1 or y < 1 or x + bw > w - 1 or y + bh > h - 1:
        return composite(dst, source, dst_region)
    blend_mask = dst_region.astype(np.uint8) * 255
    center = (x + bw // 2, y + bh // 2)
    cloned = cv2.seamlessClone(source, dst, blend_mask, center, cv2.NORMAL_CLONE)
    return composite(dst, cloned, dst_region)


class Lama:
    """LaMa through simple-lama-inpainting's code path; TorchScript weights from ``LAMA_MODEL``."""

    name = "lama"

    def __init__(self, model_path: str | None = None, device: str | None = None):
        path = model_path or os.environ.get("LAMA_MODEL")
        if not path:
            raise MedScopeError(
                "the lama tool needs its TorchScript weights: set LAMA_MODEL to the path of big-lama.pt"
            )
        if not os.path.exists(path):
            raise MedScopeError(f"LAMA_MODEL points to {path}, which does not exist")
        import torch
        from simple_lama_inpainting import SimpleLama

        dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        old = os.environ.get("LAMA_MODEL")
        os.environ["LAMA_MODEL"] = path  # SimpleLama reads the variable, never downloads with it set
        try:
            self.model = SimpleLama(device=dev)
        finally:
            if old is None:
                os.environ.pop("LAMA_MODEL", None)
            else:
                os.environ["LAMA_MODEL"] = old

    def fill(self, image, region, rng, avoid=None):
        out = np.asarray(self.model(image, region.astype(np.uint8) * 255))
        h, w = region.shape
        return composite(image, out[:h, :w], region)  # LaMa pads to a multiple of 8


class StableDiffusion:
    """Stable Diffusion inpainting (diffusers) from a local model directory, no downloads."""

    name = "sd"

    def __init__(self, model_dir: str | None = None, steps: int = 25, size: int = 512, device: str | None = None):
        model_dir = model_dir or os.environ.get("SD_INPAINT_MODEL")
        if not model_dir:
            raise MedScopeError("the sd tool needs a local model directory: set sd_model_dir in the recipe or SD_INPAINT_MODEL")
        if not os.path.isdir(model_dir):
            raise MedScopeError(f"sd model directory {model_dir} does not exist")
        import torch
        from diffusers import StableDiffusionInpaintPipeline

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.float16 if self.device == "cuda" else torch.float32
        self.pipe = StableDiffusionInpaintPipeline.from_pretrained(
            model_dir, dtype=dtype, safety_checker=None, requires_safety_checker=False, local_files_only=True
        ).to(self.device)
        self.pipe.set_progress_bar_config(disable=True)
        self.steps, self.size = steps, size

    def fill(self, image, region, rng, avoid=None):
        import torch
        from PIL import Image

        h, w = region.shape
        s = self.size
        img = Image.fromarray(cv2.resize(image, (s, s), interpolation=cv2.INTER_AREA))
        msk = Image.fromarray(cv2.resize(region.astype(np.uint8) * 255, (s, s), interpolation=cv2.INTER_NEAREST))
        gen = torch.Generator(device="cpu").manual_seed(int(rng.integers(2**31)))
        result = self.pipe(
            prompt="", image=img, mask_image=msk, height=s, width=s,
            num_inference_steps=self.steps, generator=gen, output_type="np",
        ).images[0]
        out = np.clip(np.asarray(result) * 255.0 + 0.5, 0, 255).astype(np.uint8)
        out = cv2.resize(out, (w, h), interpolation=cv2.INTER_CUBIC)
        return composite(image, out, region)


def check_tool(name: str, *, lama_model: str | None = None, sd_model_dir: str | None = None) -> None:
    """Raise the tool's MedScopeError (missing weights, unknown name) without loading a model,
    so a build fails on the driver with one line rather than inside a worker.

    Parameters
    ----------
    name : str
        The tool's name.
    lama_model : str or None, optional
        Path of LaMa's TorchScript weights; default: env ``LAMA_MODEL``.
    sd_model_dir : str or None, optional
        Local Stable Diffusion inpainting directory; default: env ``SD_INPAINT_MODEL``.

    Raises
    ------
    MedScopeError
        If the name is not in ``TOOLS``, an xphoto tool lacks ``cv2.xphoto``, or lama / sd lack their
        weights.
    """
    if name not in TOOLS:
        raise MedScopeError(f"unknown erasure tool {name!r}; choose from {', '.join(TOOLS)}")
    if name in XPhotoInpaint.FLAGS and getattr(cv2, "xphoto", None) is None:
        raise MedScopeError(f"the {name} tool needs OpenCV's contrib module (cv2.xphoto): install "
                            "opencv-contrib-python-headless (cluster/setup-env.sh does)")
    if name == "lama":
        path = lama_model or os.environ.get("LAMA_MODEL")
        if not path:
            raise MedScopeError("the lama tool needs its TorchScript weights: set LAMA_MODEL to the path of big-lama.pt")
        if not os.path.exists(path):
            raise MedScopeError(f"LAMA_MODEL points to {path}, which does not exist")
    if name == "sd":
        model_dir = sd_model_dir or os.environ.get("SD_INPAINT_MODEL")
        if not model_dir:
            raise MedScopeError("the sd tool needs a local model directory: set sd_model_dir in the recipe or SD_INPAINT_MODEL")
        if not os.path.isdir(model_dir):
            raise MedScopeError(f"sd model directory {model_dir} does not exist")


def make_eraser(name: str, *, lama_model: str | None = None, sd_model_dir: str | None = None, sd_steps: int = 25, sd_size: int = 512) -> Eraser:
    """The eraser called ``name`` (one of TOOLS); model-holding tools load their model here.

    Parameters
    ----------
    name : str
        One of ``TOOLS``.
    lama_model : str or None, optional
        Path of LaMa's TorchScript weights, for "lama" (default: env ``LAMA_MODEL``).
    sd_model_dir : str or None, optional
        Local Stable Diffusion inpainting directory, for "sd" (default: env ``SD_INPAINT_MODEL``).
    sd_steps : int, optional
        Diffusion steps, for "sd".
    sd_size : int, optional
        Side in pixels the image is resized to for "sd".

    Returns
    -------
    Eraser
        An object with ``name`` and ``fill(image, region, rng, avoid=None)``.

    Raises
    ------
    MedScopeError
        If the name is unknown, or the tool's dependencies or weights are missing.

    References
    ----------
    .. [1] Counterfactual paper, §3.2 and §5.4.
    """
    if name in ("telea", "ns"):
        return OpenCVInpaint(name)
    if name == "texture":
        return TextureFill()
    if name in XPhotoInpaint.FLAGS:
        return XPhotoInpaint(name)
    if name == "transplant":
        return Transplant()
    if name == "exemplar":
        return Transplant(candidates=64, name="exemplar")
    if name == "graft":
        from medscope.views.graft import Graft

        return Graft()
    if name == "lama":
        return Lama(lama_model)
    if name == "sd":
        return StableDiffusion(sd_model_dir, steps=sd_steps, size=sd_size)
    raise MedScopeError(f"unknown erasure tool {name!r}; choose from {', '.join(TOOLS)}")
