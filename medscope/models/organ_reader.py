"""A pixel organ reader for the organ-presence probe (organ-presence paper): reads the slice, not the words.

NOT a medical model. It gives the probe's report an image-dependent baseline beside the
constant policies (organ-presence paper §5.4 reads specificity against them). Fitted on rendered axial
slices of *training* volumes, labelled from their label maps with the probe's own presence
rule (``medscope.volumes.presence.presence_states``: present at >= ``present_voxels`` voxels,
absent below ``absent_voxels``; the ambiguous band in between is left out, as the probe does):

- each slice is reduced to a ``grid`` x ``grid`` grey thumbnail (area-averaged, in [0, 1]);
- per organ, a nearest-centroid linear rule: weight = mean thumbnail of the slices where the
  organ is present minus the mean where it is absent, score = weight . (x - midpoint of the two
  means); the threshold is the training score that maximises balanced accuracy.

At evaluation it finds the organ the question names (the longest fitted organ name in the
question), scores the slice and answers in the probe's JSON formats (or free text). No image
(the no-image control) -> it declines to answer (not addressed); an organ it was not fitted on
-> declines too. The blank control gets a reading of the gray field like any image.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import cv2
import numpy as np

from medscope.io import safe_text, storage
from medscope.errors import MedScopeError
from medscope.images import decode_png
from medscope.models.base import Completion, Decoding, Message

GRID = 24  # addition: thumbnail side; the paper fits no reader, so every value here is ours


def thumbnail(image: np.ndarray, grid: int = GRID) -> np.ndarray:
    """The slice as a ``grid`` x ``grid`` grey thumbnail in [0, 1], flattened.

    Parameters
    ----------
    image : numpy.ndarray
        uint8 grey (h, w) or RGB (h, w, 3) slice.
    grid : int, optional
        Thumbnail side in pixels.

    Returns
    -------
    numpy.ndarray
        float32 vector of length ``grid * grid``.
    """
    gray = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    small = cv2.resize(gray.astype(np.float32), (grid, grid), interpolation=cv2.INTER_AREA)
    return (small / 255.0).ravel()


def balanced_threshold(scores: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(threshold, balanced accuracy) maximising balanced accuracy of ``score > threshold``
    over the midpoints between sorted training scores (ties broken toward the lower threshold).

    Parameters
    ----------
    scores : numpy.ndarray
        Training scores, one per slice, not empty.
    truth : numpy.ndarray
        Boolean, True where the organ is present; both classes required.

    Returns
    -------
    threshold : float
        The best cut.
    balanced_accuracy : float
        Its training balanced accuracy, in [0, 1].
    """
    s = np.sort(np.unique(scores))
    cands = np.concatenate([[s[0] - 1.0], (s[:-1] + s[1:]) / 2.0, [s[-1] + 1.0]])
    pos, neg = truth.sum(), (~truth).sum()
    best = (float(cands[0]), -1.0)
    for t in cands:
        pred = scores > t
        bacc = 0.5 * ((pred & truth).sum() / pos + (~pred & ~truth).sum() / neg)
        if bacc > best[1]:
            best = (float(t), float(bacc))
    return best


def fit_centroid_rule(x: np.ndarray, truth: np.ndarray) -> dict:
    """The nearest-centroid linear rule of one organ (module docstring) on thumbnails ``x``
    (n x d) with present/absent ``truth`` (n bools, both classes required).

    Parameters
    ----------
    x : numpy.ndarray
        Thumbnails, shape (n, d).
    truth : numpy.ndarray
        Boolean, shape (n,).

    Returns
    -------
    dict
        ``weights`` (d floats), ``bias``, ``threshold``, ``train_balanced_accuracy``, and the
        ``present`` / ``absent`` counts.
    """
    mu_p, mu_a = x[truth].mean(axis=0), x[~truth].mean(axis=0)
    w = mu_p - mu_a
    b = -float(w @ ((mu_p + mu_a) / 2.0))
    thr, bacc = balanced_threshold(x @ w + b, truth)
    return {"weights": w.round(6).tolist(), "bias": b, "threshold": thr, "train_balanced_accuracy": bacc,
            "present": int(truth.sum()), "absent": int((~truth).sum())}


def fit_organ_reader(slices: list[tuple[np.ndarray, dict[str, bool]]], grid: int = GRID) -> dict:
    """Fit one rule per organ from (rendered slice, {organ: present?}) pairs; an organ without
    both present and absent slices is left out (named under ``skipped``).

    Parameters
    ----------
    slices : list of tuple
        (uint8 slice image, {organ: present?}) pairs; an organ in the ambiguous band is left out of
        that slice's dict.
    grid : int, optional
        Thumbnail side in pixels.

    Returns
    -------
    dict
        The artifact: ``kind`` "organ_reader", ``grid``, ``organs`` (organ -> `fit_centroid_rule`'s dict),
        ``skipped`` and ``slices`` (the count).

    Raises
    ------
    MedScopeError
        If there are no slices, or no organ has both present and absent slices.
    """
    if not slices:
        raise MedScopeError("organ reader: no training slices")
    x = np.stack([thumbnail(img, grid) for img, _ in slices])
    organs = sorted({o for _, lab in slices for o in lab})
    fitted, skipped = {}, []
    for organ in organs:
        rows = [(i, lab[organ]) for i, (_, lab) in enumerate(slices) if organ in lab]
        idx = np.array([i for i, _ in rows])
        truth = np.array([t for _, t in rows], dtype=bool)
        if truth.all() or not truth.any():
            skipped.append(organ)
            continue
        fitted[organ] = fit_centroid_rule(x[idx], truth)
    if not fitted:
        raise MedScopeError("organ reader: no organ has both present and absent training slices")
    return {"kind": "organ_reader", "grid": grid, "organs": fitted, "skipped": skipped, "slices": len(slices)}


def slices_of_volumes(rows: list[dict], cfg) -> list[tuple[np.ndarray, dict[str, bool]]]:
    """Every axial slice of the volumes ``rows`` (volumes table), rendered as the probe renders
    its items (gray window, same size) and labelled by the probe's presence rule.

    Parameters
    ----------
    rows : list of dict
        Rows of the volumes table.
    cfg : ProbeConfig
        The probe's config: the presence rule (``present_voxels``, ``absent_voxels``) and rendering.

    Returns
    -------
    list of tuple
        (uint8 RGB slice image, {organ: present?}) per axial slice, volume by volume; organs in the
        ambiguous band are left out.
    """
    from medscope.volumes import presence as P
    from medscope.volumes.build import load_row, render_slice

    out = []
    for row in rows:
        vol = load_row(row)
        organs, counts = P.organ_voxel_counts(vol.labels, vol.organ_map)
        states = P.presence_states(counts, cfg.present_voxels, cfg.absent_voxels)
        for k in range(counts.shape[0]):
            labels = {o: bool(states[k, j] == P.PRESENT) for j, o in enumerate(organs)
                      if states[k, j] in (P.PRESENT, P.ABSENT)}
            out.append((decode_png(render_slice(vol, k, "gray", cfg)), labels))
    return out


def save_reader(artifact: dict, uri: str) -> None:
    """Write a fitted organ reader (``fit_organ_reader``'s artifact) as JSON.

    Parameters
    ----------
    artifact : dict
        The artifact.
    uri : str
        Where to write it.
    """
    storage.write_text(uri, json.dumps(artifact))


@dataclass
class OrganReader:
    """The fitted organ reader as a ChatModel (provider "classical", no tokens, no tools)."""

    weights: str
    name: str = "organ-reader"
    provider: str = "classical"
    endpoint: str = "local"
    _art: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._art = safe_text.read_json_object(self.weights)

    def organ_of(self, question: str) -> str | None:
        q = question.lower()
        hits = [o for o in self._art["organs"] if o.lower() in q]
        return max(hits, key=len) if hits else None

    def score(self, image: np.ndarray, organ: str) -> float:
        """The organ's score minus its threshold (> 0: present)."""
        rule = self._art["organs"][organ]
        x = thumbnail(image, self._art["grid"])
        return float(x @ np.asarray(rule["weights"]) + rule["bias"] - rule["threshold"])

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        last = messages[-1]
        text = last.joined_text
        pngs = [p.png for p in last.parts if p.is_image]
        organ = self.organ_of(text)
        if not pngs or organ is None:
            why = "There is no image to read." if not pngs else "I was not fitted on this organ."
            return Completion(why + " I cannot answer.", finish_reason="stop")
        margin = self.score(decode_png(pngs[0]), organ)
        present = margin > 0
        reason = f"Pixel reading: {organ} score {margin:+.3f} against the fitted threshold."
        if "observation" in text:  # reasoning first (reasoning_json)
            reply = json.dumps({"observation": reason, "reasoning": "fitted thumbnail rule", "present": present})
        elif "JSON" in text:
            reply = json.dumps({"present": present, "reason": reason})
        else:
            reply = f"{'Yes' if present else 'No'}, the {organ} is {'' if present else 'not '}visible. {reason}"
        return Completion(reply, finish_reason="stop")
