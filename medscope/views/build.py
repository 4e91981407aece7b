"""All views of one case (counterfactual paper, §3.2; §3.7 C1), with the per-view QC of §3.3.

Every case gets the evaluation kinds (original, target and random removal, degraded; a
lesion-free case its natural negative). The training-only kinds (``unmatched_control`` for C1's
arm, ``insertion``) are built on the train split alone (``medscope.analysis.testsets``).

``build_case_views`` is the unit of work a Ray actor maps: one case row in, its view rows and
reject rows out. Every random draw comes from ``rng_for(recipe.seed, case_id, view_kind, ...)``,
so a case's views are the same on any worker. Cross-case QC (edit detector, near-copies,
splits, adversarial filtering) runs afterwards over the whole table (``medscope.qc``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from medscope.io import records
from medscope.images import decode_mask, decode_png, encode_png
from medscope.qc.contrast import contrast_passes, ring_contrast
from medscope.seeding import rng_for
from medscope.views import geometry
from medscope.views.degrade import degrade
from medscope.views.recipe import Recipe
from medscope.views.tools import Eraser, poisson_move

EXPECTED = {
    "original": "present",
    "target_removal": "absent",
    "random_removal": "present",
    "unmatched_control": "present",
    "degraded": "clarify",
    "natural_negative": "absent",
    "insertion": "present",
}
CASE_FIELDS = (
    "case_id", "source", "imaging_type", "patient_id", "group_id", "split", "finding", "question",
    "question_kind", "critical", "lesion_area_frac", "lesion_bbox", "width", "height", "private",
    "endpoint_allowlist",
)


@dataclass(frozen=True)
class CaseContext:
    """What a case's views need from other cases, fixed by the driver before the map."""

    split: str | None = None
    group_id: str | None = None
    recipient_id: str | None = None  # lesion-free training image of the same type, for insertion
    recipient_image: bytes | None = None
    donor_image: bytes | None = None  # an image of another imaging type, for "other_type"


def view_id(case_id: str, kind: str, tool: str) -> str:
    """The id of one view: ``"<case_id>/<kind>/<tool>"``.

    Parameters
    ----------
    case_id : str
        The case's id.
    kind : str
        The view kind, a key of ``EXPECTED`` ("original", "target_removal", ...).
    tool : str
        The filling tool's name, or "none" / "transplant".

    Returns
    -------
    str
        The view id.
    """
    return f"{case_id}/{kind}/{tool}"


def _encode(image: np.ndarray, gray: bool) -> bytes:
    return encode_png(image[:, :, 0] if gray else image)


def _is_gray(image: np.ndarray) -> bool:
    return bool((image[:, :, 0] == image[:, :, 1]).all() and (image[:, :, 1] == image[:, :, 2]).all())


def check_case(image: np.ndarray, mask: np.ndarray | None, recipe: Recipe) -> tuple[str, str] | None:
    """(reason, detail) why a case cannot give views, or None. Reasons are short labels.

    Parameters
    ----------
    image : numpy.ndarray
        The case's RGB image, shape (h, w, 3).
    mask : numpy.ndarray or None
        Boolean lesion mask, shape (h, w); None for a lesion-free case (only the foreground is checked).
    recipe : Recipe
        Supplies ``min_lesion_px`` and ``max_lesion_frac``.

    Returns
    -------
    tuple of (str, str) or None
        (reason, detail): reason one of "no_foreground", "mask_size_mismatch", "empty_mask",
        "lesion_too_small", "lesion_too_large", "mask_touches_border"; None when the case can give views.
    """
    h, w = image.shape[:2]
    if not geometry.foreground_mask(image).any():
        return "no_foreground", "no pixel brighter than the background threshold"
    if mask is None:
        return None
    if mask.shape != (h, w):
        return "mask_size_mismatch", f"mask {mask.shape[1]}x{mask.shape[0]}, image {w}x{h}"
    area = int(mask.sum())
    if area == 0:
        return "empty_mask", "a lesion case whose mask has no pixel"
    if area < recipe.min_lesion_px:
        return "lesion_too_small", f"{area} px < {recipe.min_lesion_px} px"
    if area > recipe.max_lesion_frac * h * w:
        return "lesion_too_large", f"{area / (h * w):.1%} of the image > {recipe.max_lesion_frac:.0%}"
    # addition: the paper excludes by size only; a border lesion has no full §3.3 ring
    if mask[0, :].any() or mask[-1, :].any() or mask[:, 0].any() or mask[:, -1].any():
        return "mask_touches_border", "the ring around the lesion and the erasure context are cut off"
    return None


def build_case_views(case: dict, recipe: Recipe, erasers: dict[str, Eraser], ctx: CaseContext,
                     rhash: str) -> tuple[list[dict], list[dict]]:
    """(views rows, rejects rows) of one case. Never raises on bad input: it becomes a reason.

    Parameters
    ----------
    case : dict
        One cases row: ``case_id``, ``source``, ``image`` (PNG bytes), optional ``mask`` (PNG bytes) and
        ``has_lesion``, and the ``CASE_FIELDS`` copied into every view.
    recipe : Recipe
        The views recipe (seed, tools, QC thresholds, degradations, training-only kinds).
    erasers : dict of str to Eraser
        Filling tools by name; must hold every tool the recipe can pick.
    ctx : CaseContext
        What the case needs from other cases (split, group, insertion recipient, other-type donor).
    rhash : str
        The recipe's hash, written to every view row.

    Returns
    -------
    views : list of dict
        View rows, failed ones included with ``passed`` False and a ``reject_reason``.
    rejects : list of dict
        Rejects rows (``records.reject_row``) for the case or its failed views.

    References
    ----------
    .. [1] Counterfactual paper, §3.2, §3.3 and §3.7 (C1).
    """
    cid, source = case["case_id"], case["source"]
    rejects: list[dict] = []

    def reject(reason: str, detail: str = "", stage: str = "view", item: str | None = None) -> None:
        rejects.append(records.reject_row("views", source, item or cid, stage, reason, detail))

    try:
        image = decode_png(case["image"])
    except Exception as err:  # corrupt bytes of any kind: a reason, not a crash
        reject("unreadable_image", str(err))
        return [], rejects
    mask = None
    if case.get("mask") is not None:
        try:
            mask = decode_mask(case["mask"])
        except Exception as err:
            reject("unreadable_mask", str(err))
            return [], rejects
    if case.get("has_lesion") and mask is None:
        reject("missing_mask", "has_lesion is true but the case has no mask")
        return [], rejects
    problem = check_case(image, mask, recipe)
    if problem:
        reject(*problem)
        return [], rejects

    gray = _is_gray(image)
    base = {k: case.get(k) for k in CASE_FIELDS}
    base.update(split=ctx.split or case.get("split"), group_id=ctx.group_id or case.get("group_id"),
                recipe_hash=rhash, contrast_before=None, contrast_after=None, edit_score=None,
                lesion_untouched=None, degradation=None, edit_mask=None)
    if base["private"] is None:
        base["private"] = False
    rows: list[dict] = []

    def row(kind: str, tool: str, img: np.ndarray | None, edit: np.ndarray | None = None, **extra) -> dict:
        r = dict(base, view_id=view_id(cid, kind, tool), kind=kind, tool=tool, expected=EXPECTED[kind],
                 image=None if img is None else _encode(img, gray),
                 edit_mask=None if edit is None else encode_png(edit), passed=True, reject_reason=None)
        r.update(extra)
        if not r["passed"]:
            reject(r["reject_reason"], extra.pop("detail", ""), stage="qc", item=r["view_id"])
        r.pop("detail", None)
        rows.append(r)
        return r

    if mask is None:
        row("natural_negative", "none", image, lesion_bbox=None, lesion_area_frac=0.0)
        return rows, rejects

    row("original", "none", image)
    foreground = geometry.foreground_mask(image)
    dilated = geometry.dilate_mask(mask, recipe.dilation_px)
    placement = geometry.random_removal_region(dilated, foreground, rng_for(recipe.seed, cid, "random_removal", "place"))
    if placement is None:
        # without a matched control the pair cannot be built; the original stays but fails
        rows[0].update(passed=False, reject_reason="no_room_for_control")
        reject("no_room_for_control", "no foreground position for the dilated shape away from the lesion",
               stage="qc", item=rows[0]["view_id"])
        return rows, rejects

    before = ring_contrast(image, mask, recipe.ring_inner_px, recipe.ring_outer_px)
    if recipe.tool_mode == "all":
        tools = list(recipe.tools)
    else:
        tools = [recipe.tools[int(rng_for(recipe.seed, cid, "tool").integers(len(recipe.tools)))]]
    for tool in tools:
        eraser = erasers[tool]
        try:
            erased = eraser.fill(image, dilated, rng_for(recipe.seed, cid, "target_removal", tool), avoid=None)
        except Exception as err:
            row("target_removal", tool, None, dilated, passed=False, reject_reason=f"tool_error:{tool}", detail=str(err))
        else:
            after = ring_contrast(erased, mask, recipe.ring_inner_px, recipe.ring_outer_px)
            ok = contrast_passes(before, after, recipe.contrast_abs, recipe.contrast_rel)
            row("target_removal", tool, erased, dilated, contrast_before=before, contrast_after=after,
                passed=ok, reject_reason=None if ok else "lesion_still_stands_out",
                detail=f"contrast {before:.2f} -> {after:.2f}")
        _control(row, image, mask, placement, eraser, tool, "random_removal",
                 rng_for(recipe.seed, cid, "random_removal", tool), dilated)
        if recipe.unmatched_control and tool == tools[0] and base["split"] == "train":
            # C1's training pool only (§3.7: the unmatched edit replaces the control view in a
            # training arm; it is never a test view). One per case; its tool column names the
            # tool that filled it.
            region, params = geometry.unmatched_control_region(
                dilated, foreground, rng_for(recipe.seed, cid, "unmatched_control", "place"), away_px=recipe.control_away_px)
            ctool = recipe.control_tool_for(tool)
            if region is None:
                row("unmatched_control", ctool, None, passed=False, reject_reason="no_room_for_control_ellipse",
                    detail=f"ellipse {params}")
            else:
                _control(row, image, mask, region, erasers[ctool], ctool, "unmatched_control",
                         rng_for(recipe.seed, cid, "unmatched_control", ctool), dilated)

    _degraded(row, image, recipe, ctx, cid)
    if recipe.insertion and base["split"] == "train" and ctx.recipient_image is not None:
        _insertion(row, image, dilated, ctx, recipe, cid)
    return rows, rejects


def _control(row, image, mask, region, eraser, tool, kind, rng, dilated, **extra) -> None:
    """A control edit (random removal or unmatched ellipse) and the lesion-untouched check."""
    try:
        out = eraser.fill(image, region, rng, avoid=dilated)
    except Exception as err:
        row(kind, tool, None, region, passed=False, reject_reason=f"tool_error:{eraser.name}", detail=str(err), **extra)
        return
    untouched = bool(np.array_equal(out[mask], image[mask]))
    row(kind, tool, out, region, lesion_untouched=untouched, passed=untouched,
        reject_reason=None if untouched else "lesion_pixels_changed", **extra)


def _degraded(row, image, recipe: Recipe, ctx: CaseContext, cid: str) -> None:
    kinds = [d for d in recipe.degradations if d != "other_type" or ctx.donor_image is not None]
    if not kinds:
        return
    rng = rng_for(recipe.seed, cid, "degraded")
    kind = kinds[int(rng.integers(len(kinds)))]
    donor = decode_png(ctx.donor_image) if kind == "other_type" else None
    out = degrade(image, kind, rng, donor=donor, blur_divisor=recipe.blur_divisor, noise_sigma=recipe.noise_sigma,
                  downup_factor=recipe.downup_factor, jpeg_quality=recipe.jpeg_quality,
                  motion_length_frac=recipe.motion_length_frac)
    row("degraded", "none", out, degradation=kind)


def _insertion(row, image, dilated, ctx: CaseContext, recipe: Recipe, cid: str) -> None:
    """A real lesion (its dilated patch) moved into a lesion-free training image, blended."""
    try:
        recipient = decode_png(ctx.recipient_image)
    except Exception as err:
        row("insertion", "transplant", None, passed=False, reject_reason="unreadable_recipient", detail=str(err))
        return
    if recipient.shape != image.shape:
        import cv2

        recipient = cv2.resize(recipient, (image.shape[1], image.shape[0]), interpolation=cv2.INTER_AREA)
    shape, (r0, c0) = geometry.crop_to_shape(dilated)
    target = geometry.place_shape(shape, geometry.foreground_mask(recipient), rng_for(recipe.seed, cid, "insertion"))
    if target is None:
        row("insertion", "transplant", None, passed=False, reject_reason="no_room_for_insertion")
        return
    _, (tr, tc) = geometry.crop_to_shape(target)
    out = poisson_move(image, recipient, target, (tr - r0, tc - c0))
    row("insertion", "transplant", out, target, lesion_bbox=geometry.bbox(target))
