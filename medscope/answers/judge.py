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

from medscope.io import storage
from medscope.answers.corpus import DECISIONS

KIND_NOTE = {
    "presence": "a presence question: yes means the finding is there",
    "health": "a health question: yes (healthy / normal) means the finding is NOT there",
    "open": "an open question: naming any abnormality is a claim",
}


@lru_cache(maxsize=1)
def rubric() -> dict:
    """The shipped rubric: {"version", "instructions"}."""
    return yaml.safe_load(resources.files("medscope.answers").joinpath("data", "judge_rubric.yaml").read_text("utf-8"))


def judge_prompt(reply: str, question: str, finding: str, kind: str) -> str:
    """The judge's prompt for one reply."""
    return (f"{rubric()['instructions'].strip()}\n\nQuestion asked: {question}\nAsked finding: {finding or '(any)'}"
            f" ({KIND_NOTE.get(kind, KIND_NOTE['presence'])})\nReply:\n<<<\n{reply}\n>>>")


@dataclass(frozen=True)
class Judgement:
    decision: str | None  # one of DECISIONS, or None when the judge's own reply was unreadable
    evidence: str
    raw: str


def read_judgement(text: str) -> Judgement:
    """The judge's reply -> Judgement (the first JSON object with a known decision)."""
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
    return hashlib.sha256(f"{rubric()['version']}\n{identity}\n{prompt}".encode()).hexdigest()[:32]


def judge_one(judge, prompt: str, cache_uri: str | None) -> tuple[Judgement, bool]:
    """(judgement, came from the cache)."""
    uri = storage.join(cache_uri, f"{judge_key(judge.identity, prompt)}.json") if cache_uri else None
    if uri and storage.exists(uri):
        return read_judgement(json.loads(storage.read_utf8(uri))["raw"]), True
    raw = judge.ask(prompt)
    if uri:
        record = {"rubric": rubric()["version"], "judge": judge.identity, "raw": raw}
        storage.write_once(uri, json.dumps(record).encode())
    return read_judgement(raw), False


def judge_replies(judge, rows: Iterable[dict], cache_uri: str | None = None, workers: int = 4) -> tuple[list[dict], dict]:
    """Judge rows of {model, condition, item_id, reply, question, finding, kind, rules} and return
    (rows with judge / evidence added, {"asked": n, "cached": n})."""
    rows = list(rows)

    def one(row):
        j, cached = judge_one(judge, judge_prompt(row["reply"], row["question"], row["finding"], row["kind"]), cache_uri)
        return {**row, "judge": j.decision, "evidence": j.evidence}, cached

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(one, rows))
    cached = sum(c for _, c in results)
    return [r for r, _ in results], {"asked": len(results) - cached, "cached": cached}


def agreement_by_model(rows: Iterable[dict]) -> list[dict]:
    """Per model: replies judged, judge failures, agreement of rules and judge, flips."""
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
