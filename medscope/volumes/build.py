"""Per-volume work of the probe build: what one Ray task does for one volume (organ-presence paper).

Pass 1 (:func:`count_volume`) loads a volume, counts organ voxels per slice and returns its
slices rows and hysteretic states; the driver pools the states into cohort statistics. Pass 2
(:func:`volume_items`) reloads the volume, samples slices, picks negatives and renders only the
chosen slices. Neither holds more than one volume, so memory does not grow with the cohort.
"""

from __future__ import annotations

import json
import re

import numpy as np

from medscope.io import records
from medscope.images import encode_png, resize_long_side
from medscope.seeding import stable_hash
from medscope.volumes import presence as P
from medscope.volumes.config import ProbeConfig
from medscope.volumes.nifti import Volume, axial_slice, load_volume
from medscope.volumes.render import render_gray, render_montage, render_triple


def part_key(case_id: str) -> str:
    """A file-name-safe, collision-free part key for a case.

    Parameters
    ----------
    case_id : str
        The volume's case id.

    Returns
    -------
    str
        Up to 60 characters of the id with characters other than ``[A-Za-z0-9_.-]`` replaced by
        ``_``, then ``-`` and an 8-character hash of the whole id.
    """
    return re.sub(r"[^A-Za-z0-9_.-]", "_", case_id)[:60] + "-" + stable_hash(case_id, length=8)


def load_row(row: dict) -> Volume:
    """The volume of one volumes-table row, read, reoriented and checked (:func:`nifti.load_volume`).

    Parameters
    ----------
    row : dict
        A volumes row (``case_id``, ``image_uri``, ``label_uri``, ``organ_map``).

    Returns
    -------
    Volume
        The canonical volume.

    Raises
    ------
    VolumeError
        For a volume that cannot be used.
    """
    return load_volume(row["case_id"], row["image_uri"], row["label_uri"], row["organ_map"])


def count_volume(row: dict, cfg: ProbeConfig) -> dict:
    """Pass 1 for one volume: organs, states, z (mm), slices rows and notes.

    Raises VolumeError for a volume that cannot be used.

    Parameters
    ----------
    row : dict
        A volumes row (its ``source`` names the notes).
    cfg : ProbeConfig
        Supplies ``present_voxels`` and ``absent_voxels``.

    Returns
    -------
    dict
        ``organs`` (names), ``states`` ((Z, n_organs) int8), ``z_mm`` ((Z,) mm), ``slices`` (one
        row per slice with its organ voxel counts) and ``notes`` (an ``organ_never_present`` rejects
        row per organ never present).
    """
    vol = load_row(row)
    organs, counts = P.organ_voxel_counts(vol.labels, vol.organ_map)
    states = P.presence_states(counts, cfg.present_voxels, cfg.absent_voxels)
    z_mm = vol.z_mm
    slices = [
        {
            "case_id": vol.case_id,
            "z": k,
            "z_mm": float(z_mm[k]),
            "organ_voxels": [{"organ": o, "voxels": int(counts[k, j])} for j, o in enumerate(organs)],
        }
        for k in range(counts.shape[0])
    ]
    notes = [
        records.reject_row(
            "probe_items", row.get("source") or "volumes", vol.case_id, "presence", "organ_never_present",
            f"{o} is mapped but never reaches {cfg.present_voxels} voxels on a slice; the volume is kept and "
            f"its {o} items are flagged absent_from_volume where it stays below {cfg.absent_voxels} on every slice",
        )
        for j, o in enumerate(organs)
        if P.presence_extent(states[:, j]) is None
    ]
    return {"organs": organs, "states": states, "z_mm": z_mm, "slices": slices, "notes": notes}


def render_slice(vol: Volume, z: int, render: str, cfg: ProbeConfig) -> bytes:
    """PNG of axial slice z under ``render`` (gray: one window x 3 channels; triple: false colour).

    Parameters
    ----------
    vol : Volume
        The canonical volume.
    z : int
        Slice index.
    render : {"gray", "triple"}
        The render.
    cfg : ProbeConfig
        Supplies the windows and ``max_image_side``.

    Returns
    -------
    bytes
        PNG of the (H, W, 3) render, long side at most ``cfg.max_image_side``.
    """
    hu = axial_slice(vol.image, z)
    if render == "gray":
        rgb = render_gray(hu, cfg.window.width, cfg.window.level)
    else:
        rgb = render_triple(hu, [(w.width, w.level) for w in cfg.triple_windows])
    return encode_png(resize_long_side(rgb, cfg.max_image_side))


def volume_items(row: dict, cfg: ProbeConfig, stats: P.CohortStats, vol: Volume | None = None) -> list[dict]:
    """Pass 2 for one volume: probe_items rows with their rendered images, one set per render.

    ``vol``: the row's volume when the caller has already loaded it (loading dominates the cost).

    Parameters
    ----------
    row : dict
        A volumes row (``private`` and ``endpoint_allowlist`` are copied to the items).
    cfg : ProbeConfig
        The probe config.
    stats : CohortStats
        Cohort statistics from pass 1.
    vol : Volume, optional
        The row's volume, already loaded; None loads it.

    Returns
    -------
    list of dict
        probe_items rows (item fields of :func:`presence.build_items` plus ``item_id``, ``render``,
        ``image`` PNG, ``private``, ``endpoint_allowlist``), renders outer.

    References
    ----------
    .. [1] organ-presence paper
    """
    vol = vol if vol is not None else load_row(row)
    organs, counts = P.organ_voxel_counts(vol.labels, vol.organ_map)
    states = P.presence_states(counts, cfg.present_voxels, cfg.absent_voxels)
    items = P.build_items(
        vol.case_id,
        vol.z_mm,
        organs,
        states,
        stats,
        seed=cfg.seed,
        slices_per_volume=cfg.slices_per_volume,
        strategies=tuple(cfg.strategies),
        negatives_per_slice=cfg.negatives_per_slice,
        positives_per_slice=cfg.positives_per_slice,
        vessels=tuple(cfg.vessels),
        transition_mm=cfg.transition_mm,
    )
    images = {(z, r): render_slice(vol, z, r, cfg) for z in sorted({i["z"] for i in items}) for r in cfg.renders}
    out = []
    for render in cfg.renders:
        for it in items:
            out.append(
                {
                    **it,
                    "item_id": P.item_id(it["case_id"], it["z"], it["organ"], it["strategy"], render),
                    "render": render,
                    "image": images[(it["z"], render)],
                    "private": bool(row.get("private") or False),
                    "endpoint_allowlist": row.get("endpoint_allowlist"),
                }
            )
    return out


def volume_montage(row: dict, window: str = "soft_tissue", vol: Volume | None = None) -> bytes:
    """The benchmark-MCQ paper montage PNG of one volume (144 slices, 12 x 12, long side <= 1536).

    Parameters
    ----------
    row : dict
        A volumes row.
    window : str or tuple of (float, float), optional
        Window preset name or ``(width, level)`` in HU.
    vol : Volume, optional
        The row's volume, already loaded; None loads it.

    Returns
    -------
    bytes
        PNG of the montage.

    References
    ----------
    .. [1] benchmark-MCQ paper
    """
    return encode_png(render_montage((vol if vol is not None else load_row(row)).image, window))


def states_to_json(organs: list[str], states: np.ndarray) -> str:
    """One volume's presence states as JSON text (``{"organs": [...], "states": [[...], ...]}``).

    Parameters
    ----------
    organs : list of str
        Organ names, one per column.
    states : numpy.ndarray
        (Z, n_organs) presence states.

    Returns
    -------
    str
        The JSON text.
    """
    return json.dumps({"organs": organs, "states": states.astype(int).tolist()})


def states_from_json(text: str) -> tuple[list[str], np.ndarray]:
    """Inverse of :func:`states_to_json`.

    Parameters
    ----------
    text : str
        JSON written by :func:`states_to_json`.

    Returns
    -------
    organs : list of str
        Organ names.
    states : numpy.ndarray of int8
        (Z, n_organs) presence states.
    """
    d = json.loads(text)
    return d["organs"], np.asarray(d["states"], dtype=np.int8).reshape(-1, len(d["organs"]))
