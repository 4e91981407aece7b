"""Cohort schemas of visually assessable findings and their two human checkpoints (benchmark-MCQ paper Methods).

A schema (YAML) names the cohort's sequences (how each is rendered), its fields (binary,
multi-value, or a measurement binned into categories, each with the deterministic patterns
that populate it from report text) and its question templates. Two checkpoints gate a build:

- **schema confirmation**: a clinician confirms the fields are visually answerable; recorded
  as the SHA-256 of the schema's content (sequences + fields);
- **template approval**: a clinician approves how questions are worded and offered (the
  templates and the report-derived generation prompt); recorded as the SHA-256 of those.

Both live in an approval file next to the schema (``<schema>.approval.json``); a build
refuses a schema whose current hashes are not the approved ones, and records both hashes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from importlib import resources
from typing import Literal

import pydantic

from medscope import config as cfgmod
from medscope.io import safe_text, storage
from medscope.config import StrictModel
from medscope.errors import MedScopeError

SHIPPED = {"liver": "liver_lirads.yaml", "lung": "lung_lungrads.yaml", "brain": "brain_rano.yaml"}
CHECKPOINTS = ("schema", "templates")


class SequenceSpec(StrictModel):
    # US volumes (3D ultrasound) have no calibrated units either: rendered by percentiles, as MR.
    # MG (mammography) is a projection: one image per view (a one-slice volume), shown whole, not
    # as a montage of slices; a breast institution's schema names its views (cc, mlo) this way.
    modality: Literal["CT", "MR", "US", "MG"]
    window: str | tuple[float, float] | None = None  # CT: preset name or (width, level)
    percentiles: tuple[float, float] = (1.0, 99.0)  # MR, US, MG: intensity scaling


class ValueSpec(StrictModel):
    value: str
    patterns: list[str]


class BinSpec(StrictModel):
    below: float | None  # upper bound in mm (exclusive); None: no upper bound
    value: str


class FieldSpec(StrictModel):
    name: str
    type: Literal["binary", "multi", "binned"]
    subcategory: str
    question: str
    sequences: list[str] | None = None  # required montages; default: every sequence of the schema the case has
    context: list[str] = []  # if given, only sentences matching one of these can settle the field
    yes_patterns: list[str] = []
    no_patterns: list[str] = []  # checked first: a negated mention is "no"
    values: list[ValueSpec] = []  # multi: first value whose pattern matches wins
    measure: str | None = None  # binned: regex with (number)(mm|cm)
    bins: list[BinSpec] = []

    @pydantic.model_validator(mode="after")
    def _complete(self) -> "FieldSpec":
        if self.type == "binary" and not (self.yes_patterns and self.no_patterns):
            raise ValueError(f"binary field {self.name} needs yes_patterns and no_patterns")
        if self.type == "multi" and len(self.values) < 2:
            raise ValueError(f"multi field {self.name} needs at least two values")
        if self.type == "binned" and (not self.measure or len(self.bins) < 2):
            raise ValueError(f"binned field {self.name} needs measure and at least two bins")
        return self

    def choices(self) -> list[str]:
        """Every answer this field can take, in schema order."""
        if self.type == "binary":
            return ["yes", "no"]
        if self.type == "multi":
            return [v.value for v in self.values]
        return [b.value for b in self.bins]


class Templates(StrictModel):
    binary_options: tuple[str, str] = ("Yes", "No")
    min_options: int = pydantic.Field(3, ge=2, le=5)
    max_options: int = pydantic.Field(4, ge=2, le=5)
    prompt_suffix: str = "Answer with the letter of one option."


class Schema(StrictModel):
    name: str
    organ: str
    framework: str = ""
    sequences: dict[str, SequenceSpec]
    report_sequences: list[str] = []
    fields: list[FieldSpec]
    templates: Templates = Templates()

    @pydantic.model_validator(mode="after")
    def _known_sequences(self) -> "Schema":
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError("field names must be unique")
        for f in self.fields:
            unknown = set(f.sequences or ()) - set(self.sequences)
            if unknown:
                raise ValueError(f"field {f.name} names unknown sequence(s) {sorted(unknown)}")
        return self


def shipped_path(name: str) -> str:
    """Filesystem path of a shipped schema (liver | lung | brain).

    Parameters
    ----------
    name : str
        ``liver``, ``lung`` or ``brain``.

    Returns
    -------
    str
        Path of the packaged YAML.

    Raises
    ------
    MedScopeError
        When ``name`` is not a shipped schema.
    """
    if name not in SHIPPED:
        raise MedScopeError(f"no shipped schema {name!r}; shipped: {', '.join(SHIPPED)}")
    return str(resources.files("medscope.benchgen.schemas").joinpath(SHIPPED[name]))


def resolve(spec: str) -> str:
    """A schema path or URI; a bare shipped name (``liver``) resolves to the packaged YAML.

    Parameters
    ----------
    spec : str
        A shipped schema's name, or a schema path or URI.

    Returns
    -------
    str
        The packaged YAML's path for a shipped name; ``spec`` unchanged otherwise.
    """
    return shipped_path(spec) if spec in SHIPPED else spec


def load_schema(spec: str) -> Schema:
    """The schema that ``spec`` names (a path, a URI or a shipped name), loaded and validated.

    Parameters
    ----------
    spec : str
        A shipped schema's name, or a schema path or URI.

    Returns
    -------
    Schema
        The validated schema.

    Raises
    ------
    MedScopeError
        When the file is not valid YAML or does not validate as a ``Schema``.
    """
    return cfgmod.load(Schema, resolve(spec))


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def checkpoint_hashes(schema: Schema, report_prompt: str) -> dict[str, str]:
    """SHA-256 of what each checkpoint approves: the fields (schema) and the wording (templates).

    Parameters
    ----------
    schema : Schema
        The schema.
    report_prompt : str
        The report-derived generation prompt (part of the wording).

    Returns
    -------
    dict of str to str
        ``schema``: SHA-256 hex of name, organ, sequences, report sequences and fields without their
        questions; ``templates``: SHA-256 hex of the templates, the fields' questions and the prompt.
    """
    dump = schema.model_dump(mode="json")
    content = {k: dump[k] for k in ("name", "organ", "sequences", "report_sequences")}
    content["fields"] = [{k: v for k, v in f.items() if k != "question"} for f in dump["fields"]]
    wording = {"templates": dump["templates"], "questions": {f["name"]: f["question"] for f in dump["fields"]},
               "report_prompt": report_prompt}
    return {"schema": _sha(content), "templates": _sha(wording)}


def approval_uri(schema_uri: str) -> str:
    """Where a schema's approval record lives: ``<schema>.approval.json`` beside it.

    Parameters
    ----------
    schema_uri : str
        Path or URI of the schema YAML.

    Returns
    -------
    str
        ``<schema_uri>.approval.json``.
    """
    return f"{schema_uri}.approval.json"


def read_approval(schema_uri: str) -> dict:
    """A schema's approval record; empty when nothing has been approved yet.

    Parameters
    ----------
    schema_uri : str
        Path or URI of the schema YAML.

    Returns
    -------
    dict
        ``{checkpoint: {"sha256", "by", "at"}}`` of the approvals recorded; empty when there is no
        approval file.
    """
    uri = approval_uri(schema_uri)
    return safe_text.read_json_object(uri) if storage.exists(uri) else {}


def approve(schema_uri: str, checkpoint: str, by: str, report_prompt: str) -> dict:
    """Record that ``by`` approved ``checkpoint`` (schema | templates) of the schema as it is now.

    Parameters
    ----------
    schema_uri : str
        Path or URI of the schema YAML.
    checkpoint : str
        ``schema`` or ``templates``.
    by : str
        The reviewer's name.
    report_prompt : str
        The report-derived generation prompt (part of the templates checkpoint).

    Returns
    -------
    dict
        The whole approval record as written, this checkpoint's entry being ``sha256``, ``by`` and
        ``at`` (UTC, ISO 8601).

    Raises
    ------
    MedScopeError
        When ``checkpoint`` is not a checkpoint, ``by`` is blank, or the schema does not load.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    if checkpoint not in CHECKPOINTS:
        raise MedScopeError(f"checkpoint must be one of {CHECKPOINTS}")
    if not by.strip():
        raise MedScopeError("an approval needs the reviewer's name (--by)")
    hashes = checkpoint_hashes(cfgmod.load(Schema, schema_uri), report_prompt)
    record = read_approval(schema_uri)
    record[checkpoint] = {"sha256": hashes[checkpoint], "by": by.strip(),
                          "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    storage.write_text(approval_uri(schema_uri), json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


def require_approved(schema_uri: str, report_prompt: str) -> dict:
    """The approval record if both checkpoints approve the schema as it is now; else MedScopeError.

    Parameters
    ----------
    schema_uri : str
        Path or URI of the schema YAML.
    report_prompt : str
        The report-derived generation prompt (part of the templates checkpoint).

    Returns
    -------
    dict
        ``{checkpoint: {"sha256", "by", "at"}}`` for ``schema`` and ``templates``.

    Raises
    ------
    MedScopeError
        When a checkpoint is not approved or its content changed since approval, or the schema does
        not load.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods.
    """
    schema = cfgmod.load(Schema, schema_uri)
    hashes = checkpoint_hashes(schema, report_prompt)
    record = read_approval(schema_uri)
    problems = []
    for cp in CHECKPOINTS:
        got = (record.get(cp) or {}).get("sha256")
        if got is None:
            problems.append(f"{cp} not approved")
        elif got != hashes[cp]:
            problems.append(f"{cp} changed since it was approved")
    if problems:
        raise MedScopeError(
            f"schema {schema_uri} is not approved ({'; '.join(problems)}); a clinician runs "
            f"`medscope benchgen schema approve {schema_uri} --checkpoint schema|templates --by NAME`")
    return {cp: {**record[cp], "sha256": hashes[cp]} for cp in CHECKPOINTS}
