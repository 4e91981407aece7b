"""The three replay question sets (VQA-RAD, SLAKE, PathVQA) written in their releases' layouts
with train and test questions, for stage 3 (counterfactual paper §3.5): smooth images (so a re-sized,
re-compressed copy stays a near-copy at 64 px), health questions more often "yes" than "no"
(the draw must balance them), and near-copies of evaluation images planted where asked."""

from __future__ import annotations

import pickle

import cv2
import numpy as np

from cohort_layouts import _save
from release_layouts import _bytes, _json, _slake_q


def smooth_image(seed: int, size: int = 48) -> np.ndarray:
    """A smooth grey image: an 6 x 6 random field up-sampled (distinct seeds: far apart in dhash)."""
    rng = np.random.default_rng(seed)
    return cv2.resize(rng.integers(20, 235, (6, 6)).astype(np.uint8), (size, size), interpolation=cv2.INTER_CUBIC)


def resaved(image: np.ndarray, size: int = 56) -> np.ndarray:
    """The same picture re-sized (what a near-copy in another release looks like)."""
    return cv2.resize(image, (size, size), interpolation=cv2.INTER_LINEAR)


def questions(i: int) -> list[tuple[str, str, str]]:
    """Three questions on image ``i``: a health question (yes on 2 of 3 images), a presence
    question and an open one; (question, answer, CLOSED | OPEN)."""
    return [("Is the lung healthy?", "Yes" if i % 3 else "No", "CLOSED"),
            ("Is there a nodule?", "No" if i % 2 else "Yes", "CLOSED"),
            ("Which organ is shown?", "Lung", "OPEN")]


def write_vqa_rad(root, n_train: int, test_images: dict[int, np.ndarray], planted: dict[int, np.ndarray]) -> None:
    """VQA_RAD Dataset Public.json + VQA_RAD Image Folder/: train images 0..n_train-1 (planted
    ones replaced by the given arrays), test images as given; phrase_type freeform / test_freeform."""
    data, qid = [], 0
    for i in range(n_train + len(test_images)):
        test = i >= n_train
        img = test_images[i] if test else planted.get(i, smooth_image(1000 + i))
        name = f"synpic{1000 + i}.jpg"
        _save(f"{root}/VQA_RAD Image Folder/{name}", img, "JPEG", quality=95)
        for q, a, kind in questions(i):
            qid += 1
            data.append({"qid": qid, "image_name": name, "image_organ": "CHEST", "answer": a, "answer_type": kind,
                         "question_type": "PRES", "question": q, "phrase_type": "test_freeform" if test else "freeform"})
    _json(f"{root}/VQA_RAD Dataset Public.json", data)


def write_slake(root, n_train: int, test_images: dict[int, np.ndarray], planted: dict[int, np.ndarray]) -> None:
    """Slake1.0: imgs/xmlab<N>/source.jpg + train.json / test.json (English and Chinese rows)."""
    splits: dict[str, list] = {"train": [], "test": []}
    qid = 0
    for i in range(n_train + len(test_images)):
        test = i >= n_train
        img = test_images[i] if test else planted.get(i, smooth_image(2000 + i))
        _save(f"{root}/imgs/xmlab{i}/source.jpg", img, "JPEG", quality=95)
        for q, a, kind in questions(i):
            qid += 1
            splits["test" if test else "train"].append(_slake_q(f"xmlab{i}", qid, q, a, kind, "CT"))
        qid += 1
        splits["test" if test else "train"].append(_slake_q(f"xmlab{i}", qid, "肺健康吗?", "是", "CLOSED", "CT", lang="zh"))
    for split, rows in splits.items():
        _json(f"{root}/{split}.json", rows)


def write_pathvqa(root, n_train: int, test_images: dict[int, np.ndarray], planted: dict[int, np.ndarray]) -> None:
    """pvqa/images/<split>/<split>_NNNN.jpg + pvqa/qas/<split>/<split>_qa.pkl (lists of dicts)."""
    base = f"{root}/pvqa"
    for split, ids in (("train", range(n_train)), ("test", sorted(test_images))):
        qa = []
        for i in ids:
            name = f"{split}_{i:04d}"
            img = test_images[i] if split == "test" else planted.get(i, smooth_image(3000 + i))
            _save(f"{base}/images/{split}/{name}.jpg", np.dstack([img] * 3), "JPEG", quality=95)
            qa += [{"image": name, "question": q, "answer": a.lower()} for q, a, _ in questions(i)]
        _bytes(f"{base}/qas/{split}/{split}_qa.pkl", pickle.dumps(qa))
