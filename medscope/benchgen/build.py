"""One study's share of a benchmark build: its montages and its questions (benchmark-MCQ paper Methods).

Pure functions on one study (report + sequence URIs), so ``pipelines/benchgen.py`` can shard
a build on Ray Data one study per task and every result depends only on the study and the
build's seed, never on worker order.
"""

from __future__ import annotations

from collections import Counter

from medscope.io import layout, records
from medscope.errors import MedScopeError
from medscope.benchgen.cohort import read_sequence, sequence_montage
from medscope.benchgen.questions import REPORT_PROMPT, report_questions, schema_questions
from medscope.benchgen.schema import Schema
from medscope.protocols.benchmark_mcq.builds import build_cohorts
from medscope.images import encode_png
from medscope.seeding import stable_hash
from medscope.volumes.nifti import VolumeError


def render_study(study: dict, schema: Schema, grid: int = 12, max_side: int = 1536, cohort: str | None = None
                 ) -> tuple[list[dict], list[dict]]:
    """(montages rows, rejects) of every schema sequence the study has; montages carry their
    cohort, so cohorts sharing case ids in one build never show each other's images.

    Parameters
    ----------
    study : dict
        One paired study: ``case_id`` and ``sequences`` (``{sequence: volume URI}``).
    schema : Schema
        The cohort schema; ``schema.sequences`` says how each sequence is rendered.
    grid : int, optional
        Montage grid side: ``grid**2`` axial slices tiled ``grid`` x ``grid``.
    max_side : int, optional
        Longest side of a montage, in pixels.
    cohort : str or None, optional
        The cohort name each montage row carries.

    Returns
    -------
    rows : list of dict
        One ``montages`` row per readable sequence: ``case_id``, ``cohort``, ``sequence``, ``image``
        (PNG bytes), ``height``, ``width`` and ``slices`` (the volume's axial slice count).
    rejects : list of dict
        One rejects row (stage ``render``) per sequence whose volume could not be read.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    rows, rejects = [], []
    for seq, uri in sorted(study["sequences"].items()):
        try:
            vol = read_sequence(uri)
            img = sequence_montage(vol, schema.sequences[seq], grid=grid, max_side=max_side)
        except VolumeError as err:
            rejects.append(records.reject_row("montages", uri, study["case_id"], "render", err.reason, err.detail))
            continue
        rows.append({"case_id": study["case_id"], "cohort": cohort, "sequence": seq, "image": encode_png(img),
                     "height": int(img.shape[0]), "width": int(img.shape[1]), "slices": int(vol.shape[2])})
    return rows, rejects


def study_questions(study: dict, schema: Schema, fields: dict[str, tuple[str, str]], pools: dict[str, Counter],
                    generated: str | None, rendered: set[str], cohort: dict, seed: int = 42,
                    verdicts: dict | None = None) -> tuple[list[dict], list[dict]]:
    """(mcq_items rows, rejects) of one study: RADS-style from ``fields``, report-derived from the
    generator's reply ``generated`` (None: that path was not run). A question whose required
    sequences were not all rendered is rejected, never shown with a missing image.

    Parameters
    ----------
    study : dict
        One paired study: ``case_id``, ``findings`` and ``impression``.
    schema : Schema
        The cohort schema (fields, templates and ``report_sequences``).
    fields : dict of str to tuple of (str, str)
        The study's extracted ``{field: (value, evidence sentence)}``.
    pools : dict of str to collections.Counter
        Dataset-wide distractor pools (:func:`medscope.benchgen.questions.value_pools`).
    generated : str or None
        The generator's reply for the study; None when report-derived questions were not written.
    rendered : set of str
        The sequences of the study whose montages were rendered.
    cohort : dict
        The cohort: ``name``, ``private`` and optionally ``imaging_source``, ``matched_group`` and
        ``endpoint_allowlist``.
    seed : int, optional
        The build's seed (distractors and option order).
    verdicts : dict or None, optional
        ``{verification key: (supported, reason)}`` of the verifier model (``verify: llm``); None: the
        rules alone decide.

    Returns
    -------
    rows : list of dict
        The study's ``mcq_items`` rows; ``item_id`` is ``<case>/<qtype>/<hash>`` and ``answer`` a letter.
    rejects : list of dict
        Rejects rows of dropped generated questions (stage ``generate``) and of duplicate questions or
        questions missing a required montage (stage ``assemble``).

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    case = study["case_id"]
    qs = schema_questions(schema, case, fields, pools, seed)
    rejects: list[dict] = []
    if generated is not None:
        kept, dropped = report_questions(case, generated, study["findings"], study["impression"], seed, verdicts)
        qs += kept
        rejects += [records.reject_row("mcq_items", cohort["name"], qid, "generate", why, *detail)
                    for qid, why, *detail in dropped]
    default = [s for s in schema.report_sequences if s in rendered] or sorted(rendered)
    rows, seen = [], set()
    for q in qs:
        seqs = q["sequences"] or (default if q["qtype"] == "report" else sorted(rendered))
        missing = [s for s in seqs if s not in rendered]
        key = q["field"] or q["question"]
        item_id = f"{case}/{q['qtype']}/{stable_hash(cohort['name'], case, q['qtype'], key, length=10)}"
        if item_id in seen:
            rejects.append(records.reject_row("mcq_items", cohort["name"], item_id, "assemble", "duplicate_question"))
            continue
        seen.add(item_id)
        if missing or not seqs:
            rejects.append(records.reject_row("mcq_items", cohort["name"], item_id, "assemble", "missing_sequence",
                                          f"needs {missing or 'a sequence'}"))
            continue
        rows.append({"item_id": item_id, "case_id": case, "cohort": cohort["name"], "qtype": q["qtype"],
                     "field": q["field"] or None, "subcategory": q["subcategory"], "level": q["level"] or None,
                     "question": q["question"], "options": q["options"], "answer": q["answer"], "k": q["k"],
                     "sequences": list(seqs), "evidence": q["evidence"] or None,
                     "imaging_source": cohort.get("imaging_source", "private"),
                     "matched_group": cohort.get("matched_group"), "private": bool(cohort["private"]),
                     "endpoint_allowlist": list(cohort.get("endpoint_allowlist") or [])})
    return rows, rejects


def cohort_prefix(cohort: str) -> str:
    """The part-key prefix of a cohort's parts: one build folder holds several cohorts, and a
    rebuild of one touches only its own parts.

    Parameters
    ----------
    cohort : str
        The cohort name.

    Returns
    -------
    str
        An 8-character hash of the cohort name followed by ``"--"``.
    """
    return stable_hash("cohort", cohort, length=8) + "--"


def check_append(cfg) -> None:
    """A build folder holding other cohorts takes a new one only with ``--append``:
    without it, building there is refused, so no cohort's items are ever deleted by another's build.
    Kept local to benchgen; the generic ``--out`` guard of the job plumbing is separate.

    Parameters
    ----------
    cfg : BuildConfig
        The build's configuration; reads ``out``, ``cohort`` and ``append``.

    Raises
    ------
    MedScopeError
        When ``cfg.out`` already holds another cohort (or parts of another build) and ``cfg.append``
        is not set.
    """
    others = sorted(set(build_cohorts(cfg.out)) - {cfg.cohort})
    items = layout.BenchgenBuild(cfg.out).items
    foreign = [k for k in records.part_keys(items) if not k.startswith(cohort_prefix(cfg.cohort))] if not others else []
    if (others or foreign) and not cfg.append:
        held = ", ".join(others) if others else f"{len(foreign)} part(s) of another build"
        raise MedScopeError(
            f"{cfg.out} already holds cohort(s) {held}; add cohort {cfg.cohort!r} to it with --append "
            "(each cohort keeps its own items, montages and rejects), or build into another --out")


def generation_record(cfg, entry, hashes: dict) -> dict:
    """What makes two cohorts' questions generated identically (benchmark-MCQ paper Table 3): the approved
    schema and wording, the extractor, the question writer, the prompt, the seed and the montage
    geometry. Recorded per cohort in build.json; Table 3 compares these, never a flag.

    Parameters
    ----------
    cfg : BuildConfig
        The build's configuration; reads ``extractor``, ``report_questions``, ``seed``, ``grid`` and
        ``max_side``.
    entry : ModelEntry or None
        The generator's model entry; None when no generator is used.
    hashes : dict of str to str
        The approved checkpoint hashes, ``schema`` and ``templates``.

    Returns
    -------
    dict
        ``schema_sha256``, ``templates_sha256``, ``extractor``, ``report_questions``, ``generator``
        (``{kind, model}`` or None), ``report_prompt_sha256``, ``seed``, ``grid`` and ``max_side``.

    References
    ----------
    .. [1] benchmark-MCQ paper, Table 3.
    """
    return {"schema_sha256": hashes["schema"], "templates_sha256": hashes["templates"],
            "extractor": cfg.extractor, "report_questions": cfg.report_questions,
            "generator": None if entry is None else {"kind": entry.kind, "model": entry.model},
            "report_prompt_sha256": stable_hash(REPORT_PROMPT, length=16), "seed": cfg.seed,
            "grid": cfg.grid, "max_side": cfg.max_side}
