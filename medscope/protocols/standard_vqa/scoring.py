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
    """Lower case, punctuation to spaces, articles dropped, spaces collapsed."""
    text = re.sub(r"[^\w\s]", " ", str(text or "").lower())
    return " ".join(t for t in text.split() if t not in ARTICLES)


def first_yes_no(text: str) -> str | None:
    for token in normalize_answer(text).split():
        if token in YES_NO:
            return token
    return None


def closed_correct(reply: str, answer: str) -> bool:
    """Closed-question rule (module docstring)."""
    want = normalize_answer(answer)
    if want in YES_NO:
        return first_yes_no(reply) == want
    first_clause = normalize_answer(re.split(r"[,.;:\n]", str(reply or ""), maxsplit=1)[0])
    return bool(want) and (normalize_answer(reply) == want or first_clause == want)


def token_recall(reply: str, answer: str) -> float:
    """Share of the answer's distinct tokens present in the reply (0..1)."""
    want = set(normalize_answer(answer).split())
    if not want:
        return 0.0
    return len(want & set(normalize_answer(reply).split())) / len(want)


def score_one(reply: str | None, answer: str, answer_type: str) -> tuple[bool, float | None]:
    """(correct, token recall or None for closed) of one reply; no reply scores wrong."""
    if reply is None:
        return False, (0.0 if answer_type == "open" else None)
    if answer_type == "closed":
        return closed_correct(reply, answer), None
    recall = token_recall(reply, answer)
    return recall == 1.0, recall


def cluster_mean(values, clusters, *, n_boot: int = bs.DEFAULT_B, seed: int = bs.DEFAULT_SEED):
    """(mean, low, high, clusters) with a 95% percentile interval from resampling whole clusters."""
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
    model x condition x source (breakdown ``source=<name>``), each with its image-clustered interval."""
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
    the reply's text without reasoning blocks; None for an empty reply."""
    parsed = parse_reply(text or "")
    if parsed.kind == "final" and parsed.final is not None and parsed.final.answer:
        return parsed.final.answer.strip()
    clean = (parsed.text or "").strip()
    return clean or None


def score_episodes(episodes: list[dict], items: dict[str, Item]) -> tuple[list[dict], int]:
    """vqa_scores rows of the episodes that belong to an item; (rows, episodes skipped: another
    protocol's episode, or a failed call with no reply -- a failed call is not a wrong answer)."""
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
