"""Edit detector and adversarial filtering (counterfactual paper, §3.3 (i) and last paragraph).

addition: §3.3 says only "a trained edit detector"; its form below is ours.
Both are small logistic regressions on texture features of an edited region against its
surroundings (noise residual, Laplacian and gradient energy, seams at the region boundary).
We write the regression ourselves (ridge-penalised Newton / IRLS on standardised features,
a dozen lines) because scikit-learn is not a dependency; the AUC is the Mann–Whitney U of
``scipy.stats``.

- Edit detector: trained on the project's own views, edited regions of control edits
  (random removal, unmatched control) against the same regions of the original; it scores
  each target erasure, which must stay below 0.5. Its held-out AUC (by case) is recorded.
- Adversarial filtering: a classifier separating target from random edits; the cases it
  finds easiest are dropped until its out-of-fold AUC is at most the recipe's bound.

References: adversarial filtering: R. Zellers et al., "SWAG: a large-scale adversarial dataset
for grounded commonsense inference", EMNLP 2018; R. Le Bras et al., "Adversarial filters of
dataset biases" (AFLite), ICML 2020. AUC as Mann-Whitney U: J. A. Hanley, B. J. McNeil,
Radiology 143(1), 1982.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np
from scipy import ndimage

from medscope.images import decode_mask, decode_png, to_gray
from medscope.seeding import derive_seed

FEATURES = ("residual", "laplacian", "gradient", "std", "mean_shift", "seam", "log_area")


def region_features(image: np.ndarray, region: np.ndarray, ring_px: int = 6) -> np.ndarray:
    """Texture of ``region`` relative to a ``ring_px`` ring around it (log ratios), one vector.

    Parameters
    ----------
    image : array_like
        (H, W) gray or (H, W, 3) colour image, uint8 range; colour is converted to gray.
    region : array_like of bool
        (H, W) edited region; must not be empty.
    ring_px : int, optional
        Width in pixels of the surrounding ring the region is compared with.

    Returns
    -------
    numpy.ndarray of float64
        Shape (7,), in the order of ``FEATURES``: log ratios of noise residual, Laplacian and
        gradient energy, and of grey-level spread (region against ring); the mean shift over the
        ring's spread; the gradient energy on the region's boundary band against the ring; the log
        of the region's pixel count.

    References
    ----------
    .. [1] counterfactual paper, §3.3 (i)
    """
    region = np.asarray(region, bool)
    rows, cols = np.flatnonzero(region.any(1)), np.flatnonzero(region.any(0))
    m = ring_px + 3
    r0, r1 = max(0, rows[0] - m), min(region.shape[0], rows[-1] + m + 1)
    c0, c1 = max(0, cols[0] - m), min(region.shape[1], cols[-1] + m + 1)
    gray = to_gray(np.asarray(image))[r0:r1, c0:c1].astype(np.float32)
    reg = region[r0:r1, c0:c1]
    grown = ndimage.binary_dilation(reg, iterations=ring_px)
    ring = grown & ~reg
    band = ndimage.binary_dilation(reg, iterations=1) & ~ndimage.binary_erosion(reg, iterations=1)
    if not ring.any():
        ring = ~reg
    residual = np.abs(gray - cv2.medianBlur(gray.astype(np.uint8), 3).astype(np.float32))
    lap = np.abs(cv2.Laplacian(gray, cv2.CV_32F))
    gx, gy = cv2.Sobel(gray, cv2.CV_32F, 1, 0), cv2.Sobel(gray, cv2.CV_32F, 0, 1)
    grad = np.hypot(gx, gy)

    def ratio(a: np.ndarray, inside: np.ndarray) -> float:
        return float(np.log1p(a[inside].mean()) - np.log1p(a[ring].mean()))

    sd_ring = gray[ring].std()
    return np.array([
        ratio(residual, reg),
        ratio(lap, reg),
        ratio(grad, reg),
        float(np.log1p(gray[reg].std()) - np.log1p(sd_ring)),
        float(abs(gray[reg].mean() - gray[ring].mean()) / (sd_ring + 1.0)),
        ratio(grad, band),
        float(np.log(reg.sum())),
    ], dtype=np.float64)


def case_feature_rows(views: list[dict]) -> list[dict]:
    """Feature records of one case's views (the part a worker wrote):
    role "edited" / "unedited" for control edits and the same region in the original,
    role "target" for target erasures.

    Parameters
    ----------
    views : list of dict
        Views rows of one case (``kind``, ``image``, ``edit_mask``, ``view_id``, ``case_id``,
        ``tool``); the original view is needed.

    Returns
    -------
    list of dict
        One record per edited region (``view_id``, ``case_id``, ``kind``, ``tool``, ``role``, ``x``
        the feature list of :func:`region_features`); empty without an original image.
    """
    original = next((v for v in views if v["kind"] == "original" and v["image"] is not None), None)
    if original is None:
        return []
    orig = decode_png(original["image"])
    out = []
    for v in views:
        if v["image"] is None or v["edit_mask"] is None:
            continue
        if v["kind"] not in ("target_removal", "random_removal", "unmatched_control"):
            continue
        region = decode_mask(v["edit_mask"])
        if not region.any():
            continue
        common = {"view_id": v["view_id"], "case_id": v["case_id"], "kind": v["kind"], "tool": v["tool"]}
        x = region_features(decode_png(v["image"]), region)
        if v["kind"] == "target_removal":
            out.append(dict(common, role="target", x=x.tolist()))
        else:
            out.append(dict(common, role="edited", x=x.tolist()))
            out.append(dict(common, role="unedited", x=region_features(orig, region).tolist()))
    return out


@dataclass
class Logistic:
    """Ridge-penalised logistic regression on standardised features (Newton / IRLS)."""

    l2: float = 1.0
    mean: np.ndarray = field(default=None)
    scale: np.ndarray = field(default=None)
    coef: np.ndarray = field(default=None)

    def fit(self, X: np.ndarray, y: np.ndarray, iters: int = 50) -> "Logistic":
        X = np.asarray(X, float)
        y = np.asarray(y, float)
        self.mean = X.mean(0)
        self.scale = X.std(0) + 1e-9
        Z = np.hstack([np.ones((len(X), 1)), (X - self.mean) / self.scale])
        w = np.zeros(Z.shape[1])
        pen = np.full(Z.shape[1], self.l2)
        pen[0] = 0.0  # the intercept is not penalised
        for _ in range(iters):
            p = 1 / (1 + np.exp(-np.clip(Z @ w, -30, 30)))
            grad = Z.T @ (p - y) + pen * w
            hess = (Z * (p * (1 - p))[:, None]).T @ Z + np.diag(pen) + 1e-9 * np.eye(len(w))
            step = np.linalg.solve(hess, grad)
            w -= step
            if np.abs(step).max() < 1e-8:
                break
        self.coef = w
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        Z = (np.asarray(X, float) - self.mean) / self.scale
        return 1 / (1 + np.exp(-np.clip(self.coef[0] + Z @ self.coef[1:], -30, 30)))


def auc(scores, labels) -> float | None:
    """Area under the ROC curve = Mann–Whitney U / (n₁ n₀); None without both classes.

    Parameters
    ----------
    scores : array_like of float
        Classifier scores.
    labels : array_like of bool
        True for the positive class, same length.

    Returns
    -------
    float or None
        The AUC in [0, 1] (ties count one half), or None when either class is absent.

    References
    ----------
    .. [1] J. A. Hanley, B. J. McNeil, Radiology 143(1), 1982.
    """
    scores, labels = np.asarray(scores, float), np.asarray(labels, bool)
    pos, neg = scores[labels], scores[~labels]
    if len(pos) == 0 or len(neg) == 0:
        return None
    from scipy import stats  # imported here: scipy.stats costs seconds in every fresh worker

    u = stats.mannwhitneyu(pos, neg, alternative="two-sided").statistic
    return float(u / (len(pos) * len(neg)))


def _held_out(seed: int, case_id: str, frac: float = 0.3) -> bool:
    return derive_seed(seed, "detector-holdout", case_id) / 2.0**63 < frac


def train_edit_detector(features: list[dict], seed: int = 0, min_cases: int = 4) -> tuple[Logistic | None, dict]:
    """Fit the edit detector on control edits (edited vs unedited region); held-out AUC by case.

    Parameters
    ----------
    features : list of dict
        Feature records (:func:`case_feature_rows`); only roles ``edited`` and ``unedited`` are used.
    seed : int, optional
        Seed of the by-case hold-out draw (about 30 % of cases; at least one case each side).
    min_cases : int, optional
        Fewer cases with control edits than this skip training.

    Returns
    -------
    model : Logistic or None
        The fitted detector (P(edited)), or None when skipped.
    report : dict
        ``n_regions``, ``n_cases``, ``train_auc``, ``heldout_auc``, and ``n_train_cases`` /
        ``n_heldout_cases`` when trained or ``skipped`` (why) when not.

    References
    ----------
    .. [1] counterfactual paper, §3.3 (i)
    """
    rows = [f for f in features if f["role"] in ("edited", "unedited")]
    cases = sorted({f["case_id"] for f in rows})
    report = {"n_regions": len(rows), "n_cases": len(cases), "train_auc": None, "heldout_auc": None}
    if len(cases) < min_cases:
        report["skipped"] = f"fewer than {min_cases} cases with control edits"
        return None, report
    hold = {c for c in cases if _held_out(seed, c)}
    if not hold or len(hold) == len(cases):  # tiny cohorts: keep one case out at least
        hold = {cases[-1]}
    train = [f for f in rows if f["case_id"] not in hold]
    test = [f for f in rows if f["case_id"] in hold]
    X = np.array([f["x"] for f in train])
    y = np.array([f["role"] == "edited" for f in train])
    model = Logistic().fit(X, y)
    report["train_auc"] = auc(model.predict_proba(X), y)
    Xt = np.array([f["x"] for f in test])
    report["heldout_auc"] = auc(model.predict_proba(Xt), [f["role"] == "edited" for f in test])
    report["n_train_cases"], report["n_heldout_cases"] = len(cases) - len(hold), len(hold)
    return model, report


def score_targets(model: Logistic, features: list[dict]) -> dict[str, float]:
    """view_id -> edit score of each target erasure's region.

    Parameters
    ----------
    model : Logistic
        The edit detector (:func:`train_edit_detector`).
    features : list of dict
        Feature records; only role ``target`` is scored.

    Returns
    -------
    dict of str to float
        view_id -> probability in [0, 1] that the target erasure's region was edited.

    References
    ----------
    .. [1] counterfactual paper, §3.3 (i)
    """
    targets = [f for f in features if f["role"] == "target"]
    if not targets:
        return {}
    p = model.predict_proba(np.array([f["x"] for f in targets]))
    return {f["view_id"]: float(s) for f, s in zip(targets, p)}


def _oof_scores(X: np.ndarray, y: np.ndarray, groups: list[str], seed: int, folds: int = 5) -> np.ndarray:
    fold = np.array([derive_seed(seed, "adv-fold", g) % folds for g in groups])
    out = np.full(len(y), np.nan)
    for k in range(folds):
        test = fold == k
        if not test.any() or len(set(y[~test])) < 2:
            continue
        out[test] = Logistic().fit(X[~test], y[~test]).predict_proba(X[test])
    return out


def adversarial_filter(features: list[dict], keep_cases: set[str], *, max_auc: float = 0.6,
                       max_drop_frac: float = 0.5, seed: int = 0, step_frac: float = 0.05,
                       min_pairs: int = 10) -> tuple[set[str], dict]:
    """Drop the cases a target-vs-random texture classifier finds easiest until its
    out-of-fold AUC ≤ ``max_auc`` (or ``max_drop_frac`` of the cases are gone).

    Returns (dropped case ids, report with AUC before and after).

    Parameters
    ----------
    features : list of dict
        Feature records (:func:`case_feature_rows`); a case counts when it has a ``target`` record
        and an ``edited`` ``random_removal`` record.
    keep_cases : set of str
        Case ids still in play; other cases' records are ignored.
    max_auc : float, optional
        Out-of-fold AUC (5 folds, by case) to reach.
    max_drop_frac : float, optional
        At most this fraction of the pairs is dropped.
    seed : int, optional
        Seed of the fold assignment.
    step_frac : float, optional
        Fraction of the pairs dropped per round (at least one).
    min_pairs : int, optional
        Fewer target / random pairs than this skip the filter.

    Returns
    -------
    dropped : set of str
        Case ids dropped.
    report : dict
        ``n_pairs``, ``auc_before``, ``auc_after``, ``dropped`` (count), ``max_auc``, and
        ``reached`` or ``skipped``.

    References
    ----------
    .. [1] counterfactual paper, §3.3, last paragraph
    .. [2] R. Zellers et al., "SWAG: a large-scale adversarial dataset for grounded commonsense
       inference", EMNLP 2018.
    .. [3] R. Le Bras et al., "Adversarial filters of dataset biases" (AFLite), ICML 2020.
    """
    by_case: dict[str, dict[str, dict]] = {}
    for f in features:
        if f["case_id"] not in keep_cases:
            continue
        if f["role"] == "target" or (f["role"] == "edited" and f["kind"] == "random_removal"):
            by_case.setdefault(f["case_id"], {})[f["role"]] = f
    cases = sorted(c for c, d in by_case.items() if len(d) == 2)
    report = {"n_pairs": len(cases), "auc_before": None, "auc_after": None, "dropped": 0, "max_auc": max_auc}
    if len(cases) < min_pairs:
        report["skipped"] = f"fewer than {min_pairs} target/random pairs"
        return set(), report
    dropped: set[str] = set()
    limit = int(max_drop_frac * len(cases))
    while True:
        live = [c for c in cases if c not in dropped]
        X = np.array([by_case[c][r]["x"] for c in live for r in ("target", "edited")])
        y = np.array([r == "target" for c in live for r in ("target", "edited")])
        groups = [c for c in live for _ in range(2)]
        s = _oof_scores(X, y, groups, seed)
        ok = ~np.isnan(s)
        value = auc(s[ok], y[ok])
        if report["auc_before"] is None:
            report["auc_before"] = value
        report["auc_after"] = value
        if value is None or value <= max_auc or len(dropped) >= limit:
            break
        # easiest pairs first: the highest target score above its own random edit
        margin = {c: s[2 * i] - s[2 * i + 1] for i, c in enumerate(live) if ok[2 * i] and ok[2 * i + 1]}
        n = max(1, int(step_frac * len(cases)))
        n = min(n, limit - len(dropped))
        for c in sorted(margin, key=lambda c: (-margin[c], c))[:n]:
            dropped.add(c)
    report["dropped"] = len(dropped)
    report["reached"] = report["auc_after"] is not None and report["auc_after"] <= max_auc
    return dropped, report
