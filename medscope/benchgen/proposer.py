"""The paper's route to a schema: a language model proposes fields from a stratified sample of
reports (benchmark-MCQ paper Methods: "the schema is induced from a stratified sample of reports, then
confirmed by a clinician"); ``benchgen.induce`` holds the offline rule proposer beside it.

The sample goes to the proposer in batches of reports (``report_batches``); each reply is a JSON
list of fields, binary (a finding and the words the reports use for it) or multi (values and
their words). A proposal is never trusted as it stands: ``ground_proposals`` merges the
batches' fields by name and keeps only what the sample itself supports, read through the same
negation scope as the report-grounded check (``benchgen.grounding``):

- a binary field whose words the sample affirms in at least ``min_support`` reports *and*
  denies in at least ``min_support`` (a finding every report states cannot separate cases);
- a multi field's values stated (affirmed) in at least ``min_support`` reports, the field kept
  when two or more values remain.

Every dropped proposal is listed with its counts, and the result goes to the ordinary approval
checkpoints (``benchgen schema approve``). The calls run as a protocol of the shared sweep
(``ProposalProtocol``): cached, resumable, rate-limited and privacy-checked like every call.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection

from medscope.io import storage
from medscope.benchgen.extract import first_json_object, sentences
from medscope.benchgen.grounding import _mention_status, normalize_sentence
from medscope.benchgen.calls import jsonl_rows, text_call
from medscope.models.base import ChatModel, Decoding
from medscope.protocols.base import EpisodeResult, Item
from medscope.seeding import stable_hash

CONDITION = "propose"
PROPOSE_PROMPT = """You design the field schema of a radiology benchmark for {organ} studies from sample reports.
Propose findings that the images show and that these reports sometimes affirm and sometimes deny,
or that take one of several values (side, location, pattern); a finding every report states cannot
separate cases. Never propose history, comparison, technique or recommendation fields.
For each field give: "name" (snake_case), "type" ("binary" or "multi"), "question" (asked of the
images), "subcategory" (a short clinical tag), and for binary fields "terms" (the words or short
phrases the reports use for the finding), for multi fields "values": [{{"value": "...", "terms": ["..."]}}].
Reply with JSON only: {{"fields": [...]}}"""


def report_batches(sample: list[dict], size: int) -> list[dict]:
    """The sample in batches of ``size`` reports, each an item {key, case_ids, text}; the key
    hashes the batch's reports, so a changed sample is a new call and the same one a cache hit.

    Parameters
    ----------
    sample : list of dict
        The sampled report rows (``case_id``, ``findings``, ``impression``).
    size : int
        Reports per batch (at least 1).

    Returns
    -------
    list of dict
        One per batch: ``key`` (``batch<n>#<hash of the text>``), ``case_ids`` and ``text`` (the
        numbered reports).
    """
    out = []
    for i in range(0, len(sample), max(1, size)):
        part = sample[i:i + size]
        text = "\n\n".join(f"REPORT {n + 1}:\nFINDINGS: {r['findings']}\nIMPRESSION: {r['impression']}"
                           for n, r in enumerate(part))
        out.append({"key": f"batch{i // size:04d}#{stable_hash(text, length=12)}",
                    "case_ids": [r["case_id"] for r in part], "text": text})
    return out


def proposal_prompt(organ: str, text: str, instructions: str = PROPOSE_PROMPT) -> str:
    """The proposer's prompt: the instructions for ``organ``, then a batch's reports.

    Parameters
    ----------
    organ : str
        The organ the schema is for, filled into ``instructions``.
    text : str
        A batch's reports (``text`` of :func:`report_batches`).
    instructions : str, optional
        The instruction template, with an ``{organ}`` placeholder.

    Returns
    -------
    str
        The prompt text.
    """
    return instructions.format(organ=organ) + "\n\n" + text


def read_proposal(reply: str) -> tuple[list[dict], list[str]]:
    """(proposed fields, problems) from one reply; a field without a name, a known type or any
    words is a problem, not a field.

    Parameters
    ----------
    reply : str
        The proposer's reply.

    Returns
    -------
    fields : list of dict
        The well-formed proposed fields, as the reply gives them.
    problems : list of str
        ``reply_not_json`` (no JSON object with a ``fields`` list), ``field_without_name`` or
        ``<name>: unknown type ...`` / ``<name>: no terms`` / ``<name>: no values``.
    """
    obj = first_json_object(reply or "")
    if obj is None or not isinstance(obj.get("fields"), list):
        return [], ["reply_not_json"]
    fields, problems = [], []
    for f in obj["fields"]:
        if not isinstance(f, dict) or not str(f.get("name") or "").strip():
            problems.append("field_without_name")
        elif f.get("type") not in ("binary", "multi"):
            problems.append(f"{f['name']}: unknown type {f.get('type')!r}")
        elif f["type"] == "binary" and not [t for t in f.get("terms") or [] if str(t).strip()]:
            problems.append(f"{f['name']}: no terms")
        elif f["type"] == "multi" and not [v for v in f.get("values") or [] if isinstance(v, dict) and v.get("value")]:
            problems.append(f"{f['name']}: no values")
        else:
            fields.append(f)
    return fields, problems


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_")


def _pattern(term: str) -> str:
    return re.escape(normalize_sentence(term).strip()).replace(r"\ ", r"\s+")


def mention_counts(terms: list[str], sample: list[dict]) -> Counter:
    """Reports of the sample that affirm / deny any of ``terms`` (each report counted once per
    status), read through the report-grounded check's negation scope.

    Parameters
    ----------
    terms : list of str
        The words or phrases of one finding or value.
    sample : list of dict
        Report rows with ``findings`` and ``impression``.

    Returns
    -------
    collections.Counter
        ``affirmed`` and ``negated``: numbers of reports.
    """
    pats = [re.compile(rf"\b{_pattern(t)}\b") for t in terms if normalize_sentence(t).strip()]
    counts: Counter = Counter()
    for r in sample:
        seen = set()
        for s in sentences(r["findings"]) + sentences(r["impression"]):
            text = normalize_sentence(s)
            for p in pats:
                for m in p.finditer(text):
                    status = _mention_status(text, m.start(), m.end())
                    if status in ("affirmed", "negated"):
                        seen.add(status)
        counts.update(seen)
    return counts


def ground_proposals(proposals: list[dict], sample: list[dict], min_support: int = 2) -> tuple[list[dict], list[str]]:
    """(schema field dicts, notes): the proposals merged by name, kept where the sample supports them.

    Parameters
    ----------
    proposals : list of dict
        The proposed fields of every batch (:func:`read_proposal`).
    sample : list of dict
        The sampled report rows the proposals are checked against.
    min_support : int, optional
        Reports a binary field must be affirmed in and denied in, and a multi field's value stated in.

    Returns
    -------
    fields : list of dict
        Schema field mappings: binary with ``yes_patterns`` / ``no_patterns``, multi with ``values``.
    notes : list of str
        Comment lines: the sample size and the counts behind each kept or dropped field.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods (schema induction from a stratified sample of reports).
    """
    merged: dict[str, dict] = {}
    for f in proposals:
        name = _slug(f["name"])
        m = merged.setdefault(name, {"type": f["type"], "question": str(f.get("question") or "").strip(),
                                     "subcategory": str(f.get("subcategory") or "finding").strip(),
                                     "terms": [], "values": {}, "proposed": 0})
        m["proposed"] += 1
        if m["type"] != f["type"]:
            continue  # the first batch's type stands; a conflicting one is counted, not mixed in
        m["terms"] += [str(t) for t in f.get("terms") or [] if str(t).strip() and str(t) not in m["terms"]]
        for v in f.get("values") or []:
            if isinstance(v, dict) and v.get("value"):
                terms = m["values"].setdefault(str(v["value"]), [])
                terms += [str(t) for t in (v.get("terms") or [v["value"]]) if str(t) not in terms]
    fields, notes = [], [f"proposed by a language model from {len(sample)} reports; kept where the sample "
                         f"supports it (min_support={min_support} reports)"]
    for name, m in merged.items():
        question = m["question"] or f"Is there {name.replace('_', ' ')}?"
        if m["type"] == "binary":
            c = mention_counts(m["terms"], sample)
            counts = f"affirmed in {c['affirmed']}, denied in {c['negated']} reports (proposed {m['proposed']}x)"
            if c["affirmed"] < min_support or c["negated"] < min_support:
                notes.append(f"dropped {name}: {counts}")
                continue
            pats = [_pattern(t) for t in m["terms"]]
            fields.append({"name": name, "type": "binary", "subcategory": m["subcategory"], "question": question,
                           "yes_patterns": [rf"\b{p}\b" for p in pats],
                           "no_patterns": [rf"\b(?:no|without) (?:\w+ )?{p}\b" for p in pats]})
            notes.append(f"{name}: {counts}")
        else:
            stated = {v: mention_counts(t, sample)["affirmed"] for v, t in m["values"].items()}
            values = [v for v, n in stated.items() if n >= min_support]
            counts = ", ".join(f"{v} in {n}" for v, n in stated.items())
            if len(values) < 2:
                notes.append(f"dropped {name}: fewer than two values stated in {min_support}+ reports ({counts})")
                continue
            fields.append({"name": name, "type": "multi", "subcategory": m["subcategory"], "question": question,
                           "values": [{"value": v, "patterns": [rf"\b{_pattern(t)}\b" for t in m["values"][v]]}
                                      for v in values]})
            notes.append(f"{name}: {counts}")
    return fields, notes


def write_batches(batches: list[dict], uri: str, private: bool, allowlist: list[str]) -> None:
    """The proposal sweep's item file: one JSON line per batch of reports (with privacy).

    Parameters
    ----------
    batches : list of dict
        The report batches (:func:`report_batches`).
    uri : str
        Path or storage URI of the item file written.
    private : bool
        Whether the cohort's reports are private (recorded on every line).
    allowlist : list of str
        The endpoints allowed to receive the reports (recorded on every line).
    """
    lines = [json.dumps({**b, "private": private, "endpoint_allowlist": list(allowlist)}) for b in batches]
    storage.write_text(uri, "\n".join(lines) + "\n")


class ProposalProtocol:
    """EvalProtocol whose episodes are schema proposals: one call per batch of sampled reports."""

    name = "benchgen_propose"

    def __init__(self, organ: str = "organ", instructions: str = PROPOSE_PROMPT):
        self.organ = organ
        self.instructions = instructions
        self.prompt_version = "propose-" + stable_hash(instructions, organ, length=12)

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        return [Item(item_id=r["key"], case_id=r["key"], question="", truth="", private=bool(r["private"]),
                     endpoint_allowlist=tuple(r["endpoint_allowlist"]), meta={"text": r["text"]})
                for r in jsonl_rows(uri) if ids is None or r["key"] in ids]

    def conditions(self) -> tuple[str, ...]:
        return (CONDITION,)

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        return text_call(model, proposal_prompt(self.organ, item.meta["text"], self.instructions), decoding)

    def score(self, *args, **kwargs):
        raise NotImplementedError("proposal episodes are read by `medscope benchgen schema induce`, not scored")

    def report_sections(self, *args, **kwargs):
        return []
