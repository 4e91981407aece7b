"""The paired-modality paper's paired-modality evaluation as a protocol of the shared harness.

Items are photographs (two per condition: matched, mismatched); the sweep's conditions are the
settings: ``photo_only`` (the photograph alone) and ``paired`` (the photograph, then the
condition's radiograph). The three settings of the paper are then photo only (both photos),
matched photo + radiograph and mismatched photo + radiograph, and every photograph is seen in
both settings, so the comparison is paired (exact McNemar). One turn per episode, the prompt of
``data/prompts.yaml``; the reply's PHOTO FINDINGS section is kept as the episode's answer.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Collection
from functools import lru_cache
from importlib import resources

import pyarrow as pa
import yaml

from medscope.io import layout, records, safe_text, storage
from medscope.models.base import ChatModel, Decoding, Message, Part
from medscope.protocols import denominators as den
from medscope.protocols.base import EpisodeResult, Item
from medscope.protocols.paired_modality.options import PairedModalityOptions
from medscope.protocols.paired_modality import tables, scoring
from medscope.protocols.paired_modality.extraction import extract_photo_findings
from medscope.protocols.paired_modality.manifest import PairPhoto, read_manifest, vocabulary


@lru_cache(maxsize=1)
def prompts() -> dict:
    """The episode prompts, ``data/prompts.yaml`` of this package (read once).

    Returns
    -------
    dict
        ``version`` and the prompt of each setting, ``photo_only`` and ``paired``.

    References
    ----------
    .. [1] paired-modality paper, Appendix A.
    """
    return yaml.safe_load(resources.files(__package__).joinpath("data/prompts.yaml").read_text())


def episode_messages(item: Item, setting: str) -> list[Message]:
    """The one user turn of an episode: photograph (and radiograph when paired), then the prompt.

    Parameters
    ----------
    item : Item
        A photograph's item; its ``images`` are (photograph PNG, radiograph PNG).
    setting : str
        'photo_only' or 'paired' (the key of its prompt in :func:`prompts`).

    Returns
    -------
    list of Message
        One user message: the image(s), then the setting's prompt text.
    """
    images = item.images[:1] if setting == "photo_only" else item.images[:2]
    return [Message("user", (*(Part(png=p) for p in images), Part(text=prompts()[setting].strip())))]


def eval_run_models(episodes_uri: str) -> list[dict]:
    """The models (name, kind, model id) the eval run records in its sweep.json; [] when the
    episodes table stands alone.

    Parameters
    ----------
    episodes_uri : str
        The episodes table of an eval run, or the run's folder.

    Returns
    -------
    list of dict
        The ``models`` list of the run's sweep.json, as recorded; [] when there is none.
    """
    summary = layout.EvalRun(layout.folder_of("episodes", episodes_uri)).summary
    if not storage.exists(summary):
        return []
    return list(safe_text.read_json_object(summary).get("models") or [])


class PairedModalityProtocol:
    """EvalProtocol of the paired-modality paper (see the module docstring)."""

    name = "paired_modality"
    Options = PairedModalityOptions

    def __init__(self, options: PairedModalityOptions | None = None):
        self.options = options or PairedModalityOptions()
        self.max_side = self.options.max_side
        self.prompt_version = prompts()["version"]

    # -- items -----------------------------------------------------------------------------
    def photos(self, uri: str) -> tuple[list[PairPhoto], list[dict]]:
        return read_manifest(uri, self.max_side)

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        photos, rejects = read_manifest(uri, self.max_side, ids=ids, keep_images=images)
        if rejects:
            print(f"pairs manifest {uri}: {len(rejects)} rejected ("
                  + ", ".join(sorted({r['reason'] for r in rejects})) + "); good photographs kept",
                  file=sys.stderr)
        return [Item(item_id=p.item_id, case_id=p.condition, question=prompts()["paired"], truth=p.photo_type,
                     images=(p.photo_png, p.radiograph_png) if images else (), private=p.private,
                     endpoint_allowlist=p.endpoint_allowlist,
                     meta={"condition": p.condition, "photo_type": p.photo_type, "caption": p.caption,
                           "body_region": p.body_region})
                for p in photos]

    def conditions(self) -> tuple[str, ...]:
        return scoring.SETTINGS

    # -- one episode ---------------------------------------------------------------------------
    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        if condition not in scoring.SETTINGS:
            raise ValueError(f"unknown setting {condition!r}; known: {', '.join(scoring.SETTINGS)}")
        messages = episode_messages(item, condition)
        completion = model.complete(messages, decoding)
        ext = extract_photo_findings(completion.text, condition)
        refs = [f"{item.item_id}#photo"] + ([f"{item.case_id}#radiograph"] if condition == "paired" else [])
        return EpisodeResult(
            turns=[{"role": "user", "text": messages[0].joined_text, "image_ref": ",".join(refs)},
                   {"role": "assistant", "text": completion.text, "image_ref": None}],
            raw_text=completion.text,
            # an empty reply (a refusal) is its own outcome; the judge still sees it as no findings
            action="answer" if completion.text.strip() else "unparseable",
            answer=ext.text,
            parse_error=None if completion.text.strip() else "empty reply",
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
        )

    # -- scoring -----------------------------------------------------------------------------------
    def score(self, episodes_uri: str, items_uri: str, out: str) -> dict:
        """Extract, judge (cached), label, and write labels / metrics / McNemar / agreement / run.json
        under ``self.options``' score options (``PairedModalityOptions``)."""
        o = self.options
        episodes_uri = layout.table_uri("episodes", episodes_uri)  # an eval run folder, or its episodes
        photos, rejects = self.photos(items_uri)
        vocab = vocabulary(photos)
        judges = [scoring.make_judge(o.judge, vocab, o.judge_models)]
        if o.second_judge:
            judges.append(scoring.make_judge(o.second_judge, vocab, o.judge_models))
        table = records.read_table("episodes", episodes_uri)
        episodes = [e for e in table.to_pylist() if e["protocol"] == self.name]
        run_models = eval_run_models(episodes_uri)
        as_judge = scoring.judge_subjects(judges, run_models, [e["model"] for e in episodes])
        if as_judge:
            print(f"paired_modality: {', '.join(as_judge)} judged this run and was also evaluated; a judge is "
                  "never a subject, so its episodes are left out (evaluate subjects from a models file "
                  "without the judge: configs/models/pairs.yaml, judge in configs/models/pairs-judge.yaml)",
                  file=sys.stderr)
            episodes = [e for e in episodes if e["model"] not in as_judge]
        named = o.pooled_models
        pool, left_out = scoring.pooled_subjects(run_models, [e["model"] for e in episodes],
                                                 [j.name for j in judges], named)
        left_out.update({m: "the judge (never a subject)" for m in as_judge})
        print(f"paired_modality: pooled McNemar over {len(pool)} subject model(s): {', '.join(pool) or 'none'}"
              + (f"; left out: {', '.join(f'{m} ({why})' for m, why in sorted(left_out.items()))}" if left_out else ""),
              file=sys.stderr)
        cache = o.judge_cache or storage.join(out, tables.JUDGE_CACHE)
        known = {p.item_id for p in photos}
        episodes, duplicates = den.split_duplicates(episodes, lambda e: scoring.exclusion_rule(e, known) is None)
        labels, counts = scoring.label_episodes(episodes, {p.item_id: p for p in photos}, judges, cache,
                                                o.judge_workers)
        cov = scoring.coverage(photos, rejects, episodes, labels,
                               [k for k in den.eval_run_pairs(episodes_uri) if k[0] not in as_judge], duplicates)
        den.report(cov, scoring.EXCLUSION_RULES)
        alpha = o.alpha
        metrics = scoring.rate_rows(labels, alpha)
        tests = scoring.mcnemar_rows(labels, pool)
        kappa = scoring.agreement(labels)
        if labels:
            storage.write_bytes(storage.join(out, tables.LABELS), records.to_parquet_bytes(pa.Table.from_pylist(labels)))
        records.write_table("metrics", metrics, storage.join(out, tables.METRICS))
        if tests:
            storage.write_bytes(storage.join(out, tables.MCNEMAR), records.to_parquet_bytes(pa.Table.from_pylist(tests)))
        if kappa:
            storage.write_text(storage.join(out, tables.AGREEMENT), json.dumps(kappa, indent=2) + "\n")
        rejects = rejects + den.duplicate_rejects(duplicates, "labels") + den.missing_rejects(cov, "labels")
        if rejects:
            records.write_table("rejects", rejects, storage.join(out, tables.REJECTS))
        failed = sum(1 for r in labels if r["extraction_method"] == scoring.FAILED)
        unjudged = sum(1 for r in labels if r["fp"] is None) - failed
        cells = scoring.cell_counts(labels)
        if unjudged:  # a reply the judge could not label is no "no finding": it is in no rate
            print(f"paired_modality: the judge left {unjudged} of {len(labels) - failed} extracted replies unjudged ("
                  + "; ".join(f"{c['model']} {c['setting']} {c['photo_type']}: {c['unjudged']} of {c['episodes']}"
                              for c in cells if c["unjudged"])
                  + "); a failed request is asked again when scored again, an unreadable reply stays cached"
                  + ("" if o.allow_unjudged else
                                                  "; score exits 3 unless --allow-unjudged"), file=sys.stderr)
        run = {"protocol": self.name, "prompt_version": self.prompt_version, "episodes": episodes_uri,
               "items": items_uri, "judges": [j.identity() for j in judges],
               "judge_prompt_version": scoring.jd.judge_spec()["version"], "judge_cache": cache, "alpha": alpha,
               "counts": counts, "labelled": len(labels) - unjudged - failed, "unjudged": unjudged,
               "unjudged_allowed": o.allow_unjudged,
               "extraction_failed": failed, "unverified": sum(c["unverified"] for c in cells), "cells": cells,
               "manifest_rejects": len(rejects), "coverage": cov, "pooled_models": pool, "not_pooled": left_out,
               "scored_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        storage.write_text(storage.join(out, tables.RUN), json.dumps(run, indent=2, default=str) + "\n")
        return {"out": out, "labels": storage.join(out, tables.LABELS), "metrics": storage.join(out, tables.METRICS),
                "mcnemar": storage.join(out, tables.MCNEMAR), "labelled": len(labels) - unjudged - failed,
                "unjudged": unjudged, "unjudged_allowed": o.allow_unjudged,
                "unjudged_by_cell": {f"{c['model']}:{c['setting']}:{c['photo_type']}": c["unjudged"]
                                     for c in cells if c["unjudged"]},
                "extraction_failed": failed, "pooled_models": pool, "judge_requests": {k: v for k, v in counts.items() if k.startswith("judge")},
                "kappa_fp": kappa.get("fp", {}).get("kappa") if kappa else None, "coverage": den.summary(cov)}

    def report_sections(self, scored_run: str, work_dir: str) -> tuple[list, dict]:
        from medscope.protocols.paired_modality.report import sections
        from medscope.render.document import Section

        return [Section(title, blocks) for title, blocks in sections(scored_run)], {}
