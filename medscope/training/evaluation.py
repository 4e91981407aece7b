"""Evaluation of a freshly trained adapter on held-out views, scored per view (counterfactual paper §3.8).

Used by the training job (validation metrics for the §3.6 selection) and by the sweep (every
arm x seed). Episodes run greedily through the agent loop (``episodes.sampler_for``); rewards
follow the scoring issue's Table 2 matrix.
"""

from __future__ import annotations

from medscope.config import StrictModel
from medscope.analysis.training_seeds import arm_seed_columns
from medscope.training.episodes import sampler_for, summarize


class EvalSettings(StrictModel):
    views: str  # views table URI holding the evaluation split
    split: str = "validation"
    cases: int | None = None  # only the views of the first n cases (by case id)
    max_new_tokens: int = 128
    max_turns: int = 5  # model replies: 3 tools + final + 1 spare, as the agent loop
    # named test sets (counterfactual paper Tables 3-4: main, heldout_tools, fresh_external, ...) -> the views
    # table each is read from, on its own splits (analysis.testsets.TEST_SETS); scored beside the
    # validation split, so C1-C4 (§3.7), worded on the test sets, apply to a sweep's own scores
    test_sets: dict[str, str] = {}


def select_eval_views(rows: list[dict], split: str | tuple[str, ...], cases: int | None,
                      tools: tuple[str, ...] | None = None) -> list[dict]:
    """QC-passed evaluation views (O, T, R, N, D: never the training-only kinds) of ``split`` (one
    split or several), edited views of ``tools`` only when given (``testsets.tools_of``), sorted
    by view id, optionally of the first ``cases`` cases.

    Parameters
    ----------
    rows : list of dict
        A views table's rows.
    split : str or tuple of str
        The split or splits.
    cases : int or None
        Keep only the views of the first ``cases`` case ids; None or 0: all.
    tools : tuple of str, optional
        Editing tools whose edited views are kept.

    Returns
    -------
    list of dict
        The views, by view id.
    """
    from medscope.analysis.testsets import is_evaluation_view

    splits = (split,) if isinstance(split, str) else tuple(split)
    views = sorted((v for v in rows if v["passed"] and is_evaluation_view(v["kind"], v["split"], splits,
                                                                            v.get("tool"), tools)),
                   key=lambda v: v["view_id"])
    if cases:
        keep = set(sorted({v["case_id"] for v in views})[:cases])
        views = [v for v in views if v["case_id"] in keep]
    return views


def evaluate_model(vlm, model, prompt: str, views: list[dict], settings: EvalSettings, run_id: str,
                   test_set: str | None = None) -> tuple[dict, list[dict]]:
    """(metrics, scores rows) of greedy episodes of ``model`` on ``views``; the rows name
    ``test_set`` (default: the settings' split).

    Parameters
    ----------
    vlm : VLM
        The loaded model bundle.
    model : torch.nn.Module
        The model; put in eval mode for the run, its mode restored after.
    prompt : str
        'agent' or 'short'.
    views : list of dict
        The views to run.
    settings : EvalSettings
        Turns, tokens and the default split name.
    run_id : str
        Written as the rows' run id and model.
    test_set : str, optional
        Written as the rows' test set.

    Returns
    -------
    metrics : dict
        ``episodes.summarize`` of the outcomes.
    rows : list of dict
        One scores row per view (``score_row``).
    """
    was_training = model.training
    model.eval()
    sampler = sampler_for(vlm, model, prompt, settings.max_turns, settings.max_new_tokens)
    outcomes, rows = [], []
    for v in views:
        o = sampler(v, 0.0, 0).outcome
        outcomes.append((v, o))
        rows.append(score_row(v, o, run_id, test_set or settings.split))
    model.train(was_training)
    return summarize(outcomes), rows


def evaluate_all(vlm, model, prompt: str, settings: EvalSettings, run_id: str, read_views) -> tuple[dict, dict, list[dict]]:
    """The validation split and every named test set of ``settings``: (validation metrics,
    {test set: metrics}, every scores row). ``read_views(uri)`` gives a views table's rows.

    Parameters
    ----------
    vlm : VLM
        The loaded model bundle.
    model : torch.nn.Module
        The model.
    prompt : str
        'agent' or 'short'.
    settings : EvalSettings
        The validation views, split, cases and named test sets.
    run_id : str
        Written on every scores row.
    read_views : callable
        URI -> list of views rows.

    Returns
    -------
    metrics : dict
        Validation metrics.
    per_set : dict of str to dict
        Test set -> metrics.
    rows : list of dict
        Every scores row, validation first.
    """
    from medscope.analysis.testsets import splits_of, tools_of

    val = select_eval_views(read_views(settings.views), settings.split, settings.cases)
    metrics, rows = evaluate_model(vlm, model, prompt, val, settings, run_id)
    per_set = {}
    for name, uri in settings.test_sets.items():
        views = select_eval_views(read_views(uri), splits_of(name), settings.cases, tools_of(name))
        per_set[name], more = evaluate_model(vlm, model, prompt, views, settings, run_id, test_set=name)
        rows += more
    return metrics, per_set, rows


def score_row(v: dict, o, run_id: str, test_set: str) -> dict:
    """One ``scores`` row for view ``v`` and its :class:`~medscope.training.episodes.Outcome`.

    Parameters
    ----------
    v : dict
        A views row.
    o : Outcome
        Its scored outcome.
    run_id : str
        The run id, also written as the model and split into arm and seed.
    test_set : str
        The test set or split name.

    Returns
    -------
    dict
        The row (cost matrix 'table2', condition 'agent').
    """
    return {"run_id": run_id, "model": run_id, "condition": "agent", "view_id": v["view_id"], "case_id": v["case_id"],
            "kind": v["kind"], "expected": v["expected"], "action": o.action, "claims_finding": o.claims,
            "correct": o.correct, "iou": o.iou, "grounded": o.grounded, "tool_calls": o.tool_calls,
            "reward": o.reward, "cost_matrix": "table2", "test_set": test_set,
            "lesion_present": o.present, "critical": v["critical"], "oversized_box": o.oversized,
            "imaging_type": v["imaging_type"], "finding": v["finding"], "lesion_area_frac": v["lesion_area_frac"],
            "patient_id": v.get("patient_id"), "group_id": v.get("group_id"),
            # a seed run (<arm>@seed<k>) is its own model; its arm and seed are columns too
            **dict(zip(("arm", "seed"), (c[0] for c in arm_seed_columns([run_id]))))}
