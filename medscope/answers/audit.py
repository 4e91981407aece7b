"""A reading check on a user's own replies: a blinded, stratified sample of one run's replies, a
labelling page for a careful human, and the reader's agreement with those labels.

Every protocol's numbers rest on reading what a model said (:mod:`medscope.answers.decisions`).
The held-out tables of ``docs/answers.md`` say how the reader does on replies someone else wrote;
this says how it does on *this run's* replies, in the styles *these* models answer in:

1. :func:`reply_rows` reads every reply of a run (the reader as it is at audit time);
2. :func:`stratified_sample` draws a sample that covers every model x condition and every
   decision the reader made (rare decisions first), the rest in proportion to the strata;
3. :func:`write_audit` writes the sample (with the reading, for the analysis) and a labelling
   page that shows only the question and the reply (:func:`render_label_page`);
4. :func:`agreement` re-reads each labelled reply with the reader as it is now and compares:
   agreement (:func:`medscope.answers.decisions.agrees`), Cohen's kappa with its 95% interval,
   flips (:func:`medscope.answers.decisions.is_flip`) with a Wilson 95% interval, and unclear
   readings, overall and per model; :func:`check_line` is the report's one line.

The page never holds the reader's decision, its rule, the model or the condition: a labeller who
saw the reading would tend to agree with it.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import warnings
from collections import Counter
from importlib import resources

from medscope.answers.decisions import PROTOCOL_DECISIONS, agrees, is_flip, label_decision, read_reply_decision
from medscope.errors import MedScopeError
from medscope.io import layout, safe_text, storage
from medscope.seeding import rng_for, stable_hash

# What a labeller may choose for a reply, per protocol: the protocol's decisions (the reader's
# own "unclear" is not a label: a labeller who cannot tell says "unsure", counted apart).
AUDIT_CHOICES = {
    "counterfactual": ("claim", "deny", "refer", "clarify", "unparseable"),
    "organ_presence": ("present", "absent", "not_addressed"),
}
UNSURE = "unsure"
# How the page words each choice (the labeller decides what the reply said, not whether it is right)
CHOICE_TEXT = {
    "claim": "Claims the finding: says it is there",
    "deny": "Denies the finding: says it is not there",
    "refer": "Refers: declines to decide on this image",
    "clarify": "Asks to clarify: image unusable or wrong anatomy",
    "unparseable": "No usable answer",
    "present": "Present: says the organ is there",
    "absent": "Absent: says the organ is not there",
    "not_addressed": "Not addressed: no verdict on this organ",
    UNSURE: "Unsure: I cannot tell what the reply decided",
}
SAMPLE_FORMAT = "medscope-answers-audit"
LABELS_FORMAT = "medscope-answers-labels"
AUDIT_COMMAND = "medscope answers audit --episodes {episodes} --sample 100"


def _choices_of(protocol: str) -> tuple[str, ...]:
    if protocol not in AUDIT_CHOICES:
        raise MedScopeError(f"the reading check reads replies of {', '.join(AUDIT_CHOICES)} runs; this run's "
                            f"protocol is {protocol!r} (its replies are read by its own parser)")
    return AUDIT_CHOICES[protocol]


def reply_rows(episodes: list[dict], items: dict[str, dict], protocol: str,
               read=read_reply_decision) -> tuple[list[dict], dict]:
    """Every reply of a run with what was asked and the reader's reading of it now.

    Parameters
    ----------
    episodes : list of dict
        Episode rows: ``model``, ``condition``, ``item_id``, ``raw_text`` and ``error``.
    items : dict of str to dict
        By ``item_id``: ``question``, ``finding`` (the asked finding or organ) and ``question_kind``
        (None to infer it from the question).
    protocol : {'counterfactual', 'organ_presence'}
        Whose decisions the replies are read as.
    read : callable, optional
        ``read(protocol, reply, question, finding, question_kind) -> ReplyReading``; default
        :func:`medscope.answers.decisions.read_reply_decision`.

    Returns
    -------
    rows : list of dict
        One per episode with a reply, sorted by (model, condition, item_id): ``protocol``,
        ``model``, ``condition``, ``item_id``, ``question``, ``finding``, ``question_kind``,
        ``reply`` and ``reading`` (``decision``, ``rule``, ``evidence``).
    counts : dict
        ``episodes``, ``replies``, ``errored`` (a provider error, no reply) and ``no_item`` (the
        episode's item is not in ``items``).

    Raises
    ------
    MedScopeError
        When ``protocol`` is not one the reading check reads.
    """
    _choices_of(protocol)
    rows, errored, no_item = [], 0, 0
    for ep in episodes:
        if ep.get("error") or ep.get("raw_text") is None:
            errored += 1
            continue
        item = items.get(ep["item_id"])
        if item is None:
            no_item += 1
            continue
        got = read(protocol, ep["raw_text"], item["question"], item["finding"], item.get("question_kind"))
        rows.append({"protocol": protocol, "model": ep["model"], "condition": ep["condition"],
                     "item_id": ep["item_id"], "question": item["question"], "finding": item["finding"],
                     "question_kind": item.get("question_kind"), "reply": ep["raw_text"],
                     "reading": {"decision": got.decision, "rule": got.rule, "evidence": got.evidence}})
    rows.sort(key=lambda r: (r["model"], r["condition"], r["item_id"]))
    return rows, {"episodes": len(episodes), "replies": len(rows), "errored": errored, "no_item": no_item}


def _largest_remainder(k: int, sizes: dict) -> dict:
    """``k`` slots shared in proportion to ``sizes`` (Hamilton's method; ties in key order)."""
    total = sum(sizes.values())
    if total == 0 or k <= 0:
        return {s: 0 for s in sizes}
    quota = {s: k * n / total for s, n in sizes.items()}
    got = {s: math.floor(q) for s, q in quota.items()}
    for s in sorted(sizes, key=lambda s: (-(quota[s] - got[s]), s))[: k - sum(got.values())]:
        got[s] += 1
    return got


def stratified_sample(rows: list[dict], n: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """A sample of ``n`` replies stratified by model x condition and by the reader's decision.

    A stratum is one (model, condition, decision). Slots are given in three rounds:

    1. every model x condition gets one reply, from its stratum of the rarest decision (the
       decision the reader made least often over the whole run);
    2. every other stratum gets one reply, rarest decisions first, while slots remain;
    3. the remaining slots are shared in proportion to what each stratum has left (largest
       remainder).

    Within a stratum replies are drawn in a random order seeded by (``seed``, stratum), so the
    same run and seed give the same sample on any machine. Rare decisions are over-represented
    on purpose; each row keeps its stratum's size and draw count, so a run-wide estimate can
    weight by them.

    Parameters
    ----------
    rows : list of dict
        The run's replies (:func:`reply_rows`).
    n : int
        Replies to draw; all of them when the run has fewer.
    seed : int, optional
        Seed of the draw within strata and of the sample ids.

    Returns
    -------
    sample : list of dict
        The drawn rows, each with ``sample_id`` (opaque: a hash of seed, model, condition and
        item), ``stratum``, ``stratum_size`` and ``stratum_drawn`` added, sorted by ``sample_id``.
    strata : list of dict
        One per stratum: ``model``, ``condition``, ``decision``, ``replies``, ``drawn``.

    Raises
    ------
    MedScopeError
        When ``n`` is smaller than the number of model x condition cells (the sample could not
        cover every one) or not positive.

    References
    ----------
    .. [1] W. G. Cochran, *Sampling Techniques*, 3rd ed., Wiley, 1977, ch. 5 (stratified random
       sampling, proportional allocation).
    """
    strata: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        strata.setdefault((r["model"], r["condition"], r["reading"]["decision"]), []).append(r)
    cells = sorted({s[:2] for s in strata})
    if n < 1:
        raise MedScopeError(f"--sample {n}: give a positive number of replies to draw")
    if n < len(cells):
        raise MedScopeError(f"--sample {n} is fewer than the run's {len(cells)} model x condition cells; the sample "
                            f"must draw from every one: give --sample {len(cells)} or more")
    how_often = Counter(r["reading"]["decision"] for r in rows)

    def rarity(s):
        return how_often[s[2]], s[2], s

    take: Counter = Counter()
    for cell in cells:  # round 1: every model x condition
        take[min((s for s in strata if s[:2] == cell), key=rarity)] = 1
    for s in sorted((s for s in strata if s not in take), key=rarity):  # round 2: every stratum, rare first
        if sum(take.values()) >= n:
            break
        take[s] = 1
    left = {s: len(strata[s]) - take[s] for s in strata}  # round 3: the rest in proportion
    for s, k in _largest_remainder(min(n - sum(take.values()), sum(left.values())), left).items():
        take[s] += k
    sample = []
    for s in sorted(strata):
        members = strata[s]
        order = rng_for(seed, "answers-audit", *s).permutation(len(members))
        for i in order[: take[s]]:
            r = members[int(i)]
            sample.append({"sample_id": stable_hash("answers-audit", seed, r["model"], r["condition"], r["item_id"],
                                                    length=12),
                           **r, "stratum": "|".join(s), "stratum_size": len(members), "stratum_drawn": take[s]})
    if len({r["sample_id"] for r in sample}) != len(sample):
        raise MedScopeError("sample ids collided (the same model, condition and item twice?); the episodes table "
                            "holds duplicate replies")
    sample.sort(key=lambda r: r["sample_id"])
    table = [{"model": s[0], "condition": s[1], "decision": s[2], "replies": len(strata[s]), "drawn": take[s]}
             for s in sorted(strata)]
    return sample, table


def sample_hash(sample: list[dict]) -> str:
    """SHA-256 over what the labeller sees of each sampled reply (id, question, finding, reply).

    Parameters
    ----------
    sample : list of dict
        The sampled rows (:func:`stratified_sample`).

    Returns
    -------
    str
        The hexadecimal digest; order does not matter. The page and every labels file carry it.
    """
    canon = json.dumps(sorted((r["sample_id"], r["question"], r["finding"], r["reply"]) for r in sample),
                       separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def render_label_page(sample: list[dict], *, protocol: str, sample_file: str, sample_hash: str,
                      title: str = "Reading replies") -> str:
    """The self-contained labelling page: question, asked finding and reply per sampled reply.

    Modelled on the reader-study page (:mod:`medscope.reader.page`): inline CSS and script, no
    network; each labeller gets a random order (browser crypto); progress is kept in the browser
    under the sample hash; a button saves ``labels.json`` (``sample_file``, ``sample_hash``,
    ``labels``: sample id -> decision). The page holds no reading, rule, model or condition.

    Parameters
    ----------
    sample : list of dict
        The sampled rows; only ``sample_id``, ``question``, ``finding`` and ``reply`` are put in the page.
    protocol : {'counterfactual', 'organ_presence'}
        Whose decisions the labeller chooses from (:data:`AUDIT_CHOICES`, plus ``unsure``).
    sample_file : str
        The sample file's URI, written into the labels file.
    sample_hash : str
        :func:`sample_hash` of the sample.
    title : str, optional
        The page title.

    Returns
    -------
    str
        The HTML document.

    References
    ----------
    .. [1] counterfactual paper, §7 "Procedure" (the reader-study page this one follows).
    """
    choices = [*_choices_of(protocol), UNSURE]
    data = {"sample_file": sample_file, "sample_hash": sample_hash, "format": LABELS_FORMAT,
            "choices": [{"value": c, "text": CHOICE_TEXT[c]} for c in choices],
            "items": [{"id": r["sample_id"], "question": r["question"], "finding": r["finding"], "reply": r["reply"]}
                      for r in sample]}
    text = json.dumps(data, separators=(",", ":"))
    text = text.replace("</", "<\\/")  # inside <script>, "</" could close the element early
    template = resources.files("medscope.answers").joinpath("data/label_page.html").read_text(encoding="utf-8")
    return template.replace("__TITLE__", html.escape(title)).replace("__SAMPLE_JSON__", text)


def write_audit(rows: list[dict], out: str, *, n: int, seed: int, protocol: str, episodes: str,
                counts: dict | None = None, overwrite: bool = False) -> dict:
    """Draw the sample and write ``out/audit_sample.jsonl``, ``out/audit.json`` and ``out/label.html``.

    Parameters
    ----------
    rows : list of dict
        The run's replies (:func:`reply_rows`).
    out : str
        The audit folder.
    n : int
        Replies to draw (:func:`stratified_sample`).
    seed : int
        Seed of the draw.
    protocol : {'counterfactual', 'organ_presence'}
        The run's protocol.
    episodes : str
        The eval run's episodes (recorded in ``audit.json``).
    counts : dict, optional
        :func:`reply_rows`' counts, recorded in ``audit.json``.
    overwrite : bool, optional
        Replace a different sample already in ``out`` (its labels and agreement are removed with it).

    Returns
    -------
    dict
        The manifest written to ``audit.json``: format, protocol, episodes, seed, requested,
        drawn, replies in the run, ``sample_hash``, the files and the strata table.

    Raises
    ------
    MedScopeError
        When ``out`` holds a different sample and ``overwrite`` is not given (a labeller may hold
        its page), or the sample cannot be drawn.
    """
    sample, strata = stratified_sample(rows, n, seed)
    folder = layout.AnswersAudit(out)
    digest = sample_hash(sample)
    if storage.exists(folder.manifest):
        held = safe_text.expect_mapping(safe_text.read_json(folder.manifest), folder.manifest)
        if held.get("sample_hash") != digest:
            if not overwrite:
                raise MedScopeError(f"{out} holds another sample (seed {held.get('seed')}, {held.get('drawn')} replies); "
                                    "a labeller may hold its page: choose another --out, or pass --overwrite "
                                    "to replace it with its labels and agreement")
            for stale in (folder.labels, folder.agreement):
                storage.delete(stale)
    body = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in sample)
    storage.write_text(folder.sample, body)
    storage.write_text(folder.page, render_label_page(sample, protocol=protocol, sample_file=folder.sample,
                                                      sample_hash=digest))
    manifest = {"format": SAMPLE_FORMAT, "version": 1, "protocol": protocol, "episodes": episodes, "seed": seed,
                "requested": n, "drawn": len(sample), "replies_in_run": len(rows), "counts": counts or {},
                "sample_hash": digest, "sample_file": folder.sample, "page": folder.page,
                "reading_at_audit": dict(sorted(Counter(r["reading"]["decision"] for r in sample).items())),
                "strata": strata}
    storage.write_text(folder.manifest, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def read_sample(uri: str) -> list[dict]:
    """The sampled rows of an audit's ``audit_sample.jsonl``.

    Parameters
    ----------
    uri : str
        The sample file, or the audit folder holding it.

    Returns
    -------
    list of dict
        One per non-blank line, in file order.

    Raises
    ------
    MedScopeError
        When the file is missing or a line is not a sampled reply (the message names the line).
    """
    if not uri.endswith(".jsonl"):
        uri = layout.AnswersAudit(uri).sample
    if not storage.exists(uri):
        raise MedScopeError(f"{uri}: no such sample file; give the audit_sample.jsonl written by `medscope answers audit`")
    rows = []
    for i, line in enumerate(safe_text.read_text(uri).splitlines(), 1):
        if not line.strip():
            continue
        row = safe_text.expect_mapping(safe_text.loads_json(line, f"{uri}:{i}"), f"{uri}:{i}")
        missing = [k for k in ("sample_id", "protocol", "model", "condition", "item_id", "question", "finding",
                               "reply", "reading") if k not in row]
        if missing:
            raise MedScopeError(f"{uri}:{i}: not a sampled reply (no {', '.join(missing)})")
        rows.append(row)
    return rows


def read_labels(uri: str) -> dict:
    """A labels file saved from the labelling page (or written by hand).

    Parameters
    ----------
    uri : str
        The labels JSON: ``{"sample_file": ..., "labels": {sample_id: decision}}`` (the page also
        writes ``sample_hash``, ``labeller`` and ``saved_at``).

    Returns
    -------
    dict
        The file's object, ``labels`` a mapping of str to str.

    Raises
    ------
    MedScopeError
        When the file is missing, not JSON, or has no ``labels`` mapping of sample ids to decisions.
    """
    if not storage.exists(uri):
        raise MedScopeError(f"{uri}: no such labels file; save it from the labelling page (label.html)")
    data = safe_text.expect_mapping(safe_text.read_json(uri), uri, {"labels": dict, "sample_file": str})
    labels = data.get("labels")
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise MedScopeError(f"{uri}: expected \"labels\": {{sample_id: decision}} (decisions as text)")
    return data


def sample_file_of(labels_uri: str, labels: dict) -> str:
    """Where the labelled sample is: the labels file's ``sample_file``, else the audit sample beside
    the labels file (a folder moved with its files).

    Parameters
    ----------
    labels_uri : str
        The labels file.
    labels : dict
        Its contents (:func:`read_labels`).

    Returns
    -------
    str
        The sample file's URI.

    Raises
    ------
    MedScopeError
        When neither exists.
    """
    named = labels.get("sample_file")
    beside = storage.join(labels_uri.rsplit("/", 1)[0] if "/" in labels_uri else ".", layout.AnswersAudit.SAMPLE)
    for uri in (named, beside):
        if uri and storage.exists(uri):
            return uri
    raise MedScopeError(f"{labels_uri}: its sample file {named!r} is not there, nor {beside}; put the labels file "
                        f"in the audit folder beside {layout.AnswersAudit.SAMPLE}")


def wilson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of ``k`` in ``n`` (statsmodels ``proportion_confint``, method ``wilson``).

    Parameters
    ----------
    k : int
        Successes (here: flips).
    n : int
        Trials (labelled replies).
    alpha : float, optional
        1 - the interval's coverage.

    Returns
    -------
    (float, float)
        The interval; NaNs when ``n`` is 0.

    References
    ----------
    .. [1] E. B. Wilson, "Probable inference, the law of succession, and statistical inference",
       J. Am. Stat. Assoc. 22(158), 1927.
    """
    if n == 0:
        return float("nan"), float("nan")
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
    return float(lo), float(hi)


def kappa_with_ci(labels: list[str], reads: list[str], categories: tuple[str, ...],
                  alpha: float = 0.05) -> tuple[float, float, float]:
    """Cohen's kappa of the labeller and the reader, with its asymptotic interval (statsmodels).

    The decisions are compared as categories: an ``unclear`` reading equals no label, so kappa
    can sit below :func:`agreement`'s rate where the reader said unclear on replies that do not
    commit.

    Parameters
    ----------
    labels, reads : list of str
        The labeller's and the reader's decisions, paired by position.
    categories : tuple of str
        Every decision either may give (the table's rows and columns).
    alpha : float, optional
        1 - the interval's coverage (two-sided).

    Returns
    -------
    (float, float, float)
        kappa, low, high; NaNs with no pair, or when both used one and the same decision
        throughout (chance agreement 1: kappa is 0/0, undefined); NaN bounds when they never
        disagree (the asymptotic standard error is then 0: no interval).

    References
    ----------
    .. [1] J. Cohen, "A coefficient of agreement for nominal scales", Educ. Psychol. Meas. 20(1), 1960.
    .. [2] J. L. Fleiss, J. Cohen, B. S. Everitt, "Large sample standard errors of kappa and
       weighted kappa", Psychol. Bull. 72(5), 1969 (the interval's standard error).
    """
    import numpy as np
    from scipy.stats import norm
    from statsmodels.stats.inter_rater import cohens_kappa

    nan = (float("nan"),) * 3
    if not labels:
        return nan
    idx = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for a, b in zip(labels, reads):
        table[idx[a], idx[b]] += 1
    pe = float((table.sum(0) * table.sum(1)).sum()) / table.sum() ** 2
    if np.isclose(pe, 1.0):
        return nan
    with warnings.catch_warnings():  # without disagreement the variance can come out a hair below 0
        warnings.simplefilter("ignore", RuntimeWarning)
        res = cohens_kappa(table)  # its kappa_low / kappa_upp: the 95% interval, kappa -+ 1.96 std_kappa
    if not float(res.std_kappa) > 0:  # no disagreement at all: the asymptotic interval is a point, not an interval
        return float(res.kappa), float("nan"), float("nan")
    delta = float(norm.isf(alpha / 2)) * float(res.std_kappa)
    return float(res.kappa), float(res.kappa) - delta, float(res.kappa) + delta


def _summary(pairs: list[dict], unsure: int, categories: tuple[str, ...]) -> dict:
    n = len(pairs)
    agree = sum(p["agrees"] for p in pairs)
    flips = sum(p["flip"] for p in pairs)
    k, k_lo, k_hi = kappa_with_ci([p["label"] for p in pairs], [p["read"] for p in pairs], categories)
    a_lo, a_hi = wilson(agree, n)
    f_lo, f_hi = wilson(flips, n)

    def num(v):
        return None if v != v else round(v, 6)  # NaN -> null in JSON

    return {"n": n, "agree": agree, "agreement": num(agree / n if n else float("nan")),
            "agreement_ci": [num(a_lo), num(a_hi)], "kappa": num(k), "kappa_ci": [num(k_lo), num(k_hi)],
            "flips": flips, "flip_rate": num(flips / n if n else float("nan")), "flip_ci": [num(f_lo), num(f_hi)],
            "unclear": sum(p["read"] == "unclear" for p in pairs), "unsure": unsure}


def run_weighted(pairs: list[dict], rows: dict[str, dict]) -> dict | None:
    """Agreement and flip rate over the whole run: each labelled stratum weighted by its size.

    The sample over-represents rare decisions on purpose, so its own rates describe the reader on
    each kind of reply; weighting each stratum's rates by the replies it stands for (its size over
    the run) estimates them for the run's replies as a whole. Strata with no labelled reply (all
    unsure or unlabelled) are left out, and ``covered`` says how many of the run's replies the
    estimate stands for.

    Parameters
    ----------
    pairs : list of dict
        The labelled, compared replies (``sample_id``, ``agrees``, ``flip``).
    rows : dict of str to dict
        Their sample rows by id (``stratum``, ``stratum_size``).

    Returns
    -------
    dict or None
        ``agreement``, ``flip_rate`` (point estimates), ``covered`` (replies of the labelled strata)
        and ``strata``; None when no pair or a row without its stratum (a sample written by hand).

    References
    ----------
    .. [1] W. G. Cochran, *Sampling Techniques*, 3rd ed., Wiley, 1977, §5.2 (the stratified mean).
    """
    strata: dict[str, list[dict]] = {}
    size = {}
    for p in pairs:
        row = rows[p["sample_id"]]
        if not row.get("stratum") or not row.get("stratum_size"):
            return None
        strata.setdefault(row["stratum"], []).append(p)
        size[row["stratum"]] = int(row["stratum_size"])
    if not strata:
        return None
    covered = sum(size.values())

    def rate(key):
        return round(sum(size[s] * sum(p[key] for p in ps) / len(ps) for s, ps in strata.items()) / covered, 6)

    return {"agreement": rate("agrees"), "flip_rate": rate("flip"), "covered": covered, "strata": len(strata)}


def agreement(sample: list[dict], labels: dict, read=read_reply_decision) -> dict:
    """Re-read each labelled reply with the reader as it is now and compare it with the label.

    Parameters
    ----------
    sample : list of dict
        The audit's sampled rows (:func:`read_sample`).
    labels : dict of str to str
        Sample id -> the labeller's decision (one of :data:`AUDIT_CHOICES` for the row's protocol,
        or ``unsure``; hand spellings such as "claims" are read by
        :func:`medscope.answers.decisions.label_decision`). Sampled replies without a label are
        counted as unlabelled.
    read : callable, optional
        ``read(protocol, reply, question, finding, question_kind) -> ReplyReading``; default the
        project's reader, :func:`medscope.answers.decisions.read_reply_decision`.

    Returns
    -------
    dict
        ``overall`` and ``per_model`` (each model with a label), each with ``n`` labelled replies
        (unsure ones apart), ``agree``, ``agreement`` and its Wilson ``agreement_ci``, ``kappa``
        and ``kappa_ci``, ``flips``, ``flip_rate`` and its Wilson ``flip_ci``, ``unclear``
        readings and ``unsure`` labels; ``run_weighted`` (:func:`run_weighted`); ``models``
        (those with a reply in ``n``); ``labelled`` and ``unlabelled`` sample ids;
        ``changed_since_audit`` (replies the reader now reads otherwise than at audit time);
        ``confusion`` (label -> reading -> count) and ``misses`` (each reply
        the reader missed: sample id, model, label, reading, rule, evidence).

    Raises
    ------
    MedScopeError
        When a label names a sample id that is not in the sample, or a decision that is not one of
        the row's protocol's choices (nor ``unsure``).

    References
    ----------
    .. [1] J. Cohen, Educ. Psychol. Meas. 20(1), 1960 (kappa); E. B. Wilson, J. Am. Stat. Assoc.
       22(158), 1927 (the flip interval).
    """
    by_id = {r["sample_id"]: r for r in sample}
    unknown = sorted(set(labels) - set(by_id))
    if unknown:
        raise MedScopeError(f"{len(unknown)} labelled sample id(s) are not in the sample (e.g. {unknown[0]!r}): "
                            "the labels were made on another sample; label this sample's page (label.html)")
    pairs, unsure, changed = [], Counter(), 0
    categories: list[str] = []
    for sid, raw in sorted(labels.items()):
        row = by_id[sid]
        choices = _choices_of(row["protocol"])
        label = label_decision(raw)
        if label not in (*choices, UNSURE):
            raise MedScopeError(f"sample {sid}: unknown decision {raw!r}; choose one of {', '.join(choices)} or {UNSURE}")
        if label == UNSURE:
            unsure[row["model"]] += 1
            continue
        got = read(row["protocol"], row["reply"], row["question"], row["finding"], row.get("question_kind"))
        changed += got.decision != (row.get("reading") or {}).get("decision")
        categories += [c for c in PROTOCOL_DECISIONS[row["protocol"]] if c not in categories]
        pairs.append({"sample_id": sid, "model": row["model"], "condition": row["condition"], "label": label,
                      "read": got.decision, "rule": got.rule, "evidence": got.evidence,
                      "agrees": agrees(got.decision, label), "flip": is_flip(got.decision, label)})
    models = sorted({r["model"] for r in sample if r["sample_id"] in labels})  # unsure-only ones too
    checked = sorted({p["model"] for p in pairs})
    confusion: dict[str, dict[str, int]] = {}
    for p in pairs:
        confusion.setdefault(p["label"], Counter())[p["read"]] += 1
    cats = tuple(categories)
    rows_of = {p["sample_id"]: by_id[p["sample_id"]] for p in pairs}
    return {
        "run_weighted": run_weighted(pairs, rows_of),
        "overall": _summary(pairs, sum(unsure.values()), cats),
        "per_model": [{"model": m, **_summary([p for p in pairs if p["model"] == m], unsure[m], cats)} for m in models],
        "models": checked, "labelled": len(labels), "unlabelled": len(set(by_id) - set(labels)),
        "changed_since_audit": changed,
        "confusion": {k: dict(sorted(v.items())) for k, v in sorted(confusion.items())},
        "misses": [{k: p[k] for k in ("sample_id", "model", "condition", "label", "read", "rule", "evidence")}
                   for p in pairs if not p["agrees"]],
    }


def _f(v, fmt="{:.2f}") -> str:
    return "–" if v is None else fmt.format(v)


def check_line(result: dict) -> str:
    """The report's one line for an agreement result.

    Parameters
    ----------
    result : dict
        What :func:`agreement` returned (or ``agreement.json``).

    Returns
    -------
    str
        "Reply reading checked on N replies (K models): agreement a/N = x.xx, Cohen's κ k [lo, hi],
        flips f (95% CI lo–hi), unclear u" (and the labeller's unsure replies, when any).
    """
    o = result["overall"]
    if o["kappa"] is None:
        kappa = "undefined (one decision throughout)"
    elif o["kappa_ci"][0] is None:
        kappa = f"{o['kappa']:.2f} (no interval: no disagreement)"
    else:
        kappa = f"{o['kappa']:.2f} [{_f(o['kappa_ci'][0])}, {_f(o['kappa_ci'][1])}]"
    k = len(result.get("models") or [])
    line = (f"Reply reading checked on {o['n']} replies ({k} model{'s' if k != 1 else ''}): agreement "
            f"{o['agree']}/{o['n']} = {_f(o['agreement'])}, Cohen's κ {kappa}, flips {o['flips']} "
            f"(95% CI {_f(o['flip_ci'][0])}–{_f(o['flip_ci'][1])}), unclear {o['unclear']}")
    if o.get("unsure"):
        line += f"; {o['unsure']} more labelled unsure, left out"
    return line


def agreement_table(result: dict) -> str:
    """The printed table: one row per model and one for all, then the misses' count by kind.

    Parameters
    ----------
    result : dict
        What :func:`agreement` returned.

    Returns
    -------
    str
        Fixed-width text lines.
    """
    head = ["model", "n", "agree", "agreement", "kappa [95% CI]", "flips", "flip 95% CI", "unclear", "unsure"]

    def cells(name, s):
        return [name, str(s["n"]), str(s["agree"]), _f(s["agreement"], "{:.3f}"),
                f"{_f(s['kappa'])} [{_f(s['kappa_ci'][0])}, {_f(s['kappa_ci'][1])}]", str(s["flips"]),
                f"{_f(s['flip_ci'][0], '{:.3f}')}-{_f(s['flip_ci'][1], '{:.3f}')}", str(s["unclear"]), str(s["unsure"])]

    body = [cells(m["model"], m) for m in result["per_model"]] + [cells("all", result["overall"])]
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(head)]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in [head, *body]]
    w = result.get("run_weighted")
    if w:
        lines.append(f"over the run (each labelled stratum weighted by its {w['covered']} replies): agreement "
                     f"{w['agreement']:.3f}, flip rate {w['flip_rate']:.3f}")
    if result.get("unlabelled"):
        lines.append(f"{result['unlabelled']} sampled replies have no label yet")
    if result.get("changed_since_audit"):
        lines.append(f"{result['changed_since_audit']} labelled replies are read otherwise now than at audit time")
    return "\n".join(lines)


def reading_check_line(episodes_uri: str) -> str:
    """The report's line on an eval run's reading check: its result when ``answers_audit/agreement.json``
    is in the eval run folder, else the command that makes one.

    Parameters
    ----------
    episodes_uri : str
        The eval run folder or its episodes table.

    Returns
    -------
    str
        :func:`check_line` of the recorded agreement, or "Reply reading not checked on this run's
        replies: medscope answers audit ...".
    """
    folder = layout.folder_of("episodes", episodes_uri)
    uri = layout.AnswersAudit(layout.EvalRun(folder).answers_audit).agreement
    if storage.exists(uri):
        try:
            return check_line(safe_text.expect_mapping(safe_text.read_json(uri), uri))
        except (MedScopeError, KeyError, TypeError, IndexError):
            return f"Reply reading check unreadable ({uri}); run `medscope answers agreement` again."
    # the eval run folder when it holds the episodes under their layout name, else the table itself
    shown = folder if layout.table_uri("episodes", folder) != folder else episodes_uri
    return ("Reply reading not checked on this run's replies: "
            + AUDIT_COMMAND.format(episodes=shown) + ", label the page it writes, then "
            + f"medscope answers agreement --labels LABELS.json --episodes {shown}")
