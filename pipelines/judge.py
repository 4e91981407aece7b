"""``medscope judge-replies``: read an eval's free-text replies with a judge model beside the
rules, and report their agreement per model (:mod:`medscope.answers.judge`).

Only episodes whose decision was read by the free-text rules are judged (reading ``rules``;
older tables without the column: replies with no action tag). Private items go to the judge only
when its endpoint is on their allow-list, as in ``medscope eval``. Judgements are cached under
``--cache`` (default ``<out>/judge_cache``), so a rerun asks nothing it has asked before.
"""

from __future__ import annotations

import json

from pydantic import Field as F

from medscope import config as cfgmod
from medscope.io import records, safe_text, storage
from medscope.answers.corpus import decision
from medscope.answers.judge import agreement_by_model, judge_replies, rubric
from medscope.answers.matching import infer_question_kind
from medscope.answers.parser import parse_reply
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.models.base import Decoding, Message
from medscope.models.config import ModelEntry, ModelsConfig
from medscope.models.guarded import GuardedModel
from medscope.models.registry import build_model
from pipelines.support.flags import add_config_flags, config_from_args

# Output file names, in one place until medscope.io.layout owns them.
JUDGEMENTS = "reply_judgements.parquet"
SUMMARY = "reply_judge.json"
CACHE = "judge_cache"


class ProviderJudge:
    """A judge backed by any provider adapter (retries and backoff from GuardedModel)."""

    def __init__(self, entry: ModelEntry, max_output_tokens: int = 300):
        self.entry = entry
        self.model = GuardedModel(build_model(entry))
        self.decoding = Decoding(temperature=0.0, max_output_tokens=max_output_tokens)
        self.identity = f"{entry.kind}:{entry.model}@{safe_text.redact_url(entry.endpoint)}"  # written to judgements

    def ask(self, prompt: str) -> str:
        return self.model.complete([Message.text("user", prompt)], self.decoding).text or ""


def _episodes_folder(uri: str) -> str:
    """An eval output folder or its episodes folder -> the episodes folder."""
    return storage.join(uri, "episodes") if storage.is_dir(storage.join(uri, "episodes")) else uri


def free_text_rows(episodes_uri: str, items: dict, entry: ModelEntry,
                   only_unclear: bool = False) -> tuple[list[dict], int]:
    """(rows to judge, private replies withheld from the judge's endpoint).

    Parameters
    ----------
    episodes_uri : str
        An eval output folder, or its episodes folder.
    items : dict of str to Item
        The protocol's items by ``item_id``; episodes of other items are skipped.
    entry : ModelEntry
        The judge's model entry (its endpoint is checked against each item's allow-list).
    only_unclear : bool, optional
        Only the replies the rules read as ``unclear`` (the reader did not commit).

    Returns
    -------
    rows : list of dict
        One per reply read by the free-text rules: ``model``, ``condition``, ``item_id``,
        ``reply``, ``question``, ``finding``, ``kind`` and ``rules`` (the rules' decision).
    withheld : int
        Private replies not sent to the judge.
    """
    table = records.read_table("episodes", _episodes_folder(episodes_uri))
    rows, withheld = [], 0
    for ep in table.to_pylist():
        item = items.get(ep["item_id"])
        if item is None or ep["raw_text"] is None:
            continue
        parsed = parse_reply(ep["raw_text"])
        if ep["reading"] != "rules" and not (ep["reading"] is None and parsed.kind == "free"):
            continue
        if only_unclear and ep["action"] != "unclear":
            continue
        if not entry.may_receive(item.private, item.endpoint_allowlist):
            withheld += 1
            continue
        finding = str(item.meta.get("finding") or item.meta.get("organ") or "")
        rows.append({"model": ep["model"], "condition": ep["condition"], "item_id": ep["item_id"],
                     "reply": parsed.text, "question": item.question, "finding": finding,
                     "kind": item.meta.get("question_kind") or infer_question_kind(item.question),
                     "rules": decision(ep["action"], ep["claims_finding"])})
    return rows, withheld


_AS_ACTION = {"claim": ("answer", True), "deny": ("answer", False), "refer": ("refer", None),
              "clarify": ("clarify", None), "unparseable": ("unparseable", None)}


def judged_episodes(episodes_uri: str, judged: list[dict]) -> list[dict]:
    """The episodes with every judged free-text decision replaced by the judge's (reading
    ``judge``); replies the judge could not read keep the rules' decision. Scoring this table
    gives every metric under the judge reading.

    Parameters
    ----------
    episodes_uri : str
        The episodes table.
    judged : list of dict
        Judged rows (``model``, ``condition``, ``item_id``, ``judge``: ``claim``, ``deny``,
        ``refer``, ``clarify``, ``unparseable``, or None when unread).

    Returns
    -------
    list of dict
        Every episode row, the judged ones with ``action``, ``claims_finding``, ``answer`` and
        ``reading`` replaced.
    """
    by_key = {(r["model"], r["condition"], r["item_id"]): r["judge"] for r in judged if r["judge"] is not None}
    out = []
    for ep in records.read_table("episodes", episodes_uri).to_pylist():
        j = by_key.get((ep["model"], ep["condition"], ep["item_id"]))
        if j is not None:
            action, claim = _AS_ACTION[j]
            ep = {**ep, "action": action, "claims_finding": claim, "reading": "judge",
                  "answer": ep["answer"] if action == "answer" else None}
        out.append(ep)
    return out


def _accounting(judged: list[dict], withheld: int, entry: ModelEntry) -> dict:
    """The judging sweep's units (pipelines.support.accounting): a reply the judge gave no
    decision for is a failed unit; a private reply withheld from the judge's endpoint is refused."""
    from pipelines.eval import ALLOW_FIX
    from pipelines.support.accounting import Accounting

    acc = Accounting()
    for r in judged:
        acc.add(r["model"], r["condition"], "done" if r["judge"] is not None else "failed",
                "judge: no decision read (provider error or unreadable judgement)")
    if withheld:
        acc.add(entry.name, "judge", "refused", endpoint=entry.endpoint, fix=ALLOW_FIX, n=withheld)
    return acc.to_dict()


def run(args) -> dict:
    """Judge an eval's free-text replies, write the judgements and the summary under ``args.out``,
    and print the agreement per model.

    Parameters
    ----------
    args : JudgeRepliesConfig
        The validated config: ``models``, ``judge``, ``protocol``, ``items``, ``episodes``,
        ``limit``, ``cache``, ``workers``, ``out`` and ``write_episodes`` are read.

    Returns
    -------
    dict
        The summary written to reply_judge.json: judge, rubric version, counts, agreement per
        model, ``out`` and the units' ``accounting``.

    Raises
    ------
    MedScopeError
        When ``args.judge`` is not a model of ``args.models``.
    """
    from medscope import protocols

    entries = {e.name: e for e in cfgmod.load(ModelsConfig, args.models).models}
    if args.judge not in entries:
        raise MedScopeError(f"no model {args.judge!r} in {args.models}; known: {', '.join(sorted(entries))}")
    entry = entries[args.judge]
    protocol = protocols.load(args.protocol)
    items = {i.item_id: i for i in protocol.load_items(args.items)}
    rows, withheld = free_text_rows(args.episodes, items, entry,
                                    only_unclear=bool(getattr(args, "only_unclear", False)))
    if args.limit:
        rows = rows[: args.limit]
    judged, counts = judge_replies(ProviderJudge(entry), rows, args.cache or storage.join(args.out, CACHE), args.workers)
    version = rubric()["version"]
    records.write_table("reply_judgements", [
        {"model": r["model"], "condition": r["condition"], "item_id": r["item_id"], "judge": entry.name,
         "rubric": version, "rules_decision": r["rules"], "judge_decision": r["judge"], "evidence": r["evidence"]}
        for r in judged], storage.join(args.out, JUDGEMENTS))
    if args.write_episodes:
        records.write_part("episodes", judged_episodes(_episodes_folder(args.episodes), judged), args.write_episodes,
                           "judged")
    per_model = agreement_by_model(judged)
    summary = {"judge": entry.name, "rubric": version, "judged": len(judged), "withheld_private": withheld,
               **counts, "per_model": per_model, "out": args.out, "accounting": _accounting(judged, withheld, entry)}
    storage.write_text(storage.join(args.out, SUMMARY), json.dumps(summary, indent=2))
    print(f"judge {entry.name} ({version}): {len(judged)} free-text replies "
          f"({counts['asked']} asked, {counts['cached']} cached, {withheld} private withheld)")
    for m in per_model:
        print(f"  {m['model']}: rules and judge agree on {m['agree']}/{m['replies'] - m['judge_failed']}"
              f" = {m['agreement']:.3f}, claim/denial flips {m['flips']}, judge unreadable {m['judge_failed']}")
    return summary


class JudgeRepliesConfig(StrictModel):
    """``medscope judge-replies``: free-text replies read by a judge model beside the rules."""

    episodes: str = F(description="episodes folder (or an eval output's episodes/)")
    items: str = F(description="the protocol's item table (views, probe_items, ...)")
    protocol: str = F("counterfactual", description="the protocol the items belong to")
    models: str = F(description="configs/models/<file>.yaml holding the judge")
    judge: str = F(description="the judge's model name in models")
    out: str = F(description="output folder: reply_judgements.parquet, reply_judge.json")
    cache: str | None = F(None, description="judgement cache folder (default <out>/judge_cache)")
    workers: int = F(4, ge=1, description="judge calls in flight")
    limit: int = F(0, ge=0, description="judge at most this many replies (0: all)")
    only_unclear: bool = F(False, description="judge only the replies the rules read as unclear (their reading "
                                              "is shown beside the rules', never in their place without --write-episodes)")
    write_episodes: str | None = F(None, description="also write the episodes with the judge's decisions (reading "
                                                     "'judge') to this folder, for 'medscope score' under the judge reading")
    max_failed: float | None = F(None, ge=0, description="failed + withheld replies accepted before the exit code says so: "
                                                   "a count or a fraction")


def register(sub) -> None:
    """Add the ``judge-replies`` verb to the command line.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The top parser's sub-parsers.
    """
    p = sub.add_parser("judge-replies", help="read free-text replies with a judge model beside the rules; "
                                             "agreement per model", description=JudgeRepliesConfig.__doc__)
    add_config_flags(p, JudgeRepliesConfig)
    p.set_defaults(func=lambda a: _run_cli(config_from_args(a, source="medscope judge-replies")))


def _run_cli(args) -> None:
    from pipelines.support.accounting import conclude

    conclude(run(args), args.max_failed, "judge-replies")
