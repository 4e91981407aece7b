"""The paired-modality manifest: conditions with one radiograph and two photographs (paired-modality paper §3).

A manifest is a YAML file (or a folder holding ``manifest.yaml``)::

    name: my-pairs
    conditions:
      - condition: varicella pneumonia
        body_region: upper back skin
        radiograph: radiographs/varicella.png        # any URI; relative to the manifest
        radiograph_findings: diffuse nodular opacities   # optional, for the reader of the report
        matched:    {image: photos/varicella_m.png, caption: "...",
                     findings: [{name: crusted vesicles, terms: [vesicle, crusted]}]}
        mismatched: {image: photos/varicella_x.png, caption: "...", findings: []}
        provenance: {...}                            # optional: prompts, seeds, review history

``findings`` are the photograph's clinically significant findings (a name, or a name with
synonym ``terms``); an empty list means none. Bad entries never stop a read; each becomes a
rejects row with a countable reason and every good photograph still arrives:

- ``missing file`` / ``unreadable image``: of the radiograph (the whole condition goes: no
  paired setting without it) or of one photograph (that photograph goes, the other stays);
- ``photo without caption``: that photograph goes (the judge has nothing to compare with);
- ``duplicate condition``: a condition name seen before (the first one is kept);
- ``item id collision``: another name with the same item ids ("varicella pneumonia" and
  "Varicella-Pneumonia" both make ``varicella-pneumonia:*``; the first is kept);
- ``identical photos``: matched and mismatched photographs the same or nearly so (a JPEG
  re-encode, a resize or a global colour shift of one another: :func:`photo_distance` at most
  ``NEAR_COPY_DISTANCE``): both go, no finding differs;
- ``subject differs``: the two photographs' provenance names different subjects (a generator
  seed or base image): both go, the pair is not "the same person, other finding";
- ``malformed entry``: fields missing or of the wrong type.

Images are sent as PNG at native size when the long side is at most 1,568 px, else downscaled
to it (paired-modality paper Appendix A).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

import pydantic

from medscope import config as cfgmod
from medscope.io import guarded, records, safe_text, storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.images import decode_png, encode_png, resize_long_side
from medscope.protocols.paired_modality import tables

MAX_SIDE = 1568  # the paired-modality paper Appendix A
PHOTO_TYPES = ("matched", "mismatched")
# addition: a pair whose photo_distance is at most this (RGB levels, 0-255) is one picture twice.
# Measured on procedural pairs and copies (docs/paired-modality.md): the closest of 216 genuine
# pairs (a few faint acne papules against none) is 19.4, the farthest of 540 copies (JPEG q85 / q95,
# resizes 0.5x / 1.5x, tints, brightness, contrast, gamma, saturation x1.2, hue 8 degrees) 17.2.
NEAR_COPY_DISTANCE = 18.0
# addition: the grid both photographs are compared on, the blur that evens out JPEG blocks and
# resampling, and the block whose mean residual must stand out for a local finding to count
DISTANCE_SIDE = 128
DISTANCE_BLUR_PX = 1.0
DISTANCE_BLOCK_PX = 4
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Finding(StrictModel):
    name: str
    terms: list[str] = []  # synonyms a reader may use; the name itself always counts

    def all_terms(self) -> list[str]:
        return list(dict.fromkeys([self.name.lower(), *(t.lower() for t in self.terms)]))


class Photo(StrictModel):
    image: str
    caption: str | None = None
    findings: list[Finding | str] = []
    provenance: dict = {}

    def finding_list(self) -> list[Finding]:
        return [f if isinstance(f, Finding) else Finding(name=f) for f in self.findings]


class ConditionEntry(StrictModel):
    condition: str
    body_region: str = ""
    radiograph: str
    radiograph_findings: str = ""
    matched: Photo
    mismatched: Photo
    private: bool = False
    endpoint_allowlist: list[str] = []
    provenance: dict = {}


@dataclass(frozen=True)
class PairPhoto:
    """One photograph of a condition with everything an item needs."""

    condition: str
    photo_type: str  # matched | mismatched
    body_region: str
    caption: str
    findings: tuple[Finding, ...]
    photo_png: bytes
    radiograph_png: bytes
    radiograph_findings: str = ""
    private: bool = False
    endpoint_allowlist: tuple[str, ...] = ()
    provenance: dict = field(default_factory=dict)

    @property
    def item_id(self) -> str:
        return f"{slug(self.condition)}:{self.photo_type}"


def slug(text: str) -> str:
    """The item-id stem of a condition name: lower case, each run of other characters a hyphen.

    Parameters
    ----------
    text : str
        The condition name.

    Returns
    -------
    str
        The slug, hyphens trimmed; 'condition' when nothing is left.
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "condition"


def manifest_uri(uri: str) -> str:
    """The manifest file of ``uri`` (the file itself, or ``manifest.yaml`` inside a folder).

    Parameters
    ----------
    uri : str
        The manifest file, or a folder holding ``manifest.yaml``.

    Returns
    -------
    str
        The manifest file's URI.
    """
    if storage.is_dir(uri):
        return storage.join(uri, tables.MANIFEST)
    return uri


def fit_long_side(data: bytes, max_side: int = MAX_SIDE) -> bytes:
    """PNG bytes of an image at native size when its long side is at most ``max_side``, else
    downscaled (area interpolation) so the long side is ``max_side`` (paired-modality paper Appendix A).
    PNG input within the limit is passed through byte for byte; other formats are re-encoded.

    Parameters
    ----------
    data : bytes
        The encoded image (any format ``medscope.images.decode_png`` reads).
    max_side : int, optional
        Longest side allowed in pixels (default 1568).

    Returns
    -------
    bytes
        PNG bytes; an image whose three channels are equal is written as single-channel gray.

    Raises
    ------
    MedScopeError
        When the image cannot be decoded.

    References
    ----------
    .. [1] paired-modality paper, Appendix A.
    """
    image = decode_png(data)  # raises MedScopeError when unreadable
    if max(image.shape[:2]) <= max_side and data.startswith(PNG_SIGNATURE):
        return data
    gray = image.ndim == 3 and (image[..., 0] == image[..., 1]).all() and (image[..., 1] == image[..., 2]).all()
    out = resize_long_side(image, max_side)
    return encode_png(out[..., 0] if gray else out)


def _resolve(base: str, ref: str) -> str:
    if "://" in ref or ref.startswith("/"):
        return ref
    return storage.join(base, ref)


def _load_image(base: str, ref: str, max_side: int) -> tuple[bytes | None, str | None, str]:
    if not ("://" in ref or ref.startswith("/")):  # a URI or absolute path is named on purpose (docs)
        # a relative path is the set's own file: one that climbs out (../) or is a symlink resolving
        # out of the set folder would send a file from elsewhere to a model as this pair's (issue 51)
        try:
            guarded.require_inside(base, safe_text.inside_root(ref))
        except (safe_text.BadText, guarded.InputRejected):
            return None, "path leaves the set", (f"{ref}: a relative path must stay inside the set folder {base} "
                                                 "(symlinks resolved); copy the file into the set, or name it by "
                                                 "its full path or URI")
    uri = _resolve(base, ref)
    if not storage.exists(uri):
        return None, "missing file", uri
    try:
        return fit_long_side(storage.read_bytes(uri), max_side), None, uri
    except MedScopeError as err:
        return None, "unreadable image", f"{uri}: {err}"


def read_manifest(uri: str, max_side: int = MAX_SIDE, ids: Collection[str] | None = None,
                  keep_images: bool = True, near_copy_distance: float = NEAR_COPY_DISTANCE
                  ) -> tuple[list[PairPhoto], list[dict]]:
    """(good photographs, rejects rows) of a manifest (see the module docstring).

    ``ids``: only the photographs with these item ids (their images alone are read).
    ``keep_images=False``: every image is still read and checked (an unreadable one rejects its
    photograph, as always) but not kept: ``photo_png`` / ``radiograph_png`` are empty, so a
    sweep's driver holds no pixels.

    Parameters
    ----------
    uri : str
        The manifest file or its folder (:func:`manifest_uri`); image paths are relative to the file's folder.
    max_side : int, optional
        Longest image side in pixels (default 1568; :func:`fit_long_side`).
    ids : collection of str or None, optional
        Item ids (``<slug>:matched`` / ``<slug>:mismatched``) to keep; None for every photograph.
    keep_images : bool, optional
        Whether the PairPhotos hold the PNG bytes (default True).
    near_copy_distance : float, optional
        :func:`photo_distance` at or below which a pair is one picture twice (default
        ``NEAR_COPY_DISTANCE``; a negative value turns the check off).

    Returns
    -------
    photos : list of PairPhoto
        The good photographs, in manifest order (matched before mismatched); provenance is the
        condition's updated with the photograph's.
    rejects : list of dict
        rejects rows (table 'pairs', source the manifest file, stage 'manifest'), one per rejected item,
        with its reason and detail.

    Raises
    ------
    MedScopeError
        When the file is not a YAML mapping or has no list under ``conditions``.

    References
    ----------
    .. [1] paired-modality paper, §3, Appendix A.
    """
    path = manifest_uri(uri)
    data = cfgmod.load_yaml(path)
    base = path.rsplit("/", 1)[0] if "/" in path else "."
    entries = data.get("conditions")
    if not isinstance(entries, list):
        raise MedScopeError(f"{path}: expected a list under 'conditions'")
    photos: list[PairPhoto] = []
    rejects: list[dict] = []
    seen: dict[str, str] = {}  # item-id stem -> the condition name that took it

    def reject(item: str, reason: str, detail: str) -> None:
        rejects.append(records.reject_row("pairs", path, item, "manifest", reason, detail))

    for i, raw in enumerate(entries):
        label = str(raw.get("condition", f"entry {i}")) if isinstance(raw, dict) else f"entry {i}"
        try:
            entry = ConditionEntry.model_validate(raw)
        except pydantic.ValidationError as err:
            reject(label, "malformed entry", "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()))
            continue
        key = slug(entry.condition)  # the item ids' stem: two names with one stem would collide
        if key in seen:
            same = seen[key].strip().lower() == entry.condition.strip().lower()
            reject(entry.condition, "duplicate condition" if same else "item id collision",
                   f"entry {i} repeats a condition listed before" if same else
                   f"entry {i}: {entry.condition!r} and {seen[key]!r} both make item ids {key}:*; rename one")
            continue
        seen[key] = entry.condition
        if ids is not None and not any(f"{key}:{t}" in ids for t in PHOTO_TYPES):
            continue
        radiograph, why, where = _load_image(base, entry.radiograph, max_side)
        if radiograph is None:
            reject(entry.condition, why, f"radiograph {where}")
            continue
        loaded: dict[str, bytes] = {}
        for photo_type in PHOTO_TYPES:
            spec: Photo = getattr(entry, photo_type)
            item = f"{key}:{photo_type}"
            if not (spec.caption or "").strip():
                reject(item, "photo without caption", f"{photo_type} photograph {spec.image}")
                continue
            png, why, where = _load_image(base, spec.image, max_side)
            if png is None:
                reject(item, why, f"{photo_type} photograph {where}")
                continue
            loaded[photo_type] = png
        refusal = pair_refusal(entry, loaded, near_copy_distance)
        if refusal:
            for photo_type in loaded:
                reject(f"{key}:{photo_type}", *refusal)
            continue
        for photo_type, png in loaded.items():
            spec = getattr(entry, photo_type)
            if ids is not None and f"{key}:{photo_type}" not in ids:
                continue
            photos.append(PairPhoto(
                condition=entry.condition, photo_type=photo_type, body_region=entry.body_region,
                caption=spec.caption.strip(), findings=tuple(spec.finding_list()),
                photo_png=png if keep_images else b"", radiograph_png=radiograph if keep_images else b"",
                radiograph_findings=entry.radiograph_findings,
                private=entry.private, endpoint_allowlist=tuple(entry.endpoint_allowlist),
                provenance={**entry.provenance, **spec.provenance},
            ))
    return photos, rejects


def photo_distance(png_a: bytes, png_b: bytes) -> float:
    """How far two photographs differ where they differ most, once re-encoding, resizing and
    global colour shifts are set aside: 0 for one picture twice, tens of RGB levels for a finding
    drawn on one of them.

    Both go to one ``DISTANCE_SIDE`` square grid (box filter), are blurred by
    ``DISTANCE_BLUR_PX`` (JPEG blocks and resampling ripple even out), and each is mapped onto the
    other by a per-channel gain and offset fitted by least squares (a tint, a white balance, a
    brightness or contrast change leaves nothing). The residual's colour distance (Euclidean over
    R, G, B) is averaged over ``DISTANCE_BLOCK_PX`` square blocks; the distance is the largest
    block mean, the larger of the two mapping directions. A finding is local, so some block keeps
    it; a copy's residual is small everywhere. A whole-image hue rotation is a change of colour
    the finding itself may be (cyanosis against purple polish), so it is not set aside.

    Parameters
    ----------
    png_a : bytes
        One photograph (any format PIL reads).
    png_b : bytes
        The other photograph.

    Returns
    -------
    float
        The largest block-mean residual in RGB levels (0 to about 441).
    """
    import io

    import numpy as np
    from PIL import Image, ImageFilter

    images = [Image.open(io.BytesIO(x)).convert("RGB") for x in (png_a, png_b)]
    side = min(DISTANCE_SIDE, *(n for im in images for n in im.size))
    blur = ImageFilter.GaussianBlur(DISTANCE_BLUR_PX * side / DISTANCE_SIDE)
    a, b = (np.asarray(im.resize((side, side), Image.BOX).filter(blur), dtype=np.float64) for im in images)
    block = max(1, DISTANCE_BLOCK_PX * side // DISTANCE_SIDE)
    n = side // block

    def worst_block(source: np.ndarray, target: np.ndarray) -> float:
        residual = np.empty_like(target)
        for c in range(3):
            x, y = source[..., c], target[..., c]
            spread = x.var()
            gain = ((x - x.mean()) * (y - y.mean())).mean() / spread if spread > 1e-9 else 0.0
            residual[..., c] = y - (y.mean() + gain * (x - x.mean()))
        dist = np.sqrt((residual ** 2).sum(axis=2))[:n * block, :n * block]
        return float(dist.reshape(n, block, n, block).mean(axis=(1, 3)).max())

    return max(worst_block(b, a), worst_block(a, b))


def pair_refusal(entry: ConditionEntry, loaded: dict[str, bytes], near_copy_distance: float) -> tuple[str, str] | None:
    """(reason, detail) when a condition's two photographs are no valid pair (paired-modality paper §3.3: the
    same person with a different finding): the same picture or nearly so (:func:`photo_distance`),
    or two different subjects by their provenance (the subject identity the generator recorded:
    one seed or one base image). None when the pair stands.

    Parameters
    ----------
    entry : ConditionEntry
        The condition, with each photograph's provenance (``subject``).
    loaded : dict of str to bytes
        The photographs read, by photo type; a pair needs both.
    near_copy_distance : float
        :func:`photo_distance` at or below which the photographs are one picture twice.

    Returns
    -------
    tuple of (str, str) or None
        ('subject differs' or 'identical photos', detail); None when the pair stands or fewer than two
        photographs were read.

    References
    ----------
    .. [1] paired-modality paper, §3.3.
    """
    if len(loaded) < 2:
        return None
    subjects = [getattr(entry, t).provenance.get("subject") for t in PHOTO_TYPES]
    if all(subjects) and subjects[0] != subjects[1]:
        return "subject differs", f"matched photograph shows subject {subjects[0]}, mismatched {subjects[1]}"
    distance = photo_distance(loaded["matched"], loaded["mismatched"])
    if distance <= near_copy_distance:
        return ("identical photos", f"matched and mismatched photographs differ by at most {distance:.1f} RGB levels "
                f"anywhere once re-encoding, size and colour balance are set aside (at most {near_copy_distance:g} "
                "refused): no finding differs")
    return None


def vocabulary(photos: list[PairPhoto]) -> list[str]:
    """Every significant-finding term of a manifest: what a rule judge counts as an abnormality.

    Parameters
    ----------
    photos : list of PairPhoto
        The manifest's photographs.

    Returns
    -------
    list of str
        The distinct lower-case finding terms (names and synonyms), sorted.
    """
    return sorted({t for p in photos for f in p.findings for t in f.all_terms()})
