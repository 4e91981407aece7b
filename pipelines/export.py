"""``medscope export hf`` and ``medscope export lmms-eval``: a benchmark that travels (docs/interop.md).

``hf``: a protocol's items table as a Hugging Face dataset with its card (medscope.interop.hf_export).
``lmms-eval``: the counterfactual views as an lmms-eval task folder whose hooks call MedScope's own
prompt building, reply reading and scoring (medscope.interop.lmms_task). Private items leave only
with ``--allow-private``.
"""

from __future__ import annotations

import pydantic

from medscope.config import StrictModel
from pipelines.support.flags import add_action
from pipelines.support.jobs import print_summary


class ExportHfConfig(StrictModel):
    """``medscope export hf``: an items table (views, probe items, MCQ items, VQA items, a pair set) as a Hugging Face
    dataset (``datasets.load_from_disk(OUT)``, ready for ``push_to_hub``) with its dataset card."""

    items: str = pydantic.Field(description="the items table (views, probe_items, mcq_items, vqa_items) or its build "
                                "folder, or a paired-modality pair set (manifest.yaml or its folder)")
    out: str = pydantic.Field(description="local folder written: the dataset and README.md (its card)")
    license: str = pydantic.Field(description="the card's licence field, e.g. cc-by-4.0 or other (yours to choose)")
    allow_private: bool = pydantic.Field(False, description="export private items too (they may leave)")
    skip_private: bool = pydantic.Field(False, description="leave private items out (counted in the card)")


class ExportLmmsConfig(StrictModel):
    """``medscope export lmms-eval``: the counterfactual views as an lmms-eval task folder (task YAML, utils.py
    and the items); run it with ``lmms-eval --tasks TASK --include_path OUT``."""

    items: str = pydantic.Field(description="the views table (or its build folder)")
    out: str = pydantic.Field(description="local task folder written")
    task: str = pydantic.Field("medscope_counterfactual", description="the task's name in lmms-eval")
    protocol_options: dict = pydantic.Field({}, description=(
        "the counterfactual protocol's eval options choosing the views and the episode (YAML mapping, e.g. "
        "{test_set: heldout_tools, resize_long_side: 768})"))
    cost_matrix: str | None = pydantic.Field(None, description="cost matrix of the aggregation (default table2)")
    allow_private: bool = pydantic.Field(False, description="include private views (they may leave)")


def _export_hf(cfg: ExportHfConfig) -> dict:
    from medscope.interop.hf_export import export_hf

    summary = export_hf(cfg.items, cfg.out, cfg.license, allow_private=cfg.allow_private, skip_private=cfg.skip_private)
    print_summary(summary)
    return summary


def _export_lmms(cfg: ExportLmmsConfig) -> dict:
    from medscope.interop.lmms_task import export_lmms_eval

    summary = export_lmms_eval(cfg.items, cfg.out, task=cfg.task, protocol_options=cfg.protocol_options,
                               cost_matrix=cfg.cost_matrix, allow_private=cfg.allow_private)
    print_summary(summary)
    return summary


def register(sub) -> None:
    """Add the ``export`` verb (``hf``, ``lmms-eval``) to the ``medscope`` command line.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The subcommand table of the ``medscope`` parser.
    """
    p = sub.add_parser("export", help="a benchmark that travels: a Hugging Face dataset, an lmms-eval task")
    actions = p.add_subparsers(dest="export_verb", metavar="ACTION")
    actions.required = True
    add_action(actions, "hf", ExportHfConfig, _export_hf, "an items table as a Hugging Face dataset with its card")
    add_action(actions, "lmms-eval", ExportLmmsConfig, _export_lmms,
               "the counterfactual views as an lmms-eval task folder (MedScope's reader and scoring inside)")
