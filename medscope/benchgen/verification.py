"""The paper's second language-model call: is a question's key stated by its report? (benchmark-MCQ paper
Methods: "a second call verified that the answer was supported by the report").

Layered on the offline report-grounded check (``benchgen.grounding``), never in place of it: a
question the rules keep is sent to a verifier model with its report, and kept only when the
verifier's verdict line says SUPPORTED. A verdict of NOT SUPPORTED, an unreadable verdict or a
call that failed or was refused rejects the question with that reason (and the verifier's one
sentence as detail), so no key is kept on an unanswered check.

The calls run as a protocol of the shared sweep (``VerificationProtocol``), like the generation
calls (``benchgen.generation``): rate-limited actors, the request-key cache (a rerun asks
nothing twice), the budget and the privacy allow-list. The item id hashes the report, the
question and the key, and the prompt version hashes the prompt, so an edited report, key or
prompt is a new request, never a stale verdict.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Collection

from medscope.io import storage
from medscope.benchgen.calls import jsonl_rows, text_call
from medscope.models.base import ChatModel, Decoding
from medscope.protocols.base import EpisodeResult, Item
from medscope.seeding import stable_hash

CONDITION = "verify"
VERIFY_PROMPT = """You check the answer key of a radiology benchmark question against its source report.
Answer from the report only, as a radiologist reads it: a negated, hedged or differential mention
("no ascites", "cannot exclude", "differential includes") does not state a finding; a size is the
number the question asks for (the largest dimension is the largest number); side and location must match.
Reply with one line "VERDICT: SUPPORTED" or "VERDICT: NOT SUPPORTED", then one sentence saying why."""

_VERDICT = re.compile(r"verdict\s*[:=]\s*\**\s*(not\s+supported|unsupported|supported)\b", re.IGNORECASE)


def verification_key(case_id: str, question: str, answer: str, findings: str, impression: str) -> str:
    """The id of one verification: the case, the question, its key and the report text.

    Parameters
    ----------
    case_id : str
        The case.
    question : str
        The question text.
    answer : str
        The key (the correct option's text).
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.

    Returns
    -------
    str
        ``<case_id>#v<12-character hash of question, key and report>``.
    """
    return f"{case_id}#v{stable_hash(question.strip(), answer.strip(), findings, impression, length=12)}"


def verification_prompt(question: str, answer: str, findings: str, impression: str,
                        instructions: str = VERIFY_PROMPT) -> str:
    """The verifier's prompt: the instructions, the question and its proposed answer, then the report.

    Parameters
    ----------
    question : str
        The question text.
    answer : str
        The proposed answer (the key).
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.
    instructions : str, optional
        The verifier's instructions.

    Returns
    -------
    str
        The prompt text.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    return (f"{instructions}\n\nQUESTION: {question.strip()}\nPROPOSED ANSWER: {answer.strip()}\n\n"
            f"FINDINGS:\n{findings}\n\nIMPRESSION:\n{impression}")


def read_verdict(text: str) -> tuple[bool | None, str]:
    """(supported, the verifier's reason) from a reply; supported is None when no verdict line
    can be read (the question is then rejected as ``verification:unreadable``). The last verdict
    line wins, so a model that reconsiders is read by its final word.

    Parameters
    ----------
    text : str
        The verifier's reply.

    Returns
    -------
    supported : bool or None
        True for SUPPORTED, False for NOT SUPPORTED (or UNSUPPORTED), None when no verdict line is read.
    reason : str
        The first line after the last verdict, trimmed; empty when there is none.
    """
    found = _VERDICT.findall(text or "")
    if not found:
        return None, ""
    verdict = found[-1].lower().replace(" ", "")
    reason = _VERDICT.split(text)[-1].strip().splitlines()
    return verdict == "supported", (reason[0].strip(" .:-") if reason else "")


def write_candidates(candidates: list[dict], uri: str, private: bool, allowlist: list[str]) -> None:
    """The verification sweep's item file: one JSON line per (question, key, report).

    Parameters
    ----------
    candidates : list of dict
        One per question to verify: ``key``, ``case_id``, ``question``, ``answer``, ``findings`` and
        ``impression``.
    uri : str
        Path or storage URI of the item file written.
    private : bool
        Whether the cohort's reports are private (recorded on every line).
    allowlist : list of str
        The endpoints allowed to receive the reports (recorded on every line).
    """
    lines = [json.dumps({**c, "private": private, "endpoint_allowlist": list(allowlist)}) for c in candidates]
    storage.write_text(uri, "\n".join(lines) + "\n")


class VerificationProtocol:
    """EvalProtocol whose episodes are verification calls: one per rule-kept report question."""

    name = "benchgen_verify"

    def __init__(self, instructions: str = VERIFY_PROMPT):
        self.instructions = instructions
        self.prompt_version = "verify-" + stable_hash(instructions, length=12)

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        items = []
        for r in jsonl_rows(uri):
            if ids is not None and r["key"] not in ids:
                continue
            items.append(Item(item_id=r["key"], case_id=r["case_id"], question=r["question"], truth="",
                              private=bool(r["private"]), endpoint_allowlist=tuple(r["endpoint_allowlist"]),
                              meta={k: r[k] for k in ("answer", "findings", "impression")}))
        return items

    def conditions(self) -> tuple[str, ...]:
        return (CONDITION,)

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        episode = text_call(model, verification_prompt(item.question, item.meta["answer"], item.meta["findings"],
                                                       item.meta["impression"], self.instructions), decoding)
        supported, _ = read_verdict(episode.raw_text)
        return dataclasses.replace(
            episode, action="unparseable" if supported is None else "answer",
            answer=None if supported is None else ("supported" if supported else "not_supported"))

    def score(self, *args, **kwargs):
        raise NotImplementedError("verification episodes are read by `medscope benchgen build`, not scored")

    def report_sections(self, *args, **kwargs):
        return []
