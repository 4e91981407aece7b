"""Values the implementation chose where the counterfactual paper is silent ("additions"), in one list.

Each entry names the value, the file where it is set (marked ``addition:`` there) and why. The
same list is the table "Additions" of docs/counterfactual.md (a test holds the two together), and the
report's Run section names the ones in force for its run (``in_force``).
"""

from __future__ import annotations

from dataclasses import dataclass

from medscope.io import layout, safe_text, storage


@dataclass(frozen=True)
class Addition:
    id: str
    value: str
    where: str  # the file that sets it, marked "addition:" there
    scope: str  # views | scoring | cost_matrix | training | probe | plan
    why: str


ADDITIONS = (
    Addition("jpeg_quality", "5", "medscope/views/recipe.py", "views",
             "§3.2 names JPEG compression without a quality"),
    Addition("motion_length_frac", "1/15 of the long side", "medscope/views/recipe.py", "views",
             "§3.2 names motion blur without a length"),
    Addition("mask_touches_border", "lesion masks touching the image border are excluded", "medscope/views/build.py",
             "views", "the ring of §3.3 and the erasure context would be cut off; the paper excludes by size only"),
    Addition("control_away_px", "5 px between the control edit and the dilated lesion",
             "medscope/views/recipe.py", "views", "§3.2 says only 'does not touch the dilated lesion'"),
    Addition("split_fractions", "train 0.7 / validation 0.15 / test 0.15", "medscope/views/recipe.py", "views",
             "the paper gives its split sizes, not fractions for a new cohort"),
    Addition("adversarial_max_drop_frac", "at most half of the kept cases dropped by adversarial filtering",
             "medscope/views/recipe.py", "views", "§3.3 gives the AUC bound (0.6), not a cap on what is dropped"),
    Addition("edit_detector", "ridge logistic regression on seven texture features, trained on control edits "
             "against the same regions of the original", "medscope/qc/detector.py", "views",
             "§3.3 says 'a trained edit detector' and no more"),
    Addition("offline_erasure_tool", "graft / exemplar / texture / fsr_fast / shiftmap (no weights) where LaMa cannot run",
             "medscope/views/tools.py", "views", "LaMa needs a GPU and downloaded weights; §3.2 uses LaMa"),
    Addition("graft_parameters", "6-px ring, one of the 4 best ring matches, match blur 1.5 px, spread floor 25 grey², "
             "texture weight 10, background penalty 10, detail blur 2 px, noise gain within 0.5–2",
             "medscope/views/graft.py", "views", "graft is our offline tool; the paper has no such tool"),
    Addition("ellipse_max_aspect", "3", "medscope/views/geometry.py", "views",
             "§3.7 C1: 'random aspect ratio' without a range"),
    Addition("grounded_box_rule", "grounded accuracy gives no credit to a box over half the image",
             "configs/cost_matrices/table2.yaml", "scoring",
             "§3.4 applies the half-image rule to the box bonus; §3.8's grounded accuracy states IoU >= 0.3 only"),
    Addition("sensitivity", "P(correct | O), original views only", "medscope/analysis/view_metrics.py", "scoring",
             "not a paper metric: C3's 'sensitivity on unedited lesions' is CCR"),
    Addition("decision_risk", "decision_risk@c and decision_aurc over O, T, R, N with ties averaged",
             "medscope/analysis/view_metrics.py", "scoring", "§3.8's AURC over O, R rewards 'always present'"),
    Addition("extra_tests", "exact McNemar, TOST (margin 0.05) and accuracy against chance in the report",
             "medscope/analysis/significance.py", "scoring", "counterfactual paper §3.9 names the bootstrap and Fisher only"),
    Addition("critical_findings", "pneumothorax (ChestX-Det, SIIM-ACR); no finding of the other sources",
             "configs/datasets/chestx-det.yaml", "scoring",
             "Table 2 charges -4.0 for a missed critical finding; the paper does not list which findings are critical"),
    Addition("critical_alternatives", "critical wrong answers -1 (wrong_0.5) and -2 (wrong_1)",
             "configs/cost_matrices/wrong_1.yaml", "cost_matrix",
             "§5.5 gives the alternative wrong-answer penalties, not their critical ones (double, as Table 2)"),
    Addition("c1_guard", "0.03 on erased-lesion claims and CCR", "configs/plans/checks_c1_c4.yaml", "plan",
             "§3.7 C1 names the constraints, not their size"),
    Addition("p_zoom", "0.5", "medscope/training/recipes.py", "training",
             "§3.5 'optionally a zoom' (always under 2% of the image) without a rate"),
    Addition("warmup_frac", "3% of the steps", "medscope/training/recipes.py", "training", "§3.5 gives no schedule"),
    Addition("lr_decay", "linear decay to 0 after the warm-up", "medscope/training/trainers.py", "training",
             "§3.5 gives no schedule"),
    Addition("gradient_clipping", "1.0", "medscope/training/recipes.py", "training", "§3.5 gives none"),
    Addition("stage2_batch", "4", "configs/train/stage2_rft.yaml", "training", "§3.5 gives no stage-2 batch"),
    Addition("c4_lr", "5e-5", "configs/train/paired_c4.yaml", "training", "§3.7 C4 gives no learning rate"),
    Addition("stage2_success", "a successful episode is the view's expected action (§3.2): clarify on a degraded "
             "view, a correct answer on every other", "medscope/training/episodes.py", "training",
             "§3.5 keeps 'the best successful episode' without saying what succeeds; Table 2 also pays a correct "
             "answer on a degraded view (+0.25)"),
    Addition("stage2_sample_sizes", "200 views of each kind, and 500 lesion-free and 300 lesion-erased on top "
             "(700 and 500 of those kinds)", "medscope/training/recipes.py", "training",
             "§3.5's '200 training views per view kind, 500 lesion-free and 300 lesion-erased views' also reads "
             "as 500 and 300 in all"),
    Addition("c4_first_action", "cases whose original makes no tool call have no first-action term",
             "medscope/training/trainers.py", "training",
             "§3.7 C4 names 'the agent's first tool call' and does not say what a trajectory without one adds"),
    Addition("probe_size", "whole views resized to 224 px", "medscope/qc/visibility.py", "probe",
             "§5.4 gives no input size"),
    Addition("identical_corr", "tier identical: hash distance 0 and 64 px correlation >= 0.999",
             "medscope/qc/near_copies.py", "views",
             "§4.1 reports its one recurring image at distance 0, correlation 1.000, and sets no threshold for it"),
    Addition("file_hash", "one file = one SHA-256 of its bytes", "medscope/qc/near_copies.py", "views",
             "§4.1 says 'the crosswalk hashes files', not with which content hash"),
    Addition("flat_image_correlation", "two flat thumbnails correlate 1 when equal, else 0",
             "medscope/qc/near_copies.py", "views", "Pearson correlation is undefined for a constant image"),
    Addition("large_group", "a hash-close group of more than 1,000 images is not paired: reported whole "
             "(size, members, a representative) and treated as one near-copy group",
             "medscope/qc/near_copies.py", "views",
             "§4.1 confirms every hash-close pair by pixel correlation; a group's pairs grow with the square of its size"),
)

_PAPER_TOOLS = {"lama", "transplant", "telea", "sd"}


def _views_recipe(manifest: dict) -> dict | None:
    views = manifest.get("views")
    if not views:
        return None
    try:
        uri = layout.ViewsBuild(layout.folder_of("views", views)).recipe
        return safe_text.read_json_object(uri).get("recipe") if storage.exists(uri) else None
    except Exception:  # a views table outside a build folder: its recipe is unknown
        return None


def in_force(manifest: dict) -> list[str]:
    """The additions a scored run relies on: the scoring's always, the cost matrix's when it is
    an alternative, and its views recipe's when the build folder records the recipe.

    Parameters
    ----------
    manifest : dict
        A scored run's ``run.json``; reads ``cost_matrix`` and ``views``.

    Returns
    -------
    list of str
        "id (value)" for each scoring addition (``critical_findings``: the shipped cohort configs'
        declaration; a views table built from a user's config has its own), ``critical_alternatives`` for the wrong_0.5 / wrong_1
        matrices, then the views recipe's additions with its values, or a line saying the recipe is
        not recorded.
    """
    by_id = {a.id: a for a in ADDITIONS}
    ids = ["grounded_box_rule", "sensitivity", "decision_risk", "extra_tests", "critical_findings"]
    if str(manifest.get("cost_matrix", "")).split("/")[-1].removesuffix(".yaml") in ("wrong_0.5", "wrong_1"):
        ids.append("critical_alternatives")
    recipe = _views_recipe(manifest)
    out = [f"{by_id[i].id} ({by_id[i].value})" for i in ids]
    if recipe is None:
        out.append("views recipe not recorded beside the views table (its additions: docs/counterfactual.md)")
        return out
    out += [f"jpeg_quality {recipe.get('jpeg_quality')}", f"motion_length_frac {recipe.get('motion_length_frac'):.4g}",
            "mask_touches_border exclusion", f"control_away_px {recipe.get('control_away_px')}",
            f"split_fractions {recipe.get('split_fractions')}",
            f"adversarial_max_drop_frac {recipe.get('adversarial_max_drop_frac')}", "edit_detector (logistic)"]
    if recipe.get("unmatched_control"):
        out.append("ellipse_max_aspect 3")
    offline = sorted(set(recipe.get("tools") or []) - _PAPER_TOOLS)
    if offline:
        out.append(f"offline_erasure_tool ({', '.join(offline)})")
    return out
