"""SLAKE question sets (English subset) as ``vqa_items`` for stage-3 replay and standard VQA.

Layout as downloaded (``Slake1.0``)::

    Slake1.0/
      train.json  validate.json  test.json      (some mirrors: validation.json)
      imgs/xmlab0/source.jpg  mask.png  detection.json  question.json
      ...

Each split file is a list of ``{"img_id", "img_name": "xmlab0/source.jpg", "question", "answer",
"q_lang": "en" | "zh", "location", "modality", "answer_type": "OPEN" | "CLOSED", "base_type",
"content_type", "triple", "qid"}``. Questions in a language not in ``languages`` are skipped
(SLAKE is bilingual; the paper uses English). Rejects: ``corrupt JSON`` (a whole split file),
``missing image``, ``unreadable image``, ``empty question`` / ``empty answer``,
``unknown answer type``.
"""

from __future__ import annotations


from medscope.io import bounded, guarded, safe_text, storage
from medscope.cohorts import vqa
from medscope.cohorts.common import DatasetConfig, OnItem, InputRejected, as_reject, dataset_config
from medscope.errors import MedScopeError

IMAGES_DIR = "imgs"


def split_records(path: str, cfg: DatasetConfig) -> tuple[list[tuple[str, str, list]], list[dict]]:
    """[(file, split, records)] for every configured split file present, and rejects for broken ones.

    Parameters
    ----------
    path : str
        The SLAKE folder.
    cfg : DatasetConfig
        Supplies ``question_files`` (file name -> split) and ``limits``.

    Returns
    -------
    files : list of tuple of (str, str, list)
        ``(file name, split, questions)`` per configured split file present and readable.
    rejects : list of dict
        One ``vqa_items`` rejects row per split file that is not a readable JSON list.
    """
    out, rejects = [], []
    for name, split in cfg.question_files.items():
        uri = storage.join(path, name)
        if not storage.exists(uri):
            continue
        try:
            data = safe_text.loads_json(bounded.read_bounded(uri, cfg.limits.max_file_bytes), name)
            if not isinstance(data, list):
                raise ValueError("expected a list of questions")
        except bounded.InputRejected as err:
            rejects.append(vqa.reject_item(cfg, name, err))
            continue
        except (ValueError, UnicodeDecodeError) as err:
            rejects.append(vqa.reject_item(cfg, name, InputRejected("corrupt JSON", f"{name}: {err}")))
            continue
        out.append((name, split, data))
    return out, rejects


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None):
    """SLAKE folder at ``path`` -> (vqa_items table, rejects rows).

    Parameters
    ----------
    path : str
        The SLAKE folder holding the split files and ``imgs/``.
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``slake-vqa`` defaults.
    on_item : callable, optional
        Called with no argument after each question in a kept language (progress).

    Returns
    -------
    vqa_items : pyarrow.Table
        One item per question in a kept language (``cfg.languages``) with a readable image.
    rejects : list of dict
        Rejects rows for broken split files, questions and images, and repeated records.

    Raises
    ------
    MedScopeError
        When none of the configured split files exists.
    """
    cfg = cfg or dataset_config("slake-vqa")
    files, rejects = split_records(path, cfg)
    if not files and not rejects:
        raise MedScopeError(f"{path}: none of {', '.join(cfg.question_files)} found")
    cache, rows = vqa.ImageCache(path), []
    langs = {lang.lower() for lang in cfg.languages}
    for name, split, data in files:
        for i, q in enumerate(data):
            item = f"{name}[{i}]"
            try:
                if not isinstance(q, dict):
                    raise InputRejected("corrupt JSON", f"question {i} is not an object")
                if langs and str(q.get("q_lang", "")).lower() not in langs:
                    continue
                image_file = vqa.image_rel(IMAGES_DIR, q.get("img_name", ""))
                item = f"{image_file}#{q.get('qid', i)}"
                found = cache.on_disk(image_file) if q.get("img_name") else None  # matched in NFC
                if found is None:
                    raise InputRejected("missing image", f"{image_file} not on disk")
                image_file = found
                answer = vqa.clean_text(q.get("answer"), "answer")
                rows.append(vqa.item_row(
                    cfg, split=split, image_file=image_file, image=cache.png(image_file),
                    question=vqa.clean_text(q.get("question"), "question"), answer=answer,
                    kind=vqa.answer_type(q.get("answer_type"), answer), released_id=str(q.get("qid", i)),
                    modality=q.get("modality"), content_type=q.get("content_type"),
                ))
            except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
                err = as_reject(err)
                rejects.append(vqa.reject_item(cfg, item, err))
            if on_item:
                on_item()
    return vqa.finish_items(rows, rejects)
