"""Two image-reading baselines for the paired-modality demo (model kinds by ``module:attr``, so the
shared registry is untouched). Neither is a medical model.

- ``colour-knn-reader`` (:func:`build_reader`): reads only the photograph's pixels. Features:
  the share of pixels whose Lab colour departs from the image's median, their (a*, b*) histogram
  and the number of separate spots; it answers with the description of the nearest exemplar
  among photographs drawn by ``paired_modality.draw`` with seeds disjoint from any set it is
  evaluated on (a 1-nearest-neighbour reader "fitted" on its own exemplars). It ignores the
  radiograph, so its photo-only and paired labels agree: McNemar p = 1 by construction.
- ``swayed-reader-sim`` (:func:`build_swayed`): a *simulation* of the failure the paired-modality paper reports
  (§5.2, Figure 4): the same reader, but shown a radiograph it re-reads a look-alike as the
  disease sign that would fit a unifying diagnosis (acne -> vesicles, nail polish -> cyanosis,
  port-wine stain -> ecchymosis) for a share ``sway`` of photographs (chosen by a hash of the
  photograph, so reruns agree). It exists to show that the statistics detect such a shift.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import cv2
import numpy as np

from medscope.images import decode_png
from medscope.models.base import Completion, Decoding, Message
from medscope.seeding import stable_hash

DESCRIPTIONS = {
    "none": "No focal abnormality; normal-appearing skin.",
    "vesicles": "Clustered vesicles on red bases, several crusted.",
    "acne": "A few small red papules, some with white heads, in keeping with acne.",
    "cyanosis": "Bluish discolouration of the nail bed and fingertip (cyanosis).",
    "nail_polish": "Glossy purple nail polish on the nail plate; the finger is otherwise normal.",
    "ecchymosis": "An irregular purple bruise with a yellow-green rim (ecchymosis).",
    "port_wine": "A sharply bordered pink-red patch on the cheek, a port-wine stain birthmark.",
}
SUGGESTS = {"vesicles": "varicella", "cyanosis": "hypoxaemia", "ecchymosis": "trauma"}
LOOKALIKE_TO_SIGN = {"acne": "vesicles", "nail_polish": "cyanosis", "port_wine": "ecchymosis"}
EXEMPLAR_SEEDS = range(90_000, 90_004)  # disjoint from the embedded set's condition seeds


def colour_features(rgb: np.ndarray) -> np.ndarray:
    """Feature vector of a photograph: departing-pixel share, their (a*, b*) histogram, spot count.

    Parameters
    ----------
    rgb : numpy.ndarray of uint8
        ``(H, W, 3)`` RGB photograph (resized to 96 x 96 first).

    Returns
    -------
    numpy.ndarray
        38 features: 4 x the share of pixels whose Lab colour departs from the median by more than 18,
        min(spot count, 30) / 15, and the 6 x 6 (a*, b*) histogram of the departing pixels divided by
        their count.
    """
    small = cv2.resize(rgb, (96, 96), interpolation=cv2.INTER_AREA)
    lab = cv2.cvtColor(small, cv2.COLOR_RGB2LAB).astype(np.float32)
    dev = np.linalg.norm(lab - np.median(lab.reshape(-1, 3), axis=0), axis=2)
    mask = dev > 18
    share = mask.mean()
    hist, _, _ = np.histogram2d(lab[..., 1][mask], lab[..., 2][mask], bins=6, range=[[80, 200], [60, 200]])
    hist = hist.ravel() / max(1, mask.sum())
    spots = cv2.connectedComponents(mask.astype(np.uint8))[0] - 1
    return np.concatenate([[4 * share, min(spots, 30) / 15.0], hist])


@lru_cache(maxsize=1)
def exemplars() -> tuple[np.ndarray, tuple[str, ...]]:
    """The reader's exemplars: features and marks of photographs drawn with ``EXEMPLAR_SEEDS``
    (computed once).

    Returns
    -------
    features : numpy.ndarray
        ``[E, 38]`` :func:`colour_features` of each exemplar, one per region, mark ('none' included)
        and seed.
    labels : tuple of str
        The mark of each exemplar.
    """
    from medscope.protocols.paired_modality import draw

    feats, labels = [], []
    for region, marks in draw.MARKS.items():
        for mark in ("none", *marks):
            for seed in EXEMPLAR_SEEDS:
                feats.append(colour_features(draw.photo(region, mark, seed)))
                labels.append(mark)
    return np.stack(feats), tuple(labels)


def read_photo(png: bytes) -> str:
    """The mark of the nearest exemplar (1-NN, Euclidean) of a photograph.

    Parameters
    ----------
    png : bytes
        The photograph, PNG-encoded.

    Returns
    -------
    str
        A mark of ``draw.MARKS`` or 'none'.
    """
    feats, labels = exemplars()
    f = colour_features(decode_png(png))
    return labels[int(np.argmin(np.linalg.norm(feats - f, axis=1)))]


def _images(messages: list[Message]) -> list[bytes]:
    return [p.png for m in messages for p in m.parts if p.is_image]


def format_reply(mark: str, paired: bool) -> str:
    """The reply of the baseline readers: PHOTO FINDINGS from the mark's description, a placeholder
    RADIOGRAPH FINDINGS when paired, and SUGGESTIVE OF the diagnosis the mark suggests.

    Parameters
    ----------
    mark : str
        The mark read (a key of ``DESCRIPTIONS``).
    paired : bool
        Whether a radiograph was shown with the photograph.

    Returns
    -------
    str
        The reply text, one section a line.
    """
    lines = [f"PHOTO FINDINGS: {DESCRIPTIONS[mark]}"]
    if paired:
        lines.append("RADIOGRAPH FINDINGS: not assessed by this reader.")
    lines.append(f"SUGGESTIVE OF: {SUGGESTS.get(mark, 'no unifying diagnosis')}.")
    return "\n".join(lines)


@dataclass
class ColourReader:
    name: str = "colour-knn-reader"
    provider: str = "local"
    endpoint: str = "local"
    sway: float = 0.0  # share of look-alikes re-read as the sign when a radiograph is shown
    options: dict = field(default_factory=dict)

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        images = _images(messages)
        if not images:
            return Completion(text="PHOTO FINDINGS: no photograph was provided.", finish_reason="stop")
        mark = read_photo(images[0])
        paired = len(images) > 1
        if paired and mark in LOOKALIKE_TO_SIGN:
            u = int(stable_hash("sway", images[0][:4096], len(images[0]), length=8), 16) / 16**8
            if u < self.sway:
                mark = LOOKALIKE_TO_SIGN[mark]
        return Completion(text=format_reply(mark, paired), finish_reason="stop")


def build_reader(entry) -> ColourReader:
    """The ``colour-knn-reader`` model kind: a :class:`ColourReader` that never sways.

    Parameters
    ----------
    entry : ModelEntry
        The model's entry in the models config (its ``name`` is used).

    Returns
    -------
    ColourReader
        The reader, ``sway`` 0.
    """
    return ColourReader(name=entry.name)


def build_swayed(entry) -> ColourReader:
    """The ``swayed-reader-sim`` model kind: a :class:`ColourReader` that, shown a radiograph, re-reads a
    share of look-alikes as the disease sign.

    Parameters
    ----------
    entry : ModelEntry
        The model's entry in the models config: its ``name``, and ``options["sway"]``, the share of
        look-alikes re-read (default 0.5).

    Returns
    -------
    ColourReader
        The swayed reader.

    References
    ----------
    .. [1] paired-modality paper, §5.2, Figure 4.
    """
    return ColourReader(name=entry.name, sway=float((entry.options or {}).get("sway", 0.5)))
