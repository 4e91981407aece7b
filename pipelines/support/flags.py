"""Command-line flags generated from a job's config model, so flags and YAML cannot drift.

Every field of the pydantic model becomes ``--field-name`` (help from the field's
description, required when the field is). ``--config F`` loads a YAML file of the same model
first; flags given on the command line override its values. The result is validated by the
model, with the same clear errors as a YAML config.
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
    """Add ``--config`` and one flag per field of ``model`` (``aliases``: extra flag names)."""
    parser.add_argument("--config", default=None, help="YAML file of these settings; flags override it")
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        kind, scalar = _kind(field.annotation)
        names = [_flag(name)] + [_flag(a) for a in (aliases or {}).get(name, [])]
        help_text = field.description or ""
        if not field.is_required() and kind != "bool":
            default = field.get_default(call_default_factory=True)
            if default not in (None, [], {}, ()):
                help_text = f"{help_text} (default: {default})".strip()
        elif field.is_required():
            help_text = f"{help_text} (required)".strip()
        if kind == "bool":
            parser.add_argument(*names, dest=name, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        elif kind == "list":
            parser.add_argument(*names, dest=name, default=None, metavar="A,B", help=f"{help_text} comma-separated".strip())
        else:
            parser.add_argument(*names, dest=name, default=None, help=help_text,
                                metavar="YAML" if kind == "yaml" else None)
    parser.set_defaults(_config_model=model, _config_skip=skip)


def config_from_args(args: argparse.Namespace, model: type[pydantic.BaseModel] | None = None,
                     source: str | None = None):
    """The validated config: ``--config`` file (if any), overridden by the flags given."""
    model = model or args._config_model
    data = cfgmod.load_yaml(args.config) if getattr(args, "config", None) else {}
    for name, field in model.model_fields.items():
        value = getattr(args, name, None)
        if value is None or name in getattr(args, "_config_skip", ()):
            continue
        kind, scalar = _kind(field.annotation)
        if kind == "list":
            value = [scalar(v.strip()) for v in value.split(",") if v.strip()]
        elif kind == "yaml":
            try:
                value = yaml.safe_load(value)
            except yaml.YAMLError as err:
                raise MedScopeError(f"{_flag(name)}: not valid YAML ({err})") from None
        for alias in _aliases(field):  # a flag wins over the file's key, by any of its names
            data.pop(alias, None)
        data[name] = value
    cfg = cfgmod.parse(model, data, source=source or (args.config or "command line"))
    out = getattr(cfg, "out", None)
    if isinstance(out, str) and out and getattr(args, "out", None) is None:
        # `out:` came from the --config file (or the default): the same check as a flag's
        outputs.check_out(out, "out:" if "out" in data else "--out")
        args.out = out  # so the CLI says where the results went
    return cfg


def _aliases(field) -> list[str]:
    alias = field.validation_alias
    if isinstance(alias, pydantic.AliasChoices):
        return [a for a in alias.choices if isinstance(a, str)]
    return [alias] if isinstance(alias, str) else []
