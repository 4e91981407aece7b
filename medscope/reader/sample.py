"""The reader-study sample (counterfactual paper §7 "Images"; "Status and extension" for supplements).

From a views table's main test (split "test", views that passed QC): ``per_kind`` images of each
of the four kinds -- unmodified with the finding, erased, control-edited with the same tool,
unmodified without the finding -- one image per case, stratified by source (each source's share
of the sample follows its share of the eligible cases). A lesion case is eligible only when its
original, erasure and control edit all passed, so the three lesion kinds come from one pool and
no kind is a QC-filtered subset of another. A supplement draws from cases not in earlier packs and
takes localized findings first; diffuse findings and pneumothorax are tagged as named stress tests.
"""

from __future__ import annotations

from collections import Counter

from medscope.errors import MedScopeError
from medscope.reader import VIEW_KIND_OF
from medscope.seeding import rng_for

LESION_KINDS = ("lesion", "erased", "control")
# Findings that are not a localized lesion (§7: "diffuse findings and pneumothorax tagged as
# named stress tests"); matched against the views' ``finding`` in lower case.
DIFFUSE_FINDINGS = ("effusion", "pleural effusion", "edema", "consolidation", "pneumonia", "atelectasis",
                    "infiltration", "infiltrate", "emphysema", "fibrosis", "cardiomegaly", "opacity")


def stress_tag(finding: str, diffuse: tuple[str, ...] = DIFFUSE_FINDINGS) -> str | None:
    """'pneumothorax', 'diffuse' or None (a localized finding).

    Parameters
    ----------
    finding : str
        The view's finding (case and surrounding space ignored; None is read as '').
    diffuse : tuple of str, optional
        Findings tagged 'diffuse', in lower case.

    Returns
    -------
    str or None
        'pneumothorax' when the finding names it, 'diffuse' when it is one of ``diffuse``, else None.
    """
    f = (finding or "").strip().lower()
    if "pneumothorax" in f:
        return "pneumothorax"
    if f in diffuse:
        return "diffuse"
    return None


def source_quotas(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Split ``total`` over sources in proportion to ``sizes`` (largest-remainder rounding,
    ties broken by source name); no source gets more than it has.

    Parameters
    ----------
    sizes : dict of str to int
        Source -> eligible cases.
    total : int
        Cases to draw.

    Returns
    -------
    dict of str to int
        Source -> cases to draw from it, summing to ``total``.

    Raises
    ------
    MedScopeError
        When ``total`` exceeds the eligible cases.
    """
    n = sum(sizes.values())
    if total > n:
        raise MedScopeError(f"cannot draw {total} cases from {n}")
    if total == 0 or n == 0:
        return {s: 0 for s in sizes}
    exact = {s: total * k / n for s, k in sizes.items()}
    quota = {s: int(v) for s, v in exact.items()}
    left = total - sum(quota.values())
    for s in sorted(sizes, key=lambda s: (-(exact[s] - quota[s]), s))[:left]:
        quota[s] += 1
    return quota


def _eligible(views: list[dict], tool: str | None, exclude_cases: set[str]) -> tuple[dict, dict, str]:
    """(lesion cases -> {reader kind: view}, lesion-free cases -> {"lesion_free": view}, tool)."""
    rows = [v for v in views if v.get("split") == "test" and v.get("passed") and v.get("image") is not None
            and v["case_id"] not in exclude_cases]
    if tool is None:
        tools = Counter(v["tool"] for v in rows if v["kind"] == "target_removal")
        if not tools:
            raise MedScopeError("the views table has no passed target_removal views in its test split")
        tool = min(tools.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    by_case: dict[str, dict] = {}
    for v in rows:
        for rk, vk in VIEW_KIND_OF.items():
            same_tool = vk in ("original", "natural_negative") or v["tool"] == tool
            if v["kind"] == vk and same_tool:
                by_case.setdefault(v["case_id"], {})[rk] = v
    lesion = {c: d for c, d in by_case.items() if all(k in d for k in LESION_KINDS)}
    free = {c: d for c, d in by_case.items() if "lesion_free" in d}
    return lesion, free, tool


def _draw(cases: dict[str, dict], total: int, seed: int, salt: str, localized_first: bool) -> list[str]:
    """``total`` case ids stratified by source, each source's cases in seeded random order
    (localized findings first when asked); grouped by source, sources in name order."""
    by_source: dict[str, list[str]] = {}
    for cid in sorted(cases):
        by_source.setdefault(next(iter(cases[cid].values()))["source"], []).append(cid)
    quota = source_quotas({s: len(c) for s, c in by_source.items()}, total)
    out = []
    for src in sorted(by_source):
        ids = by_source[src]
        order = rng_for(seed, "reader-sample", salt, src).permutation(len(ids))
        ranked = [ids[i] for i in order]
        if localized_first:  # a stable sort keeps the random order within each group
            ranked.sort(key=lambda c: stress_tag(next(iter(cases[c].values()))["finding"]) is not None)
        out += ranked[:quota[src]]
    return out


def draw_sample(views: list[dict], per_kind: int = 32, seed: int = 0, *, tool: str | None = None,
                exclude_cases: set[str] = frozenset(), localized_first: bool = False) -> tuple[list[dict], dict]:
    """(chosen views, each with ``reader_kind`` and ``stress_tag`` added; notes).

    ``per_kind`` is lowered to what the eligible cases allow (said in the notes, never silently):
    3 x per_kind lesion cases and per_kind lesion-free cases are needed.

    Parameters
    ----------
    views : list of dict
        Views-table rows (split, passed, image, case_id, kind, tool, source, finding ...).
    per_kind : int, optional
        Images per reader kind requested.
    seed : int, optional
        Seed of the draw.
    tool : str, optional
        The erasure tool; default the one with the most passed target removals in the test split.
    exclude_cases : set of str, optional
        Case ids not to draw (those of earlier packs).
    localized_first : bool, optional
        Rank localized findings before stress-test ones within each source (a supplement).

    Returns
    -------
    chosen : list of dict
        The views drawn: 3 x per_kind lesion views (lesion, erased, control; one kind per case) then
        per_kind lesion-free views.
    notes : dict
        ``tool``, ``per_kind_requested``, ``per_kind`` (as drawn), ``eligible_lesion_cases`` and
        ``eligible_lesion_free_cases``.

    Raises
    ------
    MedScopeError
        When ``per_kind`` < 1, the test split has no passed target removals, or the eligible cases
        allow no image of each kind.

    References
    ----------
    .. [1] counterfactual paper, §7 "Images" and "Status and extension".
    """
    if per_kind < 1:
        raise MedScopeError("per_kind must be at least 1")
    lesion, free, tool = _eligible(views, tool, set(exclude_cases))
    k = min(per_kind, len(lesion) // 3, len(free))
    if k < 1:
        raise MedScopeError(f"not enough eligible test cases for a reading pack: {len(lesion)} lesion cases with "
                            f"original, erasure and control ({tool}) all passed, {len(free)} lesion-free cases")
    notes = {"tool": tool, "per_kind_requested": per_kind, "per_kind": k,
             "eligible_lesion_cases": len(lesion), "eligible_lesion_free_cases": len(free)}
    chosen = []
    # lesion cases are dealt to the three lesion kinds in turn, so each source splits evenly
    for i, cid in enumerate(_draw(lesion, 3 * k, seed, "lesion", localized_first)):
        chosen.append(dict(lesion[cid][LESION_KINDS[i % 3]], reader_kind=LESION_KINDS[i % 3]))
    for cid in _draw(free, k, seed, "lesion_free", localized_first):
        chosen.append(dict(free[cid]["lesion_free"], reader_kind="lesion_free"))
    for row in chosen:
        # a lesion-free image has no finding to be diffuse; its tag would say nothing
        row["stress_tag"] = None if row["reader_kind"] == "lesion_free" else stress_tag(row["finding"])
    return chosen, notes
