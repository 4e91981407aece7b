"""``medscope answers``: how the reader reads this run's replies (:mod:`medscope.answers`).

    medscope answers read --protocol NAME --replies R.jsonl [--question Q --finding F] [--out O.jsonl]
    medscope answers read --episodes E [--out O.jsonl]
        each reply's reading: the decision, the rule that made it and the text that decided it
        (or why it is unclear), with counts per decision
    medscope answers audit --episodes E --sample N [--out A] [--seed S]
        a blinded, stratified sample of the run's replies: A/audit_sample.jsonl (with the reading),
        A/label.html (question and reply only) and A/audit.json; A defaults to E/answers_audit
    medscope answers agreement --labels L --episodes E [--out F]
        the labelled replies re-read by the reader as it is now: agreement, Cohen's kappa, flips
        with intervals, unclear readings, per model; F defaults to agreement.json in the audit folder

Each action is one config model and one ``_<action>_cli``; a new action (``answers read``) is one
more ``add_action`` in :func:`register`. The logic is :mod:`medscope.answers.audit`.
"""

from __future__ import annotations

import json
import sys

from pydantic import Field as F

from medscope.answers import audit as aud
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.io import layout, records, safe_text, storage
from pipelines.support.flags import add_config_flags, config_from_args


class AnswersReadConfig(StrictModel):
    """``medscope answers read``: how each reply is read (decision, rule, the text that decided)."""

    protocol: str | None = F(None, description="counterfactual or organ_presence (with --replies; an eval run "
                                               "says its own)")
    replies: str | None = F(None, description="JSON lines, one reply a line: reply, and question / finding "
                                              "(or organ) / question_kind where they differ per line")
    question: str | None = F(None, description="the question asked, for lines that do not say")
    finding: str | None = F(None, description="the asked finding or organ, for lines that do not say")
    episodes: str | None = F(None, description="an eval run folder (or its episodes table) instead of --replies")
    items: str | None = F(None, description="the run's item table (default: the one its sweep.json records)")
    out: str | None = F(None, description="JSON lines of readings (default: readings.jsonl beside --replies, or "
                                          "answers_readings.jsonl in the eval run folder)")


class AnswersAuditConfig(StrictModel):
    """``medscope answers audit``: a blinded, stratified sample of one run's replies and its labelling page."""

    episodes: str = F(description="an eval run folder (or its episodes table)")
    sample: int = F(100, ge=1, description="replies to draw: every model x condition and every decision the "
                                           "reader made first, the rest in proportion")
    out: str | None = F(None, description="audit folder (default: answers_audit/ in the eval run folder, where the "
                                          "report looks)")
    seed: int = F(0, description="seed of the draw and of the sample ids")
    items: str | None = F(None, description="the run's item table (default: the one its sweep.json records)")


class AnswersAgreementConfig(StrictModel):
    """``medscope answers agreement``: the labelled replies re-read by the reader as it is now."""

    labels: str = F(description="labels.json saved from the audit's label.html")
    episodes: str = F(description="the eval run the sample was drawn from (its replies must be unchanged)")
    out: str | None = F(None, description="agreement JSON (default: agreement.json in the audit folder)")


def run_protocol(episodes_uri: str) -> tuple[str, str]:
    """The protocol of an eval run's episodes: (its name, its spec).

    Parameters
    ----------
    episodes_uri : str
        The episodes table.

    Returns
    -------
    (str, str)
        The protocol's name (``counterfactual``, ``organ_presence``, ...) and the spec its
        ``sweep.json`` records (a ``module:Class`` for one outside the package).

    Raises
    ------
    MedScopeError
        As :func:`pipelines.score.protocol_of`.
    """
    from medscope import protocols
    from pipelines.score import protocol_of

    spec = protocol_of(episodes_uri)
    return getattr(protocols.protocol_class(spec), "name", spec), spec


def item_texts(episodes_uri: str, spec: str, items_uri: str | None = None, ids=None) -> dict[str, dict]:
    """What each item asked: its question, the asked finding (or organ) and the question's kind.

    Parameters
    ----------
    episodes_uri : str
        The eval run's episodes table (its sweep.json names the items and the protocol's options).
    spec : str
        The protocol's spec.
    items_uri : str, optional
        The item table; default the one the eval run's sweep.json records.
    ids : collection of str, optional
        Only these items.

    Returns
    -------
    dict of str to dict
        By ``item_id``: ``question``, ``finding`` and ``question_kind`` (None when the items do not say).

    Raises
    ------
    MedScopeError
        When no item table is given or recorded.
    """
    from medscope import protocols
    from pipelines.score import eval_run_record, items_of

    record = eval_run_record(episodes_uri)
    proto = protocols.load(spec, record.get("protocol_options") or {})
    out = {}
    for item in proto.load_items(items_uri or items_of(episodes_uri), ids, images=False):
        out[item.item_id] = {"question": item.question,
                             "finding": str(item.meta.get("finding") or item.meta.get("organ") or ""),
                             "question_kind": item.meta.get("question_kind")}
    return out


def audit(cfg: AnswersAuditConfig, overwrite: bool = False) -> dict:
    """Read every reply of the run, draw the stratified sample and write the audit folder.

    Parameters
    ----------
    cfg : AnswersAuditConfig
        ``episodes``, ``sample``, ``out`` (None: the eval run's ``answers_audit/``), ``seed`` and ``items``.
    overwrite : bool, optional
        Replace another sample already in the audit folder.

    Returns
    -------
    dict
        The audit's manifest (:func:`medscope.answers.audit.write_audit`) with ``out`` added.

    Raises
    ------
    MedScopeError
        When the run is not of a protocol the check reads, holds no reply, or the folder holds
        another sample.
    """
    episodes = layout.require("episodes", cfg.episodes)
    name, spec = run_protocol(episodes)
    aud._choices_of(name)  # a run of another protocol is refused before its items are read
    eps = records.read_table("episodes", episodes, columns=["model", "condition", "item_id", "raw_text",
                                                             "error"]).to_pylist()
    items = item_texts(episodes, spec, cfg.items, sorted({e["item_id"] for e in eps}))
    rows, counts = aud.reply_rows(eps, items, name)
    if not rows:
        raise MedScopeError(f"{cfg.episodes}: no replies to sample ({counts['episodes']} episodes, {counts['errored']} "
                            f"without a reply, {counts['no_item']} whose item is not in the item table)")
    out = cfg.out or layout.EvalRun(layout.folder_of("episodes", episodes)).answers_audit
    manifest = aud.write_audit(rows, out, n=cfg.sample, seed=cfg.seed, protocol=name, episodes=episodes,
                               counts=counts, overwrite=overwrite)
    return {**manifest, "out": out}


def agreement(cfg: AnswersAgreementConfig) -> dict:
    """Re-read the labelled replies, compare them with the labels, write and return the result.

    Parameters
    ----------
    cfg : AnswersAgreementConfig
        ``labels``, ``episodes`` and ``out`` (None: ``agreement.json`` beside the sample file).

    Returns
    -------
    dict
        :func:`medscope.answers.audit.agreement`'s result with ``labels``, ``sample_file``,
        ``episodes`` and ``out`` added; the same is written to ``out``.

    Raises
    ------
    MedScopeError
        When the labels name sample ids not in the sample, or unknown decisions; when the labels
        were saved from another sample (its hash); or when a sampled reply is no longer in the
        run as it was.
    """
    data = aud.read_labels(cfg.labels)
    sample_file = aud.sample_file_of(cfg.labels, data)
    sample = aud.read_sample(sample_file)
    if data.get("sample_hash") and data["sample_hash"] != aud.sample_hash(sample):
        raise MedScopeError(f"{cfg.labels}: saved from another sample than {sample_file} (sample hash differs); "
                            "label this sample's page (label.html)")
    episodes = layout.require("episodes", cfg.episodes)
    _same_replies(sample, episodes)
    result = aud.agreement(sample, data["labels"])
    out = cfg.out or storage.join(sample_file.rsplit("/", 1)[0], layout.AnswersAudit.AGREEMENT)
    result = {**result, "labels": cfg.labels, "sample_file": sample_file, "episodes": episodes,
              "labeller": data.get("labeller") or None, "line": aud.check_line(result)}
    storage.write_text(out, json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return {**result, "out": out}


def _same_replies(sample: list[dict], episodes: str) -> None:
    """Every sampled reply is still in the run, word for word (else the labels are about another run)."""
    want = {(r["model"], r["condition"], r["item_id"]): r for r in sample}
    have = {}
    for ep in records.read_table("episodes", episodes, columns=["model", "condition", "item_id", "raw_text"]).to_pylist():
        key = (ep["model"], ep["condition"], ep["item_id"])
        if key in want:
            have[key] = ep["raw_text"]
    gone = [k for k in want if k not in have]
    changed = [k for k in want if k in have and have[k] != want[k]["reply"]]
    if gone or changed:
        k = (gone or changed)[0]
        raise MedScopeError(f"{episodes}: {len(gone)} sampled replies are not in this run and {len(changed)} differ "
                            f"(e.g. {k[0]} / {k[1]} / {k[2]}): the sample was drawn from another run; give the "
                            "--episodes it was drawn from, or audit this run again")


def read(cfg: AnswersReadConfig) -> tuple[list[dict], str]:
    """Read every reply of ``--replies`` (or of an eval run) as its protocol reads it.

    Parameters
    ----------
    cfg : AnswersReadConfig
        ``replies`` with ``protocol`` (and ``question`` / ``finding`` for lines that do not say), or
        ``episodes`` (and ``items``); ``out``.

    Returns
    -------
    rows : list of dict
        One per reply: its id (line number or model / condition / item), question, finding, reply and
        ``decision``, ``rule``, ``evidence``.
    out : str
        Where the rows were written (JSON lines).

    Raises
    ------
    MedScopeError
        When neither or both of ``replies`` and ``episodes`` are given, the protocol is not one the
        reader reads, or a line has no reply, question or finding.

    References
    ----------
    .. [1] Counterfactual paper, §3.1, §3.10; organ-presence paper, Methods.
    """
    from medscope.answers.decisions import READABLE_PROTOCOLS, read_reply_decision

    if bool(cfg.replies) == bool(cfg.episodes):
        raise MedScopeError("give --replies R.jsonl (with --protocol) or --episodes E (an eval run), one of them")
    if cfg.episodes:
        episodes = layout.require("episodes", cfg.episodes)
        name, spec = run_protocol(episodes)
        aud._choices_of(name)
        eps = records.read_table("episodes", episodes,
                                 columns=["model", "condition", "item_id", "raw_text", "error"]).to_pylist()
        items = item_texts(episodes, spec, cfg.items, sorted({e["item_id"] for e in eps}))
        got, _ = aud.reply_rows(eps, items, name)
        rows = [{"id": f"{r['model']}/{r['condition']}/{r['item_id']}", "question": r["question"],
                 "finding": r["finding"], "reply": r["reply"], **r["reading"]} for r in got]
        out = cfg.out or storage.join(layout.folder_of("episodes", episodes), "answers_readings.jsonl")
    else:
        if cfg.protocol not in READABLE_PROTOCOLS:
            raise MedScopeError(f"--protocol must be one of {', '.join(READABLE_PROTOCOLS)} with --replies, "
                                f"not {cfg.protocol!r}")
        rows = []
        for i, line in enumerate(safe_text.read_text(cfg.replies).split("\n"), 1):
            if not line.strip():
                continue
            obj = safe_text.loads_json(line, f"{cfg.replies}:{i}")  # names the file and line, depth bounded
            obj = obj if isinstance(obj, dict) else {"reply": obj}
            question = obj.get("question") or cfg.question
            finding = obj.get("finding") or obj.get("organ") or cfg.finding
            if not isinstance(obj.get("reply"), str) or not question or not finding:
                raise MedScopeError(f"{cfg.replies}:{i}: needs a reply, a question and a finding (on the line, or "
                                    "--question / --finding)")
            r = read_reply_decision(cfg.protocol, obj["reply"], question, finding, obj.get("question_kind"))
            rows.append({"id": obj.get("id", i), "question": question, "finding": finding, "reply": obj["reply"],
                         "decision": r.decision, "rule": r.rule, "evidence": r.evidence})
        if not rows:  # an empty readings file would say "read" of nothing (issue 51)
            raise MedScopeError(f"{cfg.replies}: no replies to read (the file holds no line with a reply)")
        base = cfg.replies.rsplit("/", 1)[0] if "/" in cfg.replies else "."
        out = cfg.out or storage.join(base, "readings.jsonl")
    storage.write_text(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return rows, out


def _read_cli(cfg: AnswersReadConfig, args) -> str:
    from collections import Counter

    rows, out = read(cfg)
    counts = Counter(r["decision"] for r in rows)
    print(f"answers read: {len(rows)} replies: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for r in rows:
        if r["decision"] == "unclear":
            print(f"  unclear {r['id']}: {r['evidence']} | {' '.join(r['reply'].split())[:120]}")
    print(f"  each reading (decision, rule, the text that decided) in {out}", file=sys.stderr)
    return out


def _audit_cli(cfg: AnswersAuditConfig, args) -> str:
    summary = audit(cfg, overwrite=bool(getattr(args, "overwrite", False)))
    drawn = ", ".join(f"{k} {v}" for k, v in summary["reading_at_audit"].items())
    print(f"answers audit: {summary['drawn']} of {summary['replies_in_run']} replies ({summary['protocol']}; "
          f"{len({(s['model'], s['condition']) for s in summary['strata']})} model x condition cells, "
          f"{len(summary['strata'])} strata; read as {drawn})", file=sys.stderr)
    print(f"  label the page {layout.AnswersAudit(summary['out']).page}, save labels.json, then run\n"
          f"  medscope answers agreement --labels labels.json --episodes {cfg.episodes}", file=sys.stderr)
    return summary["out"]


def _agreement_cli(cfg: AnswersAgreementConfig, args) -> str:
    result = agreement(cfg)
    print(aud.agreement_table(result))
    print(result["line"], file=sys.stderr)
    return result["out"]


def _add(actions, name: str, model, run, help: str) -> None:
    """One action: flags from ``model``; ``run(config, args)`` returns where it wrote, so the
    command line says so (and marks a folder) also when ``--out`` took its default."""
    p = actions.add_parser(name, help=help, description=model.__doc__)
    add_config_flags(p, model)

    def go(args):
        args.out = run(config_from_args(args, source=f"medscope answers {name}"), args)

    p.set_defaults(func=go)


def register(sub) -> None:
    """Add the ``answers`` verb and its actions (``read``, ``audit``, ``agreement``).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``answers`` is added to them, its actions to its own.
    """
    p = sub.add_parser("answers", help="how replies are read: audit a sample of a run's replies, agreement "
                                       "with a careful labeller")
    actions = p.add_subparsers(dest="answers_action", metavar="ACTION")
    actions.required = True
    _add(actions, "read", AnswersReadConfig, _read_cli,
         "how each reply is read: decision, the rule and the text that decided (or why it is unclear)")
    _add(actions, "audit", AnswersAuditConfig, _audit_cli,
         "a blinded, stratified sample of a run's replies and its labelling page")
    _add(actions, "agreement", AnswersAgreementConfig, _agreement_cli,
         "agreement, Cohen's kappa and flips of the reader against the labels, per model")
