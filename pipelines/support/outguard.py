"""Refusing an ``--out`` that holds a different run, unless told to add to it or replace it.

Every verb that writes into an ``--out`` folder marks it with ``.medscope-out.json``: the verb
and the settings that make its output what it is (``IDENTITY``: inputs, protocol, cohort, recipe,
schema, seed; not workers, budget, --max-failed or models added to a sweep). A later run into
the same folder:

- with the same verb and settings (a rerun, a resume): goes ahead;
- with different ones: refused with a one-line error naming what differs, unless ``--append``
  (add this run to the folder; the marker then lists both) or ``--overwrite`` (replace what the
  folder holds; a local folder is moved aside and deleted only once the new run finished, so a
  new run that fails on bad input leaves the old one whole). Nothing is deleted without
  ``--overwrite``.

A folder without a marker (written by a library call, e.g. the demo's steps) is claimed by the
first verb that writes into it. ``pipelines.cli`` applies this to every verb with ``--out`` and
``pipelines.support.jobs`` to every ``python -m pipelines.<job> --config F``.
"""

from __future__ import annotations

import json
import os
import posixpath

from medscope.io import safe_text, storage
from medscope.errors import MedScopeError
from medscope.seeding import stable_hash

MARKER = ".medscope-out.json"
# The settings that say what a run's output IS: its inputs, protocol, cohort, recipe, schema and
# seed (under any verb's name for them). Everything else (workers, budget, --max-failed, extra
# outputs, models added to a sweep) changes how a run goes or adds to it, and is not compared:
# a rerun that resumes or extends the same run must never be refused.
IDENTITY = frozenset({
    "items", "views", "volumes", "cases", "path", "format", "episodes", "reports", "manifest", "protocol",
    "protocol_options", "cohort", "recipe", "schema", "spec", "seed", "test_set", "splits", "judge", "organ_map",
})
FILE_SUFFIXES = (".json", ".yaml", ".yml", ".parquet", ".csv", ".md", ".html", ".png", ".txt")


def identity(verb: str, settings: dict) -> dict:
    """What makes a run's output what it is: the verb and its non-operational settings.

    Parameters
    ----------
    verb : str
        The verb and action (``eval run``) or job name, kept for messages.
    settings : dict
        The run's settings; only the keys in ``IDENTITY`` that are set (not None or empty) and
        not callable are kept.

    Returns
    -------
    dict
        ``verb``, ``settings`` (the kept ones, JSON-safe) and ``hash`` (16 characters, over the
        settings only).
    """
    kept = {k: v for k, v in sorted(settings.items()) if k in IDENTITY and not callable(v) and v not in (None, [], {}, "")}
    kept = json.loads(json.dumps(kept, default=str))
    # the hash is over the settings only: the same job run as a verb (`eval run`) or as
    # `python -m pipelines.eval` is the same run; the verb is kept for the message
    return {"verb": verb, "settings": kept, "hash": stable_hash(json.dumps(kept, sort_keys=True), length=16)}


def is_folder_out(out: str) -> bool:
    """Whether ``out`` names a folder (a file output such as a report JSON is not guarded).

    Parameters
    ----------
    out : str
        An output path or URI.

    Returns
    -------
    bool
        False when its last part ends in one of ``FILE_SUFFIXES``.
    """
    return not posixpath.basename(out.rstrip("/")).lower().endswith(FILE_SUFFIXES)


def _held(out: str) -> list[dict]:
    marker = storage.join(out, MARKER)
    if not storage.exists(marker):
        return []
    try:
        return list(safe_text.read_json_object(marker).get("runs") or [])
    except (ValueError, AttributeError):
        raise MedScopeError(f"{marker}: not a MedScope output marker; remove it or pass --overwrite") from None


def _differs(a: dict, b: dict) -> str:
    keys = sorted(k for k in set(a["settings"]) | set(b["settings"]) if a["settings"].get(k) != b["settings"].get(k))
    shown = ", ".join(f"{k}: {a['settings'].get(k)!r} there, {b['settings'].get(k)!r} now" for k in keys[:3])
    return f"its `{a['verb']}` run had other settings ({shown}{', ...' if len(keys) > 3 else ''})"


def refuse_both(append: bool, overwrite: bool) -> None:
    """Refuse ``--append`` and ``--overwrite`` given together: one keeps what --out holds, the
    other deletes it, and neither may be guessed (issue 51, fresh campaign: both were accepted
    and --overwrite silently won).

    Parameters
    ----------
    append : bool
        ``--append`` as given (not an action's own appending).
    overwrite : bool
        ``--overwrite`` as given.

    Raises
    ------
    MedScopeError
        When both are set.
    """
    if append and overwrite:
        raise MedScopeError("--append and --overwrite contradict each other (--append keeps what --out holds and adds "
                            "this run, --overwrite deletes it first): give one of them")


def check(out: str, run: dict, append: bool = False, overwrite: bool = False, flag: str = "--out") -> str | None:
    """Refuse (MedScopeError) an ``out`` holding a different run. ``overwrite``: a local folder is
    moved aside (returned: ``settle`` deletes it once the new run finished, or puts it back if
    the new run failed, so bad input never costs the old run); a remote one is emptied first.

    Parameters
    ----------
    out : str
        The output folder (a file output, or an empty one, is not checked).
    run : dict
        This run's ``identity``.
    append : bool, optional
        ``--append``: a folder holding another run is accepted.
    overwrite : bool, optional
        ``--overwrite``: what the folder holds is moved aside (local) or deleted (remote).
    flag : str, optional
        The option's name in the error message (``--out`` or ``out:``).

    Returns
    -------
    str or None
        The path the old local folder was moved to under ``overwrite`` (for ``settle``), else
        None.

    Raises
    ------
    MedScopeError
        When ``out`` holds a different run and neither ``append`` nor ``overwrite`` is given,
        or its marker cannot be read.
    """
    if not out or not is_folder_out(out):
        return None
    if overwrite:
        if not storage.exists(out):
            return None
        path = storage.local_path(out)
        if path is None:
            storage.delete(out)
            return None
        aside = posixpath.join(posixpath.dirname(path.rstrip("/")), f".{posixpath.basename(path.rstrip('/'))}.replaced")
        storage.delete(aside)
        os.replace(path, aside)
        return aside
    held = _held(out)
    if not held or append or run["hash"] in {r.get("hash") for r in held}:
        return None
    raise MedScopeError(
        f"{flag} {out} holds a different run ({_differs(held[-1], run)}); pass --append to add this run to it, "
        f"--overwrite to replace it (deletes what is there), or choose another {flag}")


def settle(out: str, aside: str | None, finished: bool) -> None:
    """After an --overwrite run: drop the old run moved aside, or restore it when the new run failed.

    Parameters
    ----------
    out : str
        The output folder of the run.
    aside : str or None
        What ``check`` returned: where the old run was moved (None: nothing to do).
    finished : bool
        Whether the new run finished (the old one is then deleted, else put back).
    """
    if not aside or not os.path.exists(aside):
        return
    if finished:
        storage.delete(aside)
        return
    path = storage.local_path(out)
    storage.delete(out)
    os.replace(aside, path)


def record(out: str, run: dict) -> None:
    """Mark ``out`` as holding ``run`` (once it exists; a run that wrote nothing leaves no mark).

    Parameters
    ----------
    out : str
        The output folder; a file output, or a folder that does not exist, is left unmarked.
    run : dict
        This run's ``identity``, added to the marker's ``runs`` unless its hash is there.
    """
    if not out or not is_folder_out(out) or not storage.exists(out) or not storage.is_dir(out):
        return
    held = _held(out)
    if run["hash"] not in {r.get("hash") for r in held}:
        storage.write_text(storage.join(out, MARKER), json.dumps({"runs": [*held, run]}, indent=1, sort_keys=True))


def add_flags(parser) -> None:
    """Give every verb (leaf parser) that has ``--out`` the ``--append`` and ``--overwrite``
    flags, unless it defines its own.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The top parser; its sub-parsers are walked too.
    """
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                add_flags(sub)
    opts = parser._option_string_actions
    if "--out" not in opts:
        return
    if "--append" not in opts:
        parser.add_argument("--append", action="store_true", default=False,
                            help="--out holds another run: add this one to it")
    if "--overwrite" not in opts:
        parser.add_argument("--overwrite", action="store_true", default=False,
                            help="--out holds another run: delete it, then write this one")


def verb_of(argv: list[str]) -> str:
    """The verb and action named on the command line (``eval run``), for the marker.

    Parameters
    ----------
    argv : list of str
        The command line after the program name.

    Returns
    -------
    str
        The first one or two words that are not options, joined by a space.
    """
    words: list[str] = []
    for word in argv:
        if word.startswith("-"):
            if words:
                break
            continue  # options before the verb (-v)
        words.append(word)
        if len(words) == 2:
            break
    return " ".join(words)


def settings_of(args) -> dict:
    """The run's settings: its --config file's, overridden by the flags given.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line: ``config`` (a YAML file or None), every flag (those not given
        are None and skipped), and ``_config_model`` when the verb's flags come from a config
        model (its number fields are then read as numbers, ``flags.typed_scalars``).

    Returns
    -------
    dict
        The settings by name, for ``identity``.
    """
    from medscope import config as cfgmod

    data = dict(cfgmod.load_yaml(args.config) or {}) if getattr(args, "config", None) else {}
    data.update({k: v for k, v in vars(args).items() if v is not None})
    model = getattr(args, "_config_model", None)
    if model is not None:  # a number is the same setting from a flag ("8") or a --config file (8)
        from pipelines.support.flags import typed_scalars

        data = typed_scalars(model, data)
    return data
