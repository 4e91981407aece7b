"""YAML configs validated by pydantic models, with errors that name the file and the field."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TypeVar

import pydantic
import yaml

from medscope.errors import MedScopeError
from medscope.io.safe_text import read_text

M = TypeVar("M", bound=pydantic.BaseModel)

# The repo's configs/, shipped inside the package (medscope/_configs links to it), so the
# library and the demo find their files after a plain `pip install` from any directory.
SHIPPED_DIR = Path(__file__).resolve().parent / "_configs"


def shipped(*parts: str) -> str:
    """Path of a config file shipped with the package, e.g. ``shipped("views", "demo.yaml")``.

    Parameters
    ----------
    *parts : str
        Path components under the shipped configs folder (``medscope/_configs``).

    Returns
    -------
    str
        The joined path; whether the file exists is not checked.
    """
    return str(SHIPPED_DIR.joinpath(*parts))


def resolve(uri: str) -> str:
    """``uri`` itself, or, when it is a relative ``configs/...`` path that does not exist here,
    the shipped copy of that file: ``--recipe configs/views/demo.yaml`` works from any directory.

    Parameters
    ----------
    uri : str
        A path or URI (``s3://...``, absolute, or relative to the working directory).

    Returns
    -------
    str
        ``uri`` unchanged when it has a scheme, is absolute or exists; else the shipped copy's path when
        ``uri`` is ``configs/...`` (or ``./configs/...``) and that copy exists; else ``uri`` unchanged.
    """
    norm = uri.replace("\\", "/")
    if "://" in norm or os.path.isabs(norm) or os.path.exists(norm):
        return uri
    if norm.startswith("./"):
        norm = norm[2:]
    if norm.startswith("configs/"):
        candidate = SHIPPED_DIR / norm[len("configs/"):]
        if candidate.exists():
            return str(candidate)
    return uri


class StrictModel(pydantic.BaseModel):
    """Base for config models: unknown keys are errors, so typos never pass silently."""

    # NaN / inf are refused in every config: `lr: .inf` trained to a NaN loss and exit 0
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class _UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader that refuses a key given twice in one mapping (a second ``models:`` block
    would otherwise silently replace the first)."""


def _unique_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            dup = key in seen
            seen.add(key)
        except TypeError:  # an unhashable key: let the constructor report it
            break
        if dup:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {key_node.start_mark.line + 1})", key_node.start_mark)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def safe_load_unique(text: str):
    """``yaml.safe_load`` that refuses duplicate keys (``yaml.YAMLError``).

    Parameters
    ----------
    text : str
        YAML source.

    Returns
    -------
    object
        The parsed document (a dict, list, scalar, or ``None`` for an empty document).

    Raises
    ------
    yaml.YAMLError
        On invalid YAML or a key given twice in one mapping (``yaml.constructor.ConstructorError``).
    """
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass


def load_yaml(uri: str) -> dict:
    """Parse a YAML mapping from a path or URI (duplicate keys are an error naming the key).

    Parameters
    ----------
    uri : str
        Path or URI of the YAML file, passed through :func:`resolve` first; read and decoded by
        :func:`medscope.io.safe_text.read_text` (a regular file of at most 256 MiB, opened without
        blocking, so a FIFO or a device such as ``/dev/zero`` is refused in one line, never read).

    Returns
    -------
    dict
        The top-level mapping; ``{}`` for an empty file.

    Raises
    ------
    MedScopeError
        When the file is missing, not a regular file, too large or binary, when the text is not valid
        YAML (duplicate keys included) or its top level is not a mapping.
    """
    uri = resolve(uri)
    # bounded and non-blocking: a models file that is a FIFO hung `eval run`, a plan that is
    # /dev/zero hung `rules hash` reading for ever (issue 51, the eighth campaign)
    text = read_text(uri)  # BOM / UTF-16 / cp1252 too
    try:
        data = safe_load_unique(text)
    except yaml.YAMLError as err:
        raise MedScopeError(f"{uri}: not valid YAML ({err})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise MedScopeError(f"{uri}: expected a YAML mapping at the top level")
    return data


def parse(model: type[M], data: dict, source: str = "config") -> M:
    """Validate ``data`` against ``model``; one readable line per problem.

    Parameters
    ----------
    model : type of pydantic.BaseModel
        The model class to validate against.
    data : dict
        The parsed config.
    source : str, optional
        Name of the config's origin for the error message (a path or URI). Default ``"config"``.

    Returns
    -------
    pydantic.BaseModel
        An instance of ``model``.

    Raises
    ------
    MedScopeError
        On validation errors: ``"<source>: invalid <Model>: <field.path>: <msg>; ..."``.
    """
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in err.errors()
        )
        raise MedScopeError(f"{source}: invalid {model.__name__}: {problems}") from None


def load(model: type[M], uri: str) -> M:
    """Load and validate a YAML config file.

    Parameters
    ----------
    model : type of pydantic.BaseModel
        The model class to validate against.
    uri : str
        Path or URI of the YAML file (see :func:`load_yaml`).

    Returns
    -------
    pydantic.BaseModel
        An instance of ``model``.

    Raises
    ------
    MedScopeError
        When the file is not a valid YAML mapping or does not validate against ``model``.
    """
    return parse(model, load_yaml(uri), source=uri)


def content_hash(obj: pydantic.BaseModel | dict | str) -> str:
    """A stable hash of a config's content (recipe hashes, plan hashes).

    Parameters
    ----------
    obj : pydantic.BaseModel or dict or str
        A model (hashed as its ``model_dump_json()``), a mapping (hashed as ``yaml.safe_dump`` with sorted
        keys) or text (hashed as is).

    Returns
    -------
    str
        The first 16 hex characters of the SHA-256 of that text.
    """
    if isinstance(obj, pydantic.BaseModel):
        text = obj.model_dump_json()
    elif isinstance(obj, dict):
        text = yaml.safe_dump(obj, sort_keys=True)
    else:
        text = obj
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
