"""What the question-set loaders share (SLAKE, VQA-RAD, PathVQA; the counterfactual paper §5.6 / Table 16).

A question set becomes a ``vqa_items`` table: one row per released question, with the image
re-encoded as PNG (so a corrupt file is caught at import, not in a worker) and the released
answer and answer type. Several questions share one image; each image file is decoded once.
``item_id`` is stable across re-imports: a hash of source, image file and the released question
id (or the question's position in its split file where the release has no id).
"""

from __future__ import annotations

import io
import pickle
import posixpath

from medscope import images
from medscope.io import guarded, records, safe_text, storage
from medscope.cohorts.common import DatasetConfig, InputRejected, as_reject, decode_image, read_file
from medscope.io.bounded import error_class
from medscope.seeding import stable_hash

CLOSED_ANSWERS = ("yes", "no")
OUT_TABLE = "vqa_items"


def answer_type(released: str | None, answer: str) -> str:
    """``closed`` | ``open`` from the release's own label (``CLOSED``, ``closed ``...); where the
    release has none (PathVQA) a yes/no answer is closed, anything else open (He et al. 2020).

    Parameters
    ----------
    released : str or None
        The release's answer-type label; None or blank when it has none.
    answer : str
        The released answer, used only without a label.

    Returns
    -------
    {"closed", "open"}
        The answer type.

    Raises
    ------
    InputRejected
        ``unknown answer type`` for a label other than closed / open (any case and spacing).
    """
    if released is not None and str(released).strip():
        kind = str(released).strip().lower()
        if kind not in ("closed", "open"):
            raise InputRejected("unknown answer type", repr(released))
        return kind
    return "closed" if answer.strip().lower() in CLOSED_ANSWERS else "open"


def clean_text(value, what: str) -> str:
    """A released question / answer as stripped text (VQA-RAD stores some answers as numbers).

    Parameters
    ----------
    value : object
        The released value; numbers are turned into text.
    what : str
        ``"question"`` or ``"answer"``, named in the reject reason.

    Returns
    -------
    str
        ``str(value)`` stripped.

    Raises
    ------
    InputRejected
        ``empty <what>`` for None, a dict or list, or blank text.
    """
    if value is None or isinstance(value, (dict, list)):
        raise InputRejected(f"empty {what}", f"{what} is {value!r}")
    text = str(value).strip()
    if not text:
        raise InputRejected(f"empty {what}", f"{what} is blank")
    return text


def image_rel(images_dir: str, name) -> str:
    """The dataset-relative path of an image named in a release's JSON; a name that leaves the
    dataset folder (``../../outside/secret.png``) is a ``path leaves the input root`` reject.

    Parameters
    ----------
    images_dir : str
        The release's image folder, relative to the dataset folder.
    name : object
        The image name as the release's JSON gives it.

    Returns
    -------
    str
        The normalised ``/``-separated path relative to the dataset folder.

    Raises
    ------
    InputRejected
        ``path leaves the input root`` for an absolute, URL or climbing name.
    """
    try:
        return safe_text.inside_root(posixpath.join(images_dir, str(name or "").strip()))
    except safe_text.BadText as err:
        raise InputRejected(err.reason, f"{name!r}: {err.detail}") from None


class ImageCache:
    """Decode each image file of a dataset once; remember the failures too."""

    def __init__(self, root: str):
        self.root, self._done, self._names = root, {}, {}

    def on_disk(self, rel: str) -> str | None:
        """``rel`` as it lies on disk: itself, or the file whose name is the same in Unicode NFC
        (a JSON written on one system, the files unpacked on another: macOS writes NFD); None
        when there is none. The folder is listed once, on the first name not found as given."""
        if storage.exists(storage.join(self.root, *rel.split("/"))):
            return rel
        top = rel.split("/", 1)[0]
        if top not in self._names:
            files, _ = guarded.walk(storage.join(self.root, top))
            self._names[top] = {safe_text.nfc(posixpath.join(top, f)): posixpath.join(top, f) for f in files}
        return self._names[top].get(safe_text.nfc(rel))

    def png(self, rel: str) -> bytes:
        if rel not in self._done:
            try:
                self._done[rel] = images.encode_png(decode_image(read_file(self.root, rel)))
            except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
                err = as_reject(err)
                self._done[rel] = err
        got = self._done[rel]
        if isinstance(got, InputRejected):
            raise got
        return got


def item_row(cfg: DatasetConfig, *, split: str | None, image_file: str, image: bytes, question: str,
             answer: str, kind: str, released_id: str, modality: str | None = None,
             content_type: str | None = None) -> dict:
    """One ``vqa_items`` row; ``item_id`` hashes source, image file and the released question id.

    Parameters
    ----------
    cfg : DatasetConfig
        Supplies source, ``private`` and ``endpoint_allowlist``.
    split : str or None
        The released split (``train``, ``validation``, ``test``), or None.
    image_file : str
        The image's path relative to the dataset folder.
    image : bytes
        The image re-encoded as PNG.
    question, answer : str
        The released question and answer, cleaned (:func:`clean_text`).
    kind : {"closed", "open"}
        The answer type (:func:`answer_type`).
    released_id : str
        The release's question id, or the question's position where it has none.
    modality : str, optional
        Imaging modality or organ as released.
    content_type : str, optional
        The release's question category.

    Returns
    -------
    dict
        The row.
    """
    return {
        "item_id": stable_hash(cfg.source, image_file, released_id),
        "source": cfg.source,
        "split": split,
        "image_file": image_file,
        "image": image,
        "question": question,
        "answer": answer,
        "answer_type": kind,
        "modality": modality,
        "content_type": content_type,
        "released_id": released_id,
        "private": cfg.private,
        "endpoint_allowlist": list(cfg.endpoint_allowlist),
    }


def reject_item(cfg: DatasetConfig, item: str, err: InputRejected) -> dict:
    """One ``load``-stage rejects row of the ``vqa_items`` table.

    Parameters
    ----------
    cfg : DatasetConfig
        Supplies the source name.
    item : str
        What was refused: a question (``<image>#<id>``), a split file, or ``<file>[<i>]``.
    err : InputRejected
        The refusal (reason, detail, error class).

    Returns
    -------
    dict
        A rejects row.
    """
    return records.reject_row(OUT_TABLE, cfg.source, item, "load", err.reason, err.detail, error_class(err))


def finish_items(rows: list[dict], rejects: list[dict]):
    """Validated items table and rejects. A record listed twice would be counted twice: an
    exact repeat keeps its first copy (``duplicate record`` for the rest); two different
    records under one id are both ``conflicting records`` (which one is right is unknown).

    Parameters
    ----------
    rows : list of dict
        The loader's ``vqa_items`` rows.
    rejects : list of dict
        The loader's rejects rows.

    Returns
    -------
    items : pyarrow.Table
        One row per distinct ``item_id``, sorted by it; conflicting ids dropped.
    rejects : list of dict
        The rejects plus ``duplicate record`` / ``conflicting records`` rows, sorted by
        (``item_id``, ``reason``).
    """
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["item_id"], []).append(r)
    rows = []
    for group in groups.values():
        where = f"{group[0]['image_file']}#{group[0]['released_id']}"
        if len(group) == 1:
            rows.append(group[0])
        elif all(g == group[0] for g in group[1:]):
            rows.append(group[0])
            rejects = rejects + [records.reject_row(OUT_TABLE, g["source"], where, "load", "duplicate record",
                                                f"listed {len(group)} times; counted once") for g in group[1:]]
        else:
            rejects = rejects + [records.reject_row(OUT_TABLE, g["source"], where, "load", "conflicting records",
                                                f"{len(group)} different records share this id") for g in group]
    rows = sorted(rows, key=lambda r: r["item_id"])
    rejects = sorted(rejects, key=lambda r: (r["item_id"], r["reason"]))
    return records.to_table(OUT_TABLE, rows), rejects


class _DataOnly(pickle.Unpickler):
    """PathVQA ships its splits as pickles; a pickle can run code, so only plain data
    (lists, dicts, strings, numbers) is let through: any class or function is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing {module}.{name}: only plain lists/dicts/strings are read")


def load_data_pickle(data: bytes):
    """Unpickle PathVQA split data, letting through plain data only (no class, no function).

    Parameters
    ----------
    data : bytes
        The pickle file.

    Returns
    -------
    object
        The unpickled lists, dicts, strings and numbers.

    Raises
    ------
    InputRejected
        ``corrupt pickle`` for a truncated or foreign pickle, or one that names any class or function.
    """
    try:
        return _DataOnly(io.BytesIO(data)).load()
    except Exception as err:  # truncated, foreign or code-carrying pickles alike
        raise InputRejected("corrupt pickle", f"{type(err).__name__}: {err}") from None
