"""The counterfactual views as an lmms-eval task folder (``medscope export lmms-eval``, docs/interop.md).

The folder holds lmms-eval's own task format: ``<task>.yaml`` (dataset, split, output type, the
hooks, the metric list) and ``utils.py`` (thin functions calling :mod:`medscope.interop.lmms_hooks`
with the task's settings), beside the items: ``views.parquet`` (the views the task evaluates, in
MedScope's schema: what the aggregation scores against and ``eval import`` reads) and
``dataset/`` (the same rows as a Hugging Face dataset, ``load_from_disk``). Run it with
``lmms-eval --tasks <task> --include_path <folder>``.

The items are those ``medscope eval run`` evaluates under the same protocol options (the passed
evaluation views of the test set's splits); the condition is ``plain`` (one reply, no tools), the
one an outside harness can run.
"""

from __future__ import annotations

import json
import os
import re

import pyarrow as pa

from medscope.errors import MedScopeError
from medscope.io import records, storage
from medscope.interop import hf_export, lmms_hooks

VIEWS_FILE = "views.parquet"
DATASET_DIR = "dataset"
TASK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
MAX_NEW_TOKENS = 1024  # addition: lmms-eval needs a cap; MedScope's decoding sets its own per model


def task_yaml(task: str, dataset_path: str) -> str:
    """The task's YAML in lmms-eval's format.

    Parameters
    ----------
    task : str
        The task's name.
    dataset_path : str
        The absolute path of the task's dataset folder (lmms-eval loads it with ``load_from_disk``).

    Returns
    -------
    str
        The YAML text; ``!function utils.X`` names the hooks.
    """
    metrics = "\n".join(f"  - metric: {m}\n    aggregation: !function utils.aggregate_{m}\n"
                        f"    higher_is_better: {'false' if m.endswith('_claims') else 'true'}"
                        for m in lmms_hooks.HEADLINE)
    return f"""# Written by `medscope export lmms-eval` (docs/interop.md): MedScope's counterfactual views, plain condition.
# Metrics are computed by MedScope's own scoring (utils.py -> medscope.interop.lmms_hooks).
dataset_path: {json.dumps(dataset_path)}
dataset_kwargs:
  load_from_disk: true
task: {task}
test_split: test
output_type: generate_until
doc_to_visual: !function utils.doc_to_visual
doc_to_text: !function utils.doc_to_text
doc_to_messages: !function utils.doc_to_messages
doc_to_target: view_id
process_results: !function utils.process_results
generation_kwargs:
  max_new_tokens: {MAX_NEW_TOKENS}
  temperature: 0
  do_sample: false
metric_list:
{metrics}
metadata:
  version: 1.0
"""


def utils_py(settings: dict) -> str:
    """The task's ``utils.py``: the hooks with the task's settings.

    Parameters
    ----------
    settings : dict
        The task's settings (JSON values); ``task_dir`` is filled in at import from the file's folder.

    Returns
    -------
    str
        Python source.
    """
    aggregations = "\n\n".join(
        f"def aggregate_{m}(results):\n    return _hooks.aggregate({m!r}, results, SETTINGS)" for m in lmms_hooks.HEADLINE)
    return f'''"""lmms-eval hooks of a MedScope task (written by `medscope export lmms-eval`; docs/interop.md).

Each calls medscope.interop.lmms_hooks, MedScope's own prompt building, reply reading and scoring.
"""

import json
import os

from medscope.interop import lmms_hooks as _hooks

SETTINGS = json.loads({json.dumps(json.dumps(settings, sort_keys=True))})
SETTINGS["task_dir"] = os.path.dirname(os.path.abspath(__file__))


def doc_to_visual(doc):
    return _hooks.doc_to_visual(doc, SETTINGS)


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return _hooks.doc_to_text(doc, SETTINGS)


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    return _hooks.doc_to_messages(doc, SETTINGS)


def process_results(doc, results):
    return _hooks.process_results(doc, results, SETTINGS)


{aggregations}
'''


def export_lmms_eval(items: str, out: str, task: str = "medscope_counterfactual", protocol_options: dict | None = None,
                     cost_matrix: str | None = None, allow_private: bool = False) -> dict:
    """Write the counterfactual views as an lmms-eval task folder.

    Parameters
    ----------
    items : str
        A views table, or the build folder holding it.
    out : str
        A local folder: the task's YAML, ``utils.py``, ``views.parquet`` and ``dataset/``.
    task : str, optional
        The task's name (letters, digits, underscores).
    protocol_options : dict, optional
        The counterfactual protocol's eval options choosing the views and the episode (``test_set``,
        ``splits``, ``tools``, ``resize_long_side``, ``templates``); None for its defaults.
    cost_matrix : str, optional
        The cost matrix the aggregation scores under (default: the protocol's, ``table2``).
    allow_private : bool, optional
        Include private views (the user says they may leave).

    Returns
    -------
    dict
        ``task``, ``out``, ``yaml``, ``items`` (views in the task), ``test_set``.

    Raises
    ------
    MedScopeError
        When the task name is not a word, ``out`` is not local, the items are not views, no view is an
        evaluation view, or some are private and ``allow_private`` is not given.

    References
    ----------
    .. [1] counterfactual paper, §3.1 (plain prompt), §3.4 (rewards), §3.8 (metrics), Appendix A (prompts).
    """
    from medscope import protocols
    from medscope.protocols.base import parse_options
    from medscope.protocols.counterfactual import costs
    from medscope.protocols.counterfactual.protocol import CounterfactualProtocol

    if not TASK_NAME.match(task):
        raise MedScopeError(f"export lmms-eval: --task {task!r} must be a word (letters, digits, _), starting with a letter")
    local = storage.local_path(out)
    if local is None:
        raise MedScopeError(f"export lmms-eval: --out must be a local folder (got {out})")
    kind, table_uri = hf_export.detect_items(items)
    if kind.table != "views":
        raise MedScopeError(f"export lmms-eval: {items} holds {kind.table}; the lmms-eval task is the "
                            "counterfactual protocol's (a views table)")
    options = parse_options(protocols.options_class(CounterfactualProtocol), protocol_options or {}, "counterfactual",
                            verbs=("eval",), given_at="export lmms-eval")
    protocol = CounterfactualProtocol(options)
    chosen = {i.item_id: i for i in protocol.load_items(table_uri, images=False)}
    if not chosen:
        raise MedScopeError(f"export lmms-eval: no evaluation view of test set {options.test_set!r} in {items}")
    private = sum(1 for i in chosen.values() if i.private)
    if private and not allow_private:
        raise MedScopeError(f"export lmms-eval: {private} of {len(chosen)} views are private (their items table says "
                            "so); pass --allow-private if they may leave")
    views = records.read_table("views", table_uri)
    keep = pa.array([v in chosen for v in views.column("view_id").to_pylist()])
    views = views.filter(keep)
    os.makedirs(local, exist_ok=True)
    records.write_table("views", views, os.path.join(local, VIEWS_FILE))
    # lmms-eval reads one split: every view of the task, whatever its MedScope split, is in "test"
    dataset = hf_export.to_dataset_dict(views.drop_columns(["edit_mask"]), by_split=False)
    dataset_dir = os.path.join(os.path.abspath(local), DATASET_DIR)
    dataset.save_to_disk(dataset_dir)
    costs.load(cost_matrix or costs.DEFAULT)  # an unknown matrix: said now, not at lmms-eval's aggregation
    settings = {"views": VIEWS_FILE, "test_set": options.test_set, "protocol_options": options.values_at("eval"),
                "resize_long_side": options.resize_long_side, "templates": options.templates,
                "cost_matrix": cost_matrix or costs.DEFAULT}
    yaml_path = os.path.join(local, f"{task}.yaml")
    storage.write_text(yaml_path, task_yaml(task, dataset_dir))
    storage.write_text(os.path.join(local, "utils.py"), utils_py(settings))
    return {"task": task, "out": out, "yaml": yaml_path, "items": views.num_rows, "test_set": options.test_set}
