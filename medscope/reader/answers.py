"""Readers' answer files -> scored answer rows (counterfactual paper §7: "Every answer file names the pack it
was answered on, and only files from the final pack are scored").

A file is scored only when its pack hash is one of the given packs' (a main pack and its
supplements); anything else becomes a rejects row with its reason, and the good files go on.
One reader's files for several packs merge into one reader; a second file of the same reader
and pack keeps the one with more answers (then the later save) and rejects the other.
"""

from __future__ import annotations

import os

from medscope.io import records, safe_text, storage
from medscope.reader import ANSWERS_FORMAT, CLINICAL_ANSWERS, EDIT_RATINGS

TABLE = "reader_answers"  # the rejects rows' "table": what the row would have become


def _reject(path: str, item: str, reason: str, detail: str = "") -> dict:
    """A rejects row; stage "file" when the whole file is left out, "answer" for one answer."""
    stage = "file" if item == path else "answer"
    return records.reject_row(TABLE, os.path.basename(path), item, stage, reason, detail)


def parse_answer_file(path: str, text: str, keys: dict[str, dict]) -> tuple[dict | None, list[dict]]:
    """(a parsed file {reader, pack_hash, saved_at, answers: {image: (edit, clinical)}} or None,
    rejects). ``keys`` maps pack hash -> pack key.

    Parameters
    ----------
    path : str
        The file's path, for the rejects rows.
    text : str
        The file's content (JSON).
    keys : dict of str to dict
        Pack hash -> pack key (``pack.read_key``).

    Returns
    -------
    parsed : dict or None
        ``file``, ``pack_hash``, ``saved_at``, ``reader`` (id, specialty, years_experience) and
        ``answers`` (image -> (edit rating, clinical answer)); None when the whole file is rejected
        (unreadable, not an answer file, an unknown pack, no reader id).
    rejects : list of dict
        Rejects rows: the file's, or one per answer left out (unknown image, incomplete, duplicate).
    """
    try:
        doc = safe_text.loads_json(text, path)
    except (ValueError, UnicodeDecodeError) as err:
        return None, [_reject(path, path, "unreadable_answer_file", str(err)[:200])]
    if not isinstance(doc, dict) or doc.get("format") != ANSWERS_FORMAT:
        return None, [_reject(path, path, "not_an_answer_file", "no 'format': 'medscope-reader-answers'")]
    phash = doc.get("pack_hash")
    if phash not in keys:
        return None, [_reject(path, path, "unknown_pack",
                              f"answers name pack {doc.get('pack_name')!r} ({str(phash)[:12]}), not one of the packs given")]
    reader = doc.get("reader") or {}
    rid = str(reader.get("id") or "").strip()
    if not rid:
        return None, [_reject(path, path, "no_reader_id")]
    images = {i["image"] for i in keys[phash]["items"]}
    rejects, answers = [], {}
    for a in doc.get("answers") or []:
        img = a.get("image") if isinstance(a, dict) else None
        if img not in images:
            rejects.append(_reject(path, str(img), "unknown_image", f"pack {keys[phash]['name']}"))
        elif a.get("edit") not in EDIT_RATINGS or a.get("clinical") not in CLINICAL_ANSWERS:
            rejects.append(_reject(path, img, "incomplete_answer", f"edit={a.get('edit')!r} clinical={a.get('clinical')!r}"))
        elif img in answers:
            rejects.append(_reject(path, img, "duplicate_image_answer"))
        else:
            answers[img] = (a["edit"], a["clinical"])
    years = reader.get("years_experience")
    return {"file": path, "pack_hash": phash, "saved_at": str(doc.get("saved_at") or ""),
            "reader": {"id": rid, "specialty": str(reader.get("specialty") or ""),
                       "years_experience": years if isinstance(years, (int, float)) else None},
            "answers": answers}, rejects


def load_answers(paths: list[str], keys: dict[str, dict]) -> tuple[list[dict], list[dict], dict]:
    """(answer rows, rejects, readers).

    A row: reader, pack, image, edit rating (1-4), edited (rating >= 3), clinical answer, and the
    key's fields for the image (reader_kind, source, finding, stress_tag, case_id, view_id).
    ``readers`` maps reader id -> {specialty, years_experience, packs, files}.

    Parameters
    ----------
    paths : list of str
        Answer files (paths or storage URIs).
    keys : dict of str to dict
        Pack hash -> pack key, in pack order (main pack, then supplements).

    Returns
    -------
    rows : list of dict
        Scored answers, by reader id, then pack order, then image.
    rejects : list of dict
        Rejects rows of files and answers left out.
    readers : dict of str to dict
        Reader id -> {specialty, years_experience, packs, files}.

    References
    ----------
    .. [1] counterfactual paper, §7.
    """
    rejects: list[dict] = []
    chosen: dict[tuple[str, str], dict] = {}
    for path in paths:
        try:
            text = safe_text.read_text(path)  # bounded; BOM / UTF-16 / cp1252 read
        except (OSError, UnicodeDecodeError, ValueError) as err:
            rejects.append(_reject(path, path, "unreadable_answer_file", str(err)[:200]))
            continue
        try:
            parsed, rej = parse_answer_file(path, text, keys)
        except (TypeError, AttributeError, KeyError, ValueError) as err:  # wrong types inside: this file only
            parsed, rej = None, [_reject(path, path, "malformed_answer_file", f"{type(err).__name__}: {err}"[:200])]
        rejects += rej
        if parsed is None:
            continue
        k = (parsed["reader"]["id"], parsed["pack_hash"])
        old = chosen.get(k)
        if old is not None:
            keep, drop = sorted([old, parsed], key=lambda p: (len(p["answers"]), p["saved_at"]), reverse=True)
            rejects.append(_reject(drop["file"], drop["file"], "duplicate_reader_pack",
                                   f"reader {k[0]} answered pack {keys[k[1]]['name']} again in {os.path.basename(keep['file'])}"))
            chosen[k] = keep
        else:
            chosen[k] = parsed
    rows, readers = [], {}
    item_of = {h: {i["image"]: i for i in key["items"]} for h, key in keys.items()}
    rank = {h: i for i, h in enumerate(keys)}  # packs in the order given: main pack, then supplements
    for (rid, phash), p in sorted(chosen.items(), key=lambda kv: (kv[0][0], rank[kv[0][1]])):
        info = readers.setdefault(rid, {"specialty": p["reader"]["specialty"],
                                        "years_experience": p["reader"]["years_experience"], "packs": [], "files": []})
        info["packs"].append(keys[phash]["name"])
        info["files"].append(os.path.basename(p["file"]))
        for img, (edit, clinical) in sorted(p["answers"].items()):
            it = item_of[phash][img]
            rating = EDIT_RATINGS.index(edit) + 1
            rows.append({"reader": rid, "pack": keys[phash]["name"], "image": img, "rating": rating,
                         "edited": rating >= 3, "clinical": clinical,
                         **{f: it[f] for f in ("reader_kind", "source", "finding", "stress_tag", "case_id", "view_id")}})
    return rows, rejects, readers
