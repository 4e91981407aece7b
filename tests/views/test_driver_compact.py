"""The views build's driver holds its per-case state compactly: near-copy pairs as
integer arrays and their own table, QC features as one matrix with coded columns, the summary
counted by Arrow. Each structure is checked against values worked out independently."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from medscope.io import records
from medscope.errors import MedScopeError
from medscope.qc import detector, near_copies
from medscope.views import features as featmod
from medscope.views.finalize import column_values
from medscope.views.plan import make_plan, pair_table
from medscope.views.recipe import Recipe
from medscope.views.worker import read_features as read_feature_dicts
from medscope.views.worker import write_features


def _corr(a, b):
    return float(np.corrcoef(np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel())[0, 1])


def _tier(d, r):  # the counterfactual paper §4.1's tiers, from their definitions
    if d == 0 and r >= 0.999:
        return "identical"
    return "near_copy" if r >= 0.97 else "shared_anatomy" if r >= 0.90 else "hash_only"


@pytest.fixture(scope="module")
def crosswalk_set():
    """Cases with set hash distances and thumbnail correlations: for each base, an exact copy,
    copies at corr ≈ 0.985 / 0.93 / 0.80 (1/sqrt(1+s^2)) one to three bits away, and unrelated
    cases. Ids are named so that their sorted order is not their order of creation."""
    rng = np.random.default_rng(11)
    hashes, cases = {}, []
    for b in range(4):
        base = rng.normal(128, 30, (64, 64)).astype(np.float32)
        noise = rng.normal(0, 30, (64, 64)).astype(np.float32)
        h0 = int(rng.integers(0, 2**63))
        for k, (s, bits) in enumerate([(0.0, 0), (0.0, 0), (0.175, 1), (0.395, 2), (0.75, 3)]):
            cid = f"{'zyxw'[b]}-{9 - k}"
            hashes[cid] = (h0 ^ ((1 << bits) - 1), base + s * noise)
            cases.append({"case_id": cid, "source": "nih" if k % 2 else "siim", "imaging_type": "xr",
                          "patient_id": None, "split": None, "has_lesion": bool(k % 2)})
    for u in range(6):
        cid = f"u-{u}"
        hashes[cid] = (int(rng.integers(0, 2**63)), rng.normal(128, 30, (64, 64)).astype(np.float32))
        cases.append({"case_id": cid, "source": "nih", "imaging_type": "xr", "patient_id": None, "split": None,
                      "has_lesion": False})
    return cases, hashes


def _brute_force(hashes):
    ids = sorted(hashes)
    want = []
    for x in range(len(ids)):
        for y in range(x + 1, len(ids)):
            (ha, ta), (hb, tb) = hashes[ids[x]], hashes[ids[y]]
            d = bin(ha ^ hb).count("1")
            if d <= 8:
                r = _corr(ta, tb)
                want.append((ids[x], ids[y], d, r, _tier(d, r)))
    return want


def test_the_pairs_table_holds_every_hash_close_pair_found_by_brute_force(crosswalk_set):
    cases, hashes = crosswalk_set
    plan, report, table, _ = make_plan(cases, hashes, Recipe(seed=0))
    want = _brute_force(hashes)
    assert {w[4] for w in want} == set(near_copies.TIERS)  # every tier occurs: the check can fail
    got = records.to_table("near_copy_pairs", table).to_pylist()  # the registered schema
    assert [(r["a"], r["b"], r["distance"], r["tier"]) for r in got] == [(a, b, d, t) for a, b, d, _, t in want]
    assert [r["correlation"] for r in got] == pytest.approx([w[3] for w in want], abs=1e-9)
    assert report["n_near_copy_pairs"] == len(want)
    assert report["pairs_by_tier"] == {t: sum(w[4] == t for w in want) for t in near_copies.TIERS}
    # copies (identical, near_copy) share a group; cross-cohort pairs are the copies across sources
    src = {c["case_id"]: c["source"] for c in cases}
    for a, b, _, _, t in want:
        if t in near_copies.COPY_TIERS:
            assert plan[a]["group_id"] == plan[b]["group_id"]
    assert sorted((p["a"], p["b"]) for p in report["cross_cohort_pairs"]) == sorted(
        (a, b) for a, b, _, _, t in want if t in near_copies.COPY_TIERS and src[a] != src[b])


def test_pair_arrays_put_the_smaller_id_first_whatever_the_input_order(crosswalk_set):
    _, hashes = crosswalk_set
    ids = sorted(hashes, reverse=True)  # creation order opposite to id order
    found = near_copies.near_copy_arrays(ids, [hashes[i][0] for i in ids], [hashes[i][1] for i in ids])
    rows = pair_table(ids, found).to_pylist()
    assert [(r["a"], r["b"], r["distance"]) for r in rows] == [(a, b, d) for a, b, d, _, _ in _brute_force(hashes)]
    # the list-of-Pair form used by `medscope crosswalk` is the same pairs
    pairs = near_copies.find_near_copies(ids, [hashes[i][0] for i in ids], [hashes[i][1] for i in ids])
    assert [(p.a, p.b, p.distance, p.correlation, p.tier) for p in pairs] == [
        (r["a"], r["b"], r["distance"], r["correlation"], r["tier"]) for r in rows]


def test_no_hashed_case_gives_an_empty_pairs_table():
    cases = [{"case_id": "a", "source": "s", "imaging_type": "xr", "patient_id": None, "split": None,
              "has_lesion": False}]
    _, report, table, _ = make_plan(cases, {}, Recipe(seed=0))
    assert records.to_table("near_copy_pairs", table).num_rows == 0 and report["pairs_by_tier"] == {}


def _feature_rows(n_cases: int, seed: int) -> dict[str, list[dict]]:
    rng = np.random.default_rng(seed)
    out = {}
    for c in range(n_cases):
        cid = f"case-{c:02d}"
        rows = []
        for tool in ("telea", "transplant"):
            shift = 0.8 if tool == "telea" else 0.0
            rows.append({"view_id": f"{cid}/target_removal/{tool}", "case_id": cid, "kind": "target_removal",
                         "tool": tool, "role": "target", "x": (rng.normal(shift, 1, 7)).tolist()})
            for role, mu in (("edited", 0.6), ("unedited", 0.0)):
                rows.append({"view_id": f"{cid}/random_removal/{tool}", "case_id": cid, "kind": "random_removal",
                             "tool": tool, "role": role, "x": rng.normal(mu, 1, 7).tolist()})
        out[cid] = rows
    return out


def test_feature_table_rows_equal_the_dict_rows_and_feed_the_detector_identically(tmp_path):
    folder = str(tmp_path / "features")
    for cid, rows in _feature_rows(24, seed=5).items():
        write_features(rows, folder, cid)
    write_features([], folder, "empty-case")  # a case without edited regions
    dicts = sorted(read_feature_dicts(folder), key=lambda f: (f["view_id"], f["role"]))
    table = featmod.read_features(folder, merge_every=5)  # several merges
    assert len(table) == len(dicts) == 24 * 6 and table.x.shape == (24 * 6, 7)
    for row, d in zip(table, dicts):
        assert {k: row[k] for k in ("view_id", "case_id", "kind", "tool", "role")} == {
            k: d[k] for k in ("view_id", "case_id", "kind", "tool", "role")}
        assert row["x"].tolist() == d["x"]  # the same float64 values, bit for bit
    # the cross-case QC reads either form to the same numbers
    m1, r1 = detector.train_edit_detector(dicts, seed=1)
    m2, r2 = detector.train_edit_detector(table, seed=1)
    assert r1 == r2 and r1["n_regions"] == 24 * 4
    assert detector.score_targets(m1, dicts) == detector.score_targets(m2, table)
    keep = {f"case-{c:02d}" for c in range(24)}
    assert detector.adversarial_filter(dicts, keep, seed=2) == detector.adversarial_filter(table, keep, seed=2)


def test_feature_vectors_of_different_lengths_are_refused(tmp_path):
    folder = str(tmp_path / "features")
    rows = _feature_rows(2, seed=1)
    rows["case-01"][0]["x"] = rows["case-01"][0]["x"][:5]
    for cid, r in rows.items():
        write_features(r, folder, cid)
    with pytest.raises(MedScopeError, match="different lengths"):
        featmod.read_features(folder)


def test_column_values_share_repeated_strings_and_keep_nulls():
    col = pa.chunked_array([["b", None, "a"], ["b", "a", None]])
    got = column_values(col)
    assert got == col.to_pylist() == ["b", None, "a", "b", "a", None]
    assert got[0] is got[3]  # one str object per distinct value
    assert column_values(pa.chunked_array([[1.5, None]])) == [1.5, None]
    assert column_values(pa.chunked_array([], pa.string())) == []


def test_summary_counts_per_key_match_a_hand_count():
    from medscope.views.summary import summarize

    views = pa.table({"kind": ["original", "target_removal", "target_removal", "degraded"],
                      "tool": ["", "telea", "telea", "x"], "imaging_type": ["us", "us", "xr", "xr"],
                      "passed": [True, False, True, False], "reject_reason": [None, "edit_detected", None, "x"],
                      "split": ["train", None, "test", None]})
    s = summarize(views, [{"reason": "edit_detected"}], {"crosswalk": {"pairs_by_tier": {"hash_only": 3}}})
    assert (s["views"], s["passed"]) == (4, 2)
    assert s["by_kind"] == {"degraded": {"views": 1, "passed": 0}, "original": {"views": 1, "passed": 1},
                            "target_removal": {"views": 2, "passed": 1}}
    assert s["by_split"] == {"None": {"views": 2, "passed": 0}, "test": {"views": 1, "passed": 1},
                             "train": {"views": 1, "passed": 1}}
    assert s["reject_reasons"] == {"edit_detected": 1} and s["near_copy_pairs_by_tier"] == {"hash_only": 3}


def test_the_driver_uses_mimalloc_unless_the_environment_names_an_allocator(monkeypatch):
    from pipelines.views import use_driver_allocator

    before = pa.default_memory_pool()
    try:
        monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "system")
        pa.set_memory_pool(pa.system_memory_pool())
        assert use_driver_allocator() == "system"
        monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL")
        assert use_driver_allocator() == "mimalloc"
    finally:
        pa.set_memory_pool(before)


def test_the_hash_store_gives_back_each_case_hash_and_thumbnail(tmp_path):
    from medscope.views.stream import HashStore

    rng = np.random.default_rng(4)
    exact = {f"c{i}": (int(rng.integers(0, 2**63)) * 2 + 1, rng.integers(0, 256, (64, 64)).astype(np.float32))
             for i in range(5)}
    fractional = ("f0", (2**64 - 1, rng.random((64, 64)).astype(np.float32)))  # not exact in uint8
    store = HashStore()
    for cid, (h, t) in [*exact.items(), fractional]:
        store.add(cid, h, t)
    store.seal()
    assert len(store) == 6 and list(store) == [*exact, "f0"] and "f0" in store and "zz" not in store
    for cid, (h, t) in [*exact.items(), fractional]:
        got_h, got_t = store[cid]
        assert got_h == h and np.array_equal(got_t.astype(np.float32), t)
    assert store["c0"][1].dtype == np.uint8 and store["f0"][1].dtype == np.float32
    with pytest.raises(MedScopeError, match="64 × 64"):
        store.add("small", 1, np.zeros((8, 8), np.float32))
    store.close()


def test_a_plan_from_the_hash_store_equals_the_plan_from_a_dict(crosswalk_set):
    from medscope.views.stream import HashStore

    cases, hashes = crosswalk_set
    store = HashStore()
    for cid, (h, t) in hashes.items():
        store.add(cid, h, np.round(np.clip(t, 0, 255)))  # an 8-bit image's thumbnail: whole numbers
    exact = {cid: store[cid] for cid in store}
    p1, r1, t1, g1 = make_plan(cases, store, Recipe(seed=0))
    p2, r2, t2, g2 = make_plan(cases, exact, Recipe(seed=0))
    assert p1 == p2 and r1 == r2 and t1.equals(t2) and t1.num_rows > 0
    store.close()


def test_the_staging_table_is_written_in_files_of_a_few_row_groups_and_read_back_whole(tmp_path, monkeypatch):
    from medscope.io import storage
    from medscope.views import stream
    from medscope.views.synthetic_cases import synthetic_cases
    from medscope.views.worker import case_key

    monkeypatch.setattr(stream, "ROW_GROUPS_PER_FILE", 2)
    rows = synthetic_cases(9, seed=1, size=48)
    cases = str(tmp_path / "cases.parquet")
    records.write_table("cases", rows, cases)
    staged_uri = str(tmp_path / "staging" / "cases.parquet")
    done = {case_key(rows[0]["case_id"])}  # one case already built: not in a block
    staged = stream.stage_cases(cases, staged_uri, done, case_key, batch_rows=2)
    # 9 cases in blocks of 2: 5 row groups, 2 a file: 3 files
    assert sorted(f.rsplit("/", 1)[-1] for f in storage.list_files(str(tmp_path / "staging"))) == [
        "cases-00000.parquet", "cases-00001.parquet", "cases-00002.parquet"]
    assert [rg for rg, _ in staged.blocks] == [0, 1, 2, 3, 4]
    by_id = {r["case_id"]: r for r in rows}
    images = stream.StagedImages(staged_uri, staged.where, open_files=1)  # reopening files as it goes
    got = [c for rg, ids in staged.blocks for c in images.block(rg, ids)]
    assert [c["case_id"] for c in got] == [r["case_id"] for r in rows[1:]]
    assert all(c["image"] == by_id[c["case_id"]]["image"] for c in got)
    for r in reversed(rows):  # borrowed images, by their (row group, row)
        assert images.image(r["case_id"]) == r["image"]
    images.close()
    staged.hashes.close()


def test_rejects_sorted_as_arrow_come_in_the_order_of_the_dict_sort():
    from medscope.views.summary import sorted_rejects

    r = records.reject_row
    staged = [r("views", "s", "c2", "load", "duplicate_case_id"), r("views", "s", "c1", "load", "duplicate_case_id")]
    parts_rows = [r("views", "s", "c1", "view", "unreadable_image", "truncated", "OSError"),
                  r("views", "s", "c1", "view", "unreadable_image", "", "ValueError"),  # no detail: sorts as ""
                  r("views", "t", "c1", "load", "duplicate_case_id")]  # ties staged[1]: given order kept
    qc = [r("views", "s", "c1/target_removal/telea", "qc", "edit_detected"), r("views", "s", "c0", "qc", "x", "é")]
    want = sorted(staged + parts_rows + qc, key=lambda x: (x["item_id"], x["stage"], x["reason"], x["detail"] or ""))
    got = sorted_rejects([records.to_table("rejects", staged), records.to_table("rejects", parts_rows),
                          records.to_table("rejects", qc)])
    assert got.to_pylist() == want
    assert [x["source"] for x in want if x["item_id"] == "c1" and x["stage"] == "load"] == ["s", "t"]
    assert sorted_rejects([records.to_table("rejects", [])]).num_rows == 0


def test_parts_read_merged_equal_the_whole_folder_read(tmp_path):
    folder = str(tmp_path / "rejects")
    for i in range(7):
        records.write_part("rejects", [records.reject_row("views", "s", f"c{i}", "view", "bad", str(j)) for j in range(i % 3)],
                           folder, f"k{i}")
    got = featmod.read_parts("rejects", folder, merge_every=3)
    assert got.equals(records.read_table("rejects", folder)) and got.num_rows == 6
    assert featmod.read_parts("rejects", str(tmp_path / "none"), ["item_id"]).column_names == ["item_id"]
