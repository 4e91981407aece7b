"""The fitted classical reader (medscope.models.classical_fit): fitted on the train split of
real views built from the phantom, judged on views and images it was not fitted on."""

import json
import os

import cv2
import numpy as np
import pytest

from medscope.io import records
from medscope.protocols.counterfactual.agent_episode import run_episode
from medscope.protocols.base import Item
from medscope.cohorts import phantom
from medscope.errors import MedScopeError
from medscope.images import decode_png, encode_png
from medscope.models.base import Decoding
from medscope.models.classical import ClassicalReader, read_pixels
from medscope.models.classical_fit import best_threshold, fit_reader, load_artifact, save_artifact
from medscope.views.recipe import load_recipe
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow  # the fast tier (`-m "not slow"`) leaves this file out: docs/testing.md

ROOT = REPO_ROOT


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """(views URI, artifact): 72 phantom cases, the demo's view recipe built without Ray, the
    reader fitted on the train split."""
    from pipelines.views import build_views

    out = tmp_path_factory.mktemp("reader")
    uris = phantom.generate(str(out / "cohort"), n_cases=72, seed=7, n_volumes=0)
    recipe = load_recipe(os.path.join(ROOT, "configs", "views", "demo.yaml"))
    summary = build_views(uris["cases"], str(out / "views"), recipe, engine="local", quiet=True)
    return summary["views_uri"], fit_reader(summary["views_uri"], per_image=40)


def _decisions(views_uri, art, keep):
    out = []
    for r in records.read_table("views", views_uri).to_pylist():
        if r["image"] and keep(r):
            out.append((r["case_id"], r["kind"], read_pixels(decode_png(r["image"]), fitted=art).decision))
    return out


def test_held_out_views_give_positive_esg(fitted):
    """The counterfactual paper §3.8 on the validation + test views (passed QC or not, for enough pairs):
    ESG = P(absent or refer | target_removal) - P(absent or refer | random_removal), computed
    here from the definition; the reader never saw these cases."""
    views, art = fitted
    got = _decisions(views, art, lambda r: r["split"] != "train")

    def rate(kind, decisions):
        d = [x for _, k, x in got if k == kind]
        assert len(d) >= 10, kind
        return sum(x in decisions for x in d) / len(d)

    esg = rate("target_removal", {"absent"}) - rate("random_removal", {"absent"})
    assert esg > 0  # 9/31 - 5/29 = 0.12 here: a weak reader, but one that follows the image
    assert rate("target_removal", {"present"}) < 0.8  # not claiming on every erased view
    assert rate("original", {"present"}) > 0.5
    assert rate("degraded", {"clarify"}) >= 0.5  # the quality gates come before the fitted score


def test_fit_reads_only_the_train_split(fitted):
    views, art = fitted
    table = records.read_table("views", views).to_pylist()
    train = [r for r in table if r["split"] == "train" and r["expected"] != "clarify" and r["image"]]
    assert art["fitted_on"]["images"] == len(train) and art["fitted_on"]["split"] == "train"
    assert art["fitted_on"]["present"] == sum(r["expected"] == "present" for r in train)


def test_erasing_the_lesion_lowers_claims_against_erasing_elsewhere(fitted):
    """Fresh phantom images (another seed): the lesion inpainted with cv2.inpaint (Telea) vs the
    same-shaped region inpainted elsewhere in the image (lesion intact). The reader is weak: it
    says absent on about half the erased images (15/31 here), and on fewer of the controls (12/31)."""
    _, art = fitted
    rows, _ = phantom.phantom_cases(48, seed=11)
    erased_absent = elsewhere_absent = n = 0
    for row in rows:
        if not row["has_lesion"] or row.get("finding") == "pneumothorax":
            continue
        img = decode_png(row["image"])
        mask = cv2.dilate((decode_png(row["mask"], gray=True) > 0).astype(np.uint8), np.ones((5, 5), np.uint8))
        h, w = mask.shape
        moved = np.roll(mask, (h // 2, w // 2), axis=(0, 1))  # the same region, half the image away
        if (moved & mask).any():
            continue
        erased = cv2.inpaint(img, mask * 255, 3, cv2.INPAINT_TELEA)
        elsewhere = cv2.inpaint(img, moved * 255, 3, cv2.INPAINT_TELEA)
        n += 1
        erased_absent += read_pixels(erased, fitted=art).decision == "absent"
        elsewhere_absent += read_pixels(elsewhere, fitted=art).decision == "absent"
    assert n >= 15
    assert erased_absent > elsewhere_absent


def test_fit_is_deterministic_and_the_artifact_round_trips(fitted, tmp_path):
    views, _ = fitted
    a = fit_reader(views, per_image=10)
    b = fit_reader(views, per_image=10)
    assert a == b
    hard = fit_reader(views, per_image=10, hard_rounds=1)  # the optional hard-negative refit
    assert hard["fitted_on"]["hard_rounds"] == 1 and hard["weights"] != a["weights"]
    uri = str(tmp_path / "reader.json")
    save_artifact(a, uri)
    assert load_artifact(uri) == json.loads(json.dumps(a))
    reader = ClassicalReader(name="r", weights=uri)
    img = decode_png(records.read_table("views", views).column("image")[0].as_py())
    item = Item(item_id="v", case_id="c", question="Is there a lesion?", truth="present",
                images=(encode_png(img),), meta={"finding": "lesion", "question_kind": "presence"})
    res = run_episode(item, reader, "agent", Decoding())
    expected = read_pixels(img, fitted=a).decision
    assert res.action == ("clarify" if expected == "clarify" else "answer")
    if expected != "clarify":
        assert res.claims_finding is (expected == "present")


def test_bad_artifacts_and_unfittable_tables_are_clear_errors(fitted, tmp_path):
    views, art = fitted
    with pytest.raises(MedScopeError, match="not found"):
        load_artifact(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**art, "weights": art["weights"][:-1]}))
    with pytest.raises(MedScopeError, match="not a"):
        load_artifact(str(bad))
    with pytest.raises(MedScopeError, match="needs views with and without"):
        fit_reader(views, split="no-such-split")


def test_best_threshold_maximises_balanced_accuracy():
    # worked by hand: cut 2.5 separates {3, 4} from {1, 2}; with a 3 among the absent ones,
    # 2.5 still scores (2/2 + 2/3) / 2 = 0.833 against 3.5's (1/2 + 3/3) / 2 = 0.75
    s = np.array([1.0, 2.0, 3.0, 4.0])
    assert best_threshold(s, np.array([False, False, True, True])) == 2.5
    s2 = np.array([1.0, 2.0, 3.0, 3.0, 4.0])
    assert best_threshold(s2, np.array([False, False, False, True, True])) == 2.5


def test_demo_step_fits_on_train_and_hands_evaluation_the_other_splits(fitted, tmp_path):
    from medscope import config as cfgmod
    from medscope.models.config import ModelsConfig
    from medscope.models.registry import build_model
    from pipelines.demo import DemoContext, step_fit_reader

    views, _ = fitted
    ctx = DemoContext(out=str(tmp_path / "demo"))
    ctx.paths["views"] = views
    step_fit_reader(ctx)
    # evaluation gets the views build itself (its recipe travels with it), never a filtered copy
    assert ctx.paths["views_all"] == views == ctx.paths["views"]
    from medscope import protocols

    items = protocols.load("counterfactual").load_items(ctx.paths["views"])
    split = {r["view_id"]: r["split"] for r in records.read_table("views", views, columns=["view_id", "split"]).to_pylist()}
    # the main test set: the test split only (counterfactual paper Table 3), every passed view of it
    assert items and {split[i.item_id] for i in items} == {"test"}
    assert len(items) == ctx.summary["fit_reader"]["eval_views_passed"]
    entries = {e.name: e for e in cfgmod.load(ModelsConfig, ctx.paths["models_config"]).models}
    assert entries["classical-reader"].options["weights"] == ctx.paths["reader_weights"]
    assert load_artifact(ctx.paths["reader_weights"])["fitted_on"]["split"] == "train"
    assert build_model(entries["classical-reader"])._fitted is not None
    assert entries["always-absent"].kind == "policy"  # the other models are copied as they are
    assert ctx.report_sections and "**test** split only" in ctx.report_sections[-1][1]


def test_demo_step_refuses_a_test_split_without_a_passed_view(fitted, tmp_path):
    """A demo whose test split kept no view through QC stops at the reader step and says why,
    instead of sweeping nothing and failing at scoring on a missing episodes table."""
    import pyarrow.compute as pc

    from pipelines.demo import DemoContext, step_fit_reader

    views, _ = fitted
    table = records.read_table("views", views)
    in_test = pc.equal(table.column("split"), "test")
    assert pc.sum(pc.and_(in_test, table.column("passed"))).as_py() > 0  # the fixture's own test split has some
    failed = table.set_column(table.schema.get_field_index("passed"), "passed",
                              pc.and_(table.column("passed"), pc.invert(in_test)))
    uri = str(tmp_path / "views.parquet")
    records.write_table("views", failed, uri)
    ctx = DemoContext(out=str(tmp_path / "demo"))
    ctx.paths["views"] = uri
    with pytest.raises(MedScopeError, match=r"no view of the test split passed QC \((\d+) test views built\)") as err:
        step_fit_reader(ctx)
    assert int(err.value.args[0].split("(")[1].split()[0]) == pc.sum(in_test).as_py()

