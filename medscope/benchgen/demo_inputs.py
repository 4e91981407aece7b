"""The inputs of the benchmark-MCQ paper's embedded demo: two phantom CT cohorts with liver lesions,
the shipped liver schema approved at both checkpoints, and the build settings of each cohort.

Only data is made here; the builds themselves (a Ray sweep of generation calls) and the loopback
question writer are the ``benchgen`` verb's (``pipelines/benchgen.py``): ``medscope.testing`` already
imports this package, so the loopback server cannot be started from it.
"""

from __future__ import annotations

import shutil

from medscope.benchgen import schema as schemamod
from medscope.benchgen.questions import REPORT_PROMPT
from medscope.io import storage

DEMO_CASES = 6
DEMO_CASES_B = 3  # the second phantom cohort: small, so the demo's added time stays small
DEMO_SCHEMA = "liver"
# both cohorts in one matched group, generated identically, so Table 3 compares them
DEMO_MATCHED_GROUP = "phantom_liver"
DEMO_APPROVER = "demo (automatic; a clinician approves a real cohort)"


def write_demo_cohorts(out: str, n_cases: int = DEMO_CASES,
                       n_cases_b: int = DEMO_CASES_B) -> list[tuple[str, dict, str]]:
    """Write the demo's two phantom cohorts under ``out``.

    Parameters
    ----------
    out : str
        Folder URI; the cohorts go to ``<out>/cohort`` and ``<out>/cohort_b``.
    n_cases : int, optional
        Studies of the first cohort (seed 0, a public imaging source).
    n_cases_b : int, optional
        Studies of the second cohort (seed 1, the same case ids, a private imaging source).

    Returns
    -------
    list of (str, dict, str)
        Per cohort, in build order: its name, what :func:`medscope.benchgen.phantom.phantom_cohort`
        wrote (``reports`` and ``volumes`` URIs among it), and its imaging source.

    References
    ----------
    .. [1] benchmark-MCQ paper
    """
    # imported here: the phantom pulls in scipy.ndimage, which no other benchgen verb needs at start
    from medscope.benchgen.phantom import phantom_cohort

    return [("phantom_liver_ct", phantom_cohort(storage.join(out, "cohort"), n_cases=n_cases), "public"),
            ("phantom_liver_ct_b", phantom_cohort(storage.join(out, "cohort_b"), n_cases=n_cases_b, seed=1),
             "private")]


def write_approved_demo_schema(out: str) -> str:
    """Copy the shipped liver schema into ``out`` and approve it at every checkpoint.

    The demo stands in for the clinician, so the approval names itself as automatic.

    Parameters
    ----------
    out : str
        Folder URI on the local filesystem (the shipped YAML is copied with :func:`shutil.copyfile`).

    Returns
    -------
    str
        URI of the approved schema, ``<out>/liver_schema.yaml``.

    References
    ----------
    .. [1] benchmark-MCQ paper
    """
    schema_uri = storage.join(out, f"{DEMO_SCHEMA}_schema.yaml")
    shutil.copyfile(schemamod.shipped_path(DEMO_SCHEMA), schema_uri)
    for checkpoint in schemamod.CHECKPOINTS:
        schemamod.approve(schema_uri, checkpoint, DEMO_APPROVER, REPORT_PROMPT)
    return schema_uri


def demo_build_settings(cohorts: list[tuple[str, dict, str]], schema_uri: str, build_out: str,
                        endpoint: str, generator: dict) -> list[dict]:
    """The ``benchgen build`` settings of each demo cohort, all into one build folder.

    Parameters
    ----------
    cohorts : list of (str, dict, str)
        What :func:`write_demo_cohorts` returned.
    schema_uri : str
        The approved schema (:func:`write_approved_demo_schema`).
    build_out : str
        The one build folder; every cohort after the first is appended to it.
    endpoint : str
        The question writer's URL: the only endpoint allowed to receive the (private) report text.
    generator : dict
        The question writer's model entry.

    Returns
    -------
    list of dict
        One mapping of ``benchgen build`` keys per cohort, in build order; the reports are private
        and every key the rules keep is verified by the model (``verify: llm``).

    References
    ----------
    .. [1] benchmark-MCQ paper
    """
    return [{"reports": cohort["reports"], "volumes": cohort["volumes"], "schema": schema_uri,
             "out": build_out, "cohort": name, "private": True, "imaging_source": source,
             "matched_group": DEMO_MATCHED_GROUP, "append": n > 0, "endpoint_allowlist": [endpoint],
             "generator_entry": generator, "verify": "llm"}
            for n, (name, cohort, source) in enumerate(cohorts)]


def demo_totals(per_cohort: dict) -> dict:
    """Questions per type and studies built, summed over the cohorts of one build.

    Parameters
    ----------
    per_cohort : dict
        A build summary's ``cohorts``: cohort name -> that cohort's summary (``items`` per
        question type, ``studies_built``).

    Returns
    -------
    dict
        ``items`` (``rads`` and ``report`` question counts) and ``studies_built``.
    """
    return {"items": {q: sum(c["items"][q] for c in per_cohort.values()) for q in ("rads", "report")},
            "studies_built": sum(c["studies_built"] for c in per_cohort.values())}
