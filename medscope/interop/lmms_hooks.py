"""What an exported lmms-eval task's ``utils.py`` calls (``medscope export lmms-eval``, docs/interop.md).

Each hook uses MedScope's own code, so the task cannot drift from ``medscope eval`` / ``score``:

- ``doc_to_messages`` / ``doc_to_visual`` / ``doc_to_text``: the messages of MedScope's ``plain``
  condition, built by the episode itself (``agent_episode.Episode``): the plain system prompt, then
  the view as the PNG MedScope sends (long side at most ``resize_long_side``) and the question;
- ``process_results``: the reply read by MedScope's reader (``agent_episode.replay``: the action
  format, a bare JSON action or the free-text rules), the same reading an eval run records;
- ``aggregate``: the episodes scored by ``rewards.score_episodes`` under the task's cost matrix and the
  metrics computed by ``view_metrics.compute`` (point values; lmms-eval reports no MedScope interval).

The task's settings (a dict written into its ``utils.py``) name the views table beside it, the
test set, the cost matrix and the episode settings.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping

from medscope.items import Item
from medscope.protocols.counterfactual.agent_episode import Episode, EpisodeSettings, replay

CONDITION = "plain"  # the one condition an outside harness can run: one reply, no tools
MODEL = "lmms-eval"  # the model's name inside an aggregation (lmms-eval does not pass it to tasks)
# the protocol's headline metrics (counterfactual paper §3.8), the task's metric_list in this order
HEADLINE = ("esg", "ccr", "erased_claims", "healthy_claims", "net_utility")
# what process_results keeps of the episode (the rest of an episodes row is bookkeeping)
READ_FIELDS = ("action", "answer", "claims_finding", "box", "confidence", "reading", "reading_rule", "reading_note")
_META = ("kind", "finding", "question_kind", "lesion_bbox", "width", "height", "critical", "imaging_type",
         "source", "split", "tool", "degradation", "lesion_area_frac")


def episode_settings(settings: Mapping) -> EpisodeSettings:
    """The episode settings an exported task was written with.

    Parameters
    ----------
    settings : mapping
        The task's settings: ``resize_long_side`` and ``templates`` (None: the shipped templates).

    Returns
    -------
    EpisodeSettings
        MedScope's settings of the plain episode.
    """
    return EpisodeSettings(resize_long_side=int(settings["resize_long_side"]), templates=settings.get("templates"))


def png_bytes(image) -> bytes:
    """A doc's image as PNG bytes: raw bytes, a ``datasets`` image dict, or a PIL image (saved losslessly).

    Parameters
    ----------
    image : bytes or dict or PIL.Image.Image
        The doc's ``image`` value as lmms-eval hands it over.

    Returns
    -------
    bytes
        PNG (or the stored encoded) bytes MedScope decodes.
    """
    if isinstance(image, (bytes, bytearray)):
        return bytes(image)
    if isinstance(image, Mapping) and image.get("bytes"):
        return bytes(image["bytes"])
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def item_of(doc: Mapping) -> Item:
    """The MedScope item of one doc (a row of the task's views).

    Parameters
    ----------
    doc : mapping
        A doc: the views table's columns, ``image`` as lmms-eval decoded it.

    Returns
    -------
    Item
        As ``CounterfactualProtocol.load_items`` builds it (id, case, question, truth, image, meta).
    """
    return Item(item_id=doc["view_id"], case_id=doc["case_id"], question=doc["question"], truth=doc["expected"],
                images=(png_bytes(doc["image"]),), meta={k: doc.get(k) for k in _META})


def plain_episode(doc: Mapping, settings: Mapping) -> Episode:
    """MedScope's plain-condition episode of a doc, before the model's reply.

    Parameters
    ----------
    doc : mapping
        A doc of the task.
    settings : mapping
        The task's settings.

    Returns
    -------
    Episode
        Its ``messages`` are what ``medscope eval`` sends: system prompt, then image and question.
    """
    return Episode(item_of(doc), CONDITION, episode_settings(settings))


def doc_to_messages(doc: Mapping, settings: Mapping) -> list[dict]:
    """The plain condition's messages in lmms-eval's chat format (PIL images).

    Parameters
    ----------
    doc : mapping
        A doc of the task.
    settings : mapping
        The task's settings.

    Returns
    -------
    list of dict
        ``{"role", "content": [{"type": "text", "text"} | {"type": "image", "url": PIL image}]}`` per message.
    """
    from PIL import Image

    out = []
    for message in plain_episode(doc, settings).messages:
        content = []
        for part in message.parts:
            if part.png is not None:
                content.append({"type": "image", "url": Image.open(io.BytesIO(part.png))})
            else:
                content.append({"type": "text", "text": part.text})
        out.append({"role": message.role, "content": content})
    return out


def doc_to_visual(doc: Mapping, settings: Mapping) -> list:
    """The image MedScope shows in the plain condition, as a PIL image.

    Parameters
    ----------
    doc : mapping
        A doc of the task.
    settings : mapping
        The task's settings.

    Returns
    -------
    list of PIL.Image.Image
        One image: the view resized as MedScope sends it.
    """
    return [c["url"] for m in doc_to_messages(doc, settings) for c in m["content"] if c["type"] == "image"]


def doc_to_text(doc: Mapping, settings: Mapping) -> str:
    """The user turn's text of the plain condition (the question; the system prompt is
    :func:`system_prompt`, sent as the system message by ``doc_to_messages``).

    Parameters
    ----------
    doc : mapping
        A doc of the task.
    settings : mapping
        The task's settings.

    Returns
    -------
    str
        The question as MedScope asks it: the view's own (only the ``paraphrase`` condition rewords it).
        lmms-eval calls this on docs without their images too, so it builds no episode.
    """
    return doc["question"]


_ITEMS: dict[str, dict] = {}


def task_items(settings: Mapping) -> dict:
    """The task's items as MedScope's protocol loads them from the views beside the task (cached).

    lmms-eval hands ``process_results`` its docs without their images; the reader's episode is built
    from these items instead, exactly as ``medscope eval`` builds it.

    Parameters
    ----------
    settings : mapping
        The task's settings: ``task_dir``, ``views`` and ``protocol_options`` (the counterfactual
        protocol's eval options the task was exported with).

    Returns
    -------
    dict of str to Item
        View id -> item (with its image).
    """
    from medscope.protocols.counterfactual.options import CounterfactualOptions
    from medscope.protocols.counterfactual.protocol import CounterfactualProtocol

    uri = os.path.join(settings["task_dir"], settings["views"])
    if uri not in _ITEMS:
        protocol = CounterfactualProtocol(CounterfactualOptions(**settings.get("protocol_options", {})))
        _ITEMS[uri] = {i.item_id: i for i in protocol.load_items(uri)}
    return _ITEMS[uri]


def read_reply(doc: Mapping, reply: str, settings: Mapping) -> dict:
    """One reply read by MedScope's reader, as the plain episode reads it.

    Parameters
    ----------
    doc : mapping
        A doc of the task (its ``view_id`` names the item).
    reply : str
        The model's reply.
    settings : mapping
        The task's settings.

    Returns
    -------
    dict
        ``item_id`` and the :data:`READ_FIELDS` of the episode's result (boxes in pixels).
    """
    item = task_items(settings)[doc["view_id"]]
    result = replay(item, CONDITION, [reply or ""], episode_settings(settings)).result
    return {"item_id": item.item_id, **{k: getattr(result, k) for k in READ_FIELDS}}


def process_results(doc: Mapping, results: list, settings: Mapping) -> dict:
    """lmms-eval's per-doc hook: the reading, under every headline metric's name.

    Parameters
    ----------
    doc : mapping
        A doc of the task.
    results : list
        lmms-eval's replies for the doc (the first is read).
    settings : mapping
        The task's settings.

    Returns
    -------
    dict
        Metric name -> the reading (:func:`read_reply`), for each of :data:`HEADLINE`.
    """
    reading = read_reply(doc, results[0] if results else "", settings)
    return {metric: reading for metric in HEADLINE}


def episode_rows(readings: list[Mapping], views, model: str = MODEL, run_id: str = "lmms-eval",
                 prompt_version: str = "") -> list[dict]:
    """Episodes-table rows of readings (one per doc) of the views.

    Parameters
    ----------
    readings : list of mapping
        :func:`read_reply`'s dicts.
    views : pyarrow.Table
        The views read (their ``case_id``).
    model : str, optional
        The model's name.
    run_id : str, optional
        The run id the rows carry.
    prompt_version : str, optional
        The prompt version the rows carry.

    Returns
    -------
    list of dict
        Rows of the ``episodes`` table, condition ``plain``, no tokens or cost.
    """
    case_of = dict(zip(views.column("view_id").to_pylist(), views.column("case_id").to_pylist()))
    return [{"run_id": run_id, "protocol": "counterfactual", "model": model, "condition": CONDITION,
             "item_id": r["item_id"], "case_id": case_of.get(r["item_id"], ""), "request_key": r["item_id"],
             "prompt_version": prompt_version, "decoding": "lmms-eval", "turns": None, "raw_text": None,
             **{k: r.get(k) for k in READ_FIELDS}, "tool_calls": 0, "input_tokens": 0, "output_tokens": 0,
             "cost_usd": 0.0, "latency_s": 0.0, "attempts": 1, "error": None} for r in readings]


_CACHE: dict[tuple, dict[str, float]] = {}


def headline_metrics(readings: list[Mapping], settings: Mapping) -> dict[str, float]:
    """The protocol's metrics of a task's readings, computed by MedScope's scoring.

    Parameters
    ----------
    readings : list of mapping
        :func:`read_reply`'s dicts, one per doc.
    settings : mapping
        The task's settings: ``views`` (the views table, relative to ``task_dir``), ``cost_matrix`` and
        ``test_set``.

    Returns
    -------
    dict of str to float
        Metric -> value over all views (breakdown ``all``); NaN where a metric has no views.

    References
    ----------
    .. [1] counterfactual paper, §3.4 (rewards), §3.8 (metrics).
    """
    from medscope.analysis import view_metrics
    from medscope.io import records
    from medscope.protocols.counterfactual import costs, rewards

    key = (settings["task_dir"], tuple((r["item_id"], r["action"], r["claims_finding"], str(r["box"]),
                                        r["confidence"]) for r in readings))
    if key not in _CACHE:
        views = records.read_table("views", os.path.join(settings["task_dir"], settings["views"]))
        episodes = records.to_table("episodes", episode_rows(readings, views))
        scores, _ = rewards.score_episodes(episodes, views, costs.load(settings["cost_matrix"]),
                                           test_set=settings["test_set"])
        table = view_metrics.compute(scores, n_boot=0, breakdowns=())
        _CACHE.clear()  # one task's readings at a time: lmms-eval aggregates each metric in turn
        _CACHE[key] = {m: v for m, b, v in zip(table.column("metric").to_pylist(), table.column("breakdown").to_pylist(),
                                                table.column("value").to_pylist()) if b == "all"}
    return _CACHE[key]


def aggregate(metric: str, readings: list[Mapping], settings: Mapping) -> float:
    """lmms-eval's aggregation of one headline metric.

    Parameters
    ----------
    metric : str
        One of :data:`HEADLINE`.
    readings : list of mapping
        The per-doc values ``process_results`` gave for it.
    settings : mapping
        The task's settings.

    Returns
    -------
    float
        The metric as ``medscope score`` computes it (NaN when it has no views).
    """
    return float(headline_metrics(readings, settings).get(metric, float("nan")))
