"""C1's training pool as `medscope views build` makes it (counterfactual paper §3.7 C1): on the
train split of a small phantom built with the paper's training recipe
(configs/views/training.yaml: LaMa and tissue transplant), every control edit of a lesion case has
its unmatched replacement — "an ellipse of half or twice the erasure's area, random aspect ratio
and orientation, placed away from the lesion on tissue, filled with the other training tool
(tissue transplant for LaMa erasures, LaMa for transplant erasures)" — and no other split has one.
Checked from the built views' own edit masks, not from the code's drawn parameters."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import ndimage

from medscope.io import records
from medscope.cohorts import phantom
from medscope.images import decode_mask, decode_png
from medscope.views import geometry
from medscope.views.recipe import load_recipe
from pipelines.views import build_views

pytestmark = pytest.mark.slow  # the fast tier (`-m "not slow"`) leaves this file out: docs/testing.md

OTHER_TOOL = {"lama": "transplant", "transplant": "lama"}  # §3.7, by hand


class ConstantFill(torch.nn.Module):
    """A stand-in LaMa network (TorchScript, as the real big-lama export): fills with mid-grey."""

    def forward(self, image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask.to(image.dtype)
        return image * (1 - m) + 0.5 * m


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("c1-pool")
    torch.jit.save(torch.jit.script(ConstantFill()), str(root / "lama.pt"))
    cases = phantom.generate(str(root / "phantom"), n_cases=24, seed=1, n_volumes=0)["cases"]
    recipe = load_recipe("configs/views/training.yaml").model_copy(
        update={"lama_model": str(root / "lama.pt"), "edit_detector": False})
    build_views(cases, str(root / "views"), recipe, engine="local", quiet=True)
    return recipe, records.read_table("views", str(root / "views")).to_pylist()


def ellipse_shape(mask: np.ndarray) -> tuple[float, float]:
    """(aspect ratio, orientation in degrees [0, 180)) of a filled ellipse from its second
    moments: the axes are proportional to the square roots of the covariance eigenvalues."""
    ys, xs = np.nonzero(mask)
    ev, vec = np.linalg.eigh(np.cov(np.stack([xs, ys]).astype(float)))
    return float(np.sqrt(ev[1] / ev[0])), float(np.degrees(np.arctan2(vec[1, 1], vec[0, 1])) % 180)


def test_unmatched_controls_are_half_or_twice_the_erasure_random_shape_away_on_tissue_other_tool(built):
    recipe, views = built
    assert recipe.tools == ["lama", "transplant"]
    by_case: dict[str, dict[str, dict]] = {}
    for v in views:
        by_case.setdefault(v["case_id"], {})[v["kind"]] = v
    # a training pool only: never on validation or test
    assert all(v["split"] == "train" for v in views if v["kind"] == "unmatched_control")
    train_lesion = [d for d in by_case.values() if "original" in d and d["original"]["split"] == "train"]
    # "every control view replaced": one unmatched edit beside every random-removal control
    assert train_lesion and all(("unmatched_control" in d) == ("random_removal" in d) for d in train_lesion)
    checked, factors, aspects, angles = 0, [], [], []
    for d in train_lesion:
        u, t = d["unmatched_control"], d["target_removal"]
        if not (u["passed"] and t["passed"]):
            continue
        um, erased = decode_mask(u["edit_mask"]), decode_mask(t["edit_mask"])  # erased = the dilated lesion
        ratio = um.sum() / erased.sum()
        factor = min((0.5, 2.0), key=lambda f: abs(ratio / f - 1))
        assert abs(ratio / factor - 1) < 0.05, ratio  # half or twice, up to rasterising the ellipse
        factors.append(factor)
        # filled with the other training tool
        assert u["tool"] == OTHER_TOOL[t["tool"]]
        # away from the lesion: no pixel within control_away_px of the erased region
        dist = ndimage.distance_transform_edt(~erased)
        assert dist[um].min() > recipe.control_away_px
        # on tissue, and the lesion itself untouched
        original = decode_png(d["original"]["image"], gray=True)
        assert geometry.foreground_mask(original)[um].all()
        lesion = geometry.bbox(erased)
        assert u["lesion_untouched"] is True and u["lesion_bbox"] == d["original"]["lesion_bbox"] and lesion
        # an ellipse: a filled ellipse of semi-axes a, b has variances a^2/4 and b^2/4 along its
        # axes, so its area pi a b is 4 pi sqrt(l1 l2) of the covariance eigenvalues
        ys, xs = np.nonzero(um)
        assert um.sum() == pytest.approx(4 * np.pi * np.sqrt(np.linalg.det(np.cov(np.stack([xs, ys]).astype(float)))), rel=0.1)
        aspect, angle = ellipse_shape(um)
        assert 1.0 <= aspect <= 3.0 + 0.2  # geometry's aspect range [1, 3], rasterised
        aspects.append(aspect)
        angles.append(angle)
        checked += 1
    assert checked >= 6
    # random aspect and orientation (not one fixed shape), both area factors used
    assert max(aspects) - min(aspects) > 0.5
    assert max(angles) - min(angles) > 60
    assert set(factors) == {0.5, 2.0}


def test_c1_arm_draws_unmatched_edits_in_place_of_the_controls(built):
    """The C1 arm's pool (training.recipes.C1_KINDS): the unmatched edits and no random-removal
    control; the matched arm's pool the reverse (§3.7: the matched-control arm "with every
    control view replaced by an unmatched edit")."""
    from medscope.training.data import training_views
    from medscope.training.recipes import C1_KINDS, RECIPE_KINDS

    _, views = built
    table = records.to_table("views", views)
    c1 = training_views(table, list(C1_KINDS))
    kinds = {v["kind"] for v in c1}
    assert "unmatched_control" in kinds and "random_removal" not in kinds
    assert all(v["split"] == "train" and v["passed"] for v in c1)
    matched = {v["kind"] for v in training_views(table, [k for k in RECIPE_KINDS if k != "insertion"])}
    assert "random_removal" in matched and "unmatched_control" not in matched
    n_unmatched = sum(v["kind"] == "unmatched_control" for v in c1)
    n_controls = sum(v["kind"] == "random_removal" and v["split"] == "train" and v["passed"] for v in views)
    assert n_unmatched == n_controls
