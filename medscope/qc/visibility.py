"""Edit-visibility detectors (counterfactual paper §5.4, "Does it read the lesion or the edit?").

Two detectors ask whether the edit leaves a trace a reader could use:

- a ResNet-18 (transformers' ``ResNetForImageClassification``, random-initialised, basic
  blocks, depths 2-2-2-2; no torchvision) trained on the build's training views to separate
  random-removal from original views, tested on the test views (the paper: AUC 0.83);
- a linear probe on a frozen VLM vision tower (the features the adapter receives): logistic
  regression on mean-pooled tower outputs (the paper: random removal vs original AUC 0.60;
  target vs random removal 0.86).

Inputs are whole views, as §5.4 tests them ("separates random-removal from original views"),
grey, resized to ``size`` x ``size`` (``field="view"``; the size is an addition: the paper does
not give its input resolution, 224 is ResNet's usual). ``field="crop"`` is a labelled option, not
the paper's: crops around the edited region of each pair (the random-removal edit region for R
vs O; each view's own edit region for T vs R), whose AUCs are not comparable with §5.4's. AUCs come with a
case-bootstrap 95% interval (§3.9). The zero-shot "was this image edited?" ratings are a
protocol (``medscope.protocols.edit_rating``) run through the sweep; ``report_markdown`` adds
their AUCs when the report holds them.
"""

from __future__ import annotations

import numpy as np

from medscope.images import decode_mask, decode_png, to_gray
from medscope.qc.detector import Logistic, auc
from medscope.stats import bootstrap as bs

PAIRS = {"R_vs_O": ("random_removal", "original"), "T_vs_R": ("target_removal", "random_removal")}
FIELDS = ("view", "crop")
DEFAULT_SIZE = {"view": 224, "crop": 64}  # addition: the paper gives no input size


def _whole(image: np.ndarray, size: int) -> np.ndarray:
    import cv2

    return cv2.resize(to_gray(image), (size, size), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0


def _crop(image: np.ndarray, region: np.ndarray, size: int, margin: int = 8) -> np.ndarray:
    import cv2

    rows, cols = np.flatnonzero(region.any(1)), np.flatnonzero(region.any(0))
    r0, r1 = max(0, rows[0] - margin), min(region.shape[0], rows[-1] + margin + 1)
    c0, c1 = max(0, cols[0] - margin), min(region.shape[1], cols[-1] + margin + 1)
    gray = to_gray(image)[r0:r1, c0:c1]
    return cv2.resize(gray, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0


def edit_crops(views: list[dict], pair: str = "R_vs_O", size: int = 64,
               field: str = "view") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(inputs [n, size, size], labels (1 = the first kind of ``pair``), case ids, splits).

    ``field="view"``: each whole view resized (§5.4). ``field="crop"``: for R vs O both crops
    cover the random-removal edit region (same place, edited or not); for T vs R each view's
    crop covers its own edit region.

    Parameters
    ----------
    views : list of dict
        Views rows (``case_id``, ``kind``, ``passed``, ``image``, ``edit_mask``, ``split``); only
        passed views of the pair's two kinds count, and a case needs both.
    pair : {"R_vs_O", "T_vs_R"}, optional
        Which two view kinds to compare (``PAIRS``).
    size : int, optional
        Side in pixels of each input.
    field : {"view", "crop"}, optional
        Whole views or crops around the edit region (8 px margin).

    Returns
    -------
    inputs : numpy.ndarray of float32
        (n, size, size) grey inputs in [0, 1].
    labels : numpy.ndarray of int
        (n,) 1 for the pair's first kind, 0 for the second.
    cases : numpy.ndarray of object
        (n,) case id of each input.
    splits : numpy.ndarray of object
        (n,) split of each input's view (may be None).

    Raises
    ------
    ValueError
        For a ``field`` not in ``FIELDS``.

    References
    ----------
    .. [1] counterfactual paper, §5.4
    """
    if field not in FIELDS:
        raise ValueError(f"field {field!r}: one of {', '.join(FIELDS)}")
    pos_kind, neg_kind = PAIRS[pair]
    by_case: dict[str, dict[str, dict]] = {}
    for v in views:
        if v["passed"] and v["kind"] in (pos_kind, neg_kind) and v.get("image"):
            by_case.setdefault(v["case_id"], {}).setdefault(v["kind"], v)
    X, y, cases, splits = [], [], [], []
    for cid in sorted(by_case):
        c = by_case[cid]
        if pos_kind not in c or neg_kind not in c or c[pos_kind].get("edit_mask") is None:
            continue
        pos_region = decode_mask(c[pos_kind]["edit_mask"])
        neg_region = pos_region if neg_kind == "original" else (
            decode_mask(c[neg_kind]["edit_mask"]) if c[neg_kind].get("edit_mask") is not None else None)
        if neg_region is None or not pos_region.any() or not neg_region.any():
            continue
        for kind, region, label in ((pos_kind, pos_region, 1), (neg_kind, neg_region, 0)):
            image = decode_png(c[kind]["image"])
            X.append(_crop(image, region, size) if field == "crop" else _whole(image, size))
            y.append(label)
            cases.append(cid)
            splits.append(c[kind].get("split"))
    return (np.stack(X) if X else np.zeros((0, size, size), np.float32), np.array(y, int),
            np.array(cases, dtype=object), np.array(splits, dtype=object))


def auc_with_ci(scores: np.ndarray, labels: np.ndarray, cases: np.ndarray, n_boot: int = 2000,
                seed: int = bs.DEFAULT_SEED) -> dict:
    """AUC and its case-bootstrap 95% percentile interval (cases resampled with their views).

    Parameters
    ----------
    scores : numpy.ndarray
        (n,) detector scores.
    labels : numpy.ndarray
        (n,) 0 / 1 labels.
    cases : numpy.ndarray
        (n,) case id of each score; the bootstrap resamples cases.
    n_boot : int, optional
        Bootstrap replicates.
    seed : int, optional
        Seed of the resampling.

    Returns
    -------
    dict
        ``auc`` (None without both classes), ``ci_low``, ``ci_high`` (NaN when no replicate has
        both classes), ``n_views``, ``n_cases``, ``n_boot``.

    References
    ----------
    .. [1] counterfactual paper, §3.9
    """
    point = auc(scores, labels)
    uniq, codes = bs.codes_of(cases)
    idx = bs.resample_indices(len(uniq), n_boot, seed)
    members = [np.flatnonzero(codes == k) for k in range(len(uniq))]
    boots = []
    for row in idx:
        take = np.concatenate([members[k] for k in row])
        a = auc(scores[take], labels[take])
        if a is not None:
            boots.append(a)
    lo, hi = (np.percentile(boots, [2.5, 97.5]) if boots else (np.nan, np.nan))
    return {"auc": point, "ci_low": float(lo), "ci_high": float(hi), "n_views": int(len(labels)),
            "n_cases": int(len(uniq)), "n_boot": n_boot}


def resnet18(num_channels: int = 1, seed: int = 0):
    """A random-initialised ResNet-18 classifier with two outputs (transformers' ResNet).

    Parameters
    ----------
    num_channels : int, optional
        Input channels (1 for grey).
    seed : int, optional
        Seed of the weight initialisation (the global torch RNG is left as it was).

    Returns
    -------
    transformers.ResNetForImageClassification
        Untrained, depths 2-2-2-2, basic blocks, two labels.

    References
    ----------
    .. [1] counterfactual paper, §5.4
    """
    import torch
    from transformers import ResNetConfig, ResNetForImageClassification

    config = ResNetConfig(num_channels=num_channels, embedding_size=64, hidden_sizes=[64, 128, 256, 512],
                          depths=[2, 2, 2, 2], layer_type="basic", num_labels=2)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ResNetForImageClassification(config)


def train_cnn_detector(X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, epochs: int = 5,
                    batch_size: int = 32, lr: float = 1e-3, seed: int = 0) -> np.ndarray:
    """Train a ResNet-18 on crops (label 1 = edited) and return P(edited) of the test crops.

    Parameters
    ----------
    X_train : numpy.ndarray
        (n, H, W) training inputs in [0, 1].
    y_train : numpy.ndarray
        (n,) 0 / 1 labels.
    X_test : numpy.ndarray
        (m, H, W) test inputs in [0, 1].
    epochs : int, optional
        Passes over the training inputs.
    batch_size : int, optional
        Inputs per step.
    lr : float, optional
        AdamW learning rate.
    seed : int, optional
        Seed of the initialisation and the batch order.

    Returns
    -------
    numpy.ndarray
        (m,) probability of label 1 for each test input.

    References
    ----------
    .. [1] counterfactual paper, §5.4
    """
    import torch

    model = resnet18(seed=seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    xt = torch.from_numpy(np.asarray(X_train, np.float32) - 0.5)[:, None]  # crops in [0, 1], centred
    yt = torch.from_numpy(np.asarray(y_train, np.int64))
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(xt), generator=gen)
        for start in range(0, len(xt), batch_size):
            b = order[start:start + batch_size]
            loss = model(pixel_values=xt[b], labels=yt[b]).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    # Batch-norm statistics from a few hundred steps' running average are poor on small
    # training sets: recompute them as the exact mean over the training crops before testing.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.reset_running_stats()
                m.momentum = None  # cumulative average
        for start in range(0, len(xt), batch_size):
            model(pixel_values=xt[start:start + batch_size])
    model.eval()
    with torch.no_grad():
        logits = model(pixel_values=torch.from_numpy(np.asarray(X_test, np.float32) - 0.5)[:, None]).logits
    return torch.softmax(logits, -1)[:, 1].numpy()


def vision_features(model, processor, crops: np.ndarray, batch_size: int = 16) -> np.ndarray:
    """Mean-pooled outputs of a VLM's frozen vision tower, one vector per crop.

    Qwen2-VL-style models expose ``model.visual`` (patch tokens of all images concatenated,
    ``image_grid_thw`` giving each image's share); LLaVA-style ones ``vision_tower`` /
    ``vision_model`` (``[batch, tokens, hidden]``).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The VLM; its vision tower is found as ``visual``, ``vision_tower`` or ``vision_model``, on
        the model or its inner ``model``.
    processor : transformers.ProcessorMixin
        The VLM's processor; its ``image_processor`` prepares the inputs.
    crops : numpy.ndarray
        (n, H, W) grey inputs in [0, 1], given to the tower as RGB.
    batch_size : int, optional
        Inputs per forward pass.

    Returns
    -------
    numpy.ndarray
        (n, hidden) mean-pooled tower outputs.

    Raises
    ------
    ValueError
        When the model has no vision tower under those names.
    """
    import torch

    inner = getattr(model, "model", model)
    tower = next((getattr(o, a) for o in (model, inner) for a in ("visual", "vision_tower", "vision_model")
                  if getattr(o, a, None) is not None), None)
    if tower is None:
        raise ValueError(f"{type(model).__name__}: no vision tower (visual / vision_tower / vision_model)")
    rgb = [np.repeat((c * 255).astype(np.uint8)[:, :, None], 3, axis=2) for c in crops]
    out = []
    with torch.no_grad():
        for start in range(0, len(rgb), batch_size):
            batch = rgb[start:start + batch_size]
            enc = processor.image_processor(images=batch, return_tensors="pt")
            if "image_grid_thw" in enc:
                dtype = next(tower.parameters()).dtype
                tokens = tower(enc["pixel_values"].to(dtype), grid_thw=enc["image_grid_thw"])
                tokens = getattr(tokens, "pooler_output", None) if not torch.is_tensor(tokens) else tokens
                merge = getattr(tower, "spatial_merge_size", 1) ** 2
                counts = (enc["image_grid_thw"].prod(-1) // merge).tolist()
                out += [t.float().mean(0).numpy() for t in torch.split(tokens, counts)]
            else:
                hidden = tower(pixel_values=enc["pixel_values"]).last_hidden_state
                out += list(hidden.float().mean(1).numpy())
    return np.stack(out)


def linear_probe(F_train: np.ndarray, y_train: np.ndarray, F_test: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Regularised logistic regression on pooled features; P(first kind) of the test rows.

    Parameters
    ----------
    F_train : numpy.ndarray
        (n, d) training features.
    y_train : numpy.ndarray
        (n,) 0 / 1 labels.
    F_test : numpy.ndarray
        (m, d) test features.
    l2 : float, optional
        Ridge penalty.

    Returns
    -------
    numpy.ndarray
        (m,) probability of label 1.

    References
    ----------
    .. [1] counterfactual paper, §5.4
    """
    return Logistic(l2=l2).fit(F_train, y_train).predict_proba(F_test)


def run_edit_detectors(views: list[dict], vlm=None, size: int | None = None, epochs: int = 5, n_boot: int = 2000,
               seed: int = 0, train_split: str = "train", test_split: str = "test", field: str = "view") -> dict:
    """Every detector on every pair: trained on ``train_split`` views, AUC on ``test_split`` views.

    ``vlm`` is ``(model, processor)`` for the linear probe, or None to skip it. ``field``: whole
    views (§5.4, default) or crops around the edit (an option); ``size``: DEFAULT_SIZE[field].

    Parameters
    ----------
    views : list of dict
        Views rows of a build (see :func:`edit_crops`).
    vlm : tuple, optional
        ``(model, processor)`` for the linear probe; None skips it.
    size : int, optional
        Input side in pixels; None takes ``DEFAULT_SIZE[field]``.
    epochs : int, optional
        ResNet-18 training epochs.
    n_boot : int, optional
        Bootstrap replicates of each AUC interval.
    seed : int, optional
        Seed of training and bootstrap.
    train_split, test_split : str, optional
        Split names to train and to test on.
    field : {"view", "crop"}, optional
        Whole views or crops around the edit.

    Returns
    -------
    dict
        ``size``, ``field``, ``epochs``, ``train_split``, ``test_split``, and per pair (``R_vs_O``,
        ``T_vs_R``) ``n_train``, ``n_test`` with ``resnet18`` (R vs O only) and ``linear_probe``
        results (:func:`auc_with_ci`), or ``skipped``.

    References
    ----------
    .. [1] counterfactual paper, §5.4
    """
    size = size or DEFAULT_SIZE[field]
    report: dict = {"size": size, "field": field, "epochs": epochs, "train_split": train_split,
                    "test_split": test_split}
    for pair in PAIRS:
        X, y, cases, splits = edit_crops(views, pair, size, field)
        tr, te = splits == train_split, splits == test_split
        entry = {"n_train": int(tr.sum()), "n_test": int(te.sum())}
        if len(set(y[tr])) < 2 or len(set(y[te])) < 2:
            entry["skipped"] = "needs both kinds in the train and test splits"
            report[pair] = entry
            continue
        if pair == "R_vs_O":  # the paper's CNN detector: random removal vs original
            p = train_cnn_detector(X[tr], y[tr], X[te], epochs=epochs, seed=seed)
            entry["resnet18"] = auc_with_ci(p, y[te], cases[te], n_boot, seed)
        if vlm is not None:
            F = vision_features(vlm[0], vlm[1], X)
            entry["linear_probe"] = auc_with_ci(linear_probe(F[tr], y[tr], F[te]), y[te], cases[te], n_boot, seed)
        report[pair] = entry
    return report


def report_markdown(report: dict) -> str:
    """The detectors' AUCs as a Markdown table (the report's §5.4 section).

    Parameters
    ----------
    report : dict
        A :func:`run_edit_detectors` report, optionally with ``zero_shot`` ratings results.

    Returns
    -------
    str
        Markdown: the AUC table, a line on inputs and the paper's values, and the zero-shot table
        when present.

    References
    ----------
    .. [1] counterfactual paper, §5.4
    """
    lines = ["| pair | detector | AUC [95% CI] | test views (cases) |", "|---|---|---|---|"]
    for pair in PAIRS:
        entry = report.get(pair) or {}
        if entry.get("skipped"):
            lines.append(f"| {pair} | – | {entry['skipped']} | – |")
        for detector in ("resnet18", "linear_probe"):
            r = entry.get(detector)
            if r:
                lines.append(f"| {pair} | {detector} | {r['auc']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] | "
                             f"{r['n_views']} ({r['n_cases']}) |")
    lines.append("")
    size = report.get("size")
    if report.get("field", "crop") == "view":
        what = (f"whole views, grey, resized to {size} x {size} px as §5.4 tests them (the size is an addition). "
                "counterfactual paper §5.4 reports ResNet-18 R vs O 0.83, linear probe R vs O 0.60 and T vs R 0.86")
    else:
        what = (f"CROPS around the edited region, {size} x {size} px: an option, not §5.4's whole-view detectors, so "
                "these AUCs are not comparable with the paper's (0.83 / 0.60 / 0.86)")
    lines.append(f"Trained on the {report.get('train_split')} split, tested on the {report.get('test_split')} split; "
                 f"{what}: an AUC near 0.5 means the detector cannot see the edit.")
    if report.get("zero_shot"):
        lines += ["", "Zero-shot ratings (each model asked whether the image was edited):", "",
                  format_ratings(report["zero_shot"])]
    return "\n".join(lines)


def format_ratings(result: dict) -> str:
    """The zero-shot "was this image edited?" ratings per model as a Markdown table.

    Parameters
    ----------
    result : dict
        Model name -> ``{R_vs_O, T_vs_O`` (AUC dicts or None), ``unparseable``, ``episodes`` and
        optionally ``target_rated_unedited``, ``target_rated_between``, ``target_rated_edited}``.

    Returns
    -------
    str
        The table and the paper's values for comparison.

    References
    ----------
    .. [1] counterfactual paper, §5.4
    """
    lines = ["| model | R vs O AUC [95% CI] | T vs O AUC [95% CI] | erased views rated <= 0.20 / between / >= 0.75 |"
             " unparseable |", "|---|---|---|---|---|"]

    def cell(r):
        return f"{r['auc']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r else "–"

    for model, e in result.items():
        split = (f"{e['target_rated_unedited']} / {e['target_rated_between']} / {e['target_rated_edited']}"
                 if "target_rated_edited" in e else "–")
        lines.append(f"| {model} | {cell(e.get('R_vs_O'))} | {cell(e.get('T_vs_O'))} | {split} | "
                     f"{e['unparseable']} of {e['episodes']} |")
    lines += ["", "counterfactual paper §5.4: gemini-4-argon and gpt-6.1-sol cannot separate random removal from originals "
              "(AUC 0.52-0.55) but find erased-lesion views suspicious (0.70-0.75)."]
    return "\n".join(lines)
