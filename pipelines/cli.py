"""The ``medscope`` command. Each job module registers its own verbs (``register(subparsers)``).

Only the named verb's module is imported (``VERBS``, the one verb registry), so a verb starts
without loading every other stage's libraries; ``medscope --help`` (or no verb) loads them all."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from pipelines.support import inputs, outguard, outputs
from pipelines.support.accounting import UnitsIncomplete
from pipelines.support.jobs import guarded

# The one verb registry: verb -> the module whose register() adds it. Only the named verb's
# module is imported, so this table is written out, not discovered (a test checks it against
# what each module registers). A new verb is one entry here.
VERBS = {
    "cohort": "pipelines.cohort", "views": "pipelines.views", "bench": "pipelines.bench",
    "demo": "pipelines.demo", "eval": "pipelines.eval", "score": "pipelines.score",
    "compare": "pipelines.score", "rules": "pipelines.score", "stats": "pipelines.stats",
    "crosswalk": "pipelines.crosswalk", "visibility": "pipelines.visibility", "report": "pipelines.report",
    "probe": "pipelines.probe", "agent": "pipelines.agent", "train": "pipelines.train",
    "train-select": "pipelines.train", "sweep": "pipelines.sweep", "reader": "pipelines.reader",
    "benchgen": "pipelines.benchgen", "pairs": "pipelines.pairs", "judge-replies": "pipelines.judge",
    "answers": "pipelines.answers",
    "compact": "pipelines.compact",
    "reproduce": "pipelines.reproduce",
    "export": "pipelines.export",
}

# every verb module once, in the order of VERBS (what `medscope --help` loads)
VERB_MODULES = list(dict.fromkeys(VERBS.values()))


def _verb_of(argv: list[str]) -> str | None:
    """The verb named on the command line (the first word that is not an option), if known."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in VERBS else None
    return None


def build_parser(modules: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser with the verbs of ``modules`` (default: every verb module).

    Parameters
    ----------
    modules : list of str or None, optional
        Dotted names of verb modules, each with a ``register(subparsers)``; None or empty: ``VERB_MODULES``.

    Returns
    -------
    argparse.ArgumentParser
        The ``medscope`` parser, with ``--verbose``, the verbs (one required) and the ``--append`` /
        ``--overwrite`` flags beside every ``--out``.
    """
    parser = argparse.ArgumentParser(
        prog="medscope",
        description="Does the model read the image or recite the question? "
        "Counterfactual benchmarks, evaluation, statistics and training for medical VLMs.",
    )
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="show Ray's own log lines too (quiet by default: steps, progress, results)")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    for name in modules or VERB_MODULES:
        importlib.import_module(name).register(sub)
    outguard.add_flags(parser)  # --append / --overwrite beside every --out
    inputs.refuse_repeats(parser)  # an input flag given twice is an error, never keep-the-last
    return parser


# commands that moved: one line saying where, instead of argparse's "invalid choice"
MOVED = {("cohort", "crosswalk"): "medscope crosswalk --sets NAME=COHORT,NAME=COHORT (one crosswalk for sets, "
                                  "splits and cohorts; docs/counterfactual.md)"}


def _appends_by_design(args: argparse.Namespace, settings: dict) -> bool:
    """Whether the parsed action declares that, with these settings, it adds to the run in --out.

    An action opts in with ``parser.set_defaults(appends_to_out=predicate)``, ``predicate(settings)``
    deciding; the rule stays beside the action it belongs to."""
    predicate = getattr(args, "appends_to_out", None)
    return bool(predicate and predicate(settings))


def main(argv: list[str] | None = None) -> int:
    """Run one ``medscope`` command line: parse it, guard its ``--out``, run the verb's action.

    Parameters
    ----------
    argv : list of str or None, optional
        The arguments after the program name; None reads ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 when the action ran; 2 for a command that has moved (``MOVED``) or a failed action,
        or the error's own ``exit_code`` (:func:`pipelines.support.jobs.guarded`).
    """
    argv = sys.argv[1:] if argv is None else argv
    words = tuple(w for w in argv if not w.startswith("-"))[:2]
    if words in MOVED:
        print(f"medscope: `{' '.join(words)}` has moved: {MOVED[words]}", file=sys.stderr)
        return 2
    verb = _verb_of(argv)
    args = build_parser([VERBS[verb]] if verb else None).parse_args(argv)
    if args.verbose:
        os.environ["MEDSCOPE_VERBOSE"] = "1"

    def go():
        # every verb's --out: refused where a Ray job would lose it, named when done
        run = outguard.identity(outguard.verb_of(argv), outguard.settings_of(args))
        out = getattr(args, "out", None) or outguard.settings_of(args).get("out")
        aside = None
        if isinstance(out, str) and out:
            outputs.check_out(out)
            # an --out holding a different run is refused unless --append / --overwrite, or the
            # action itself says this run adds to what --out holds
            settings = outguard.settings_of(args)  # flags over the --config file's keys
            outguard.refuse_both(bool(settings.get("append")), bool(getattr(args, "overwrite", False)))
            append = bool(settings.get("append")) or _appends_by_design(args, settings)
            aside = outguard.check(out, run, append, getattr(args, "overwrite", False))
        finished = False
        try:
            args.func(args)
            finished = True
        except UnitsIncomplete:  # the run finished, some units failed: what was done is kept there
            finished = True
            raise
        finally:
            out = getattr(args, "out", None) or out  # a --config file may have named it (flags.config_from_args)
            outguard.settle(out, aside, finished)  # --overwrite: drop the old run, or restore it on failure
            if finished and isinstance(out, str) and out:
                outguard.record(out, run)
                outputs.announce(outputs.check_out(out))

    ray_before = _ray_is_up()
    try:
        return guarded(go)
    finally:
        if not ray_before:
            _stop_the_ray_this_command_started()


def _ray_is_up() -> bool:
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


def _stop_the_ray_this_command_started() -> None:
    # Left to Ray's own atexit hook, the core worker's native threads are still running while the
    # interpreter tears down (a process that finished its work could abort on its way out, issue 55);
    # shut down here, with the interpreter whole. A Ray the caller had up (a test's cluster, a
    # notebook) is the caller's to stop.
    if _ray_is_up():
        sys.modules["ray"].shutdown()


if __name__ == "__main__":
    sys.exit(main())
