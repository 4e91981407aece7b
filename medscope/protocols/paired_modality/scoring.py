"""Scoring of paired-modality episodes (seed 002 §4.2, §5, Table 1).

episodes -> extract PHOTO FINDINGS -> judge (FP, FN; optional second judge) -> per-photo labels
-> rates by model x photo type x setting with exact Clopper-Pearson intervals -> exact McNemar,
photo only vs paired on the same photographs, per model and pooled across models.
"""

from __future__ import annotations

from collections import defaultdict

from medscope.models.config import ModelEntry, ModelsConfig
from medscope.errors import MedScopeError
from medscope.protocols.paired_modality import judge as jd
from medscope.protocols.paired_modality.extraction import extract_photo_findings
from medscope.protocols.paired_modality.manifest import PHOTO_TYPES, PairPhoto
from medscope.protocols.paired_modality.stats import clopper_pearson, cohen_kappa, mcnemar_exact

SETTINGS = ("photo_only", "paired")
SETTING_LABELS = {"photo_only": "Photo only", "paired": "Photo + radiograph"}
METRICS = {"fp_rate": "fp", "fn_rate": "fn", "any_rate": "any_error"}
TEST_SET = "pairs"


def make_judge(spec, vocabulary: list[str], models_file: str | None = None):
    """A judge from a score option: ``rule`` / ``rule-named-only`` (deterministic), a model entry
    (dict, the fields of configs/models/*.yaml), or the name of an entry in ``models_file``."""
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
    return jd.ModelJudge(build_model(entry), decoding, identity, max_attempts=entry.max_attempts)


def label_episodes(episodes: list[dict], photos: dict[str, PairPhoto], judges: list, cache_uri: str,
                   workers: int = 4) -> tuple[list[dict], dict]:
    """One labels row per judged episode; returns (rows, counts). Episodes of other protocols,
    unknown items and failed calls (an error and no reply) are skipped and counted."""
    counts = {"episodes": len(episodes), "skipped_error": 0, "skipped_unknown": 0}
    rows, prompts = [], []
    for ep in episodes:
        photo = photos.get(ep["view_id"])
        if photo is None or ep["condition"] not in SETTINGS:
            counts["skipped_unknown"] += 1
            continue
        if ep.get("raw_text") is None and ep.get("error"):
            counts["skipped_error"] += 1  # a failed call is not a description
            continue
        ext = extract_photo_findings(ep.get("raw_text"))
        findings = [(f.name, f.all_terms()) for f in photo.findings]
        prompts.append(jd.judge_prompt(ext.text, photo.caption, findings))
        rows.append({"run_id": ep.get("run_id") or "", "model": ep["model"], "setting": ep["condition"],
                     "item_id": photo.item_id, "condition": photo.condition, "photo_type": photo.photo_type,
                     "body_region": photo.body_region, "request_key": ep["request_key"],
                     "extracted": ext.text, "extraction_method": ext.method})
    for j, judge in enumerate(judges):
        verdicts, c = jd.judge_all(judge, prompts, cache_uri, workers)
        suffix = "" if j == 0 else f"_{j + 1}"
        counts[f"judge{suffix or '_1'}"] = {"name": judge.name, **c}
        for row, v in zip(rows, verdicts):
            row[f"judge{suffix}"] = judge.name
            row[f"fp{suffix}"] = v.fp
            row[f"fn{suffix}"] = v.fn
            row[f"any_error{suffix}"] = None if v.fp is None else bool(v.fp or v.fn)
            row[f"judge_error{suffix}"] = v.error
            row[f"judge_reply{suffix}"] = v.raw
    return rows, counts


def rate_rows(labels: list[dict], alpha: float = 0.05) -> list[dict]:
    """Metrics rows (records "metrics" schema): FP / FN / any-error rate per model x photo type x
    setting over the photographs the judge labelled, with exact Clopper-Pearson intervals."""
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


def mcnemar_rows(labels: list[dict]) -> list[dict]:
    """Exact McNemar, photo only (before) vs paired (after), on photographs labelled in both
    settings: per model x photo type x metric, and pooled across models (every model's pairs)."""
    by: dict[tuple, dict] = {}
    for r in labels:
        if r["fp"] is not None:
            by[(r["model"], r["item_id"], r["setting"])] = r
    models = sorted({m for m, _, _ in by})
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
                    out.append({"model": model, "photo_type": photo_type, "metric": metric, **mcnemar_exact(x, y)})
                pooled_x += x
                pooled_y += y
            if pooled_x and len(models) > 1:
                out.append({"model": "pooled", "photo_type": photo_type, "metric": metric,
                            **mcnemar_exact(pooled_x, pooled_y)})
    return out


def agreement(labels: list[dict]) -> dict:
    """Cohen's kappa of the two judges on FP, FN and any-error, over episodes both labelled."""
    both = [r for r in labels if r.get("fp") is not None and r.get("fp_2") is not None]
    if not both:
        return {}
    out = {"judges": [both[0]["judge"], both[0]["judge_2"]], "n": len(both)}
    for col in ("fp", "fn", "any_error"):
        out[col] = cohen_kappa([r[col] for r in both], [r[f"{col}_2"] for r in both])
    return out
