"""Scoring of paired-modality episodes (paired-modality paper §4.2, §5, Table 1).

episodes -> extract PHOTO FINDINGS -> judge (FP, FN; optional second judge) -> per-photo labels
-> rates by model x photo type x setting with exact Clopper-Pearson intervals -> exact McNemar,
photo only vs paired on the same photographs, per model and pooled over the subject models
(constant policies and the judge left out unless named).
"""

from __future__ import annotations

from collections import defaultdict

from medscope.models.config import ModelEntry, ModelsConfig
from medscope.errors import MedScopeError
from medscope.protocols import denominators as den
from medscope.protocols.paired_modality import judge as jd
from medscope.protocols.paired_modality.extraction import FAILED, extract_photo_findings
from medscope.protocols.paired_modality.manifest import PHOTO_TYPES, PairPhoto
from medscope.protocols.paired_modality.rates_and_agreement import clopper_pearson, cohen_kappa, mcnemar_exact

SETTINGS = ("photo_only", "paired")
SETTING_LABELS = {"photo_only": "Photo only", "paired": "Photo + radiograph"}
METRICS = {"fp_rate": "fp", "fn_rate": "fn", "any_rate": "any_error"}
TEST_SET = "pairs"
MANIFEST_REJECTED = "manifest_rejected"
EXCLUSION_RULES = {den.NOT_IN_ITEMS: "photograph not in the manifest",
                   MANIFEST_REJECTED: "photograph the manifest check refused",
                   den.UNKNOWN_CONDITION: "not a setting: photo_only or paired",
                   den.FAILED_CALL: "an error and no reply; its photograph stays missing",
                   den.DUPLICATE: den.DUPLICATE_MEANING}


def exclusion_rule(ep: dict, known, refused=()) -> str | None:
    """The rule an episode is excluded under before any duplicate is looked for (None: labelled).

    Parameters
    ----------
    ep : dict
        An episode (``item_id``, ``condition`` as the setting, ``raw_text``, ``error``).
    known : collection of str
        The manifest's good photographs' ids.
    refused : collection of str, optional
        The ids the manifest refused (``manifest_rejected``).

    Returns
    -------
    str or None
        ``manifest_rejected``, ``not_in_items``, ``unknown_condition``, ``failed_call``, or None.
    """
    if ep["item_id"] not in known:
        return MANIFEST_REJECTED if ep["item_id"] in refused else den.NOT_IN_ITEMS
    if ep["condition"] not in SETTINGS:
        return den.UNKNOWN_CONDITION
    if ep.get("raw_text") is None and ep.get("error"):
        return den.FAILED_CALL
    return None


def make_judge(spec, vocabulary: list[str], models_file: str | None = None):
    """A judge from a score option: ``rule`` / ``rule-named-only`` (deterministic), a model entry
    (dict, the fields of configs/models/*.yaml), or the name of an entry in ``models_file``.

    Parameters
    ----------
    spec : str or dict or ModelEntry
        'rule' (generic abnormality counts as FP), 'rule-named-only' (it does not), a model entry, or the name
        of an entry in ``models_file``.
    vocabulary : list of str
        Every significant-finding term of the manifest (``manifest.vocabulary``), for a rule judge.
    models_file : str or None, optional
        A models config (configs/models/*.yaml) holding the named judge.

    Returns
    -------
    RuleJudge or ModelJudge
        The judge; a ModelJudge carries ``served`` (kind, model id) so a subject that is the judge is found.

    Raises
    ------
    MedScopeError
        When a judge is named with no ``models_file``, is not in it, the models file or entry is invalid, or
        ``spec`` is of another type.

    References
    ----------
    .. [1] paired-modality paper, §4.2.
    """
    from medscope import config as cfgmod
    from medscope.models.registry import build_model

    if spec in ("rule", "rule-named-only"):
        return jd.RuleJudge(vocabulary, generic_fp=spec == "rule")
    if isinstance(spec, str):
        if not models_file:
            raise MedScopeError(f"judge {spec!r}: name a models file (judge_models) holding it, or use 'rule'")
        entries = {e.name: e for e in cfgmod.load(ModelsConfig, models_file).models}
        if spec not in entries:
            raise MedScopeError(f"judge {spec!r} is not in {models_file}; it has {sorted(entries)}")
        entry = entries[spec]
    elif isinstance(spec, dict):
        entry = cfgmod.parse(ModelEntry, spec, source="judge")
    elif isinstance(spec, ModelEntry):
        entry = spec
    else:
        raise MedScopeError(f"judge must be 'rule', a model entry or its name; got {spec!r}")
    decoding = entry.decoding()
    identity = f"model:{entry.name}:{entry.kind}:{entry.model}:{decoding.key()}"
    judge = jd.ModelJudge(build_model(entry), decoding, identity, max_attempts=entry.max_attempts)
    judge.served = (entry.kind, entry.model)  # a subject with the same kind and model id is this judge
    return judge


def judge_subjects(judges: list, run_models: list[dict], episode_models: list[str]) -> list[str]:
    """The evaluated models that are one of the judges (same name, or same kind and model id):
    the paired-modality paper's judge is never a subject, so their episodes are left out of every table.

    Parameters
    ----------
    judges : list of RuleJudge or ModelJudge
        The judges of the scoring.
    run_models : list of dict
        The eval run's models (``name``, ``kind``, ``model``) from its sweep.json; [] when unknown.
    episode_models : list of str
        The models that have episodes.

    Returns
    -------
    list of str
        The episode models that are a judge, sorted.

    References
    ----------
    .. [1] paired-modality paper, §4.2.
    """
    served = {getattr(j, "served", None) for j in judges} - {None}
    names = {j.name for j in judges}
    out = {m for m in episode_models if m in names}
    out |= {m["name"] for m in run_models if (m.get("kind"), m.get("model")) in served}
    return sorted(out & set(episode_models))


def label_episodes(episodes: list[dict], photos: dict[str, PairPhoto], judges: list, cache_uri: str,
                   workers: int = 4) -> tuple[list[dict], dict]:
    """One labels row per episode with a reply; returns (rows, counts). Episodes of other
    protocols, unknown items and failed calls (an error and no reply) are skipped and counted.
    A reply whose photo section cannot be isolated is kept as ``extraction_failed``: nothing is
    sent to the judge and its labels stay empty (never "no finding").

    Parameters
    ----------
    episodes : list of dict
        Episode rows (``item_id``, ``condition`` as the setting, ``model``, ``raw_text``, ``error``,
        ``request_key``, ``run_id``).
    photos : dict of str to PairPhoto
        The manifest's photographs by item id.
    judges : list of RuleJudge or ModelJudge
        The first judge labels ``fp`` / ``fn`` / ``any_error``; the n-th after it adds columns
        suffixed ``_n``.
    cache_uri : str
        Folder of the judges' cached replies (``judge.judge_all``).
    workers : int, optional
        Concurrent judge requests (default 4).

    Returns
    -------
    rows : list of dict
        One labels row per kept episode: model, setting, photo, the extracted text and method, the reply,
        and per judge its name, ``fp``, ``fn``, ``any_error`` (None when not judged), ``judge_error``,
        ``judge_reply`` and ``unverified``.
    counts : dict
        ``episodes``, ``skipped_error``, ``skipped_unknown``, ``extraction_failed`` and per judge
        (``judge_1``, ``judge_2``, ...) its name with cached / requested / failed requests.

    References
    ----------
    .. [1] paired-modality paper, §4.2.
    """
    counts = {"episodes": len(episodes), "skipped_error": 0, "skipped_unknown": 0, FAILED: 0}
    rows, prompts, judged = [], [], []
    for ep in episodes:
        photo = photos.get(ep["item_id"])
        if photo is None or ep["condition"] not in SETTINGS:
            counts["skipped_unknown"] += 1
            continue
        if ep.get("raw_text") is None and ep.get("error"):
            counts["skipped_error"] += 1  # a failed call is not a description
            continue
        ext = extract_photo_findings(ep.get("raw_text"), ep["condition"])
        row = {"run_id": ep.get("run_id") or "", "model": ep["model"], "setting": ep["condition"],
               "item_id": photo.item_id, "condition": photo.condition, "photo_type": photo.photo_type,
               "body_region": photo.body_region, "request_key": ep["request_key"],
               "extracted": ext.text, "extraction_method": ext.method, "reply": ep.get("raw_text")}
        rows.append(row)
        if ext.method == FAILED:
            counts[FAILED] += 1
            continue
        findings = [(f.name, f.all_terms()) for f in photo.findings]
        prompts.append(jd.judge_prompt(ext.text, photo.caption, findings))
        judged.append(row)
    for j, judge in enumerate(judges):
        verdicts, c = jd.judge_all(judge, prompts, cache_uri, workers)
        suffix = "" if j == 0 else f"_{j + 1}"
        counts[f"judge{suffix or '_1'}"] = {"name": judge.name, **c}
        for row in rows:  # extraction failures: no verdict, said so
            row.update({f"judge{suffix}": judge.name, f"fp{suffix}": None, f"fn{suffix}": None,
                        f"any_error{suffix}": None, f"judge_error{suffix}": FAILED, f"judge_reply{suffix}": None,
                        f"unverified{suffix}": None})
        for row, v in zip(judged, verdicts):
            row[f"fp{suffix}"] = v.fp
            row[f"fn{suffix}"] = v.fn
            row[f"any_error{suffix}"] = None if v.fp is None else bool(v.fp or v.fn)
            row[f"judge_error{suffix}"] = v.error
            row[f"judge_reply{suffix}"] = v.raw
            row[f"unverified{suffix}"] = None if v.unverified is None else list(v.unverified)
    return rows, counts


def cell_counts(labels: list[dict]) -> list[dict]:
    """Per model x setting x photo type: episodes, extraction failures, replies the (first) judge
    left unlabelled, and episodes whose (first) judge found asserted photo findings it could not
    verify (a rule judge's "unverified").

    Parameters
    ----------
    labels : list of dict
        labels rows (:func:`label_episodes`).

    Returns
    -------
    list of dict
        One row per (model, setting, photo type), sorted: ``episodes``, ``extraction_failed``,
        ``unjudged``, ``unverified`` (episodes) and ``unverified_findings`` (statements).
    """
    cells: dict[tuple, dict] = {}
    for r in labels:
        c = cells.setdefault((r["model"], r["setting"], r["photo_type"]),
                             {"episodes": 0, FAILED: 0, "unjudged": 0, "unverified": 0, "unverified_findings": 0})
        c["episodes"] += 1
        c[FAILED] += r["extraction_method"] == FAILED
        c["unjudged"] += r["fp"] is None and r["extraction_method"] != FAILED
        if r.get("unverified"):
            c["unverified"] += 1
            c["unverified_findings"] += len(r["unverified"])
    return [{"model": m, "setting": s, "photo_type": pt, **c} for (m, s, pt), c in sorted(cells.items())]


def rate_rows(labels: list[dict], alpha: float = 0.05) -> list[dict]:
    """Metrics rows (records "metrics" schema): FP / FN / any-error rate per model x photo type x
    setting over the photographs the judge labelled, with exact Clopper-Pearson intervals.

    Parameters
    ----------
    labels : list of dict
        labels rows (:func:`label_episodes`); rows the first judge did not label are left out.
    alpha : float, optional
        1 - confidence level of the intervals (default 0.05).

    Returns
    -------
    list of dict
        metrics rows: ``metric`` 'fp_rate', 'fn_rate' or 'any_rate', ``condition`` the setting,
        ``test_set`` 'pairs', ``breakdown`` ``photo_type=...``, ``value`` k / n, ``ci_low`` / ``ci_high``
        and ``n_cases`` n (photographs labelled).

    References
    ----------
    .. [1] paired-modality paper, Table 1.
    """
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in labels:
        if r["fp"] is not None:
            groups[(r["model"], r["setting"], r["photo_type"])].append(r)
    out = []
    for (model, setting, photo_type), rows in sorted(groups.items()):
        n = len(rows)
        for metric, col in METRICS.items():
            k = sum(bool(r[col]) for r in rows)
            lo, hi = clopper_pearson(k, n, alpha)
            out.append({"model": model, "condition": setting, "test_set": TEST_SET,
                        "breakdown": f"photo_type={photo_type}", "metric": metric, "value": k / n,
                        "ci_low": lo, "ci_high": hi, "n_cases": n, "reference": None, "p_value": None,
                        "n_boot": None})
    return out


CONSTANT_KINDS = ("policy",)  # kinds whose replies ignore both images: never pooled unless named


def pooled_subjects(run_models: list[dict], episode_models: list[str], judges: list[str],
                    named: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The subject models a pooled test pools (paired-modality paper §5.2 pools its *evaluated* models), and
    the models left out with the reason. ``run_models``: the eval run's models (name, kind) from
    its sweep.json, or [] when unknown; ``named``: an explicit list (constant policies may be
    named); a judge is never a subject, named or not.

    Parameters
    ----------
    run_models : list of dict
        The eval run's models (``name``, ``kind``); [] when unknown (constant policies are then known by
        name).
    episode_models : list of str
        The models that have labels.
    judges : list of str
        Names of the models that are judges.
    named : list of str or None, optional
        The models to pool (option ``pooled_models``); None to pool every model but judges and constant
        policies.

    Returns
    -------
    pool : list of str
        The models pooled.
    left_out : dict of str to str
        Each model left out and why.

    Raises
    ------
    MedScopeError
        When ``named`` holds a model with no labels in this run.

    References
    ----------
    .. [1] paired-modality paper, §5.2.
    """
    kinds = {m["name"]: m.get("kind") for m in run_models}
    present = sorted(set(episode_models))
    left: dict[str, str] = {}
    for name in present:
        if name in judges:
            left[name] = "the judge (never a subject)"
    if named:
        missing = sorted(set(named) - set(present))
        if missing:
            raise MedScopeError(f"pooled_models names {missing}, not in this run; its models: {present}")
        pool = [m for m in dict.fromkeys(named) if m not in left]
        left.update({m: "not named in pooled_models" for m in present if m not in pool and m not in left})
        return pool, left
    from medscope.models.policies import POLICIES, ALIASES

    for name in present:
        if name in left:
            continue
        constant = kinds.get(name) in CONSTANT_KINDS if name in kinds else (
            name.lower().replace("_", "-") in POLICIES or name.lower().replace("_", "-") in ALIASES)
        if constant:
            left[name] = "constant policy (name it in pooled_models to pool it)"
    return [m for m in present if m not in left], left


def mcnemar_rows(labels: list[dict], pool: list[str] | None = None) -> list[dict]:
    """Exact McNemar, photo only (before) vs paired (after), on photographs labelled in both
    settings: per model x photo type x metric, and pooled over the subject models ``pool``
    (default: every model) when it holds two or more; the pooled row names them.

    Parameters
    ----------
    labels : list of dict
        labels rows (:func:`label_episodes`); rows the first judge did not label are left out.
    pool : list of str or None, optional
        The subject models of the pooled test (:func:`pooled_subjects`); None for every model.

    Returns
    -------
    list of dict
        Per photo type and metric ('fp_rate', 'fn_rate', 'any_rate'): one row per model and, with two or
        more pooled models, one with model 'pooled' and ``pooled_models`` listing them; each with the
        :func:`~medscope.protocols.paired_modality.rates_and_agreement.mcnemar_exact` figures.

    References
    ----------
    .. [1] paired-modality paper, §5.2.
    """
    by: dict[tuple, dict] = {}
    for r in labels:
        if r["fp"] is not None:
            by[(r["model"], r["item_id"], r["setting"])] = r
    models = sorted({m for m, _, _ in by})
    pool = models if pool is None else [m for m in pool if m in models]
    out = []
    for photo_type in PHOTO_TYPES:
        for metric, col in METRICS.items():
            pooled_x, pooled_y = [], []
            for model in models:
                x, y = [], []
                for (m, item, s), r in sorted(by.items()):
                    if m == model and s == "photo_only" and r["photo_type"] == photo_type and (m, item, "paired") in by:
                        x.append(bool(r[col]))
                        y.append(bool(by[(m, item, "paired")][col]))
                if x:
                    out.append({"model": model, "photo_type": photo_type, "metric": metric, "pooled_models": None,
                                **mcnemar_exact(x, y)})
                if model in pool:
                    pooled_x += x
                    pooled_y += y
            if pooled_x and len(pool) > 1:
                out.append({"model": "pooled", "photo_type": photo_type, "metric": metric,
                            "pooled_models": ", ".join(pool), **mcnemar_exact(pooled_x, pooled_y)})
    return out


def agreement(labels: list[dict]) -> dict:
    """Cohen's kappa of the two judges on FP, FN and any-error, over episodes both labelled.

    Parameters
    ----------
    labels : list of dict
        labels rows (:func:`label_episodes`) of two judges (columns ``fp_2``, ``fn_2``, ``any_error_2``).

    Returns
    -------
    dict
        ``judges`` (the two names), ``n`` and per label ``fp``, ``fn``, ``any_error`` the
        :func:`~medscope.protocols.paired_modality.rates_and_agreement.cohen_kappa` result; empty when no
        episode has both labels.
    """
    both = [r for r in labels if r.get("fp") is not None and r.get("fp_2") is not None]
    if not both:
        return {}
    out = {"judges": [both[0]["judge"], both[0]["judge_2"]], "n": len(both)}
    for col in ("fp", "fn", "any_error"):
        out[col] = cohen_kappa([r[col] for r in both], [r[f"{col}_2"] for r in both])
    return out


def coverage(photos: list[PairPhoto], manifest_rejects: list[dict], episodes: list[dict], labels: list[dict],
             pairs: list[tuple[str, str]] = (), duplicates: list[dict] = ()) -> dict:
    """Every subject model x setting against the manifest's photographs (the fixed denominator of
    Table 1's rates): labelled, extraction failed (``unclear``: a done unit in no rate), missing (no
    episode, or only a failed call: a failed unit), and the episodes excluded by rule.

    Parameters
    ----------
    photos : list of PairPhoto
        The manifest's good photographs (``read_manifest``).
    manifest_rejects : list of dict
        Its rejects rows; an episode of a refused photograph is excluded as ``manifest_rejected``.
    episodes : list of dict
        The subject models' episodes of this protocol (``item_id``, ``model``, ``condition``,
        ``raw_text``, ``error``).
    labels : list of dict
        :func:`label_episodes`' rows.
    pairs : list of tuple of (str, str), optional
        (model, setting) pairs the eval run accounted for (``denominators.eval_run_pairs``).
    duplicates : list of dict, optional
        Episodes ``denominators.split_duplicates`` left out (excluded as ``duplicate_episode``).

    Returns
    -------
    dict
        ``denominators.coverage``'s result, unit ``photographs``, test set ``pairs``.

    References
    ----------
    .. [1] paired-modality paper, Table 1 (every photograph in every setting).
    """
    known = {p.item_id for p in photos}
    refused = {r["item_id"] for r in manifest_rejects}
    excluded = [(e["model"], e["condition"], rule) for e in episodes
                if (rule := exclusion_rule(e, known, refused)) is not None]
    excluded += [(e["model"], e["condition"], den.DUPLICATE) for e in duplicates]
    return den.coverage(
        [p.item_id for p in photos], [(e["model"], e["condition"]) for e in episodes if e["condition"] in SETTINGS],
        [(r["model"], r["setting"], r["item_id"]) for r in labels if r["extraction_method"] != FAILED],
        excluded, [(r["model"], r["setting"], r["item_id"]) for r in labels if r["extraction_method"] == FAILED],
        pairs, unit="photographs", test_set=TEST_SET)
