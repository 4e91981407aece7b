"""No verb silently drops an input it was given: a flag naming an input, given twice,
is refused with a clear error instead of argparse's keep-the-last.

A flag that accumulates (``action="append"``, e.g. ``report --run``) is left alone; so is any
flag a verb makes repeatable itself. ``pipelines.cli`` applies this to every verb.
"""

from __future__ import annotations

import argparse

# the flags that name an input (under any verb); a second value would silently replace the first
INPUT_DESTS = frozenset({
    "items", "views", "volumes", "cases", "path", "episodes", "reports", "manifest", "spec", "work", "schema",
    "models", "recipe", "config", "scores", "metrics", "pack", "answers", "sets",
})


class _Once(argparse.Action):
    """``store``, refusing a second occurrence of the flag."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = getattr(namespace, "_inputs_seen", set())
        if self.dest in seen:
            parser.error(f"{option_string} given twice ({getattr(namespace, self.dest)!r}, then {values!r}); "
                         f"it takes one input: run the verb once per input")
        seen = seen | {self.dest}
        setattr(namespace, "_inputs_seen", seen)
        setattr(namespace, self.dest, values)


def refuse_repeats(parser: argparse.ArgumentParser) -> None:
    """Make every plain-store input flag of ``parser`` and its sub-parsers refuse a repeat.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The top parser; its sub-parsers are walked too. Flags whose dest is in ``INPUT_DESTS``
        and whose action is a plain store are changed in place.
    """
    for action in list(parser._actions):
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                refuse_repeats(sub)
        elif type(action) is argparse._StoreAction and action.dest in INPUT_DESTS and action.option_strings:
            action.__class__ = _Once
