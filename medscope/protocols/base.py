"""The contract between a protocol and the shared harness (docs/design.md, "One harness, several protocols").

A protocol supplies its items (images + question + expected truth), how one episode is run
for an item under a condition (its prompt builder and reply reader, through the shared model
interface), its scoring (episodes -> per-item scores and metrics with intervals) and its
report sections. ``medscope eval``, ``score`` and ``report`` know nothing else, so a new
protocol is a new folder under ``medscope/protocols/`` and touches no shared code.

A protocol's options are one pydantic model (``Options``, a :class:`ProtocolOptions`); each
field says at which verb it is set (``eval``: what the eval run evaluates and how an episode
runs, fixed in its ``sweep.json``; ``score``: how episodes are scored, recorded in the scored
run's ``run.json``; ``report``: how the report shows them). The verbs generate their flags and
YAML keys from it, and a protocol is built as ``Protocol(options)`` with the validated object.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, ClassVar, Protocol

import pydantic

from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.items import READINGS, EpisodeResult, Item  # noqa: F401 - the protocol interface names them
from medscope.models.base import ChatModel, Decoding


# The verbs at which a protocol option is set, in the order they run, and what fixes it there.
VERBS = ("eval", "score", "report")
FIXED_BY = {"eval": "the eval run (its sweep.json)", "score": "score (the scored run's run.json)",
            "report": "report"}


def option(default: Any = ..., *, verb: str, description: str, **kw) -> Any:
    """A field of a protocol's ``Options``: its default, the verb that sets it and its help text
    (``kw``: pydantic's constraints, e.g. ``ge=1``).

    Parameters
    ----------
    default : Any, optional
        The option's default; ``...`` (the default) makes it required.
    verb : {'eval', 'score', 'report'}
        The verb that sets it.
    description : str
        Its help text (the generated flag's help).
    **kw
        Pydantic's field constraints, e.g. ``ge=1``.

    Returns
    -------
    pydantic.fields.FieldInfo
        The field, with ``verb`` in its ``json_schema_extra``.

    Raises
    ------
    ValueError
        When ``verb`` is not one of :data:`VERBS`.
    """
    if verb not in VERBS:
        raise ValueError(f"option verb must be one of {VERBS}, got {verb!r}")
    return pydantic.Field(default, description=description, json_schema_extra={"verb": verb}, **kw)


def verb_of(field: pydantic.fields.FieldInfo) -> str | None:
    """The verb at which a protocol option is set (``option(verb=...)``).

    Parameters
    ----------
    field : pydantic.fields.FieldInfo
        A field of a protocol's ``Options``.

    Returns
    -------
    str or None
        ``'eval'``, ``'score'`` or ``'report'``; None when the field was not declared with :func:`option`.
    """
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return extra.get("verb")


MAX_N_BOOT = 100_000  # addition: see ProtocolOptions.n_boot


class ProtocolOptions(StrictModel):
    """Base of every protocol's ``Options``: unknown keys and wrong types are errors naming the
    key; every field is declared with :func:`option` (the verb that sets it). The bootstrap's
    resamples and seed are every protocol's scoring options (None: the protocol's own default,
    its paper's)."""

    # addition: MAX_N_BOOT bounds the resamples; the papers use 1,000 to 10,000, and 10**12 asked
    # numpy for a 14.6 TiB index array and ended in MemoryError (issue 51)
    n_boot: int | None = option(None, verb="score", ge=0, le=MAX_N_BOOT,
                                description=f"bootstrap resamples, at most {MAX_N_BOOT:,} (default: the protocol's, "
                                            "its paper's; 0: point estimates only)")
    # numpy's generators take a non-negative seed; -1 ended in a bare "ValueError: expected
    # non-negative integer" naming nothing (issue 51)
    seed: int | None = option(None, verb="score", ge=0,
                              description="bootstrap seed, 0 or more (default: the protocol's, 42)")

    @classmethod
    def __pydantic_init_subclass__(cls, **kw) -> None:
        super().__pydantic_init_subclass__(**kw)
        loose = [n for n, f in cls.model_fields.items() if verb_of(f) not in VERBS]
        if loose:  # a protocol author's mistake: said once, at import
            raise TypeError(f"{cls.__name__}: declare {loose} with medscope.protocols.base.option(..., verb=...) "
                            f"(one of {', '.join(VERBS)})")

    @classmethod
    def fields_at(cls, verb: str) -> list[str]:
        """The names of the options set at ``verb``."""
        return [n for n, f in cls.model_fields.items() if verb_of(f) == verb]

    def values_at(self, *verbs: str) -> dict:
        """The options set at ``verbs``, as JSON values (what sweep.json / run.json record)."""
        return self.model_dump(mode="json", include={n for v in verbs for n in self.fields_at(v)})


def parse_options(options_class: type[ProtocolOptions], data: Mapping | ProtocolOptions | None, protocol: str,
                  verbs: tuple[str, ...] = VERBS, given_at: str | None = None) -> ProtocolOptions:
    """``data`` validated by the protocol's ``Options``: one clear error naming each bad key.

    ``verbs``: the verbs whose options ``data`` may hold; a key of another verb is refused,
    saying where it is set (``given_at``: the verb it was given to, for the message).

    Parameters
    ----------
    options_class : type of ProtocolOptions
        The protocol's ``Options``.
    data : Mapping or ProtocolOptions or None
        The given options; an ``options_class`` instance is returned as is, None reads as no options.
    protocol : str
        The protocol's name, for the messages.
    verbs : tuple of str, optional
        The verbs whose options ``data`` may hold (default: all of :data:`VERBS`).
    given_at : str, optional
        The verb the options were given to, for the message (default: ``verbs`` joined by ``/``).

    Returns
    -------
    ProtocolOptions
        The validated options.

    Raises
    ------
    MedScopeError
        When a key belongs to a verb outside ``verbs``, or validation fails (one clause per bad key).
    """
    if isinstance(data, options_class):
        return data
    data = dict(data or {})
    fields = options_class.model_fields
    for key in data:
        where = verb_of(fields[key]) if key in fields else None
        if where is not None and where not in verbs:
            raise MedScopeError(wrong_verb(protocol, key, where, given_at or "/".join(verbs)))
    try:
        return options_class.model_validate(data)
    except pydantic.ValidationError as err:
        raise MedScopeError(options_error(err, options_class, protocol)) from None


def wrong_verb(protocol: str, key: str, where: str, given_at: str) -> str:
    """The message for an option given at a verb that does not set it.

    Parameters
    ----------
    protocol : str
        The protocol's name.
    key : str
        The option given.
    where : str
        The verb that sets it.
    given_at : str
        The verb (or verbs, joined by ``/``) it was given to.

    Returns
    -------
    str
        The message; when ``where`` runs before ``given_at`` it adds what fixed the option and that
        ``where`` must run again to change it.
    """
    msg = f"protocol option {key!r} of {protocol} is set at {where}, not at {given_at}"
    if where in VERBS and given_at in VERBS and VERBS.index(where) < VERBS.index(given_at):
        msg += f": it was fixed by {FIXED_BY[where]}; to change it, run {where} again"
    return msg


def options_error(err: pydantic.ValidationError, options_class: type[ProtocolOptions], protocol: str) -> str:
    """A ValidationError of protocol options as one line per bad key, naming it.

    Parameters
    ----------
    err : pydantic.ValidationError
        The error of validating the options.
    options_class : type of ProtocolOptions
        The protocol's ``Options`` (its fields are listed for an unknown key).
    protocol : str
        The protocol's name.

    Returns
    -------
    str
        One clause per bad key, joined by ``"; "``: an unknown key lists the known ones, otherwise
        pydantic's message and the value given.
    """
    lines, seen = [], set()
    for e in err.errors():
        if e["loc"][:1] in seen:  # a union's every alternative failed: its first reason is enough
            continue
        seen.add(e["loc"][:1])
        key = ".".join(str(p) for p in e["loc"]) or "(options)"
        if e["type"] == "extra_forbidden":
            lines.append(f"protocol option {key!r}: unknown key for {protocol}; known: "
                         f"{', '.join(options_class.model_fields)}")
        else:
            lines.append(f"protocol option {key!r} of {protocol}: {e['msg']} (got {e.get('input')!r})")
    return "; ".join(lines)


class EvalProtocol(Protocol):
    name: str  # e.g. "counterfactual", "organ_presence"
    prompt_version: str  # bumps whenever a template changes; part of every request key
    Options: ClassVar[type[ProtocolOptions]]  # its options; the protocol is built as cls(options)
    options: ProtocolOptions  # the validated options it was built with

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        """Read the protocol's item table (views, probe_items, ...) into items, in its order.

        ``ids``: only the items with these item ids (a sweep's worker fetching the few it is
        about to run). ``images=False``: the same items with ``images=()``, read without holding
        the table's pixels (a sweep's driver needs ids and privacy flags only). The
        selection never depends on the two arguments, so the driver's items and the workers'
        agree; read through ``medscope.io.tablescan``, which streams a table instead of loading it."""

    def conditions(self) -> tuple[str, ...]:
        """Condition names this protocol understands (agent, plain, blind, blank, ...)."""

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        """Run one episode: build the prompt for ``condition``, talk to ``model``, read the reply."""

    def score(self, episodes_uri: str, items_uri: str, out: str) -> dict:
        """Score episodes against the items under ``self.options``: write the scored-run folder
        ``out`` (its own scores tables at ``layout.ScoredRun(out).table(name)``, the shared metrics
        table and ``run.json``) and return a summary. A protocol's own tables (items, scores) are
        registered with ``records.register_table`` when its module is imported (its ``tables.py``)."""

    def report_sections(self, scored_run: str, work_dir: str) -> tuple[list, dict]:
        """The report's sections (``medscope.render.document.Section``) for a scored run this
        protocol wrote, under ``self.options``, and a dict of anything else it wrote under
        ``work_dir`` (the report folder)."""
