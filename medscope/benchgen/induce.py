"""Schema induction from a stratified sample of an institution's reports (benchmark-MCQ paper Methods:
"the schema is induced from a stratified sample of reports, then confirmed by a clinician").

``stratified_sample`` draws N reports with proportional allocation over the export's ``study``
column (the exam description; one stratum when absent), at least one per stratum, seeded.
``propose_rules`` is the offline proposer, from term frequencies read through the shared
negation scope (``benchgen.grounding``):

- a **binary field** for each finding term (one or two words) that the sample both affirms and
  denies in at least ``min_support`` reports each -- a finding every report affirms, or none
  denies, cannot separate cases, so it makes no question; a word is dropped for a two-word term
  that carries most of its mentions ("effusion" for "pleural effusion");
- a **side** field (left / right / bilateral) when laterality is stated in ``min_support`` reports;
- a **location** field from the anatomical units the sample names (lobes, segments), when two
  or more are each named in ``min_support`` reports;
- a **size** field binned at the sample's measurement tertiles (rounded to whole mm) when
  measurements appear in ``min_support`` reports.

The result is an ordinary schema YAML (validated by ``Schema``), with the counts behind each
field as comments, and goes to the existing checkpoints: a clinician edits it and runs
``benchgen schema approve`` for both. The paper's route, a language model proposing the
fields, is ``benchgen.proposer`` (``schema induce --proposer llm``), grounded in the sample the
same way.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import numpy as np

from medscope.benchgen.extract import sentences
from medscope.benchgen.grounding import STOP, _mention_status, measurements, normalize_sentence
from medscope.seeding import rng_for

NOT_FINDINGS = frozenset(
    "no not without none normal unremarkable seen noted identified present demonstrated visualized appears "
    "appear measuring measures measured size left right both bilateral lobe lobes segment segments small large "
    "mild moderate severe new stable prior previous evidence finding findings impression likely possible "
    "possibly suspicious consistent compatible cm mm hu there which also within limits change changes "
    "study exam images image comparison up largest approximately about multiple several two three one "
    "single solitary focal diffuse other additional is are was were has have had can be".split()) | STOP
SIDES = {"left": "left", "right": "right", "bilateral": "bilateral"}
UNITS = ("frontal", "temporal", "parietal", "occipital", "insular", "upper", "middle", "lower", "caudate",
         "segment i", "segment ii", "segment iii", "segment iv", "segment v", "segment vi", "segment vii",
         "segment viii")
UNIT_PATTERNS = {"upper": r"\bupper lobe\b", "middle": r"\bmiddle lobe\b", "lower": r"\blower lobe\b",
                 "insular": r"\binsul\w*"}


def stratified_sample(reports: list[dict], n: int, seed: int = 42) -> list[dict]:
    """``n`` reports, proportional over the ``study`` strata (>= 1 each), seeded; all when n >= len.

    Parameters
    ----------
    reports : list of dict
        Report rows (``case_id``, ``findings``, ``impression``, optionally ``study``).
    n : int
        Number of reports wanted; more when there are more strata than ``n``, since each stratum keeps one.
    seed : int, optional
        Seed of the draw within each stratum.

    Returns
    -------
    list of dict
        The drawn report rows, stratum by stratum (strata in name order, rows in ``case_id`` order);
        every report when ``n >= len(reports)``.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods (schema induction from a stratified sample of reports).
    """
    if n >= len(reports):
        return list(reports)
    strata: dict[str, list[dict]] = defaultdict(list)
    for r in reports:
        strata[r.get("study") or ""].append(r)
    names = sorted(strata)
    share = {s: max(1, round(n * len(strata[s]) / len(reports))) for s in names}
    while sum(share.values()) > n:  # rounding overshoot: take from the largest strata
        big = max((s for s in names if share[s] > 1), key=lambda s: share[s], default=None)
        if big is None:
            break
        share[big] -= 1
    out = []
    for s in names:
        rows = sorted(strata[s], key=lambda r: r["case_id"])
        pick = rng_for(seed, "induce", s).permutation(len(rows))[: share[s]]
        out += [rows[i] for i in sorted(pick)]
    return out


def _terms(sent: str) -> list[tuple[str, int, int]]:
    """(term, start, end): one- and two-word runs of finding words in a normalised sentence."""
    words = [(m.group(0), m.start(), m.end()) for m in re.finditer(r"[a-z][a-z-]+", sent)]
    out = []
    for i, (w, a, b) in enumerate(words):
        if w in NOT_FINDINGS or len(w) < 4:
            continue
        out.append((w, a, b))
        if i + 1 < len(words) and words[i + 1][0] not in NOT_FINDINGS and len(words[i + 1][0]) >= 4 \
                and sent[b:words[i + 1][1]].strip() == "":
            out.append((f"{w} {words[i + 1][0]}", a, words[i + 1][2]))
    return out


def term_counts(sample: list[dict]) -> dict[str, Counter]:
    """``{term: Counter(affirmed=reports, negated=reports)}`` over the sample.

    Parameters
    ----------
    sample : list of dict
        Report rows with ``findings`` and ``impression``.

    Returns
    -------
    dict of str to collections.Counter
        For each one- or two-word finding term, ``affirmed`` and ``negated``: how many reports affirm /
        deny it (each report counted at most once per status).
    """
    counts: dict[str, Counter] = defaultdict(Counter)
    for r in sample:
        seen: dict[str, set] = defaultdict(set)
        for s in sentences(r["findings"]) + sentences(r["impression"]):
            t = normalize_sentence(s)
            for term, a, b in _terms(t):
                st = _mention_status(t, a, b)
                if st in ("affirmed", "negated"):
                    seen[term].add(st)
        for term, sts in seen.items():
            for st in sts:
                counts[term][st] += 1
    return counts


def _slug(term: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", term).strip("_")


def propose_rules(sample: list[dict], organ: str, sequences: dict[str, str], min_support: int = 2,
                  max_binary: int = 8) -> tuple[dict, list[str]]:
    """(schema dict, comment lines with the counts behind each field).

    Parameters
    ----------
    sample : list of dict
        The sampled report rows (:func:`stratified_sample`).
    organ : str
        The organ the schema is for (also names it: ``<organ>_induced``).
    sequences : dict of str to str
        ``{sequence name: modality}`` (``"CT"``, ``"MR"`` or ``"US"``); all become ``report_sequences``.
    min_support : int, optional
        Reports a term must be affirmed in and denied in (and side, location values and sizes must
        reach) for a field.
    max_binary : int, optional
        Most binary fields kept, those best supported first.

    Returns
    -------
    schema : dict
        The schema as a mapping for the schema YAML (``name``, ``organ``, ``framework``, ``sequences``,
        ``report_sequences``, ``fields``).
    notes : list of str
        Comment lines: the sample size and the counts behind each field.
    """
    counts = term_counts(sample)
    both = {t: c for t, c in counts.items() if c["affirmed"] >= min_support and c["negated"] >= min_support}
    for t in list(both):  # a word whose two-word term carries most of its mentions goes
        if " " not in t and any(t in o.split() and sum(both[o].values()) >= 0.8 * sum(both[t].values())
                                for o in both if " " in o):
            del both[t]
    ranked = sorted(both, key=lambda t: (-min(both[t]["affirmed"], both[t]["negated"]), t))[:max_binary]
    fields, notes = [], [f"induced from {len(sample)} reports; min_support={min_support} reports"]
    for t in ranked:
        pat = re.escape(t).replace(r"\ ", r"\s+")
        fields.append({"name": _slug(t), "type": "binary", "subcategory": "finding",
                       "question": f"Is there {t}?", "yes_patterns": [rf"\b{pat}\b"],
                       "no_patterns": [rf"\bno (?:\w+ )?{pat}\b", rf"\bwithout (?:\w+ )?{pat}\b"]})
        notes.append(f"{_slug(t)}: affirmed in {both[t]['affirmed']}, denied in {both[t]['negated']} reports")
    texts = [normalize_sentence(r["findings"] + " " + r["impression"]) for r in sample]
    side = Counter(v for t in texts for v in {SIDES[m] for m in re.findall(r"\b(left|right|bilateral)\b", t)})
    if sum(1 for t in texts if re.search(r"\b(?:left|right|bilateral)\b", t)) >= min_support and len(side) >= 2:
        fields.append({"name": "side", "type": "multi", "subcategory": "laterality",
                       "question": "On which side is the main finding?",
                       "values": [{"value": v, "patterns": [rf"\b{v}\b"]} for v in ("bilateral", "left", "right")
                                  if side[v]]})
        notes.append("side: " + ", ".join(f"{v} in {n}" for v, n in sorted(side.items())))
    units = Counter(u for t in texts for u in UNITS if re.search(UNIT_PATTERNS.get(u, rf"\b{u}\b"), t))
    common = [u for u in UNITS if units[u] >= min_support]
    if len(common) >= 2:
        fields.append({"name": "location", "type": "multi", "subcategory": "anatomic distribution",
                       "question": "Where is the main finding located?",
                       "values": [{"value": u, "patterns": [UNIT_PATTERNS.get(u, rf"\b{u}\b")]} for u in common]})
        notes.append("location: " + ", ".join(f"{u} in {units[u]}" for u in common))
    sizes = [max(d) for t in texts for kind, d, _ in measurements(t)[:1] if kind == "length"]
    if len(sizes) >= min_support:
        lo, hi = (float(round(x)) for x in np.percentile(sizes, [100 / 3, 200 / 3]))
        if hi <= lo:
            hi = lo + 1.0
        fields.append({"name": "largest_size", "type": "binned", "subcategory": "lesion size",
                       "question": "What is the size of the largest lesion?",
                       "measure": r"(?:largest|measuring|measures)\D{0,20}?(\d+(?:\.\d+)?)\s*(mm|cm)\b",
                       "bins": [{"below": lo, "value": f"less than {lo:g} mm"},
                                {"below": hi, "value": f"{lo:g} to {hi - 1:g} mm"},
                                {"below": None, "value": f"{hi:g} mm or larger"}]})
        notes.append(f"largest_size: {len(sizes)} measurements, tertiles {lo:g} / {hi:g} mm")
    schema = {"name": f"{_slug(organ)}_induced", "organ": organ, "framework": "induced from reports (offline rules)",
              "sequences": {name: {"modality": mod} for name, mod in sequences.items()},
              "report_sequences": list(sequences), "fields": fields}
    return schema, notes
