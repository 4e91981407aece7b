"""An optional judge reading of free-text replies, beside the rules.

Extract-then-judge, as the paired-modality paper's scoring does: the judge model first copies the part of the
reply that carries its decision, then picks one decision (claim / deny / refer / clarify /
unparseable) under a versioned rubric (``data/judge_rubric.yaml``). Judgements are cached one
file per key — sha256 of (rubric version, judge identity, prompt) — so a rerun asks nothing
twice and a changed rubric or judge never reuses old answers.

The judge is any object with ``identity`` (str) and ``ask(prompt) -> str`` — a provider
adapter wrapped by ``pipelines/judge.py``, or a scripted one in tests — so this module stays
below the model layer. :func:`agreement_by_model` says how often the judge and the rules agree
and how many claim/denial flips separate them, per model: how much the reading matters.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from medscope.io import safe_text, storage
from medscope.answers.corpus import DECISIONS

KIND_NOTE = {
    "presence": "a presence question: yes means the finding is there",
    "health": "a health question: yes (healthy / normal) means the finding is NOT there",
    "open": "an open question: naming any abnormality is a claim",
}


@lru_cache(maxsize=1)
def rubric() -> dict:
    """The shipped rubric: {"version", "instructions"}.

    Returns
    -------
    dict
        ``data/judge_rubric.yaml`` parsed (cached): ``version`` and ``instructions``.
    """
    return yaml.safe_load(resources.files("medscope.answers").joinpath("data", "judge_rubric.yaml").read_text("utf-8"))


def judge_prompt(reply: str, question: str, finding: str, kind: str) -> str:
    """The judge's prompt for one reply.

    Parameters
    ----------
    reply : str
        The model's reply.
    question : str
        The question asked.
    finding : str
        The asked finding; empty for "(any)".
    kind : {"presence", "health", "open"}
        The question's kind (an unknown kind is described as presence).

    Returns
    -------
    str
        The rubric's instructions, the question, the finding with a note on the question's polarity, and
        the reply between ``<<<`` and ``>>>``.

    References
    ----------
    .. [1] Paired-modality paper, scoring (extract-then-judge).
    """
    return (f"{rubric()['instructions'].strip()}\n\nQuestion asked: {question}\nAsked finding: {finding or '(any)'}"
            f" ({KIND_NOTE.get(kind, KIND_NOTE['presence'])})\nReply:\n<<<\n{reply}\n>>>")


@dataclass(frozen=True)
class Judgement:
    decision: str | None  # one of DECISIONS, or None when the judge's own reply was unreadable
    evidence: str
    raw: str


def read_judgement(text: str) -> Judgement:
    """The judge's reply -> Judgement (the first JSON object with a known decision).

    Parameters
    ----------
    text : str or None
        The judge's reply.

    Returns
    -------
    Judgement
        The decision and evidence of the first ``{...}`` object (without nested braces) that parses
        and has a ``decision`` in :data:`DECISIONS`; ``decision`` None when there is none. ``raw`` is
        the text.
    """
    for m in re.finditer(r"\{[^{}]*\}", text or ""):
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        decision = str(obj.get("decision", "")).strip().lower()
        if decision in DECISIONS:
            return Judgement(decision, str(obj.get("evidence") or ""), text)
    return Judgement(None, "", text or "")


def judge_key(identity: str, prompt: str) -> str:
    """Cache key of one judgement: sha256 of (rubric version, judge identity, prompt).

    Parameters
    ----------
    identity : str
        The judge's identity.
    prompt : str
        The judge's prompt.

    Returns
    -------
    str
        The first 32 hex characters of the digest.
    """
    return hashlib.sha256(f"{rubric()['version']}\n{identity}\n{prompt}".encode()).hexdigest()[:32]


def judge_one(judge, prompt: str, cache_uri: str | None) -> tuple[Judgement, bool]:
    """(judgement, came from the cache).

    Ask the judge about one prompt, or read its answer from the cache.

    Parameters
    ----------
    judge : object
        Has ``identity`` (str) and ``ask(prompt) -> str``.
    prompt : str
        The judge's prompt (:func:`judge_prompt`).
    cache_uri : str or None
        Folder of cached judgements, one ``<judge_key>.json`` per key, written once; None for no cache.

    Returns
    -------
    judgement : Judgement
        The judge's reading.
    cached : bool
        Whether it came from the cache.
    """
    uri = storage.join(cache_uri, f"{judge_key(judge.identity, prompt)}.json") if cache_uri else None
    if uri and storage.exists(uri):
        return read_judgement(safe_text.read_json_object(uri)["raw"]), True
    raw = judge.ask(prompt)
    if uri:
        record = {"rubric": rubric()["version"], "judge": judge.identity, "raw": raw}
        storage.write_once(uri, json.dumps(record).encode())
    return read_judgement(raw), False


def judge_replies(judge, rows: Iterable[dict], cache_uri: str | None = None, workers: int = 4) -> tuple[list[dict], dict]:
    """Judge rows of {model, condition, item_id, reply, question, finding, kind, rules} and return
    (rows with judge / evidence added, {"asked": n, "cached": n}).

    Parameters
    ----------
    judge : object
        Has ``identity`` (str) and ``ask(prompt) -> str``.
    rows : iterable of dict
        Each with at least ``reply``, ``question``, ``finding`` and ``kind``; other keys are kept.
    cache_uri : str or None, optional
        Folder of cached judgements (see :func:`judge_one`). Default None.
    workers : int, optional
        Threads asking the judge (at least 1). Default 4.

    Returns
    -------
    rows : list of dict
        The rows in order, each with ``judge`` (the decision or None) and ``evidence`` added.
    counts : dict
        ``{"asked": n, "cached": n}``.
    """
    rows = list(rows)

    def one(row):
        j, cached = judge_one(judge, judge_prompt(row["reply"], row["question"], row["finding"], row["kind"]), cache_uri)
        return {**row, "judge": j.decision, "evidence": j.evidence}, cached

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(one, rows))
    cached = sum(c for _, c in results)
    return [r for r, _ in results], {"asked": len(results) - cached, "cached": cached}


def agreement_by_model(rows: Iterable[dict]) -> list[dict]:
    """Per model: replies judged, judge failures, agreement of rules and judge, flips.

    Parameters
    ----------
    rows : iterable of dict
        Judged rows with ``model``, ``judge`` (decision or None) and ``rules`` (the rules' decision).

    Returns
    -------
    list of dict
        One per model, sorted by name: ``model``, ``replies``, ``judge_failed``, ``agree``,
        ``agreement`` (NaN when the judge read none) and ``flips`` (claim/deny disagreements).
    """
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[r["model"]].append(r)
    out = []
    for model, part in sorted(groups.items()):
        read = [r for r in part if r["judge"] is not None]
        agree = sum(r["judge"] == r["rules"] for r in read)
        flips = sum({r["judge"], r["rules"]} == {"claim", "deny"} for r in read)
        out.append({"model": model, "replies": len(part), "judge_failed": len(part) - len(read),
                    "agree": agree, "agreement": agree / len(read) if read else float("nan"), "flips": flips})
    return out
