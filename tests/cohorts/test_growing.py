"""A growing cohort: a second batch of phantom cases keeps every earlier case's id,
split and views; a near-copy of a test image joins the test side; only the new cases are built.
Removing a case (withdrawn consent) takes it out of every folder, with a record."""

from __future__ import annotations

import json

import pytest

from medscope.io import layout, records, storage
from medscope.cohorts import phantom
from medscope.cohorts.common import case_id
from medscope.qc import splits
from medscope.seeding import stable_hash
from medscope.views.recipe import Recipe
from pipelines.views import build_views

RECIPE = Recipe(seed=1, tools=["telea"], edit_detector=False, insertion=False, degradations=["blur"],
                unmatched_control=False)


def _views(out: str) -> dict[str, dict]:
    rows = records.read_table("views", layout.ViewsBuild(out).views).to_pylist()
    return {r["view_id"]: r for r in rows}


def _redraw_moves_it(row: dict, splits1: dict) -> bool:
    """A test case that a from-scratch re-draw would move out of test once its near-copy
    joins: the copy's id becomes the group's smallest, so the group id and its draw change."""
    if splits1[row["case_id"]]["split"] != "test":
        return False
    kind = next(k for k, c in phantom.KINDS.items() if c.imaging_type == row["imaging_type"])
    copy_id = case_id(phantom.SOURCE, f"batch2/{kind}/copy000.png")
    members = [c for c, s in splits1.items() if s["group_id"] == splits1[row["case_id"]]["group_id"]]
    group = "g-" + stable_hash(min(members + [copy_id]), length=12)
    return copy_id < min(members) and splits._draw(RECIPE.seed, group, RECIPE.split_fractions) != "test"


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    """Batch 1 built, then the cohort re-imported with batch 2 (and a near-copy of a test
    image) and built again into the same folder."""
    root = tmp_path_factory.mktemp("grow")
    cohort, out = str(root / "cohort"), str(root / "views")
    batch1, _ = phantom.phantom_cases(18, seed=0)
    records.write_table("cases", batch1, layout.Cohort(cohort).cases)
    first = build_views(cohort, out, RECIPE, engine="local", quiet=True)
    splits1 = json.loads(storage.read_utf8(layout.ViewsBuild(out).splits))
    views1 = _views(out)
    # the near-copy goes to a test case whose split was drawn (not given by the cohort) and
    # which a from-scratch re-draw would move to another split: the case pinning must hold
    target = next(r for r in batch1 if _redraw_moves_it(r, splits1))
    batch2 = phantom.phantom_batch(6, seed=0, batch=2, copies_of=[target])
    copy_id = next(r["case_id"] for r in batch2 if "/copy" in r["source_file"])
    records.write_table("cases", batch1 + batch2, layout.Cohort(cohort).cases)  # the re-import
    second = build_views(cohort, out, RECIPE, engine="local", quiet=True)
    return dict(root=root, cohort=cohort, out=out, batch1=batch1, batch2=batch2, first=first, second=second,
                splits1=splits1, views1=views1, target=target["case_id"], copy=copy_id)


def test_earlier_cases_keep_ids_splits_and_views_and_only_new_cases_are_built(grown):
    splits2 = json.loads(storage.read_utf8(layout.ViewsBuild(grown["out"]).splits))
    old = {r["case_id"] for r in grown["batch1"]}
    new = {r["case_id"] for r in grown["batch2"]}
    assert not old & new and set(splits2) == old | new
    assert {c: splits2[c] for c in old} == grown["splits1"]  # split and group id, unchanged
    assert grown["first"]["built_now"] == 18 and grown["second"]["built_now"] == len(new) == 7
    views2 = _views(grown["out"])
    for vid, row in grown["views1"].items():  # earlier views untouched, bytes and all
        assert views2[vid]["image"] == row["image"] and views2[vid]["split"] == row["split"]
    assert {r["case_id"] for r in views2.values()} == old | new
    # no earlier test (or validation) image, nor a new near-copy of one, is in training
    test_groups = {s["group_id"] for s in splits2.values() if s["split"] == "test"}
    assert all(s["split"] == "test" for s in splits2.values() if s["group_id"] in test_groups)


def test_a_new_near_copy_of_a_test_image_joins_its_group_on_the_test_side(grown):
    splits2 = json.loads(storage.read_utf8(layout.ViewsBuild(grown["out"]).splits))
    assert splits2[grown["copy"]] == splits2[grown["target"]] == grown["splits1"][grown["target"]]
    assert splits2[grown["copy"]]["split"] == "test"
    report = json.loads(storage.read_utf8(layout.ViewsBuild(grown["out"]).qc_report))["crosswalk"]
    assert report["earlier_cases"] == 18 and report["pinned_split_conflicts"] == []
    assert report["near_copy_pairs_table"] == "near_copy_pairs.parquet"
    table = records.read_table("near_copy_pairs", grown["out"]).to_pylist()
    assert len(table) == report["n_near_copy_pairs"] == sum(report["pairs_by_tier"].values())
    pairs = {frozenset((p["a"], p["b"])) for p in table}
    assert frozenset((grown["copy"], grown["target"])) in pairs


def test_removing_cases_clears_every_table_and_part_with_a_record(grown, tmp_path, capsys):
    import shutil

    from pipelines import cli

    cohort, out = str(tmp_path / "cohort"), str(tmp_path / "views")
    shutil.copytree(grown["cohort"], cohort)
    shutil.copytree(grown["out"], out)
    gone = [grown["target"], grown["copy"]]
    gone_views = {v for v, r in _views(out).items() if r["case_id"] in gone}
    assert gone_views
    ids = tmp_path / "withdrawn.txt"
    ids.write_text("\n".join(gone) + "\n")
    assert cli.main(["cohort", "remove", "--cases", f"@{ids}", "--from", cohort, out]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rebuild"] == [out] and summary["rescore"] == []
    assert summary["views_and_items"] >= len(gone_views)
    cases = records.read_table("cases", layout.Cohort(cohort).cases)
    assert set(cases.column("case_id").to_pylist()) == {r["case_id"] for r in grown["batch1"] + grown["batch2"]} - set(gone)
    left = _views(out)
    assert not set(left) & gone_views and len(left) == len(_views(grown["out"])) - len(gone_views)
    for table in ("views", "rejects", "features"):  # no part of theirs is left for a resume to count
        for uri in storage.list_files(layout.ViewsBuild(out).parts(table), suffix=".parquet"):
            t = records.read_parquet(uri).to_pylist()
            assert not any(r.get("case_id") in gone or r.get("view_id") in gone_views
                           or r.get("item_id") in set(gone) | gone_views for r in t)
    assert not set(gone) & set(json.loads(storage.read_utf8(layout.ViewsBuild(out).splits)))
    # the crosswalk's pairs table named the two (they are a near-copy pair): no row left of them
    before = records.read_table("near_copy_pairs", grown["out"]).to_pylist()
    assert any(r["a"] in gone or r["b"] in gone for r in before)
    after = records.read_table("near_copy_pairs", out).to_pylist()
    assert after == [r for r in before if r["a"] not in gone and r["b"] not in gone]
    for folder in (cohort, out):
        record = [json.loads(x) for x in storage.read_utf8(storage.join(folder, layout.REMOVALS)).splitlines()]
        assert len(record) == 1 and record[0]["cases"] == sorted(gone) and record[0]["reason"] == "withdrawn consent"
        assert sum(record[0]["removed"]["rows"].values()) > 0
    # a rebuild after the removal builds nothing and brings nothing back
    again = build_views(cohort, out, RECIPE, engine="local", quiet=True)
    assert again["built_now"] == 0 and set(_views(out)) == set(left)
    qc_report = storage.read_utf8(layout.ViewsBuild(out).qc_report)
    assert not any(c in qc_report for c in gone)  # the rebuilt report no longer names them
    assert records.read_table("near_copy_pairs", out).to_pylist() == after


def test_reimporting_a_grown_dataset_folder_keeps_every_earlier_case_id_and_row(tmp_path):
    """`cohort import` of the same institution export, a month later with more files."""
    import cv2

    from medscope.images import decode_mask, decode_png
    from pipelines.cohort import import_cohort

    root, out = tmp_path / "export", str(tmp_path / "cohort")
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()

    def add(rows, prefix):
        for i, r in enumerate(rows):
            name = f"{prefix}{i:03d}.png"
            cv2.imwrite(str(root / "images" / name), cv2.cvtColor(decode_png(r["image"]), cv2.COLOR_RGB2BGR))
            if r["mask"] is not None:
                cv2.imwrite(str(root / "masks" / name), decode_mask(r["mask"]).astype("uint8") * 255)

    overrides = {"missing_mask_means_lesion_free": True}
    batch1, _ = phantom.phantom_cases(6, seed=0)
    add(batch1, "m1_")
    import_cohort("image-mask-folder", str(root), out, overrides=overrides)
    first = {r["case_id"]: r for r in records.read_table("cases", out).to_pylist()}
    add(phantom.phantom_batch(3, seed=0, batch=2), "m2_")
    import_cohort("image-mask-folder", str(root), out, overrides=overrides)
    second = {r["case_id"]: r for r in records.read_table("cases", out).to_pylist()}
    assert len(first) == 6 and len(second) == 9 and set(first) < set(second)
    assert all(second[c] == row for c, row in first.items())


def test_a_new_case_bridging_earlier_splits_goes_to_the_most_protected_and_is_reported():
    """pin_earlier by hand: earlier a (train, g1) and b (test, g2); new x is a near-copy of both;
    new y joins nothing. a and b cannot move; x goes to test with b's group; y keeps its draw."""
    cases = [{"case_id": c, "source": "s", "patient_id": None, "split": None} for c in ("a", "b", "x", "y")]
    groups = splits.case_groups(cases, [("a", "x"), ("b", "x")])
    drawn = {"a": "validation", "b": "validation", "x": "validation", "y": "train"}
    pinned = {"a": {"split": "train", "group_id": "g1"}, "b": {"split": "test", "group_id": "g2"}}
    split_of, group_of, conflicts = splits.pin_earlier(cases, groups, drawn, pinned)
    assert split_of == {"a": "train", "b": "test", "x": "test", "y": "train"}
    assert group_of["a"] == "g1" and group_of["b"] == group_of["x"] == "g2" and group_of["y"] == groups["y"]
    assert len(conflicts) == 1 and conflicts[0]["earlier"] == {"a": "train", "b": "test"}
    assert conflicts[0]["new"] == ["x"] and conflicts[0]["new_split"] == "test"
