"""Evaluation protocols, one folder each (docs/design.md "One harness, several protocols").

Each sub-package ``medscope.protocols.<name>`` exports ``PROTOCOL``, a class implementing
:class:`medscope.protocols.base.EvalProtocol`: its items, prompt builder, reply reader,
scoring and report sections, and its ``Options`` model (``base.ProtocolOptions``). ``eval``,
``score`` and ``report`` find a protocol by the name that episodes carry, build it as
``cls(options)`` with its validated options, so adding a protocol is adding a folder: no shared
code changes.
"""

from __future__ import annotations

import importlib
import pkgutil

from medscope.errors import MedScopeError


def names() -> list[str]:
    """Names of the protocols shipped in this package (its sub-packages)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg)


def import_all() -> None:
    """Import every shipped protocol, so that all their own tables are registered with
    ``medscope.io.records`` (for a verb that handles any output folder, e.g. ``medscope compact``)."""
    for name in names():
        importlib.import_module(f"{__name__}.{name}")


def protocol_class(spec: str) -> type:
    """The protocol class for a name (``counterfactual``) or a ``module:Class`` spec (a
    protocol living outside this package, e.g. a test double)."""
    if ":" in spec:
        module, cls = spec.split(":", 1)
        try:
            return getattr(importlib.import_module(module), cls)
        except (ImportError, AttributeError) as err:
            raise MedScopeError(f"cannot load protocol {spec!r} ({err})") from None
    if spec not in names():
        raise MedScopeError(f"unknown protocol {spec!r}; known: {', '.join(names())} (or module:Class)")
    return importlib.import_module(f"{__name__}.{spec}").PROTOCOL


def spec_of(protocol) -> str:
    """How ``--protocol`` names ``protocol``'s class: its folder name for a shipped protocol,
    else ``module:Class``. Recorded in an eval run's ``sweep.json`` and a scored run's
    ``run.json``, so that ``score`` and ``report`` load a protocol outside this package again."""
    cls = protocol if isinstance(protocol, type) else type(protocol)
    head, _, rest = cls.__module__.partition(f"{__name__}.")
    name = rest.split(".", 1)[0]
    if not head and name in names() and protocol_class(name) is cls:
        return name
    return f"{cls.__module__}:{cls.__qualname__}"


def options_class(cls: type) -> type:
    """The protocol class's ``Options`` model (medscope.protocols.base.ProtocolOptions)."""
    from medscope.protocols.base import ProtocolOptions

    model = getattr(cls, "Options", None)
    if not (isinstance(model, type) and issubclass(model, ProtocolOptions)):
        raise MedScopeError(f"protocol {getattr(cls, 'name', cls.__name__)} declares no options model: give its "
                            "class `Options = <a medscope.protocols.base.ProtocolOptions subclass>`")
    return model


def load(spec: str, options=None):
    """An instance of the protocol ``spec``, built with ``options`` (a mapping of its options,
    any verb's, validated by its ``Options`` with errors naming the key, or the typed object)."""
    from medscope.protocols.base import parse_options

    cls = protocol_class(spec)
    return cls(parse_options(options_class(cls), options, getattr(cls, "name", spec)))
