"""The organ-presence paper's volumetric organ-presence probe: items are slice x organ questions, one turn
per episode in one of three output formats, scored as present / absent / not addressed."""

from medscope.protocols.organ_presence import tables  # noqa: F401 - registers the protocol's own tables first

__all__ = ["PROTOCOL"]


def __getattr__(name: str):
    # PROTOCOL on first use: the probe build's Ray actors import this package for its tables
    # only, and the protocol pulls in scoring (scipy.stats), ~2 s of every actor's start
    if name == "PROTOCOL":
        from medscope.protocols.organ_presence.protocol import OrganPresenceProtocol

        return OrganPresenceProtocol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
