"""PathVQA (He et al. 2020) from its released split files, as ``vqa_items``.

Layout as downloaded (``pvqa``)::

    pvqa/
      images/{train,val,test}/test_0000.jpg ...
      qas/{train,val,test}/{train,val,test}_qa.pkl    list of {"image", "question", "answer"}

The pickles are read with a data-only unpickler (a pickle can carry code: any class or function
inside is refused and the split file becomes a ``corrupt pickle`` reject). PathVQA has no
answer-type field: yes/no answers are closed, others open (its paper's split). Rejects:
``corrupt pickle``, ``missing image``, ``unreadable image``, ``empty question`` /
``empty answer``.
"""

from __future__ import annotations

import posixpath

from medscope.io import bounded, guarded, storage
from medscope.cohorts import vqa
from medscope.cohorts.common import DatasetConfig, IMAGE_EXTS, OnItem, InputRejected, as_reject, dataset_config
from medscope.errors import MedScopeError

SPLITS = {"train": "train", "val": "validation", "test": "test"}


def _image_file(cache, folder: str, name: str) -> str | None:
    for ext in ("", *IMAGE_EXTS):
        found = cache.on_disk(posixpath.join("images", folder, name + ext))  # matched in NFC
        if found:
            return found
    return None


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None):
    """PathVQA ``pvqa`` folder (or the one holding it) at ``path`` -> (vqa_items table, rejects rows).

    Parameters
    ----------
    path : str
        The ``pvqa`` folder, or the folder holding it.
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``pathvqa`` defaults.
    on_item : callable, optional
        Called with no argument after each question (progress).

    Returns
    -------
    vqa_items : pyarrow.Table
        One item per question with a readable image; split ``val`` becomes ``validation``.
    rejects : list of dict
        Rejects rows for broken pickles, questions and images, and repeated records.

    Raises
    ------
    MedScopeError
        When no ``qas/<split>/<split>_qa.pkl`` exists.
    """
    cfg = cfg or dataset_config("pathvqa")
    if not storage.is_dir(storage.join(path, "qas")) and storage.is_dir(storage.join(path, "pvqa", "qas")):
        path = storage.join(path, "pvqa")  # the folder the archive unpacks into
    present = [s for s in SPLITS if storage.exists(storage.join(path, "qas", s, f"{s}_qa.pkl"))]
    if not present:
        raise MedScopeError(f"{path}: no qas/<split>/<split>_qa.pkl")
    cache, rows, rejects = vqa.ImageCache(path), [], []
    for split in present:
        rel_pkl = f"qas/{split}/{split}_qa.pkl"
        try:
            data = vqa.load_data_pickle(bounded.read_bounded(storage.join(path, "qas", split, f"{split}_qa.pkl"), cfg.limits.max_file_bytes))
            if not isinstance(data, list):
                raise InputRejected("corrupt pickle", "expected a list of questions")
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(vqa.reject_item(cfg, rel_pkl, err))
            continue
        for i, q in enumerate(data):
            item = f"{rel_pkl}[{i}]"
            try:
                if not isinstance(q, dict):
                    raise InputRejected("corrupt pickle", f"question {i} is not a dict")
                name = str(q.get("image", "")).strip()
                image_file = _image_file(cache, split, name) if name else None
                if image_file is None:
                    raise InputRejected("missing image", f"images/{split}/{name}.* not on disk")
                item = f"{image_file}#{i}"
                answer = vqa.clean_text(q.get("answer"), "answer")
                rows.append(vqa.item_row(
                    cfg, split=SPLITS[split], image_file=image_file, image=cache.png(image_file),
                    question=vqa.clean_text(q.get("question"), "question"), answer=answer,
                    kind=vqa.answer_type(None, answer), released_id=f"{split}:{i}", modality="pathology",
                ))
            except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
                err = as_reject(err)
                rejects.append(vqa.reject_item(cfg, item, err))
            if on_item:
                on_item()
    return vqa.finish_items(rows, rejects)
