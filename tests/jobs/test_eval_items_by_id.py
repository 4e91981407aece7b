"""The evaluation sweep's driver holds keys, not pixels: it reads the items without
their images, and workers fetch their items by id from the items table.

- the driver never asks a protocol for its items with images, and every request still carries
  exactly the image of its item (fetched by the worker, in blocks of consecutive items);
- each of the six protocols (and the test protocol) gives the same items, in the same order,
  with and without images and when asked by id;
- the table reader behind it reads rows by id across row groups and part files.
"""

from __future__ import annotations

import base64
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from medscope import protocols
from medscope.io import layout, records, tablescan
from medscope.images import encode_png
from medscope.models.config import ModelEntry
from medscope.testing import providers as fp
from medscope.testing.protocols import SingleTurnProtocol
from medscope.testing.views import views_rows, write_views
from pipelines.eval import FETCH_BLOCK, EvalConfig, run_sweep

KEY = "loopback-only"


@pytest.mark.slow
def test_driver_reads_no_pixels_and_every_request_carries_its_items_image(tmp_path, ray_cluster, monkeypatch):
    class Recording(SingleTurnProtocol):
        """The test protocol, noting each load_items call made in this (the driver's) process;
        the copies pickled into the workers (by value: a local class) note theirs there."""

        def __init__(self):
            super().__init__()
            self.calls: list[tuple] = []

        def load_items(self, uri, ids=None, images=True):
            self.calls.append((None if ids is None else len(ids), images))
            return super().load_items(uri, ids=ids, images=images)

    monkeypatch.setenv("MEDSCOPE_T_KEY", KEY)
    n = FETCH_BLOCK + 6  # two fetch blocks, the second one short
    rows = views_rows(n, private_every=10)  # private items, no allow-list: refused on the driver
    rng = np.random.default_rng(3)
    for row in rows:  # a distinct image per view, so a request shows which item it was built from
        row["image"] = encode_png(rng.integers(0, 256, (8, 8), dtype=np.uint8))
    views = str(tmp_path / "views.parquet")
    records.write_table("views", rows, views)
    image_of = {r["view_id"]: r["image"] for r in rows}
    server = fp.FakeProvider("openai", responder=lambda text, images: "yes", expected_key=KEY)
    try:
        entry = ModelEntry(name="m", kind="openai", model="x", base_url=server.url, api_key_env="MEDSCOPE_T_KEY")
        protocol = Recording()
        cfg = EvalConfig(views=views, models="-", out=str(tmp_path / "eval"), conditions=["agent", "blind"],
                         workers=2, concurrency=4)
        summary = run_sweep(cfg, protocol, [entry])
        requests = list(server.requests)
    finally:
        server.close()
    # the driver read the items once, all of them, without images
    assert protocol.calls == [(None, False)]
    private = {r["view_id"] for r in rows if r["private"]}
    assert len(private) == -(-n // 10)  # views 0, 10, 20, ...: 7 of 70
    assert summary["refused_private"] == 2 * len(private)
    assert summary["done"] == 2 * (n - len(private)) == len(requests)
    seen = set()
    for req in requests:
        item_id, condition = re.search(r"\[item (\S+) (\S+)\]", req.text).groups()
        seen.add((item_id, condition))
        assert item_id not in private
        # the worker fetched this item by id: the image sent is the item's own, byte for byte
        sent = [base64.b64decode(part["image_url"]["url"].split("base64,", 1)[1])
                for message in req.body["messages"] if isinstance(message["content"], list)
                for part in message["content"] if part.get("type") == "image_url"]
        assert sent == ([] if condition == "blind" else [image_of[item_id]])
    assert len(seen) == len(requests)  # no unit requested twice
    episodes = records.read_table("episodes", cfg.out, columns=["item_id", "condition"]).to_pylist()
    assert {(e["item_id"], e["condition"]) for e in episodes} == seen


# -- every protocol: the same items by id and without images ---------------------------------------------


def _png(h, w, value):
    return encode_png(np.full((h, w), value, np.uint8))


def _rows(name: str, n: int, fill) -> list[dict]:
    """``n`` rows of table ``name``: every column None, then ``fill(i)``'s values."""
    return [{**dict.fromkeys(records.schema(name).names), **fill(i)} for i in range(n)]


def _views(tmp):
    return write_views(str(tmp / "views.parquet"), 9, private_every=4, allow=("http://local",))


def _probe_items(tmp):
    uri = str(tmp / "probe_items.parquet")
    records.write_table("probe_items", _rows("probe_items", 7, lambda i: dict(
        item_id=f"p{i}", case_id=f"c{i // 2}", z=i, z_mm=2.5 * i, organ="liver", truth="present" if i % 2 else "absent",
        strategy="random", stratum="mid", absent_from_volume=False, render="gray", question="Is the liver visible?",
        image=_png(6, 5 + i, 10 * i), private=i == 3, endpoint_allowlist=[])), uri)
    return uri


def _mcq_build(tmp):
    build = layout.BenchgenBuild(str(tmp / "build"))
    records.write_part("mcq_items", _rows("mcq_items", 6, lambda i: dict(
        item_id=f"q{i}", case_id=f"c{i % 3}", cohort="x", qtype="rads", subcategory="s", question=f"Q{i}?",
        options=["a", "b"], answer="A", k=2, sequences=["t1", "t2"] if i % 2 else ["t2"], private=False,
        endpoint_allowlist=[])), build.items, "a")
    records.write_part("montages", _rows("montages", 6, lambda i: dict(
        case_id=f"c{i // 2}", sequence="t1" if i % 2 == 0 else "t2", image=_png(4 + i, 4, 20 * i), height=4 + i,
        width=4, slices=3)), build.montages, "a")
    return build.root


def _vqa(tmp):
    from medscope import cohorts
    from tests.fixtures.vqa_layouts import write_vqa_rad

    write_vqa_rad(tmp / "vqa-rad")
    table, _ = cohorts.load("vqa-rad", str(tmp / "vqa-rad"))
    uri = str(tmp / "vqa.parquet")
    records.write_table("vqa_items", table, uri)
    return uri


def _pairs(tmp):
    # photographs of different content (pairs check refuses a matched / mismatched pair that look alike)
    for name, v in (("rx.png", 10), ("m.png", 20), ("x.png", 30), ("rx2.png", 40), ("m2.png", 50), ("x2.png", 60)):
        (tmp / name).write_bytes(encode_png(np.random.default_rng(v).integers(0, 256, (32, 32), dtype=np.uint8)))
    entries = [{"condition": c, "radiograph": rx, "private": c == "b",
                "matched": {"image": m, "caption": "cap", "findings": ["f"]},
                "mismatched": {"image": x, "caption": "cap", "findings": []}}
               for c, rx, m, x in (("a", "rx.png", "m.png", "x.png"), ("b", "rx2.png", "m2.png", "x2.png"))]
    (tmp / "manifest.yaml").write_text(yaml.safe_dump({"conditions": entries}))
    return str(tmp / "manifest.yaml")


CASES = [("single_turn", "medscope.testing.protocols:SingleTurnProtocol", {}, _views), ("counterfactual", None, {}, _views),
         ("edit_rating", None, {}, _views), ("organ_presence", None, {}, _probe_items),
         ("benchmark_mcq", None, {}, _mcq_build), ("standard_vqa", None, {"splits": ()}, _vqa),
         ("paired_modality", None, {}, _pairs)]


@pytest.mark.parametrize("name,cls,options,write", CASES, ids=[c[0] for c in CASES])
def test_every_protocol_gives_the_same_items_by_id_and_without_images(tmp_path, name, cls, options, write):
    protocol = protocols.load(cls or name, options)  # first: it registers its item table
    uri = write(tmp_path)
    full = protocol.load_items(uri)
    assert len(full) >= 3 and all(i.images and all(i.images) for i in full)
    bare = protocol.load_items(uri, images=False)
    # the same items, order, privacy and meta; no pixels
    strip = [(i.item_id, i.case_id, i.question, i.truth, i.private, i.endpoint_allowlist) for i in full]
    assert [(i.item_id, i.case_id, i.question, i.truth, i.private, i.endpoint_allowlist) for i in bare] == strip
    assert all(i.images == () for i in bare)
    # by id: exactly the items asked for (an unknown id is no item), images included, in the table's order
    wanted = {full[0].item_id, full[-1].item_id, full[len(full) // 2].item_id, "no-such-item"}
    some = protocol.load_items(uri, ids=wanted)
    assert some == [i for i in full if i.item_id in wanted]
    assert protocol.load_items(uri, ids=[]) == []


# -- the reader ---------------------------------------------------------------------------------------------


def test_rows_by_id_across_row_groups_and_part_files(tmp_path, monkeypatch):
    rows = views_rows(300)
    rng = np.random.default_rng(0)
    for row in rows:  # noise does not compress: 300 x ~1 KB is over several 64 KB row groups
        row["image"] = encode_png(rng.integers(0, 256, (32, 32), dtype=np.uint8))
    one = str(tmp_path / "views.parquet")
    monkeypatch.setattr(records, "ROW_GROUP_BYTES", 64 * 1024)  # the writer's cut, at a test's scale
    records.write_table("views", rows, one)
    assert pq.ParquetFile(one).num_row_groups >= 3
    folder = str(tmp_path / "parts")
    for k in range(0, 300, 100):
        records.write_part("views", rows[k:k + 100], folder, f"{k:03d}")
    ids = ["v299", "v000", "v150", "v101", "nope"]
    for uri in (one, folder):
        got = list(tablescan.iter_rows("views", uri, where=("view_id", ids)))
        assert [r["view_id"] for r in got] == ["v000", "v101", "v150", "v299"]  # the table's order
        assert [r["image"] for r in got] == [rows[i]["image"] for i in (0, 101, 150, 299)]
        bare = list(tablescan.iter_rows("views", uri, ["view_id", "private"]))
        assert [r["view_id"] for r in bare] == [r["view_id"] for r in rows] and set(bare[0]) == {"view_id", "private"}
    # a small table stays one row group, as before
    small = write_views(str(tmp_path / "small.parquet"), 5)
    assert pq.ParquetFile(small).num_row_groups == 1
    with pytest.raises(Exception, match="no views table"):
        list(tablescan.iter_rows("views", str(tmp_path / "absent.parquet")))
