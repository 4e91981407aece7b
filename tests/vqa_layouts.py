"""VQA-RAD and PathVQA written in their releases' exact layouts, with the bad entries real
downloads hold (SLAKE's question files are written by ``release_layouts.write_slake``)."""

from __future__ import annotations

import pickle
from collections import OrderedDict

from cohort_layouts import _save, colour_image, gray_image, truncated_bytes
from release_layouts import _bytes, _json


# --------------------------------------------------------------------------- VQA-RAD, PathVQA


def write_vqa_rad(root):
    """VQA_RAD Dataset Public.json + VQA_RAD Image Folder/. Returns (good {qid: (split, type, answer)}, bad)."""
    img_dir = f"{root}/VQA_RAD Image Folder"
    _save(f"{img_dir}/synpic54610.jpg", gray_image(32, 32, 1), "JPEG")
    _save(f"{img_dir}/synpic29265.jpg", gray_image(32, 32, 2), "JPEG")
    _bytes(f"{img_dir}/synpic42202.jpg", truncated_bytes(gray_image(32, 32, 3), "JPEG"))

    def q(qid, image, question, answer, kind, phrase):
        return {"qid": qid, "image_name": image, "image_organ": "CHEST", "answer": answer, "answer_type": kind,
                "question_type": "PRES", "question": question, "phrase_type": phrase, "qid_linked_id": "x"}

    data = [
        q(1, "synpic54610.jpg", "Is there a pneumothorax?", "No", "CLOSED", "freeform"),
        q(2, "synpic54610.jpg", "How many ribs are fractured?", 2, "OPEN", "test_freeform"),
        q(3, "synpic29265.jpg", "Is the heart enlarged?", "yes", "CLOSED ", "test_para"),
        q(4, "synpic99999.jpg", "Is this an MRI?", "no", "CLOSED", "test_freeform"),
        q(5, "synpic29265.jpg", "What organ is shown?", "", "OPEN", "para"),
        q(6, "synpic29265.jpg", "Is this normal?", "yes", "UNSURE", "freeform"),
        q(7, "synpic42202.jpg", "Is there a mass?", "yes", "CLOSED", "test_freeform"),
    ]
    _json(f"{root}/VQA_RAD Dataset Public.json", data)
    good = {"1": ("train", "closed", "No"), "2": ("test", "open", "2"), "3": ("test", "closed", "yes")}
    folder = "VQA_RAD Image Folder"
    bad = {f"{folder}/synpic99999.jpg#4": "missing image", f"{folder}/synpic29265.jpg#5": "empty answer",
           f"{folder}/synpic29265.jpg#6": "unknown answer type", f"{folder}/synpic42202.jpg#7": "unreadable image"}
    return good, bad


def write_pathvqa(root):
    """pvqa/images/<split>/<name>.jpg + pvqa/qas/<split>/<split>_qa.pkl (list of dicts)."""
    base = f"{root}/pvqa"
    for name in ("test_0000", "test_0001"):
        _save(f"{base}/images/test/{name}.jpg", colour_image(30, 30, int(name[-1])), "JPEG")
    test = [{"image": "test_0000", "question": "Is this a carcinoma?", "answer": "yes"},
            {"image": "test_0000", "question": "What is present?", "answer": "fibrosis"},
            {"image": "test_0001", "question": "Does this show necrosis?", "answer": "No"},
            {"image": "test_0404", "question": "What is shown?", "answer": "gland"},
            {"image": "test_0001", "question": "", "answer": "yes"}]
    _bytes(f"{base}/qas/test/test_qa.pkl", pickle.dumps(test))
    # a split file carrying a class (a pickle can run code on load): refused, never executed
    _bytes(f"{base}/qas/train/train_qa.pkl", pickle.dumps(OrderedDict(a=1)))
    good = {"test:0": ("closed", "yes"), "test:1": ("open", "fibrosis"), "test:2": ("closed", "No")}
    bad = {"qas/train/train_qa.pkl": "corrupt pickle", "qas/test/test_qa.pkl[3]": "missing image",
           "images/test/test_0001.jpg#4": "empty question"}
    return good, bad
