"""``medscope bench pair-distance``: where ``pairs check`` draws the line between one photograph
twice and two photographs of one subject with different findings (``manifest.photo_distance``
against ``NEAR_COPY_DISTANCE``), measured on the procedural drawings.

Genuine pairs: one subject (a seed), two different marks of its region (sign, look-alike or none,
the mark placed by another seed), at 128 and 256 px. Copies: each sign and look-alike photograph
re-encoded, resized and recoloured (``COPIES``), and two colour changes the distance does not
set aside (``NOT_SET_ASIDE``: a hue rotation is what a colour-only finding is). Prints one JSON
object: per kind its n, smallest and largest distance and the photographs they came from.
"""

from __future__ import annotations

import io
import json

import numpy as np

from medscope.images import encode_png
from medscope.protocols.paired_modality import draw
from medscope.protocols.paired_modality.manifest import NEAR_COPY_DISTANCE, photo_distance

PAIRS = {"skin": ("vesicles", "acne", "none"), "nail": ("cyanosis", "nail_polish", "none"),
         "face": ("ecchymosis", "port_wine", "none")}


def _encoded(image, fmt: str, **save) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **save)
    return buf.getvalue()


def _shift(image, offset):
    from PIL import Image

    return Image.fromarray(np.clip(np.asarray(image).astype(int) + np.array(offset), 0, 255).astype(np.uint8))


def _hue(image, steps: int):
    from PIL import Image

    hsv = np.asarray(image.convert("HSV")).copy()
    hsv[..., 0] = (hsv[..., 0].astype(int) + steps) % 256
    return Image.fromarray(hsv, "HSV").convert("RGB")


def copies(image) -> dict[str, bytes]:
    """The copies of one photograph the distance must set aside, by name (PNG or JPEG bytes).

    Parameters
    ----------
    image : PIL.Image.Image
        An RGB photograph.

    Returns
    -------
    dict of str to bytes
        JPEG q85 / q95, resized 0.5x / 1.5x, warm and cool tints, brightness +15 / +30 / x1.1 / -20,
        contrast 0.8, gamma 0.9, saturation x1.2, hue +8 degrees, and JPEG q85 then 0.5x then a tint.
    """
    from PIL import Image, ImageEnhance

    w, h = image.size
    png = lambda im: _encoded(im, "PNG")  # noqa: E731
    jpeg85 = Image.open(io.BytesIO(_encoded(image, "JPEG", quality=85))).convert("RGB")
    return {
        "jpeg q85": _encoded(image, "JPEG", quality=85), "jpeg q95": _encoded(image, "JPEG", quality=95),
        "resized 0.5x": png(image.resize((w // 2, h // 2), Image.LANCZOS)),
        "resized 1.5x": png(image.resize((w * 3 // 2, h * 3 // 2), Image.BICUBIC)),
        "warm tint": png(_shift(image, (25, 5, -20))), "cool tint": png(_shift(image, (-15, 0, 20))),
        "brightness +15": png(_shift(image, (15, 15, 15))), "brightness +30": png(_shift(image, (30, 30, 30))),
        "brightness -20": png(_shift(image, (-20, -20, -20))),
        "brightness x1.1": png(image.point(lambda v: min(255, int(v * 1.1)))),
        "contrast 0.8": png(ImageEnhance.Contrast(image).enhance(0.8)),
        "gamma 0.9": png(image.point(lambda v: int(255 * (v / 255) ** 0.9))),
        "saturation x1.2": png(ImageEnhance.Color(image).enhance(1.2)),
        "hue +8 degrees": png(_hue(image, 6)),
        "jpeg q85, 0.5x, warm tint": png(_shift(jpeg85.resize((w // 2, h // 2)), (25, 5, -20))),
    }


def not_set_aside(image) -> dict[str, bytes]:
    """Colour changes of a whole photograph the distance does not set aside, by name.

    Parameters
    ----------
    image : PIL.Image.Image
        An RGB photograph.

    Returns
    -------
    dict of str to bytes
        Hue +28 degrees and saturation x1.5, as PNG.
    """
    from PIL import ImageEnhance

    return {"hue +28 degrees": _encoded(_hue(image, 20), "PNG"),
            "saturation x1.5": _encoded(ImageEnhance.Color(image).enhance(1.5), "PNG")}


def measure(seeds: int = 12, copy_seeds: int = 3, sizes: tuple[int, ...] = (128, 256)) -> dict:
    """Distances of genuine pairs and of copies (see the module docstring).

    Parameters
    ----------
    seeds : int, optional
        Subjects per region and size for the genuine pairs (default 12).
    copy_seeds : int, optional
        Subjects per region and size whose sign and look-alike photographs are copied (default 3).
    sizes : tuple of int, optional
        Photograph sides in pixels (default 128 and 256).

    Returns
    -------
    dict
        ``threshold`` and, for ``genuine``, ``copies`` and ``not_set_aside``: ``n``, ``min``, ``max``
        (each with the photographs it came from), and ``on_wrong_side`` (genuine pairs at most the
        threshold, copies above it).
    """
    from PIL import Image

    rows: dict[str, list[tuple[float, str]]] = {"genuine": [], "copies": [], "not_set_aside": []}
    for size in sizes:
        for region, marks in PAIRS.items():
            for seed in range(seeds):
                for i, a in enumerate(marks):
                    for b in marks[i + 1:]:
                        one = encode_png(draw.photo(region, a, seed, size))
                        other = encode_png(draw.photo(region, b, seed, size, mark_seed=seed + 1000))
                        rows["genuine"].append((photo_distance(one, other), f"{region} {a} / {b}, seed {seed}, {size} px"))
            for seed in range(copy_seeds):
                for mark in marks[:2]:
                    original = draw.photo(region, mark, seed, size)
                    image, png = Image.fromarray(original), encode_png(original)
                    for kind, made in (("copies", copies), ("not_set_aside", not_set_aside)):
                        for how, data in made(image).items():
                            rows[kind].append((photo_distance(png, data), f"{region} {mark} {how}, seed {seed}, {size} px"))
    out: dict = {"threshold": NEAR_COPY_DISTANCE}
    for kind, got in rows.items():
        low, high = min(got), max(got)
        wrong = (sum(d <= NEAR_COPY_DISTANCE for d, _ in got) if kind == "genuine"
                 else sum(d > NEAR_COPY_DISTANCE for d, _ in got))
        out[kind] = {"n": len(got), "min": [round(low[0], 1), low[1]], "max": [round(high[0], 1), high[1]],
                     "on_wrong_side": wrong}
    return out


def bench(args) -> None:
    """``medscope bench pair-distance [--quick]``: print :func:`measure`'s JSON (quick: 2 seeds, 1 copied).

    Parameters
    ----------
    args : BenchConfig
        ``quick`` picks the smaller run.

    Returns
    -------
    None
    """
    result = measure(2, 1) if args.quick else measure()
    print(json.dumps(result, indent=2))
