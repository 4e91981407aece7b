"""The organ-presence protocol's options (organ-presence paper): one model for ``eval run``,
``score`` and ``report``; the verbs' flags and YAML keys come from it (docs/evaluation.md)."""

from __future__ import annotations

from medscope.protocols.base import ProtocolOptions, option
from medscope.volumes.config import ProbeConfig


class OrganPresenceOptions(ProtocolOptions):
    """Options of the organ-presence probe (organ-presence paper). The bootstrap's resamples and seed default
    to the probe config's (``bootstrap_b``, ``bootstrap_seed``: the paper's)."""

    probe_config: ProbeConfig | str | None = option(None, verb="eval", description=(
        "the probe config: a YAML path (configs/probe/default.yaml) or its fields as a mapping; its formats "
        "and image modes make the conditions, its hedge lexicon reads the replies (default: the paper's)"))
