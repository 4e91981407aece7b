"""Standard-VQA scoring (counterfactual paper §5.6, Table 16: closed / open / all accuracy per benchmark).

- closed questions: a yes/no answer is matched by the reply's first "yes" / "no" word; any other
  closed answer (``MRI``, ``Left``...) by exact match after normalisation, of the whole reply or
  of its first clause (``"MRI, axial"``) -- never by the answer appearing somewhere in the reply,
  which would credit "left or right" for "Left";
- open questions: token recall, the share of the answer's normalised tokens found in the reply
  (the convention of LLaVA-Med-style open-answer scoring); a question counts as correct when the
  recall is 1 (every answer token said). Mean recall is reported beside it;
- every proportion gets a 95% percentile interval from resampling image files (several questions
  share an image, so images, not questions, are the independent units).

References: closed / open accuracy as reported on VQA-RAD (J. J. Lau et al., "A dataset of
clinically generated visual questions and answers about radiology images", Sci. Data 5, 2018);
open-answer token recall as in LLaVA-Med (C. Li et al., NeurIPS 2023 Datasets and Benchmarks).
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from medscope.answers.parser import parse_reply
from medscope.protocols.base import Item
from medscope.stats import bootstrap as bs

ARTICLES = {"a", "an", "the"}
YES_NO = ("yes", "no")


def normalize_answer(text: str) -> str:
    """Lower case, punctuation to spaces, articles dropped, spaces collapsed.

    Parameters
    ----------
    text : str
        An answer or reply; None reads as empty, anything else through ``str``.

    Returns
    -------
    str
        The normalised text: lower-case words separated by single spaces, without ``a``, ``an``, ``the``.
    """
    text = re.sub(r"[^\w\s]", " ", str(text or "").lower())
    return " ".join(t for t in text.split() if t not in ARTICLES)


def first_yes_no(text: str) -> str | None:
    """The reply's first "yes" or "no" word, after :func:`normalize_answer`.

    Parameters
    ----------
    text : str
        The reply.

    Returns
    -------
    {'yes', 'no'} or None
        The first of the two words among the reply's tokens; None when neither occurs.
    """
    for token in normalize_answer(text).split():
        if token in YES_NO:
            return token
    return None


def closed_correct(reply: str, answer: str) -> bool:
    """Closed-question rule (module docstring).

    Parameters
    ----------
    reply : str
        The model's answer.
    answer : str
        The reference answer of a closed question.

    Returns
    -------
    bool
        For a yes/no answer, whether the reply's first yes/no word matches; otherwise whether the
        normalised reply, or its first clause (up to ``,.;:`` or a newline), equals the normalised
        answer. An answer that normalises to nothing is never matched.

    References
    ----------
    .. [1] counterfactual paper, §5.6.
    """
    want = normalize_answer(answer)
    if want in YES_NO:
        return first_yes_no(reply) == want
    first_clause = normalize_answer(re.split(r"[,.;:\n]", str(reply or ""), maxsplit=1)[0])
    return bool(want) and (normalize_answer(reply) == want or first_clause == want)


def token_recall(reply: str, answer: str) -> float:
    """Share of the answer's distinct tokens present in the reply (0..1).

    Parameters
    ----------
    reply : str
        The model's answer.
    answer : str
        The reference answer of an open question.

    Returns
    -------
    float
        The share in [0, 1] of the answer's distinct normalised tokens found among the reply's; 0.0
        when the answer has no token.

    References
    ----------
    .. [1] C. Li et al. (LLaVA-Med), NeurIPS 2023 Datasets and Benchmarks.
    """
    want = set(normalize_answer(answer).split())
    if not want:
        return 0.0
    return len(want & set(normalize_answer(reply).split())) / len(want)


def score_one(reply: str | None, answer: str, answer_type: str) -> tuple[bool, float | None]:
    """(correct, token recall or None for closed) of one reply; no reply scores wrong.

    Parameters
    ----------
    reply : str or None
        The model's answer; None when there is none.
    answer : str
        The reference answer.
    answer_type : {'closed', 'open'}
        The question's kind.

    Returns
    -------
    correct : bool
        :func:`closed_correct` for a closed question; token recall of 1 for an open one.
    token_recall : float or None
        :func:`token_recall` for an open question (0.0 without a reply); None for a closed one.
    """
    if reply is None:
        return False, (0.0 if answer_type == "open" else None)
    if answer_type == "closed":
        return closed_correct(reply, answer), None
    recall = token_recall(reply, answer)
    return recall == 1.0, recall


def cluster_mean(values, clusters, *, n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED):
    """(mean, low, high, clusters) with a 95% percentile interval from resampling whole clusters.

    Parameters
    ----------
    values : array_like of float
        One value per question (0 / 1 for an accuracy).
    clusters : sequence
        The cluster of each value (its image's ``case_id``); whole clusters are resampled.
    n_boot : int, optional
        Bootstrap replicates.
    seed : int, optional
        Seed of the resampling.

    Returns
    -------
    mean : float or None
        The mean of ``values``; None when there are none.
    low, high : float or None
        The 95% percentile interval of the cluster-bootstrap ratio of sums; None when there are no values.
    n_clusters : int
        Distinct clusters (0 without values).
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return None, None, None, 0
    uniq, codes = bs.codes_of(list(clusters))
    num = bs.cluster_sums(values, codes, len(uniq))
    den = bs.cluster_sums(np.ones_like(values), codes, len(uniq))
    samples = bs.ratio_samples(num, den, bs.resample_counts(len(uniq), n_boot, seed))
    lo, hi = bs.percentile_ci(samples, 0.95)
    return float(values.mean()), float(lo[0]), float(hi[0]), len(uniq)


def vqa_metrics(scores: list[dict], *, n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED) -> list[dict]:
    """``metrics`` rows: accuracy on closed / open / all questions and mean open recall, per
    model x condition x source (breakdown ``source=<name>``), each with its image-clustered interval.

    Parameters
    ----------
    scores : list of dict
        ``vqa_scores`` rows (:func:`score_episodes`).
    n_boot : int, optional
        Bootstrap replicates.
    seed : int, optional
        Seed of the resampling.

    Returns
    -------
    list of dict
        ``metrics`` rows, four per model x condition x source (``accuracy_closed``, ``accuracy_open``,
        ``accuracy_all``, ``open_token_recall``), test set ``standard_vqa``, breakdown ``source=<name>``,
        with the image-clustered interval and ``n_cases`` the number of images.

    References
    ----------
    .. [1] counterfactual paper, §5.6, Table 16.
    """
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for s in scores:
        groups[(s["model"], s["condition"], s["source"])].append(s)
    out = []
    for (model, condition, source), rows in sorted(groups.items()):
        subsets = {
            "accuracy_closed": [r for r in rows if r["answer_type"] == "closed"],
            "accuracy_open": [r for r in rows if r["answer_type"] == "open"],
            "accuracy_all": rows,
        }
        for metric, sub in subsets.items():
            v, lo, hi, n = cluster_mean([float(r["correct"]) for r in sub], [r["case_id"] for r in sub],
                                        n_boot=n_boot, seed=seed)
            out.append(_row(model, condition, source, metric, v, lo, hi, n))
        opens = subsets["accuracy_open"]
        v, lo, hi, n = cluster_mean([r["token_recall"] for r in opens], [r["case_id"] for r in opens],
                                    n_boot=n_boot, seed=seed)
        out.append(_row(model, condition, source, "open_token_recall", v, lo, hi, n))
    return out


def _row(model, condition, source, metric, value, lo, hi, n) -> dict:
    return {"model": model, "condition": condition, "test_set": "standard_vqa", "breakdown": f"source={source}",
            "metric": metric, "value": value, "ci_low": lo, "ci_high": hi, "n_cases": int(n),
            "reference": None, "p_value": None, "n_boot": None}


def read_answer(text: str | None) -> str | None:
    """The answer in a reply: the final action's answer if the model used the agent format, else
    the reply's text without reasoning blocks; None for an empty reply.

    Parameters
    ----------
    text : str or None
        The model's raw reply.

    Returns
    -------
    str or None
        The final action's answer, stripped, when the reply is a final action with an answer; else
        the parsed reply's text, stripped; None when that is empty.
    """
    parsed = parse_reply(text or "")
    if parsed.kind == "final" and parsed.final is not None and parsed.final.answer:
        return parsed.final.answer.strip()
    clean = (parsed.text or "").strip()
    return clean or None


def score_episodes(episodes: list[dict], items: dict[str, Item]) -> tuple[list[dict], int]:
    """vqa_scores rows of the episodes that belong to an item; (rows, episodes skipped: another
    protocol's episode, or a failed call with no reply -- a failed call is not a wrong answer).

    Parameters
    ----------
    episodes : list of dict
        ``episodes`` rows.
    items : dict of str to Item
        The protocol's items by ``item_id``; ``meta`` holds ``source`` and ``answer_type``.

    Returns
    -------
    rows : list of dict
        One ``vqa_scores`` row per scored episode; the reply is the episode's ``answer``, else
        :func:`read_answer` of its ``raw_text``.
    skipped : int
        Episodes left out: no item, another protocol's, or no ``raw_text`` (a failed call).
    """
    rows, skipped = [], 0
    for ep in episodes:
        item = items.get(ep["item_id"])
        if item is None or ep.get("protocol") not in (None, "standard_vqa") or ep.get("raw_text") is None:
            skipped += 1
            continue
        reply = ep.get("answer") if ep.get("answer") is not None else read_answer(ep.get("raw_text"))
        correct, recall = score_one(reply, item.truth, item.meta["answer_type"])
        rows.append({"run_id": ep.get("run_id") or "", "model": ep["model"], "condition": ep["condition"],
                     "item_id": item.item_id, "case_id": item.case_id, "source": item.meta["source"],
                     "answer_type": item.meta["answer_type"], "answer": item.truth, "reply": reply,
                     "correct": bool(correct), "token_recall": recall})
    return rows, skipped
