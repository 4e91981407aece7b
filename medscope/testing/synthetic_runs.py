"""Synthetic views and episodes in the real table layouts, for tests, the bench and demos.

The layout follows the counterfactual paper's main test: every lesion case has an original, a target-removal
and a random-removal view (and a degraded view for a share of them); every lesion-free case
has one natural-negative view. Models are random policies with a per-model propensity to
claim the finding on each view kind, so their metrics differ in known directions.
"""

from __future__ import annotations

import numpy as np

from medscope.io import records

IMAGING = ("colonoscopy", "chest_xray", "brain_mri", "breast_us", "ct_mri")
FINDINGS = ("polyp", "nodule", "tumour", "mass", "lesion")


def views(n_lesion: int = 219, n_negative: int = 288, n_degraded: int = 170, seed: int = 0,
          width: int = 256, height: int = 256, images: dict | None = None):
    """A views table (no pixels unless ``images`` maps kind -> PNG bytes).

    Parameters
    ----------
    n_lesion : int
        Lesion cases; each gives an original, a target-removal and a random-removal view.
    n_negative : int
        Lesion-free cases; each gives one natural-negative view.
    n_degraded : int
        The first ``n_degraded`` lesion cases also get a degraded view.
    seed : int
        Seed of the random findings, criticality and lesion boxes.
    width, height : int
        Image size in pixels; lesion boxes are drawn inside it.
    images : dict, optional
        View kind (or ``"<kind>_mask"``) -> PNG bytes put in every view of that kind; default no pixels.

    Returns
    -------
    pyarrow.Table
        A validated ``views`` table, every view passed and in the ``test`` split.
    """
    rng = np.random.default_rng(seed)
    rows = []

    def base(case, kind, imaging, finding, critical, area, bbox, group):
        return {
            "view_id": f"{case}/{kind}", "case_id": case, "kind": kind,
            "tool": "none" if kind in ("original", "natural_negative", "degraded") else "lama",
            "degradation": "blur" if kind == "degraded" else None,
            "image": (images or {}).get(kind), "edit_mask": (images or {}).get(f"{kind}_mask"),
            "expected": {"original": "present", "random_removal": "present", "degraded": "clarify"}.get(kind, "absent"),
            "source": "synthetic", "imaging_type": imaging, "patient_id": None, "group_id": group, "split": "test",
            "finding": finding, "question": f"Is there a {finding}?", "question_kind": "presence",
            "critical": critical, "lesion_area_frac": area, "lesion_bbox": bbox, "width": width, "height": height,
            "contrast_before": None, "contrast_after": None, "edit_score": None, "lesion_untouched": None,
            "passed": True, "reject_reason": None, "recipe_hash": "synthetic", "private": False,
            "endpoint_allowlist": None,
        }

    for i in range(n_lesion):
        case = f"L{i:04d}"
        imaging = IMAGING[i % len(IMAGING)]
        finding = FINDINGS[int(rng.integers(len(FINDINGS)))]
        critical = bool(rng.random() < 0.25)
        side = int(rng.integers(max(2, min(width, height) // 20), max(3, min(width, height) // 3)))
        x, y = int(rng.integers(0, width - side)), int(rng.integers(0, height - side))
        area = side * side / (width * height)
        group = f"G{i // 2:04d}"
        for kind in ("original", "target_removal", "random_removal"):
            rows.append(base(case, kind, imaging, finding, critical, area, [x, y, x + side, y + side], group))
        if i < n_degraded:
            rows.append(base(case, "degraded", imaging, finding, critical, area, [x, y, x + side, y + side], group))
    for i in range(n_negative):
        case = f"N{i:04d}"
        rows.append(base(case, "natural_negative", IMAGING[i % len(IMAGING)], FINDINGS[i % len(FINDINGS)],
                         False, 0.0, None, f"H{i:04d}"))
    return records.to_table("views", rows)


def episodes(views_table, models: dict[str, dict[str, float]], seed: int = 0, run_id: str = "synthetic"):
    """Episodes of random policies: ``models[name][kind]`` = P(claims the finding) on that kind.

    Optional keys: ``refer`` / ``clarify`` / ``unparseable`` probabilities (per view, any kind),
    ``degraded_clarify`` (P(clarify) on degraded views), ``box`` (P(a box on the lesion)).

    Parameters
    ----------
    views_table : pyarrow.Table
        A views table (``views``).
    models : dict of str to dict of str to float
        Model name -> probabilities: per view kind, P(claims the finding); optional ``refer``,
        ``clarify``, ``unparseable``, ``degraded_clarify`` and ``box``. A kind not given claims at 0.5.
    seed : int
        Seed of the sampled actions, claims, boxes and confidences.
    run_id : str
        The episodes' ``run_id``.

    Returns
    -------
    pyarrow.Table
        A validated ``episodes`` table, one row per model and view (counterfactual protocol, "agent"
        condition).
    """
    rng = np.random.default_rng(seed)
    v = views_table.select(["view_id", "case_id", "kind", "lesion_bbox", "width", "height"]).to_pylist()
    rows = []
    for name, p in models.items():
        for row in v:
            u = rng.random()
            kind = row["kind"]
            if kind == "degraded" and rng.random() < p.get("degraded_clarify", 0.0):
                action = "clarify"
            elif u < p.get("unparseable", 0.0):
                action = "unparseable"
            elif u < p.get("unparseable", 0.0) + p.get("refer", 0.0):
                action = "refer"
            elif u < p.get("unparseable", 0.0) + p.get("refer", 0.0) + p.get("clarify", 0.0):
                action = "clarify"
            else:
                action = "answer"
            claims = bool(rng.random() < p.get(kind, 0.5)) if action == "answer" else None
            box = None
            if claims and row["lesion_bbox"] and rng.random() < p.get("box", 0.0):
                box = list(row["lesion_bbox"])  # pixels, as episode tables hold boxes
            rows.append({
                "run_id": run_id, "protocol": "counterfactual", "model": name, "condition": "agent",
                "item_id": row["view_id"], "case_id": row["case_id"], "request_key": f"{name}:{row['view_id']}",
                "prompt_version": "v1", "decoding": "greedy", "turns": None,
                "raw_text": f"<final>{action}</final>", "action": action,
                "answer": None if claims is None else ("yes" if claims else "no"), "claims_finding": claims,
                "box": box, "confidence": float(np.round(rng.random(), 1)) if action == "answer" else None,
                "tool_calls": int(rng.integers(0, 3)), "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0,
                "latency_s": 0.0, "attempts": 1, "error": None,
            })
    return records.to_table("episodes", rows)


def model_zoo(n: int = 16, seed: int = 0) -> dict[str, dict[str, float]]:
    """``n`` random policies spanning evidence-sensitive to image-blind.

    Parameters
    ----------
    n : int
        Number of models, ``model-00`` to ``model-{n-1}``, evidence sensitivity rising from 0 to 1.
    seed : int
        Seed of each model's image-blind base claim rate.

    Returns
    -------
    dict of str to dict of str to float
        Model name -> claim probabilities per view kind and the optional keys ``episodes`` reads.
    """
    rng = np.random.default_rng(seed)
    zoo = {}
    for i in range(n):
        s = i / max(n - 1, 1)  # evidence sensitivity from 0 to 1
        base = float(rng.uniform(0.3, 0.9))
        zoo[f"model-{i:02d}"] = {
            "original": 0.5 + 0.45 * s, "random_removal": 0.5 + 0.4 * s,
            "target_removal": base * (1 - s) + 0.05 * s, "natural_negative": base * (1 - s) + 0.08,
            "degraded": 0.5, "refer": 0.02, "unparseable": 0.01, "degraded_clarify": s, "box": s,
        }
    return zoo


# What each model of :func:`reply_run` meant to decide, per view kind ("blind": the blind condition)
REPLY_MODELS = {
    "always-present": {"default": "claim"},
    "always-absent": {"default": "deny"},
    "pixel-reader": {"original": "claim", "random_removal": "claim", "target_removal": "deny",
                     "natural_negative": "deny", "blind": "refer"},
    "chatty": {"original": "claim", "random_removal": "claim", "target_removal": "deny", "natural_negative": "deny",
               "blind": "clarify"},
}


def _reply(model: str, intent: str, finding: str) -> str:
    """A reply meaning ``intent``: the action format for most models, plain prose for ``chatty``."""
    from medscope.answers.actions import FinalAction, format_final

    if model == "chatty":
        return {"claim": f"Yes, there is a {finding} in this image.", "deny": f"No {finding} is seen.",
                "refer": "I cannot decide from this image.",
                "clarify": "The image is too blurry to read; please send a clearer one."}[intent]
    final = {"claim": FinalAction("answer", answer="Yes", confidence=0.7),
             "deny": FinalAction("answer", answer="No", confidence=0.7),
             "refer": FinalAction("refer", reason="I cannot decide from this image."),
             "clarify": FinalAction("clarify", question="Could you provide a clearer image?")}[intent]
    return format_final(final, reasoning="Scripted reply.")


def reply_run(out: str, n_lesion: int = 8, n_negative: int = 6, seed: int = 0,
              conditions: tuple[str, ...] = ("agent", "blind")) -> dict:
    """A tiny counterfactual eval run whose replies are real text: views, episodes and sweep.json.

    Each model of :data:`REPLY_MODELS` replies on every view in every condition with the decision
    it means for the view's kind (the blind condition its ``blind`` decision, when it has one):
    the constant policies and ``pixel-reader`` in the action format, ``chatty`` in plain prose.

    Parameters
    ----------
    out : str
        Folder written: ``views.parquet`` and the eval run ``eval/`` (``episodes/``, ``sweep.json``).
    n_lesion, n_negative : int, optional
        Lesion and lesion-free cases (:func:`views`; no degraded views).
    seed : int, optional
        Seed of the views' findings.
    conditions : tuple of str, optional
        The conditions every model ran.

    Returns
    -------
    dict
        ``views`` and ``eval`` (URIs), and ``intent``: (model, condition, item_id) -> the decision
        the reply meant.
    """
    import json

    from medscope.images import encode_png
    from medscope.io import storage

    png = encode_png(np.full((16, 16), 90, np.uint8))
    table = views(n_lesion, n_negative, 0, seed, width=16, height=16,
                  images={k: png for k in ("original", "target_removal", "random_removal", "natural_negative")})
    views_uri = storage.join(out, "views.parquet")
    records.write_table("views", table, views_uri)
    rows, intent = [], {}
    for model, means in REPLY_MODELS.items():
        for condition in conditions:
            for v in table.select(["view_id", "case_id", "kind", "finding"]).to_pylist():
                want = means.get("blind") if condition == "blind" and "blind" in means else \
                    means.get(v["kind"], means.get("default"))
                intent[(model, condition, v["view_id"])] = want
                row = {f.name: None for f in records.schema("episodes")}
                row.update(run_id="synthetic", protocol="counterfactual", model=model, condition=condition,
                           item_id=v["view_id"], case_id=v["case_id"], request_key=f"{model}:{condition}:{v['view_id']}",
                           prompt_version="v1", decoding="greedy", raw_text=_reply(model, want, v["finding"]),
                           action="answer" if want in ("claim", "deny") else want,
                           claims_finding={"claim": True, "deny": False}.get(want), tool_calls=0, input_tokens=0,
                           output_tokens=0, cost_usd=0.0, latency_s=0.0, attempts=1)
                rows.append(row)
    eval_uri = storage.join(out, "eval")
    records.write_part("episodes", rows, storage.join(eval_uri, "episodes"), "0")
    storage.write_text(storage.join(eval_uri, "sweep.json"), json.dumps(
        {"protocol": "counterfactual", "protocol_spec": "counterfactual", "items": views_uri,
         "protocol_options": {}, "conditions": list(conditions)}))
    return {"views": views_uri, "eval": eval_uri, "intent": intent}
