"""Write a reading pack (counterfactual paper §7): the blinded images and page in ``reading/``, the answer
key beside it in ``key.json``.

Every image is re-saved the same way -- decoded, its long side scaled to ``size`` pixels,
written as a PNG with no metadata chunks -- under an opaque name, so neither file name, size nor
format tells an erased image from an unmodified one. The pack hash covers every image's bytes,
its question and the pack name; the page and every answer file carry it, and the analysis scores
only answer files whose hash belongs to a pack it was given.
"""

from __future__ import annotations

import hashlib
import json

import cv2
import numpy as np

from medscope.io import records, safe_text, storage
from medscope.errors import MedScopeError
from medscope.images import decode_png, encode_png
from medscope.reader import IMAGES_DIR, KEY_FILE, PAGE_FILE, READING_DIR
from medscope.reader.page import render_page
from medscope.reader.sample import draw_sample
from medscope.seeding import rng_for, stable_hash

KEY_FORMAT = "medscope-reader-key"
VIEW_COLUMNS = ["view_id", "case_id", "kind", "tool", "image", "expected", "source", "imaging_type", "split",
                "finding", "question", "passed", "lesion_area_frac"]


def resave_image(png: bytes, size: int) -> bytes:
    """The one re-save policy: long side scaled to ``size`` (area filter down, cubic up), grey
    images kept grey, colour kept colour, PNG without metadata (cv2 writes none).

    Parameters
    ----------
    png : bytes
        The image, PNG-encoded.
    size : int
        The long side in pixels after the re-save.

    Returns
    -------
    bytes
        The re-saved PNG: one channel when the three channels were equal, else as decoded.
    """
    img = decode_png(png)
    if np.array_equal(img[..., 0], img[..., 1]) and np.array_equal(img[..., 1], img[..., 2]):
        img = img[..., 0]
    h, w = img.shape[:2]
    scale = size / max(h, w)
    if scale != 1.0:
        dsize = (max(1, round(w * scale)), max(1, round(h * scale)))
        img = cv2.resize(img, dsize, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC)
    return encode_png(img)


def pack_hash(name: str, items: list[dict]) -> str:
    """SHA-256 over the pack name and each image's (opaque name, image SHA-256, question).

    Parameters
    ----------
    name : str
        The pack name.
    items : list of dict
        The pack's images, each with ``image`` (opaque name), ``sha256`` and ``question``; order does not
        matter.

    Returns
    -------
    str
        The hexadecimal SHA-256 of the canonical JSON of name and sorted items.
    """
    canon = json.dumps({"name": name, "items": sorted((i["image"], i["sha256"], i["question"]) for i in items)},
                       sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def read_key(pack: str) -> dict:
    """The key of a pack folder (or of the key file itself).

    Parameters
    ----------
    pack : str
        A pack folder, or a path ending in ``.json`` read as the key file itself.

    Returns
    -------
    dict
        The key: format, version, name, pack_hash, seed, size, views, after, the sample's notes, items.

    Raises
    ------
    MedScopeError
        When there is no key file, it cannot be read as a JSON object (``safe_text.BadText``, a
        MedScopeError), or its format is not a reader-pack key's.
    """
    uri = pack if pack.endswith(".json") else storage.join(pack, KEY_FILE)
    if not storage.exists(uri):
        raise MedScopeError(f"{pack}: no {KEY_FILE}; give a folder written by `medscope reader pack`")
    key = safe_text.expect_mapping(safe_text.read_json(uri), uri)  # a truncated key names the file
    if key.get("format") != KEY_FORMAT:
        raise MedScopeError(f"{uri}: not a reader-pack key (format {key.get('format')!r})")
    return key


def write_pack(views: str, out: str, *, name: str = "reading", per_kind: int = 32, seed: int = 0, size: int = 768,
               tool: str | None = None, after: list[str] = (), title: str = "Image reading") -> dict:
    """Draw the sample, write ``out/reading/`` (page + images) and ``out/key.json``; return the key.

    Parameters
    ----------
    views : str
        The views table (path or storage URI).
    out : str
        The pack folder; it must not hold a pack already.
    name : str, optional
        The pack name (part of the hash and of the opaque image names).
    per_kind : int, optional
        Images per reader kind requested (lowered to what the eligible cases allow).
    seed : int, optional
        Seed of the sample, the opaque names and the page's listing order.
    size : int, optional
        Long side of every re-saved image, in pixels.
    tool : str, optional
        The erasure tool; default the one with the most passed target removals.
    after : list of str, optional
        Earlier packs (folders or key files): their cases are left out and localized findings come
        first (a supplement).
    title : str, optional
        The reading page's title.

    Returns
    -------
    dict
        The key as written to ``key.json``: the pack's name, hash, seed, size, views, the earlier packs,
        the sample's notes and one item per image (opaque name, sha256, question and the view's fields).

    Raises
    ------
    MedScopeError
        When ``out`` already holds a pack, an earlier pack's key cannot be read, the sample cannot be
        drawn, or opaque names collide.

    References
    ----------
    .. [1] counterfactual paper, §7.
    """
    if storage.exists(storage.join(out, KEY_FILE)):
        raise MedScopeError(f"{out} already holds a pack; a pack is never rewritten (readers may hold it)")
    table = records.read_table("views", views, columns=VIEW_COLUMNS)
    earlier = [read_key(p) for p in after]
    exclude = {i["case_id"] for k in earlier for i in k["items"]}
    chosen, notes = draw_sample(table.to_pylist(), per_kind, seed, tool=tool, exclude_cases=exclude,
                                localized_first=bool(earlier))
    # page order is random per reader; this order only fixes file listing, by opaque name
    items = []
    for row in chosen:
        png = resave_image(row["image"], size)
        opaque = stable_hash("reader-image", seed, name, row["view_id"], length=16)
        items.append({"image": opaque, "png": png, "sha256": hashlib.sha256(png).hexdigest(),
                      "question": row["question"], "view_id": row["view_id"], "case_id": row["case_id"],
                      "reader_kind": row["reader_kind"], "view_kind": row["kind"], "tool": row["tool"],
                      "expected": row["expected"], "source": row["source"], "imaging_type": row["imaging_type"],
                      "finding": row["finding"], "stress_tag": row["stress_tag"]})
    if len({i["image"] for i in items}) != len(items):
        raise MedScopeError("opaque image names collided; choose another pack name")
    items.sort(key=lambda i: i["image"])
    phash = pack_hash(name, items)
    reading = storage.join(out, READING_DIR)
    for it in items:
        storage.write_bytes(storage.join(reading, IMAGES_DIR, f"{it['image']}.png"), it.pop("png"))
    page_items = [{"id": i["image"], "src": f"{IMAGES_DIR}/{i['image']}.png", "question": i["question"]}
                  for i in items]
    # the listing inside the page is shuffled so its order carries nothing either
    order = rng_for(seed, "reader-page", name).permutation(len(page_items))
    storage.write_text(storage.join(reading, PAGE_FILE),
                       render_page(title=title, pack_name=name, pack_hash=phash, items=[page_items[i] for i in order]))
    key = {"format": KEY_FORMAT, "version": 1, "name": name, "pack_hash": phash, "seed": seed, "size": size,
           "views": views, "after": [{"name": k["name"], "pack_hash": k["pack_hash"]} for k in earlier],
           **notes, "items": items}
    storage.write_text(storage.join(out, KEY_FILE), json.dumps(key, indent=1, sort_keys=True))
    return key


def verify_pack(pack: str, key: dict) -> None:
    """Check the reading folder's images are the ones the key's hash names (a pack whose images
    changed after readers got it must not be scored against its old key).

    Parameters
    ----------
    pack : str
        The pack folder, or its key file (the folder is then the file's parent); without a reading
        images folder there nothing is checked.
    key : dict
        The pack's key (``read_key``).

    Raises
    ------
    MedScopeError
        When the images' hash differs from the key's ``pack_hash``.
    """
    base = pack.rsplit("/", 1)[0] if pack.endswith(".json") else pack
    if not storage.exists(storage.join(base, READING_DIR, IMAGES_DIR)):
        return  # key alone (images kept elsewhere): the hash in the answer files is the check
    items = []
    for it in key["items"]:
        png = storage.read_bytes(storage.join(base, READING_DIR, IMAGES_DIR, f"{it['image']}.png"))
        items.append({"image": it["image"], "sha256": hashlib.sha256(png).hexdigest(), "question": it["question"]})
    if pack_hash(key["name"], items) != key["pack_hash"]:
        raise MedScopeError(f"{pack}: the images in {READING_DIR}/ do not match the key's pack hash")
