"""VQA-RAD (Lau et al. 2018, OSF release) as ``vqa_items``.

Layout as downloaded::

    VQA_RAD Dataset Public.json     (also shipped as .xlsx / .xml; the JSON is read)
    VQA_RAD Image Folder/synpic54610.jpg ...

The JSON is a list of ``{"qid", "image_name", "image_organ", "answer", "answer_type":
"CLOSED" | "OPEN", "question_type", "question", "phrase_type", ...}``. The test set is the
``phrase_type`` ``test_freeform`` / ``test_para`` questions (451, the counterfactual paper Table 16); every other
question is ``train``. Answers may be numbers and answer types carry stray spaces or case;
both are normalised. Rejects: ``corrupt JSON``, ``missing image``, ``unreadable image``,
``empty question`` / ``empty answer``, ``unknown answer type``.
"""

from __future__ import annotations


from medscope.io import bounded, guarded, safe_text, storage
from medscope.cohorts import vqa
from medscope.cohorts.common import DatasetConfig, OnItem, InputRejected, as_reject, dataset_config
from medscope.errors import MedScopeError

JSON_NAME = "VQA_RAD Dataset Public.json"
IMAGES_DIR = "VQA_RAD Image Folder"


def split_of(phrase_type) -> str:
    """``test`` for a ``phrase_type`` that starts with ``test`` (any case), else ``train``.

    Parameters
    ----------
    phrase_type : object
        The question's released ``phrase_type`` (``test_freeform``, ``freeform`` ...), or None.

    Returns
    -------
    {"train", "test"}
        The split.
    """
    return "test" if str(phrase_type or "").strip().lower().startswith("test") else "train"


def load(path: str, cfg: DatasetConfig | None = None, on_item: OnItem = None):
    """VQA-RAD folder at ``path`` -> (vqa_items table, rejects rows).

    Parameters
    ----------
    path : str
        The VQA-RAD folder holding the public JSON and the image folder.
    cfg : DatasetConfig, optional
        Dataset config; None takes the shipped ``vqa-rad`` defaults.
    on_item : callable, optional
        Called with no argument after each question (progress).

    Returns
    -------
    vqa_items : pyarrow.Table
        One item per question with a readable image; empty when the JSON itself is unreadable.
    rejects : list of dict
        Rejects rows for the JSON file, questions and images, and repeated records.

    Raises
    ------
    MedScopeError
        When the public JSON file is missing.
    """
    cfg = cfg or dataset_config("vqa-rad")
    uri = storage.join(path, JSON_NAME)
    if not storage.exists(uri):
        raise MedScopeError(f"{path}: no {JSON_NAME!r}")
    try:
        data = safe_text.loads_json(bounded.read_bounded(uri, cfg.limits.max_file_bytes), JSON_NAME)
        if not isinstance(data, list):
            raise ValueError("expected a list of questions")
    except bounded.InputRejected as err:
        return vqa.finish_items([], [vqa.reject_item(cfg, JSON_NAME, err)])
    except (ValueError, UnicodeDecodeError) as err:
        return vqa.finish_items([], [vqa.reject_item(cfg, JSON_NAME, InputRejected("corrupt JSON", str(err)))])
    cache, rows, rejects = vqa.ImageCache(path), [], []
    for i, q in enumerate(data):
        item = f"{JSON_NAME}[{i}]"
        try:
            if not isinstance(q, dict):
                raise InputRejected("corrupt JSON", f"question {i} is not an object")
            image_file = vqa.image_rel(IMAGES_DIR, q.get("image_name", ""))
            released = str(q.get("qid", i))
            item = f"{image_file}#{released}"
            found = cache.on_disk(image_file) if q.get("image_name") else None  # matched in NFC
            if found is None:
                raise InputRejected("missing image", f"{image_file} not on disk")
            image_file = found
            answer = vqa.clean_text(q.get("answer"), "answer")
            rows.append(vqa.item_row(
                cfg, split=split_of(q.get("phrase_type")), image_file=image_file, image=cache.png(image_file),
                question=vqa.clean_text(q.get("question"), "question"), answer=answer,
                kind=vqa.answer_type(q.get("answer_type"), answer), released_id=released,
                modality=q.get("image_organ"), content_type=q.get("question_type"),
            ))
        except Exception as err:  # noqa: BLE001 - one bad file never sinks the import
            err = as_reject(err)
            rejects.append(vqa.reject_item(cfg, item, err))
        if on_item:
            on_item()
    return vqa.finish_items(rows, rejects)
