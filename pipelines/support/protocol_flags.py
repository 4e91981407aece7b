"""A protocol's options as flags of ``eval run``, ``score`` and ``report``, generated from its
``Options`` model (``medscope.protocols.base.ProtocolOptions``), so flags and YAML keys cannot
drift and no verb hand-writes a protocol's flags.

Each verb first finds which protocol(s) its command line is about (``eval run --protocol``,
``score --episodes``, ``report --run``), then adds the flags of the options those protocols set
at that verb (``--test-set`` on ``eval run``, ``--cost-matrix`` on ``score``, ``--gallery-cases``
on ``report``), so ``medscope eval run --protocol organ_presence --help`` lists that protocol's.
When no protocol can be found yet (``score --help`` alone), the shipped protocols' are listed.
An option given at the wrong verb (``score --test-set``: fixed by the eval run) or an option of
a protocol the command is not about is one clear error, never ignored.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import yaml

from medscope import protocols
from medscope.errors import MedScopeError
from medscope.protocols.base import VERBS, ProtocolOptions, verb_of, wrong_verb
from pipelines.support.flags import _flag, _kind

_MISPLACED = "_protocol_options_misplaced"


def peek(argv: list[str], *flags: str, repeat: tuple[str, ...] = ()) -> argparse.Namespace | None:
    """The values of ``flags`` on a command line before the verb's own parser has its protocol
    flags (``repeat``: flags that may be given several times); None when they cannot be read.

    Parameters
    ----------
    argv : list of str
        The command line (the verb's arguments).
    *flags : str
        The flags to read (``--protocol``...).
    repeat : tuple of str, optional
        Those of ``flags`` that may be given several times (read as a list).

    Returns
    -------
    argparse.Namespace or None
        One attribute per flag (None when absent); None when argparse cannot read them.
    """
    pre = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    for flag in flags:
        pre.add_argument(flag, action="append" if flag in repeat else "store")
    try:
        return pre.parse_known_args(argv)[0]
    except argparse.ArgumentError:
        return None


def install(parser: argparse.ArgumentParser, verb: str, find: Callable[[list[str]], list[str] | None]) -> None:
    """Give ``parser`` (the verb's sub-parser) its protocols' option flags when it parses.

    ``find(arg strings) -> protocol specs`` the command line is about (None: not known).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The verb's sub-parser; its ``parse_known_args`` is wrapped so the flags are added (once)
        on the first parse.
    verb : str
        The verb (one of ``VERBS``) whose options become flags.
    find : callable
        ``find(arg strings)`` returns the protocol specs the command line is about, or None
        when not known (every shipped protocol's flags are then added); an error it raises is
        treated as None.
    """
    plain = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):
        if not hasattr(parser, "_protocol_flags"):  # once: a parser keeps the flags it was given
            try:
                specs = find(list(args or []))
            except Exception:  # noqa: BLE001 - unreadable input (a missing file, no S3 credentials, ...):
                # list every shipped protocol's flags; the verb itself then says what is wrong
                specs = None
            add_flags(parser, verb, specs)
        return plain(args, namespace)

    parser.parse_known_args = parse_known_args


def _classes(specs: list[str] | None) -> tuple[list[tuple[str, type]], bool]:
    """[(protocol name, Options)] of ``specs`` (None: every shipped protocol), and whether known."""
    known = specs is not None
    out: dict[str, type] = {}
    for spec in (specs if known else protocols.names()):
        cls = protocols.protocol_class(spec)
        out.setdefault(getattr(cls, "name", spec), protocols.options_class(cls))
    return list(out.items()), known


def add_flags(parser: argparse.ArgumentParser, verb: str, specs: list[str] | None) -> None:
    """One flag per option set at ``verb`` of the protocols ``specs``; hidden flags for the options
    of other verbs and other shipped protocols, which refuse clearly (``refuse_misplaced``).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The verb's sub-parser; ``_protocol_flags`` (flag -> protocols) is set on it and in its
        defaults (``_protocol_flags_added``).
    verb : str
        The verb whose options get flags.
    specs : list of str or None
        The protocols (names or ``module:Class``) the command is about; None, or specs that
        cannot be resolved: every shipped protocol.

    Raises
    ------
    MedScopeError
        When a protocol's option would take one of the verb's own flags.
    """
    try:
        mine, known = _classes(specs)
    except MedScopeError:  # an unknown protocol (or one without Options): the verb says so once it runs
        mine, known = _classes(None)
    taken = set(parser._option_string_actions)
    added: dict[str, list[str]] = {}  # flag -> protocols whose option it is
    actions: dict[str, argparse.Action] = {}
    common = set(ProtocolOptions.fields_at(verb))  # every protocol's (the bootstrap's B and seed)
    groups = {}
    if common and mine:
        groups[None] = parser.add_argument_group(f"every protocol's options (set at {verb})")
    for name, model in mine:
        for field_name in model.fields_at(verb):
            flag = _flag(field_name)
            if flag in added:  # several protocols' option of one name: one flag, each reads it
                added[flag].append(name)
                if field_name not in common:
                    actions[flag].help += f"; {name}: {(model.model_fields[field_name].description or '')}"
                continue
            if flag in taken:
                raise MedScopeError(f"protocol {name}: option {field_name!r} collides with {verb}'s own {flag}; "
                                    "rename the option")
            key = None if field_name in common else name
            if key not in groups:
                groups[key] = parser.add_argument_group(f"{name} options (set at {verb}; YAML keys of the same names)")
            field = model.model_fields[field_name]
            kind, _ = _kind(field.annotation)
            help_text = (field.description or "").replace("%", "%%")
            default = field.get_default(call_default_factory=True)
            if kind != "bool" and default not in (None, [], {}, ()):
                help_text += f" (default: {str(default).replace('%', '%%')})"
            if kind == "bool":
                actions[flag] = groups[key].add_argument(flag, dest=field_name, action=argparse.BooleanOptionalAction,
                                                         default=None, help=help_text)
            else:
                actions[flag] = groups[key].add_argument(
                    flag, dest=field_name, default=None, help=help_text,
                    metavar={"list": "A,B", "yaml": "YAML"}.get(kind, field_name.upper()))
            added[flag] = [name]
    # every other option a user might give here: refused with the reason, never "unrecognized"
    others = [(n, m, False) for n, m in mine] + ([(n, m, True) for n, m in _classes(None)[0]] if known else [])
    for name, model, foreign in others:
        for field_name, field in model.model_fields.items():
            flag = _flag(field_name)
            if flag in added or flag in taken or (not foreign and verb_of(field) == verb):
                continue
            where = verb_of(field)
            reason = (f"{flag} is an option of protocol {name}, which this command is not about"
                      if foreign or where == verb else wrong_verb(name, field_name, where, verb))
            parser.add_argument(flag, dest=f"{_MISPLACED}_{field_name}", action=_Refused, reason=reason,
                                nargs="?", default=None, help=argparse.SUPPRESS)
            taken.add(flag)
    parser._protocol_flags = added
    parser.set_defaults(_protocol_flags_added=added)


class _Refused(argparse.Action):
    """A protocol option's flag at a verb that does not take it: noted, refused after parsing."""

    def __init__(self, *args, reason: str, **kw):
        super().__init__(*args, **kw)
        self.reason = reason

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, _MISPLACED, [*getattr(namespace, _MISPLACED, []), self.reason])


def refuse_misplaced(args: argparse.Namespace) -> None:
    """A protocol option given where it is not set: one clear error (MedScopeError).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line; the reasons noted by the refused flags are read.

    Raises
    ------
    MedScopeError
        When any misplaced option was given, naming each reason once.
    """
    reasons = getattr(args, _MISPLACED, None)
    if reasons:
        raise MedScopeError("; ".join(dict.fromkeys(reasons)))


def given(args: argparse.Namespace, model: type, verb: str) -> dict:
    """The options of ``model`` set at ``verb`` that the command line gave, read as the model's
    types read them (a list comma-separated, a mapping or union as YAML); the model validates.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line: one attribute per option of ``model`` set at ``verb`` (None
        when not given).
    model : type of ProtocolOptions
        The protocol's ``Options`` model.
    verb : str
        The verb whose options are read.

    Returns
    -------
    dict
        The options given, by field name.

    Raises
    ------
    MedScopeError
        When a YAML-typed option's text is not valid YAML.
    """
    out = {}
    for field_name in model.fields_at(verb):
        text = getattr(args, field_name, None)
        if text is None:
            continue
        kind, scalar = _kind(model.model_fields[field_name].annotation)
        if kind == "list" and isinstance(text, str):
            text = [scalar(v.strip()) if scalar in (int, float) else v.strip() for v in text.split(",") if v.strip()]
        elif kind == "yaml" and isinstance(text, str):
            try:
                text = yaml.safe_load(text)
            except yaml.YAMLError as err:
                raise MedScopeError(f"{_flag(field_name)}: not valid YAML ({err})") from None
        out[field_name] = text
    return out


__all__ = ["VERBS", "add_flags", "given", "install", "refuse_misplaced"]
