"""The pre-specified reader-study analysis (counterfactual paper §7), from answer rows (medscope.reader.answers).

Per reader: the share rated edited (probably or definitely) per image kind; the AUC of the
four-level rating for edited (erased + control) vs unmodified (with and without the finding)
images, and for erased vs control-edited images (0.5: the two edits are equally recognisable);
the "yes" share per kind; the residual-finding rate (erased images answered "yes") with its exact
Clopper-Pearson 95% interval read against the acceptable rate. Between readers: Cohen's kappa on
edited yes/no and on the clinical answer. By reader majority: the residual-finding rate over the
erased images of localized findings (stress-test tags left out). And every share by source.
"""

from __future__ import annotations

import itertools
import json

import numpy as np

from medscope.io import records, safe_text, storage
from medscope.errors import MedScopeError
from medscope.reader import (
    ANALYSIS_FILE,
    CLINICAL_ANSWERS,
    EDITED_KINDS,
    READER_KINDS,
    REJECTS_FILE,
    UNMODIFIED_KINDS,
)
from medscope.reader.answers import load_answers
from medscope.reader.pack import read_key, verify_pack
from medscope.reader.rating_stats import clopper_pearson, kappa, rating_auc

ACCEPTABLE_RESIDUAL = 0.10  # §7: the residual-finding rate is read against 10%


def _share(rows: list[dict], pred) -> float | None:
    return sum(1 for r in rows if pred(r)) / len(rows) if rows else None


def residual_rate(k: int, n: int, acceptable: float = ACCEPTABLE_RESIDUAL) -> dict:
    """k of n erased images still answered "yes": the rate, its exact 95% interval, and whether
    the interval's upper bound lies below the acceptable rate (the §7 criterion).

    Parameters
    ----------
    k : int
        Erased images answered "yes".
    n : int
        Erased images read.
    acceptable : float, optional
        The acceptable residual-finding rate (default 0.10).

    Returns
    -------
    dict
        ``k``, ``n``, ``rate`` (k / n), ``ci_low`` and ``ci_high`` (the Clopper-Pearson 95% interval; all
        three None when n is 0) and ``below_acceptable`` (False when n is 0).

    References
    ----------
    .. [1] counterfactual paper, §7.
    """
    lo, hi = clopper_pearson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else None, "ci_low": lo if n else None, "ci_high": hi if n else None,
            "below_acceptable": bool(n) and hi < acceptable}


def kind_shares(rows: list[dict]) -> dict:
    """Per kind: images read, share rated edited, share answered yes / cannot tell.

    Parameters
    ----------
    rows : list of dict
        Scored answer rows (``answers.load_answers``).

    Returns
    -------
    dict of str to dict
        For each reader kind ('lesion', 'erased', 'control', 'lesion_free'): ``n`` and the shares
        ``edited``, ``yes`` and ``cannot_tell`` (None when the kind has no rows).
    """
    out = {}
    for kind in READER_KINDS:
        rk = [r for r in rows if r["reader_kind"] == kind]
        out[kind] = {"n": len(rk), "edited": _share(rk, lambda r: r["edited"]),
                     "yes": _share(rk, lambda r: r["clinical"] == "yes"),
                     "cannot_tell": _share(rk, lambda r: r["clinical"] == "cannot_tell")}
    return out


def reader_summary(rows: list[dict], acceptable: float = ACCEPTABLE_RESIDUAL) -> dict:
    """One reader's (or one pooled group's) figures.

    Parameters
    ----------
    rows : list of dict
        The scored answer rows of one reader, or of a pooled group.
    acceptable : float, optional
        The acceptable residual-finding rate.

    Returns
    -------
    dict
        ``n``; ``kinds`` (``kind_shares``); the rating AUCs ``auc_edited_vs_unmodified``,
        ``auc_erased_vs_control`` and ``auc_erased_vs_original`` (NaN when a side is empty); ``residual``
        (``residual_rate`` over the erased images).
    """
    def ratings(kinds):
        return [r["rating"] for r in rows if r["reader_kind"] in kinds]
    erased = [r for r in rows if r["reader_kind"] == "erased"]
    return {"n": len(rows), "kinds": kind_shares(rows),
            "auc_edited_vs_unmodified": rating_auc(ratings(EDITED_KINDS), ratings(UNMODIFIED_KINDS)),
            "auc_erased_vs_control": rating_auc(ratings(("erased",)), ratings(("control",))),
            # like for like with the §5.4 reference (models: erased-lesion views vs originals)
            "auc_erased_vs_original": rating_auc(ratings(("erased",)), ratings(("lesion",))),
            "residual": residual_rate(sum(r["clinical"] == "yes" for r in erased), len(erased), acceptable)}


def agreement(rows: list[dict]) -> list[dict]:
    """Cohen's kappa for each pair of readers on the images both read: edited yes/no and the
    clinical answer (yes / no / cannot tell).

    Parameters
    ----------
    rows : list of dict
        Scored answer rows of all readers.

    Returns
    -------
    list of dict
        One per pair of readers (in reader-id order): ``reader_a``, ``reader_b``, ``n`` (images both read),
        ``kappa_edited`` and ``kappa_clinical`` (NaN with no common image).
    """
    by_reader: dict[str, dict] = {}
    for r in rows:
        by_reader.setdefault(r["reader"], {})[(r["pack"], r["image"])] = r
    out = []
    for a, b in itertools.combinations(sorted(by_reader), 2):
        common = sorted(set(by_reader[a]) & set(by_reader[b]))
        ra, rb = [by_reader[a][i] for i in common], [by_reader[b][i] for i in common]
        out.append({"reader_a": a, "reader_b": b, "n": len(common),
                    "kappa_edited": kappa([x["edited"] for x in ra], [x["edited"] for x in rb], (False, True)),
                    "kappa_clinical": kappa([x["clinical"] for x in ra], [x["clinical"] for x in rb], CLINICAL_ANSWERS)})
    return out


def majority_residual(rows: list[dict], acceptable: float = ACCEPTABLE_RESIDUAL) -> dict:
    """Residual findings judged per erased image by reader majority, localized findings only:
    an image counts when more than half of the readers who read it answered "yes"; images with
    exactly half are counted apart as ties (not residual), so an adjudicator can settle them.

    Parameters
    ----------
    rows : list of dict
        Scored answer rows of all readers.
    acceptable : float, optional
        The acceptable residual-finding rate.

    Returns
    -------
    dict
        ``residual_rate``'s fields over the erased images without a stress tag (k: images with a
        majority "yes"), plus ``ties`` and ``readers_per_image`` (the distinct reader counts, sorted).

    References
    ----------
    .. [1] counterfactual paper, §7.
    """
    votes: dict[tuple, list[bool]] = {}
    for r in rows:
        if r["reader_kind"] == "erased" and r["stress_tag"] is None:
            votes.setdefault((r["pack"], r["image"]), []).append(r["clinical"] == "yes")
    k = sum(1 for v in votes.values() if 2 * sum(v) > len(v))
    ties = sum(1 for v in votes.values() if 2 * sum(v) == len(v))
    return dict(residual_rate(k, len(votes), acceptable), ties=ties,
                readers_per_image=sorted({len(v) for v in votes.values()}))


def by_source(rows: list[dict], acceptable: float = ACCEPTABLE_RESIDUAL) -> dict:
    """Pooled over readers, per source.

    Parameters
    ----------
    rows : list of dict
        Scored answer rows.
    acceptable : float, optional
        The acceptable residual-finding rate.

    Returns
    -------
    dict of str to dict
        Source -> ``reader_summary`` of its rows, sources in name order.
    """
    return {src: reader_summary([r for r in rows if r["source"] == src], acceptable)
            for src in sorted({r["source"] for r in rows})}


def by_stress_tag(rows: list[dict], acceptable: float = ACCEPTABLE_RESIDUAL) -> dict:
    """Pooled residual-finding rate per named stress test (diffuse findings, pneumothorax).

    Parameters
    ----------
    rows : list of dict
        Scored answer rows.
    acceptable : float, optional
        The acceptable residual-finding rate.

    Returns
    -------
    dict of str to dict
        Stress tag ('diffuse', 'pneumothorax') -> ``residual_rate`` of its erased images; only tags
        present.
    """
    out = {}
    for tag in sorted({r["stress_tag"] for r in rows if r["stress_tag"]}):
        er = [r for r in rows if r["reader_kind"] == "erased" and r["stress_tag"] == tag]
        out[tag] = residual_rate(sum(r["clinical"] == "yes" for r in er), len(er), acceptable)
    return out


def analyse_rows(rows: list[dict], readers: dict, acceptable: float = ACCEPTABLE_RESIDUAL) -> dict:
    """Every pre-specified figure from scored answer rows.

    Parameters
    ----------
    rows : list of dict
        Scored answer rows (``answers.load_answers``).
    readers : dict
        Reader id -> {specialty, years_experience, packs, files}, merged into each reader's figures.
    acceptable : float, optional
        The acceptable residual-finding rate.

    Returns
    -------
    dict
        ``acceptable_residual``, ``readers`` (id -> reader info and ``reader_summary``), ``agreement``,
        ``majority_localized``, ``by_source`` and ``stress_tests``.

    References
    ----------
    .. [1] counterfactual paper, §7.
    """
    return {"acceptable_residual": acceptable,
            "readers": {rid: dict(readers.get(rid, {}), **reader_summary([r for r in rows if r["reader"] == rid], acceptable))
                        for rid in sorted({r["reader"] for r in rows})},
            "agreement": agreement(rows), "majority_localized": majority_residual(rows, acceptable),
            "by_source": by_source(rows, acceptable), "stress_tests": by_stress_tag(rows, acceptable)}


def _json_safe(obj):
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def analyse(packs: list[str], answer_files: list[str], out: str, *, reference: str | None = None,
            acceptable: float = ACCEPTABLE_RESIDUAL) -> dict:
    """Score the answer files of ``packs`` (a main pack and its supplements), write
    ``analysis.json`` and ``rejects.parquet`` to ``out``; return the analysis.

    Parameters
    ----------
    packs : list of str
        Pack folders (or their key files), the main pack first; each is checked with ``verify_pack``.
    answer_files : list of str
        Readers' answer files (paths or storage URIs).
    out : str
        The analysis folder (path or storage URI).
    reference : str, optional
        A JSON file of the models' edit-visibility AUCs (``load_reference``).
    acceptable : float, optional
        The acceptable residual-finding rate.

    Returns
    -------
    dict
        ``analyse_rows``'s figures (NaN written as None) with ``packs``, ``answers_scored``,
        ``files_rejected``, ``reference`` and, not written to ``analysis.json``, the ``rejects`` rows.

    Raises
    ------
    MedScopeError
        When a pack has no key, its images no longer match the key's hash, or no answer could be scored.

    References
    ----------
    .. [1] counterfactual paper, §7.
    """
    keys = {}
    for p in packs:
        key = read_key(p)
        verify_pack(p, key)
        keys[key["pack_hash"]] = key
    rows, rejects, readers = load_answers(answer_files, keys)
    if not rows:
        reasons = sorted({r["reason"] for r in rejects})
        raise MedScopeError(f"no answers of the given packs could be scored ({len(answer_files)} files; reasons: {reasons})")
    result = analyse_rows(rows, readers, acceptable)
    result["packs"] = [{"name": k["name"], "pack_hash": k["pack_hash"], "images": len(k["items"])} for k in keys.values()]
    result["answers_scored"] = len(rows)
    result["files_rejected"] = sorted({r["source"] for r in rejects if r["stage"] == "file"})
    result["reference"] = load_reference(reference) if reference else None
    result = _json_safe(result)
    storage.write_text(storage.join(out, ANALYSIS_FILE), json.dumps(result, indent=1, sort_keys=True))
    records.write_table("rejects", rejects, storage.join(out, REJECTS_FILE))
    result["rejects"] = rejects
    return result


def load_reference(uri: str) -> dict:
    """Zero-shot edit-visibility AUCs to draw as the reference line (counterfactual paper §5.4): a JSON
    object {model: AUC} or {model: {"erased_vs_original": AUC, "control_vs_original": AUC}}.

    Parameters
    ----------
    uri : str
        The JSON file (path or storage URI).

    Returns
    -------
    dict of str to dict
        Model -> {measure: AUC}; a bare number is read as {"erased_vs_original": AUC}.

    Raises
    ------
    MedScopeError
        When the file is not a non-empty JSON object, or an AUC is not a number in [0, 1].

    References
    ----------
    .. [1] counterfactual paper, §5.4.
    """
    doc = safe_text.read_json_object(uri)
    if not isinstance(doc, dict) or not doc:
        raise MedScopeError(f"{uri}: the reference must be a JSON object of model -> AUC")
    out = {}
    for model, v in doc.items():
        v = {"erased_vs_original": v} if isinstance(v, (int, float)) else v
        if not isinstance(v, dict) or not all(isinstance(x, (int, float)) and 0 <= x <= 1 for x in v.values()):
            raise MedScopeError(f"{uri}: {model}: AUCs must be numbers in [0, 1]")
        out[str(model)] = {k: float(x) for k, x in v.items()}
    return out
