"""YAML configs validated by pydantic models, with errors that name the file and the field."""

from __future__ import annotations

import hashlib
from typing import TypeVar

import pydantic
import yaml

from medscope import storage
from medscope.errors import MedScopeError

M = TypeVar("M", bound=pydantic.BaseModel)


class StrictModel(pydantic.BaseModel):
    """Base for config models: unknown keys are errors, so typos never pass silently."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


def load_yaml(uri: str) -> dict:
    """Parse a YAML mapping from a path or URI."""
    try:
        data = yaml.safe_load(storage.read_text(uri))
    except yaml.YAMLError as err:
        raise MedScopeError(f"{uri}: not valid YAML ({err})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise MedScopeError(f"{uri}: expected a YAML mapping at the top level")
    return data


def parse(model: type[M], data: dict, source: str = "config") -> M:
    """Validate ``data`` against ``model``; one readable line per problem."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in err.errors()
        )
        raise MedScopeError(f"{source}: invalid {model.__name__}: {problems}") from None


def load(model: type[M], uri: str) -> M:
    """Load and validate a YAML config file."""
    return parse(model, load_yaml(uri), source=uri)


def content_hash(obj: pydantic.BaseModel | dict | str) -> str:
    """A stable hash of a config's content (recipe hashes, plan hashes)."""
    if isinstance(obj, pydantic.BaseModel):
        text = obj.model_dump_json()
    elif isinstance(obj, dict):
        text = yaml.safe_dump(obj, sort_keys=True)
    else:
        text = obj
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
