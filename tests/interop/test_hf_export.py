"""``medscope export hf``: an items table as a Hugging Face dataset with its card (docs/interop.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from medscope.images import decode_png, encode_png
from medscope.io import records
from medscope.testing.views import views_rows
from pipelines import cli

datasets = pytest.importorskip("datasets", reason="the interop extra (pip install medscope[interop])")


def _build(tmp_path, private_every: int = 0):
    """A views build folder: 8 views (v000-v007, cases of two), v006 failed QC, v000-v003 in test,
    v004-v007 in train; a crosswalk of three pairs (two near_copy, one identical)."""
    rows = views_rows(8, private_every=private_every)
    for i, row in enumerate(rows):
        row["split"] = "test" if i < 4 else "train"
        row["image"] = encode_png(np.full((5, 7), 10 * i, np.uint8))
    rows[3]["kind"], rows[3]["expected"], rows[3]["tool"] = "target_removal", "absent", "lama"
    rows[6]["passed"], rows[6]["reject_reason"] = False, "edit_visible"
    build = tmp_path / "build"
    build.mkdir()
    records.write_table("views", rows, str(build / "views.parquet"))
    records.write_table("near_copy_pairs", [
        {"a": "c000", "b": "c001", "distance": 3, "correlation": 0.97, "tier": "near_copy"},
        {"a": "c000", "b": "c002", "distance": 4, "correlation": 0.95, "tier": "near_copy"},
        {"a": "c001", "b": "c003", "distance": 0, "correlation": 1.0, "tier": "identical"},
    ], str(build / "near_copy_pairs.parquet"))
    (build / "recipe.json").write_text(json.dumps({"recipe_hash": "abc123", "recipe": {"name": "tiny", "seed": 7}}))
    return build, rows


def _card(out):
    text = (out / "README.md").read_text()
    _, header, body = text.split("---\n", 2)
    return yaml.safe_load(header), body


def test_views_become_a_dataset_split_by_the_split_column_with_images_ids_and_a_card(tmp_path):
    build, rows = _build(tmp_path)
    out = tmp_path / "hf"
    assert cli.main(["export", "hf", "--items", str(build), "--out", str(out), "--license", "cc-by-4.0"]) == 0

    ds = datasets.load_from_disk(str(out))
    assert sorted(ds) == ["test", "train"]
    # passed rows only, each in its own split, in table order; v006 failed QC
    assert ds["test"]["view_id"] == ["v000", "v001", "v002", "v003"]
    assert ds["train"]["view_id"] == ["v004", "v005", "v007"]
    assert ds["train"]["case_id"] == ["c002", "c002", "c003"]  # the clustering ids stay
    assert isinstance(ds["test"].features["image"], datasets.Image)
    by_id = {r["view_id"]: r for r in rows}
    for split in ds.values():
        for rec in split:
            assert np.array_equal(np.asarray(rec["image"]), decode_png(by_id[rec["view_id"]]["image"], gray=True))

    header, body = _card(out)
    assert header["license"] == "cc-by-4.0"
    assert header["task_categories"] == ["visual-question-answering"]
    # pass rates by hand: original 6 of 7 built (v006 failed), target_removal 1 of 1, all 7 of 8
    assert "| original | 6 | 7 | 0.857 |" in body
    assert "| target_removal | 1 | 1 | 1.000 |" in body
    assert "| all | 7 | 8 | 0.875 |" in body
    assert "| near_copy | 2 |" in body and "| identical | 1 |" in body and "3 hash-close pairs" in body
    assert "| jpeg_quality | 5 |" in body  # a views addition (additions.py)
    assert "counterfactual lesion erasure" in body  # the seed paper
    assert "(`recipe.json`): tiny, hash `abc123`" in body and '"seed": 7' in body
    assert "`test` 4" not in body and "test 4, train 3" in body


def test_private_items_are_refused_unless_the_user_lets_them_leave_or_leaves_them_out(tmp_path, capsys):
    build, _ = _build(tmp_path, private_every=4)  # v000 and v004 are private
    out = tmp_path / "hf"
    assert cli.main(["export", "hf", "--items", str(build), "--out", str(out), "--license", "other"]) == 2
    assert "2 of 7 items are private" in capsys.readouterr().err
    assert not (out / "dataset_dict.json").exists()

    assert cli.main(["export", "hf", "--items", str(build), "--out", str(tmp_path / "skip"), "--license", "other",
                     "--skip-private"]) == 0
    kept = datasets.load_from_disk(str(tmp_path / "skip"))
    assert kept["test"]["view_id"] == ["v001", "v002", "v003"] and kept["train"]["view_id"] == ["v005", "v007"]
    assert "2 private items left out" in _card(tmp_path / "skip")[1]

    assert cli.main(["export", "hf", "--items", str(build), "--out", str(tmp_path / "all"), "--license", "other",
                     "--allow-private"]) == 0
    everything = datasets.load_from_disk(str(tmp_path / "all"))
    assert everything["test"]["private"] == [True, False, False, False]


def test_a_table_without_splits_is_one_test_split_and_a_non_items_table_is_refused(tmp_path, capsys):
    import medscope.protocols.organ_presence  # noqa: F401 - registers probe_items

    png = encode_png(np.full((4, 4), 9, np.uint8))
    probe = [{"item_id": f"p{i}", "case_id": f"ct{i // 2}", "z": i, "z_mm": 2.5 * i, "organ": "liver",
              "truth": "present" if i % 2 else "absent", "strategy": "random", "stratum": "mid",
              "z_distance_mm": None, "absent_from_volume": False, "render": "soft_tissue",
              "question": "Is the liver visible?", "image": png, "private": False, "endpoint_allowlist": []}
             for i in range(3)]
    uri = str(tmp_path / "probe.parquet")
    records.write_table("probe_items", probe, uri)
    assert cli.main(["export", "hf", "--items", uri, "--out", str(tmp_path / "p"), "--license", "other"]) == 0
    ds = datasets.load_from_disk(str(tmp_path / "p"))
    assert list(ds) == ["test"] and ds["test"]["item_id"] == ["p0", "p1", "p2"]
    assert "Priors Over Pixels" in _card(tmp_path / "p")[1]

    metrics = str(tmp_path / "metrics.parquet")
    records.write_table("metrics", [], metrics)
    assert cli.main(["export", "hf", "--items", metrics, "--out", str(tmp_path / "m"), "--license", "other"]) == 2
    assert "holds no items table" in capsys.readouterr().err


def test_report_derived_questions_carry_their_montages_in_the_order_they_are_shown(tmp_path):
    import medscope.protocols.benchmark_mcq  # noqa: F401 - registers mcq_items and montages

    build = tmp_path / "bench"
    pngs = {s: encode_png(np.full((6, 6), v, np.uint8)) for s, v in (("T1", 50), ("T2", 200))}
    records.write_part("montages", [{"case_id": "c0", "sequence": s, "image": png, "height": 6, "width": 6,
                                     "slices": 40, "cohort": "k"} for s, png in pngs.items()], str(build / "montages"), "c0")
    items = [{"item_id": f"q{i}", "case_id": "c0", "cohort": "k", "qtype": "report", "field": None,
              "subcategory": "size", "level": "diagnosis", "question": "How large is the mass?",
              "options": ["A. 1 cm", "B. 4 cm"], "answer": "B", "k": 2, "sequences": seqs, "evidence": None,
              "imaging_source": "public", "matched_group": None, "private": False, "endpoint_allowlist": []}
             for i, seqs in enumerate((["T2", "T1"], ["T1"]))]
    records.write_part("mcq_items", items, str(build / "items"), "c0")
    assert cli.main(["export", "hf", "--items", str(build), "--out", str(tmp_path / "b"), "--license", "other"]) == 0
    ds = datasets.load_from_disk(str(tmp_path / "b"))["test"]
    shown = [[int(np.asarray(im).mean()) for im in row] for row in ds["images"]]
    assert ds["item_id"] == ["q0", "q1"] and shown == [[200, 50], [50]]
    assert ds["options"][0] == ["A. 1 cm", "B. 4 cm"]


def test_a_pair_set_is_one_row_per_photograph_with_its_radiograph(tmp_path):
    from medscope.pairs.embedded import write_embedded_set
    from medscope.protocols.paired_modality.manifest import read_manifest

    manifest = write_embedded_set(str(tmp_path / "pairs"))["manifest"]
    photos, rejects = read_manifest(manifest)
    assert cli.main(["export", "hf", "--items", manifest, "--out", str(tmp_path / "p"), "--license", "other"]) == 0
    ds = datasets.load_from_disk(str(tmp_path / "p"))["test"]
    assert ds["item_id"] == [p.item_id for p in photos]
    assert ds["photo_type"] == [p.photo_type for p in photos]
    first = photos[0]
    assert np.array_equal(np.asarray(ds[0]["photo"].convert("RGB")), decode_png(first.photo_png))
    assert np.array_equal(np.asarray(ds[0]["radiograph"].convert("RGB")), decode_png(first.radiograph_png))
    body = _card(tmp_path / "p")[1]
    assert f"{len(photos)} photographs kept, {len(rejects)} manifest entries refused" in body
    assert "Trick-or-Treat" in body
