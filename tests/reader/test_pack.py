"""Reader-study packs and their analysis (counterfactual paper §7), without a browser.

Hand-worked figures for the scripted readers of tests/fixtures/reader_study.py (4 images per kind):

Reader A, edit ratings: lesion 1,2,2,3; lesion-free 1,1,2,4; erased 4,3,2,1; control 3,3,1,2.
  Edited vs unmodified: negatives {1:3, 2:3, 3:1, 4:1}; each positive scores (#neg below +
  half #neg equal): 4 -> 7.5; 3 -> 6.5 (x3); 2 -> 4.5 (x2); 1 -> 1.5 (x2); sum 39 -> AUC 39/64.
  Erased vs control: control {1,2,3,3}: 4 -> 4; 3 -> 2 + 1 = 3; 2 -> 1.5; 1 -> 0.5; 9/16.
  Erased vs unmodified with finding: lesion {1,2,2,3}: 4 -> 4; 3 -> 3.5; 2 -> 1 + 1 = 2; 1 -> 0.5; 10/16.
  Rated edited (3 or 4): lesion 1/4, lesion-free 1/4, erased 2/4, control 2/4.
  "Yes": lesion 3/4, lesion-free 1/4, erased 1/4 (the residual findings), control 3/4.
  Clopper-Pearson of 1/4: lower = 1 - 0.975^(1/4) (the k=1 closed form); upper p solves
  P(X <= 1 | n=4, p) = 0.025.
Reader B, edited vs unmodified: negatives {1:5, 2:1, 3:2}; 4 -> 8 (x2); 3 -> 6 + 1 (x2);
  2 -> 5 + 0.5 (x3); 1 -> 2.5; sum 49 -> 49/64. Residual 2/4.
Kappa A-B on edited yes/no: 4 both yes, 8 both no, 2 + 2 discordant: po = 12/16; both readers
  6 yes of 16: pe = (6^2 + 10^2)/16^2 = 136/256; kappa = (192 - 136)/(256 - 136) = 7/15.
Kappa on the clinical answer: 9 of 16 agree; margins A (yes 8, no 7, cannot tell 1), B (8, 7, 1):
  pe = 114/256; kappa = (144 - 114)/(256 - 114) = 15/71.
Majority (localized erased images): A no,yes,no,no vs B yes,yes,no,no -> 1 majority yes, 1 tie.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from scipy.stats import binom

from medscope.errors import MedScopeError
from medscope.images import decode_png
from medscope.io import records
from medscope.reader import KEY_FILE, PAGE_FILE, READING_DIR
from medscope.reader.analysis import analyse
from medscope.reader.pack import write_pack
from medscope.reader.rating_stats import clopper_pearson
from medscope.reader.sample import draw_sample, source_quotas
from medscope.reader.study_report import reader_section
from pipelines.cli import main

from tests.fixtures.bad_input import _err
from tests.fixtures.reader_study import answer_file, build_small_views, READER_A, READER_B, scripted


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    return build_small_views(tmp_path_factory.mktemp("reader-views"))


def _chunks(png: bytes) -> list[str]:
    out, i = [], 8
    while i < len(png):
        (n,) = struct.unpack(">I", png[i:i + 4])
        out.append(png[i + 4:i + 8].decode("ascii"))
        i += 12 + n
    return out


def test_source_quotas_follow_each_sources_share():
    # 20 and 10 cases, 8 draws: exact 5.33 / 2.67 -> floors 5 / 2, the one left to the larger remainder
    assert source_quotas({"a": 20, "b": 10}, 8) == {"a": 5, "b": 3}
    assert source_quotas({"a": 3, "b": 3, "c": 3}, 9) == {"a": 3, "b": 3, "c": 3}
    with pytest.raises(MedScopeError):
        source_quotas({"a": 2}, 3)


def test_pack_is_blinded_stratified_one_image_per_case_and_keyed_by_hash(tmp_path, views):
    key = write_pack(views, str(tmp_path / "p"), name="main", per_kind=4, seed=5, size=200)
    items = key["items"]
    assert [sum(i["reader_kind"] == k for i in items) for k in ("lesion", "erased", "control", "lesion_free")] == [4] * 4
    assert len({i["case_id"] for i in items}) == 16  # one image per case
    table = records.read_table("views", views + "/views.parquet").to_pylist()
    view = {v["view_id"]: v for v in table}
    for it in items:  # from the main test, passed, the view kind each reader kind names
        v = view[it["view_id"]]
        assert v["split"] == "test" and v["passed"]
        assert v["kind"] == {"lesion": "original", "erased": "target_removal", "control": "random_removal",
                             "lesion_free": "natural_negative"}[it["reader_kind"]]
        assert v["tool"] == ("none" if it["reader_kind"] in ("lesion", "lesion_free") else "telea")
    # each source's share of the lesion kinds follows its share of eligible lesion cases (quota by hand)
    eligible = {}
    for v in table:
        if v["split"] == "test" and v["passed"] and v["kind"] in ("original", "target_removal", "random_removal"):
            eligible.setdefault(v["case_id"], set()).add((v["kind"], v["source"]))
    full = [next(iter(s))[1] for s in eligible.values() if len(s) == 3]
    quota = source_quotas({s: full.count(s) for s in set(full)}, 12)
    got = [i["source"] for i in items if i["reader_kind"] != "lesion_free"]
    assert {s: got.count(s) for s in quota} == quota

    reading = tmp_path / "p" / READING_DIR
    page = (reading / PAGE_FILE).read_text()
    assert key["pack_hash"] in page
    for it in items:  # no id, kind, tool or source leaks into the page or a file name
        assert it["view_id"] not in page and it["case_id"] not in page
    for word in ("target_removal", "random_removal", "natural_negative", "telea", "alpha", "beta", '"erased"'):
        assert word not in page
    assert "http://" not in page and "https://" not in page  # no network
    pngs = sorted((reading / "images").iterdir())
    assert len(pngs) == 16 and not (reading / KEY_FILE).exists()
    for f in pngs:
        data = f.read_bytes()
        assert set(_chunks(data)) == {"IHDR", "IDAT", "IEND"}  # no metadata chunk
        assert max(decode_png(data).shape[:2]) == 200 and len(f.stem) == 16
    with pytest.raises(MedScopeError, match="never rewritten"):
        write_pack(views, str(tmp_path / "p"), name="main", per_kind=4, seed=5)
    # an image changed after the key was written: the pack no longer matches its hash
    pngs[0].write_bytes(pngs[1].read_bytes())
    with pytest.raises(MedScopeError, match="do not match"):
        analyse([str(tmp_path / "p")], [], str(tmp_path / "out"))


def test_supplement_draws_new_cases_localized_first_and_tags_stress_tests(tmp_path, views):
    first = write_pack(views, str(tmp_path / "main"), name="main", per_kind=2, seed=1)
    used = {i["case_id"] for i in first["items"]}
    rows = records.read_table("views", views + "/views.parquet").to_pylist()
    # three lesion cases become pneumothorax in a copy of the table: a supplement takes them last
    ids = sorted({r["case_id"] for r in rows if r["kind"] == "target_removal" and r["split"] == "test"
                  and r["passed"] and r["case_id"] not in used})
    ptx = set(ids[:3])
    for r in rows:
        r["source"] = "alpha"  # one source, so the localized-first order decides alone
        if r["case_id"] in ptx:
            r["finding"] = "pneumothorax"
    chosen, notes = draw_sample(rows, per_kind=2, seed=1, exclude_cases=used, localized_first=True)
    assert not ({c["case_id"] for c in chosen} & used)
    n_lesion = notes["eligible_lesion_cases"]
    assert n_lesion == len(ids) and n_lesion - 3 >= 6  # enough localized cases for 3 x 2
    assert [c["stress_tag"] for c in chosen if c["reader_kind"] != "lesion_free"] == [None] * 6
    # take every eligible lesion case it can: the pneumothorax ones come in only after the localized
    chosen, notes = draw_sample(rows, per_kind=n_lesion // 3, seed=1, exclude_cases=used, localized_first=True)
    drawn = 3 * notes["per_kind"]
    tagged = [c for c in chosen if c["stress_tag"] == "pneumothorax"]
    assert len(tagged) == max(0, drawn - (n_lesion - 3)) and {c["case_id"] for c in tagged} <= ptx
    assert all(c["stress_tag"] is None for c in chosen if c["case_id"] not in ptx)
    supp = write_pack(views, str(tmp_path / "supp"), name="supplement-1", per_kind=2, seed=1,
                      after=[str(tmp_path / "main")])
    assert not ({i["case_id"] for i in supp["items"]} & used)
    assert supp["after"] == [{"name": "main", "pack_hash": first["pack_hash"]}]


def test_analysis_reproduces_hand_worked_auc_kappa_and_clopper_pearson(tmp_path, views):
    key = write_pack(views, str(tmp_path / "p"), name="main", per_kind=4, seed=5)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(answer_file(key, "A", scripted(key, READER_A)))
    b.write_text(answer_file(key, "B", scripted(key, READER_B)))
    other = tmp_path / "other.json"
    other.write_text(answer_file(dict(key, pack_hash="0" * 64, name="old"), "C", scripted(key, READER_A)))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    res = analyse([str(tmp_path / "p")], [str(a), str(b), str(other), str(broken)], str(tmp_path / "out"))

    ra, rb = res["readers"]["A"], res["readers"]["B"]
    assert ra["auc_edited_vs_unmodified"] == pytest.approx(39 / 64)
    assert ra["auc_erased_vs_control"] == pytest.approx(9 / 16)
    assert ra["auc_erased_vs_original"] == pytest.approx(10 / 16)
    assert rb["auc_edited_vs_unmodified"] == pytest.approx(49 / 64)
    assert {k: v["edited"] for k, v in ra["kinds"].items()} == {"lesion": 0.25, "erased": 0.5, "control": 0.5,
                                                                "lesion_free": 0.25}
    assert {k: v["yes"] for k, v in ra["kinds"].items()} == {"lesion": 0.75, "erased": 0.25, "control": 0.75,
                                                             "lesion_free": 0.25}
    r = ra["residual"]
    assert (r["k"], r["n"], r["rate"]) == (1, 4, 0.25)
    assert r["ci_low"] == pytest.approx(1 - 0.975 ** 0.25)
    assert binom.cdf(1, 4, r["ci_high"]) == pytest.approx(0.025)  # the exact upper bound's definition
    assert r["below_acceptable"] is False
    assert (rb["residual"]["k"], rb["residual"]["n"]) == (2, 4)
    (pair,) = res["agreement"]
    assert pair["n"] == 16
    assert pair["kappa_edited"] == pytest.approx(7 / 15)
    assert pair["kappa_clinical"] == pytest.approx(15 / 71)
    m = res["majority_localized"]
    assert (m["k"], m["n"], m["ties"], m["readers_per_image"]) == (1, 4, 1, [2])
    assert set(res["by_source"]) == {"alpha", "beta"}
    assert sum(s["n"] for s in res["by_source"].values()) == 32
    assert res["readers"]["A"]["specialty"] == "Radiology" and res["readers"]["A"]["years_experience"] == 7
    reasons = {(x["source"], x["reason"]) for x in res["rejects"]}
    assert reasons == {("other.json", "unknown_pack"), ("broken.json", "unreadable_answer_file")}
    assert records.read_table("rejects", str(tmp_path / "out" / "rejects.parquet")).num_rows == 2
    assert res["files_rejected"] == ["broken.json", "other.json"]
    title, blocks = reader_section(res)
    assert title == "Reader study" and any("0.609" in str(bl) for bl in blocks)
    # `medscope report --reader-analysis` adds the same section to a run's report
    from pipelines.report import extra_sections

    ((title2, blocks2),) = extra_sections(reader_analysis=str(tmp_path / "out"))
    assert title2 == "Reader study" and any("0.609" in str(bl) for bl in blocks2)


def test_clopper_pearson_matches_the_papers_bound():
    # §7: "0/32 gives 10.9%" upper bound; with k = 0 the bound is 1 - (alpha/2)^(1/n)
    lo, hi = clopper_pearson(0, 32)
    assert lo == 0 and hi == pytest.approx(1 - 0.025 ** (1 / 32)) and round(100 * hi, 1) == 10.9


def test_supplement_merges_and_a_second_file_of_the_same_reader_is_rejected(tmp_path, views):
    main_key = write_pack(views, str(tmp_path / "main"), name="main", per_kind=2, seed=2)
    supp_key = write_pack(views, str(tmp_path / "supp"), name="supp", per_kind=1, seed=2, after=[str(tmp_path / "main")])
    def all_no(key):
        return {i["image"]: ("probably_real", "no") for i in key["items"]}
    files = []
    for name, key, ans in [("m.json", main_key, all_no(main_key)), ("s.json", supp_key, all_no(supp_key)),
                           ("m-partial.json", main_key, dict(list(all_no(main_key).items())[:3]))]:
        (tmp_path / name).write_text(answer_file(key, "A", ans))
        files.append(str(tmp_path / name))
    out = tmp_path / "out"
    assert main(["reader", "analyse", "--pack", str(tmp_path / "main"), "--pack", str(tmp_path / "supp"),
                 "--answers", *files, "--out", str(out)]) == 0
    res = json.loads((out / "analysis.json").read_text())
    assert res["readers"]["A"]["n"] == 8 + 4 and res["readers"]["A"]["packs"] == ["main", "supp"]
    rej = records.read_table("rejects", str(out / "rejects.parquet")).to_pylist()
    assert [(r["source"], r["reason"]) for r in rej] == [("m-partial.json", "duplicate_reader_pack")]
    # no reader rated anything edited: AUC of all-equal ratings is 0.5 (ties count half)
    assert res["readers"]["A"]["auc_edited_vs_unmodified"] == 0.5
    assert np.isfinite(res["majority_localized"]["ci_high"])
    assert "Reader study" in (out / "report.md").read_text()


@pytest.mark.timeout(120)
def test_key_json_that_is_a_list_names_the_file(tmp_path):
    from medscope.reader import pack

    (tmp_path / "key.json").write_text("[1, 2]")
    assert "key.json" in _err(lambda: pack.read_key(str(tmp_path)))


@pytest.mark.timeout(120)
def test_utf16_answer_file_is_decoded(tmp_path):
    from medscope.reader import answers

    f = tmp_path / "a.json"
    f.write_bytes(json.dumps({"format": answers.ANSWERS_FORMAT, "pack_hash": "zz", "reader": {"id": "r"}}).encode("utf-16"))
    _, rejects, _ = answers.load_answers([str(f)], {"h": {"items": []}})
    assert [r["reason"] for r in rejects] == ["unknown_pack"]  # decoded and parsed: only the pack is unknown


@pytest.mark.timeout(120)
def test_reader_answer_file_with_wrong_types_is_one_reject(tmp_path):
    from medscope.reader import answers

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": answers.ANSWERS_FORMAT, "pack_hash": "h", "reader": "not a mapping"}))
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 50_000)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"format": answers.ANSWERS_FORMAT, "pack_hash": "nope", "reader": {"id": "r1"}}))
    keys = {"h": {"items": [], "name": "p"}}
    _, rejects, _ = answers.load_answers([str(bad), str(deep), str(good)], keys)
    reasons = {r["item_id"]: r["reason"] for r in rejects}
    assert reasons[str(bad)] == "malformed_answer_file"
    assert reasons[str(deep)] == "unreadable_answer_file"
    assert reasons[str(good)] == "unknown_pack"  # the next file is still read
