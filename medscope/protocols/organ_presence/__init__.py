"""Seed 003's volumetric organ-presence probe: items are slice x organ questions, one turn
per episode in one of three output formats, scored as present / absent / not addressed."""

from medscope.protocols.organ_presence import tables  # noqa: F401 - registers the protocol's own tables first
from medscope.protocols.organ_presence.protocol import OrganPresenceProtocol as PROTOCOL

__all__ = ["PROTOCOL"]
