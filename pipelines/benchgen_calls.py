"""benchgen's language-model calls beyond question writing, each on the shared evaluation sweep
(cached by request key, resumable, rate-limited, privacy-checked, counted): the verification of
each kept key against its report (``build --verify llm``) and the schema proposal from a sample
of reports (``schema induce --proposer llm``). Generation itself is ``pipelines.benchgen.generate``.
"""

from __future__ import annotations

from medscope.io import layout, records, storage
from medscope.benchgen.proposer import CONDITION as PROPOSE_CONDITION
from medscope.benchgen.proposer import ProposalProtocol, read_proposal, report_batches, write_batches
from medscope.benchgen.questions import LETTERS, report_questions
from medscope.benchgen.verification import CONDITION as VERIFY_CONDITION
from medscope.benchgen.verification import VerificationProtocol, read_verdict, verification_key, write_candidates
from medscope.models.config import ModelEntry

VERIFY_PROTOCOL = "medscope.benchgen.verification:VerificationProtocol"
PROPOSE_PROTOCOL = "medscope.benchgen.proposer:ProposalProtocol"


def _replies(out: str, keys: set[str], model: str) -> dict[str, str]:
    """{item id: reply text} of a sweep's finished, error-free episodes of ``model``."""
    eps = records.read_table("episodes", storage.join(out, "episodes"),
                             columns=["item_id", "model", "raw_text", "error"]).to_pylist()
    return {ep["item_id"]: ep["raw_text"] for ep in eps
            if ep["item_id"] in keys and ep["model"] == model and ep["raw_text"] and not ep["error"]}


def verify(cfg, entry: ModelEntry, studies: list[dict], replies: dict) -> tuple[dict, dict | None]:
    """The paper's verification call for every question the rules keep, on the shared sweep;
    ({verification key: (supported, reason)}, sweep summary). Keys without a verdict (a failed or
    refused call) are absent, so their questions are rejected, never kept unchecked.

    Parameters
    ----------
    cfg : BuildConfig
        The ``benchgen build`` config (``pipelines.benchgen.BuildConfig``); reads ``seed``, ``out``,
        ``private``, ``endpoint_allowlist``, ``workers`` and ``concurrency``.
    entry : ModelEntry
        The verifier model.
    studies : list of dict
        The paired studies (``case_id``, ``findings``, ``impression``).
    replies : dict
        The generation replies, ``{(case_id, condition): reply text}``; a study's ``"questions"``
        reply is read into the questions the rules keep.

    Returns
    -------
    verdicts : dict
        ``{verification key: (supported, reason)}``, ``supported`` a bool or None (unreadable reply).
    summary : dict or None
        The verification sweep's summary; None when no question was kept (no sweep runs).

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    from pipelines.eval import EvalConfig, run_sweep

    candidates = []
    for s in studies:
        reply = replies.get((s["case_id"], "questions"))
        if reply is None:
            continue
        kept, _ = report_questions(s["case_id"], reply, s["findings"], s["impression"], cfg.seed)
        for q in kept:
            answer = q["options"][LETTERS.index(q["answer"])]
            candidates.append({"key": verification_key(s["case_id"], q["question"], answer, s["findings"], s["impression"]),
                               "case_id": s["case_id"], "question": q["question"], "answer": answer,
                               "findings": s["findings"], "impression": s["impression"]})
    if not candidates:
        return {}, None
    where = layout.BenchgenBuild(cfg.out)
    write_candidates(candidates, where.verification_items, cfg.private, cfg.endpoint_allowlist)
    sweep = EvalConfig(views=where.verification_items, models="(inline)", conditions=[VERIFY_CONDITION],
                       out=where.verification, protocol=VERIFY_PROTOCOL, workers=cfg.workers,
                       concurrency=cfg.concurrency)
    summary = run_sweep(sweep, protocol=VerificationProtocol(), entries=[entry])
    replies = _replies(where.verification, {c["key"] for c in candidates}, entry.name)
    return {key: read_verdict(text) for key, text in replies.items()}, summary


def propose(sample: list[dict], organ: str, entry: ModelEntry, work: str, private: bool, allowlist: list[str],
            batch: int = 25, workers: int = 1, concurrency: int = 4) -> tuple[list[dict], list[str], dict]:
    """The proposer's calls, one per batch of ``batch`` sampled reports, on the shared sweep under
    folder ``work``; (proposed fields of every answered batch, problems, sweep summary).

    Parameters
    ----------
    sample : list of dict
        The sampled report rows (``case_id``, ``findings``, ``impression``).
    organ : str
        The organ the schema covers (given to the proposer's prompt).
    entry : ModelEntry
        The proposer model.
    work : str
        Folder of the proposal sweep (its ``batches.jsonl`` items and episodes).
    private : bool
        Whether the reports are private (then only allow-listed endpoints receive them).
    allowlist : list of str
        Endpoints allowed to receive the report text.
    batch : int, optional
        Reports per proposal call.
    workers : int, optional
        Pool actors of the sweep.
    concurrency : int, optional
        Requests in flight per pool actor.

    Returns
    -------
    fields : list of dict
        The proposed fields of every answered batch.
    problems : list of str
        ``"<batch key>: <problem>"`` for each batch without a reply and each unreadable field.
    summary : dict
        The proposal sweep's summary.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    from pipelines.eval import EvalConfig, run_sweep

    batches = report_batches(sample, batch)
    items = storage.join(work, "batches.jsonl")
    write_batches(batches, items, private, allowlist)
    sweep = EvalConfig(views=items, models="(inline)", conditions=[PROPOSE_CONDITION], out=work,
                       protocol=PROPOSE_PROTOCOL, workers=workers, concurrency=concurrency)
    summary = run_sweep(sweep, protocol=ProposalProtocol(organ), entries=[entry])
    replies = _replies(work, {b["key"] for b in batches}, entry.name)
    fields, problems = [], []
    for b in batches:
        if b["key"] not in replies:
            problems.append(f"{b['key']}: no reply (the call failed or was refused)")
            continue
        got, bad = read_proposal(replies[b["key"]])
        fields += got
        problems += [f"{b['key']}: {p}" for p in bad]
    return fields, problems, summary
