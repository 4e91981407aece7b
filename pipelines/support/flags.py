"""Command-line flags generated from a verb's config model, so flags and YAML cannot drift.

Every field of the pydantic model becomes ``--field-name`` (help from the field's
description, required when the field is). ``--config F`` loads a YAML file of the same model
first; flags given on the command line override its values. The result is validated by the
model, with the same clear errors as a YAML config. This is the one config style of every
verb (docs/design.md, "Configs").

A field may say how its flag reads through ``json_schema_extra={"cli": {...}}`` (see
:func:`cli`): ``positional`` (a bare argument, e.g. ``cohort show URI``), ``nargs="+"`` (several
values after one flag), ``repeat`` (the flag given once per value), ``aliases`` (other flag
names, e.g. ``--views`` for ``items``), ``metavar``. A list field without these takes one
comma-separated value.
"""

from __future__ import annotations

import argparse
import types
import typing

import pydantic
import yaml

from medscope import config as cfgmod
from medscope.errors import MedScopeError
from pipelines.support import outputs

_SCALARS = (str, int, float)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def cli(positional: bool = False, nargs: str | None = None, repeat: bool = False,
        aliases: tuple[str, ...] = (), metavar: str | None = None) -> dict:
    """A field's ``json_schema_extra`` saying how its flag reads (module docstring).

    Parameters
    ----------
    positional : bool, optional
        A bare argument instead of a flag.
    nargs : str or None, optional
        argparse's ``nargs`` (``"+"``: several values after one flag).
    repeat : bool, optional
        The flag is given once per value.
    aliases : tuple of str, optional
        Other flag names (with or without the leading ``--``).
    metavar : str or None, optional
        The value's name in the help.

    Returns
    -------
    dict
        ``{"cli": {...}}`` holding only the hints that were set.
    """
    hints = {"positional": positional, "nargs": nargs, "repeat": repeat, "aliases": list(aliases), "metavar": metavar}
    return {"cli": {k: v for k, v in hints.items() if v}}


def hints_of(field) -> dict:
    """The ``cli`` hints of a pydantic field ({} when it has none).

    Parameters
    ----------
    field : pydantic.fields.FieldInfo
        A field of a config model.

    Returns
    -------
    dict
        A copy of its ``json_schema_extra["cli"]`` hints.
    """
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return dict(extra.get("cli") or {})


def flag_names(name: str, field, aliases: dict[str, list[str]] | None = None) -> list[str]:
    """Every flag naming field ``name`` (empty for a positional field).

    Parameters
    ----------
    name : str
        The field's name in the model.
    field : pydantic.fields.FieldInfo
        The field (its alias and ``cli`` hints).
    aliases : dict of str to list of str, optional
        Extra flag names per field name, given by the verb.

    Returns
    -------
    list of str
        ``--key`` (from the field's YAML key), then the verb's aliases, then the field's own
        ``cli`` aliases; empty for a positional field.
    """
    hints = hints_of(field)
    if hints.get("positional"):
        return []
    extra = [a if a.startswith("-") else _flag(a) for a in hints.get("aliases", [])]
    return [_flag(key_of(name, field))] + [_flag(a) for a in (aliases or {}).get(name, [])] + extra


def key_of(name: str, field) -> str:
    """The YAML key (and flag name) of a field: its alias where it has one (``schema_`` -> ``schema``).

    Parameters
    ----------
    name : str
        The field's name in the model.
    field : pydantic.fields.FieldInfo
        The field.

    Returns
    -------
    str
        ``field.alias`` when set, else ``name``.
    """
    return field.alias or name


def _choices(annotation) -> list | None:
    """The values of a ``Literal`` (optionally ``| None``), for argparse's choices."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    return None


def _kind(annotation) -> tuple[str, type | None]:
    """(how to read the flag's text, scalar type): 'scalar', 'bool', 'list' or 'yaml'."""
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin in (typing.Union, types.UnionType):
        if len(args) == 1:
            return _kind(args[0])
        return "yaml", None
    if annotation is bool:
        return "bool", None
    if annotation in _SCALARS:
        return "scalar", annotation
    if origin in (list, tuple) and args and args[0] in _SCALARS:
        return "list", args[0]
    if origin in (list, tuple) and args and typing.get_origin(args[0]) is typing.Literal:
        return "list", str
    if typing.get_origin(annotation) is typing.Literal:
        return "scalar", type(args[0]) if args else str
    return "yaml", None


def add_config_flags(parser: argparse.ArgumentParser, model: type[pydantic.BaseModel],
                     aliases: dict[str, list[str]] | None = None, skip: tuple[str, ...] = ()) -> None:
    """Add ``--config`` and one flag per field of ``model`` (``aliases``: extra flag names).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The verb's parser; its defaults get ``_config_model`` and ``_config_skip``.
    model : type of pydantic.BaseModel
        The config model whose fields become flags (every flag defaults to None, so
        ``config_from_args`` can tell which were given).
    aliases : dict of str to list of str, optional
        Extra flag names per field name.
    skip : tuple of str, optional
        Fields that get no flag (and are not read from the command line).
    """
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="YAML file of these settings (the same keys as the flags); flags override it")
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        kind, scalar = _kind(field.annotation)
        hints = hints_of(field)
        help_text = (field.description or "").replace("%", "%%")  # argparse expands %(...)s in help
        if not field.is_required() and kind != "bool":
            default = field.get_default(call_default_factory=True)
            if default not in (None, [], {}, ()):
                help_text = f"{help_text} (default: {str(default).replace('%', '%%')})".strip()
        elif field.is_required() and not hints.get("positional"):
            help_text = f"{help_text} (required)".strip()
        metavar = hints.get("metavar") or (key_of(name, field).upper() if kind != "yaml" else "YAML")
        if hints.get("positional"):  # a bare argument; optional to argparse, so a --config file may give it
            nargs = "*" if hints.get("nargs") in ("+", "*") else "?"
            choices = _choices(field.annotation)
            parser.add_argument(name, nargs=nargs, default=None, help=help_text, choices=choices,
                                metavar=hints.get("metavar") or (None if choices else key_of(name, field).upper()))
            continue
        names = flag_names(name, field, aliases)
        if kind == "bool":
            parser.add_argument(*names, dest=name, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif hints.get("repeat"):
            parser.add_argument(*names, dest=name, action="append", default=None, metavar=metavar,
                                help=f"{help_text} (repeatable)")
        elif hints.get("nargs"):
            parser.add_argument(*names, dest=name, nargs=hints["nargs"], default=None, metavar=metavar, help=help_text)
        elif kind == "list":
            parser.add_argument(*names, dest=name, default=None, metavar=hints.get("metavar") or "A,B",
                                help=f"{help_text} comma-separated".strip())
        else:
            choices = _choices(field.annotation)
            if choices and not all(isinstance(c, str) for c in choices):
                choices = None  # argparse compares the flag's text
            parser.add_argument(*names, dest=name, default=None, help=help_text, choices=choices,
                                metavar=None if choices else metavar)
    parser.set_defaults(_config_model=model, _config_skip=skip)


def add_action(actions, name: str, model: type[pydantic.BaseModel], run, help: str,
               aliases: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """A sub-action (``cohort import``) whose flags come from ``model``; ``run`` gets the
    validated config (``--config`` file overridden by the flags).

    Parameters
    ----------
    actions : argparse._SubParsersAction
        The parent's sub-parsers (``add_subparsers()``).
    name : str
        The action's name.
    model : type of pydantic.BaseModel
        The action's config model (its docstring is the description).
    run : callable
        Called with the validated config when the action runs.
    help : str
        The action's one-line help.
    aliases : tuple of str, optional
        Other names of the action.

    Returns
    -------
    argparse.ArgumentParser
        The action's parser.
    """
    p = actions.add_parser(name, help=help, aliases=list(aliases), description=model.__doc__)
    add_config_flags(p, model)
    p.set_defaults(func=lambda a: run(config_from_args(a, source=p.prog)))
    return p


def config_from_args(args: argparse.Namespace, model: type[pydantic.BaseModel] | None = None,
                     source: str | None = None):
    """The validated config: ``--config`` file (if any), overridden by the flags given.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line: ``config`` (a YAML file or None), one attribute per field of
        the model (None when not given), ``_config_model`` and ``_config_skip`` from
        ``add_config_flags``, and ``out`` (set to the config's ``out`` when no flag gave it).
    model : type of pydantic.BaseModel, optional
        The config model (default: ``args._config_model``).
    source : str, optional
        What to name in validation errors (default: the ``--config`` file, or "command line").

    Returns
    -------
    pydantic.BaseModel
        The validated config, an instance of ``model``.

    Raises
    ------
    MedScopeError
        When a YAML-typed flag is not valid YAML, the config does not validate, or its ``out``
        would vanish under a Ray job (``outputs.check_out``).
    """
    model = model or args._config_model
    data = cfgmod.load_yaml(args.config) if getattr(args, "config", None) else {}
    for name, field in model.model_fields.items():
        value = getattr(args, name, None)
        if value is None or value == [] or name in getattr(args, "_config_skip", ()):  # []: a bare argument not given
            continue
        kind, scalar = _kind(field.annotation)
        if isinstance(value, list):  # several values (nargs / repeat): one list item each
            value = list(value)  # the model converts each (pydantic's lax mode), naming the field when it cannot
        elif kind == "list":
            value = [scalar(v.strip()) for v in value.split(",") if v.strip()]
        elif kind == "yaml":
            try:
                value = yaml.safe_load(value)
            except yaml.YAMLError as err:
                raise MedScopeError(f"{_flag(name)}: not valid YAML ({err})") from None
        for alias in _aliases(field) + [name]:  # a flag wins over the file's key, by any of its names
            data.pop(alias, None)
        data[key_of(name, field)] = value
    cfg = cfgmod.parse(model, data, source=source or (args.config or "command line"))
    out = getattr(cfg, "out", None)
    if isinstance(out, str) and out and getattr(args, "out", None) is None:
        # `out:` came from the --config file (or the default): the same check as a flag's
        outputs.check_out(out, "out:" if "out" in data else "--out")
        args.out = out  # so the CLI says where the results went
    return cfg


def typed_scalars(model: type[pydantic.BaseModel], data: dict) -> dict:
    """``data`` with each number-typed field's flag text read as its number (where it reads),
    so that a setting compares equal whether a flag or a --config file gave it.

    Parameters
    ----------
    model : type of pydantic.BaseModel
        The config model whose ``int`` / ``float`` fields are read.
    data : dict
        Settings by field name, some of them flag text.

    Returns
    -------
    dict
        A copy of ``data``; text that does not read as its number is left as it is.
    """
    out = dict(data)
    for name, field in model.model_fields.items():
        kind, scalar = _kind(field.annotation)
        if kind == "scalar" and scalar in (int, float) and isinstance(out.get(name), str):
            try:
                out[name] = scalar(out[name])
            except ValueError:
                pass  # the model's validation names it
    return out


def _aliases(field) -> list[str]:
    alias = field.validation_alias
    if isinstance(alias, pydantic.AliasChoices):
        return [a for a in alias.choices if isinstance(a, str)]
    return [alias] if isinstance(alias, str) else []
