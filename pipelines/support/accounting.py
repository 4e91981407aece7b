"""One accounting of a sweep's units, and the exit code it decides (docs/evaluation.md).

Every unit of a sweep (an evaluation episode, a generation call, a judgement) ends in exactly
one of five outcomes, counted per model x condition:

- **done**: its result was written;
- **failed**: it ran and did not produce a usable result (by reason: provider error, retries
  exhausted, a model that could not be built, a permanent 4xx written with its error);
- **refused**: privacy refused to send it (a private item, an endpoint not on its allow-list);
  the summary names the endpoint and what would allow it;
- **skipped**: already finished by an earlier run (resume), never requested again;
- **stopped**: not started because the budget was reached.

The exit code follows from the failed and refused counts (``exit_code``): 0 when there are
none (or no more than ``--max-failed`` allows), ``EXIT_UNITS_FAILED`` otherwise, and always
``EXIT_NO_WORK`` when units failed or were refused and none is done (now or by an earlier run).
"""

from __future__ import annotations

import sys
from collections import Counter

from medscope.errors import MedScopeError

# The exit codes of every verb (README "Exit codes", docs/evaluation.md).
EXIT_OK = 0
EXIT_ERROR = 2  # bad input, bad config or an unexpected error: one line on stderr
EXIT_UNITS_FAILED = 3  # finished, but some units failed or were refused (more than --max-failed)
EXIT_NO_WORK = 4  # units were to run and none was done: every one failed or was refused
EXIT_INTERRUPTED = 130  # Ctrl-C: finished work is kept, a rerun resumes

OUTCOMES = ("done", "failed", "refused", "skipped", "stopped")


class UnitsIncomplete(MedScopeError):
    """A sweep ended with failed or refused units beyond what the user allowed; carries the
    exit code (``pipelines.support.jobs.guarded`` returns it)."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


class Accounting:
    """Outcome counts per (model, condition), with failure reasons and refused endpoints."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], Counter] = {}
        self.reasons: dict[tuple[str, str], Counter] = {}
        self.refusals: dict[tuple[str, str], dict] = {}  # (model, endpoint) -> {n, fix}

    def add(self, model: str, condition: str, outcome: str, reason: str | None = None,
            endpoint: str | None = None, fix: str | None = None, n: int = 1) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown unit outcome {outcome!r}")
        key = (model, condition)
        self.counts.setdefault(key, Counter())[outcome] += n
        if outcome == "failed":
            self.reasons.setdefault(key, Counter())[reason or "unknown"] += n
        if outcome == "refused":
            r = self.refusals.setdefault((model, endpoint or "?"), {"n": 0, "fix": fix})
            r["n"] += n

    def totals(self) -> dict[str, int]:
        total = Counter()
        for c in self.counts.values():
            total.update(c)
        return {k: total[k] for k in OUTCOMES}

    def to_dict(self) -> dict:
        """What ``sweep.json`` records under ``accounting``."""
        return {
            **self.totals(),
            "failed_by_reason": dict(sum(self.reasons.values(), Counter())),
            "refused_endpoints": [{"model": m, "endpoint": e, **v} for (m, e), v in sorted(self.refusals.items())],
            "by_model_condition": [
                {"model": m, "condition": c, **{k: cnt[k] for k in OUTCOMES},
                 "failed_by_reason": dict(self.reasons.get((m, c), {}))}
                for (m, c), cnt in sorted(self.counts.items())],
        }


def combine(accounts: list[dict]) -> dict | None:
    """Several sweeps' ``to_dict`` accountings as one (benchgen's generation and verification
    calls decide one exit code); None when there is none.

    Parameters
    ----------
    accounts : list of dict
        Accountings as ``Accounting.to_dict`` gives them: the five outcome counts,
        ``failed_by_reason``, ``refused_endpoints`` and ``by_model_condition``.

    Returns
    -------
    dict or None
        The outcome counts summed, failure reasons merged, refused endpoints and per model x
        condition rows concatenated; None when ``accounts`` is empty.
    """
    if not accounts:
        return None
    out = {k: sum(a[k] for a in accounts) for k in OUTCOMES}
    reasons: Counter = Counter()
    for a in accounts:
        reasons.update(a["failed_by_reason"])
    out["failed_by_reason"] = dict(reasons)
    out["refused_endpoints"] = [r for a in accounts for r in a["refused_endpoints"]]
    out["by_model_condition"] = [r for a in accounts for r in a["by_model_condition"]]
    return out


def failure_reason(status: str, error: str | None) -> str:
    """A short reason for a failed unit: its status and the error's leading name
    (``retry_later: APIConnectionError``), so reasons group without the message's details.

    Parameters
    ----------
    status : str
        The unit's status as its worker reported it (``failed``, ``retry_later``, ``done``...).
    error : str or None
        The unit's error text; a ``permanent: HTTP 400: ...`` error keeps the status it carries.

    Returns
    -------
    str
        ``"<status>: <head>"``, the head cut at 60 characters (``no error text`` when empty).
    """
    head = (error or "").split(":", 1)[0].strip()
    if head == "permanent":  # "permanent: HTTP 400: ..." -> the status it carries
        rest = (error or "").split(":", 2)
        head = f"permanent {rest[1].strip()}" if len(rest) > 1 else head
    head = head[:60] or "no error text"
    return f"{status}: {head}"


def allowed_failures(max_failed: float | None, units: int) -> int:
    """How many failed + refused units the user accepts: ``max_failed`` >= 1 is a count, a value
    in (0, 1) a fraction of ``units`` (done + skipped + failed + refused; rounded down); None or 0: none.

    Parameters
    ----------
    max_failed : float or None
        ``--max-failed``: a count (>= 1), a fraction of ``units`` (in (0, 1)), or None / 0 for none.
    units : int
        The units the results should cover (done + skipped + failed + refused).

    Returns
    -------
    int
        The number of failed + refused units accepted.

    Raises
    ------
    MedScopeError
        When ``max_failed`` is negative.
    """
    if not max_failed:
        return 0
    if max_failed < 0:
        raise MedScopeError(f"--max-failed {max_failed}: give a count (3) or a fraction of the units (0.05)")
    return int(max_failed) if max_failed >= 1 else int(max_failed * units)


def exit_code(acc: dict, max_failed: float | None = None) -> int:
    """The exit code an ``Accounting.to_dict()`` decides (module docstring).

    Parameters
    ----------
    acc : dict
        An ``Accounting.to_dict()`` (or ``combine``) accounting; its outcome counts are read.
    max_failed : float or None, optional
        ``--max-failed``: how many failed + refused units are accepted (``allowed_failures``).

    Returns
    -------
    int
        ``EXIT_NO_WORK`` when units failed or were refused and none is done or skipped,
        ``EXIT_UNITS_FAILED`` when more failed or were refused than allowed, else ``EXIT_OK``.
    """
    bad = acc["failed"] + acc["refused"]
    covered = acc["done"] + acc["skipped"] + bad  # the units the results should cover (not: stopped)
    if bad and acc["done"] + acc["skipped"] == 0:
        return EXIT_NO_WORK  # nothing at all to score, whatever --max-failed says
    if bad > allowed_failures(max_failed, covered):
        return EXIT_UNITS_FAILED
    return EXIT_OK


def render(acc: dict, label: str = "units") -> str:
    """The console summary: one line per model x condition, then failure reasons and refusals.

    Parameters
    ----------
    acc : dict
        An ``Accounting.to_dict()`` (or ``combine``) accounting.
    label : str, optional
        What the units are, in the heading line (``"<label> by model x condition:"``).

    Returns
    -------
    str
        The summary lines joined by newlines: a padded table with a total row, one line per
        failure reason (most frequent first), one line per refused endpoint with its fix.
    """
    rows = [["model", "condition", *OUTCOMES]]
    for r in acc["by_model_condition"]:
        rows.append([r["model"], r["condition"], *(str(r[k]) for k in OUTCOMES)])
    rows.append(["total", "", *(str(acc[k]) for k in OUTCOMES)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f"{label} by model x condition:"]
    lines += ["  " + "  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in rows]
    for reason, n in sorted(acc["failed_by_reason"].items(), key=lambda kv: -kv[1]):
        lines.append(f"  failed {n}: {reason}")
    for r in acc["refused_endpoints"]:
        lines.append(f"  refused {r['n']}: model {r['model']} at {r['endpoint']} is not on the items' "
                     f"allow-list; {r['fix']}")
    return "\n".join(lines)


def conclude(summary: dict, max_failed: float | None = None, what: str = "sweep") -> None:
    """Print the accounting on stderr and raise ``UnitsIncomplete`` when it decides a non-zero
    exit code (after the summary has been printed and written).

    Parameters
    ----------
    summary : dict
        The verb's summary; ``summary["accounting"]`` is an ``Accounting.to_dict()``, and its
        ``out`` (or ``episodes``) is named in the error.
    max_failed : float or None, optional
        ``--max-failed``: how many failed + refused units are accepted (``allowed_failures``).
    what : str, optional
        The verb's name, at the head of the error message.

    Raises
    ------
    UnitsIncomplete
        When ``exit_code`` is not ``EXIT_OK``; the error carries that exit code.
    """
    acc = summary["accounting"]
    print(render(acc), file=sys.stderr, flush=True)
    code = exit_code(acc, max_failed)
    if code == EXIT_OK:
        return
    where = summary.get("out") or summary.get("episodes") or ""
    bad = acc["failed"] + acc["refused"]
    if code == EXIT_NO_WORK:
        raise UnitsIncomplete(
            f"{what} did no work: all {bad} unit(s) to run failed ({acc['failed']}) or were refused "
            f"({acc['refused']}); see the reasons above and {where}; fix them and rerun (finished units are kept)",
            code)
    covered = acc["done"] + acc["skipped"] + bad
    raise UnitsIncomplete(
        f"{what}: {acc['failed']} unit(s) failed and {acc['refused']} were refused of "
        f"{covered} (allowed: {allowed_failures(max_failed, covered)}); "
        f"results under {where} are over the {acc['done'] + acc['skipped']} done; rerun to retry the failed ones, or pass "
        f"--max-failed N (or a fraction) to accept them", code)
