"""Benjamini-Hochberg families of the benchmark's tests, declared in a plan file (benchmark-MCQ paper
Methods, "Statistical analysis").

A q-value depends on which tests share its family: the same p = 0.034 is q = 0.102 among 3 tests
and 0.178 among 6. So families are named and listed in a plan before scoring, never formed by
what happens to share a scored run. A plan (YAML)::

    families:
      - name: image_effect_primary
        test: image_effect          # or above_chance
        members:                    # each member: cohort, qtype, model ("*" matches any)
          - {cohort: site_a, qtype: report, model: "*"}
          - {cohort: site_b, qtype: report, model: "*"}

A declared member that matches no test of the run is an error (the family would silently
shrink); a test matched by two families is an error; a test in no declared family gets no q
(``bh_family`` "undeclared"). A thin cell (``medscope.render.thin``) is not tested: it gets no p, is in
no family (``bh_family`` "thin: not tested") and so neither adds to a family's size nor, with a
p of 0 from too few cases, lowers the other members' q. Without a plan, each test kind's tests in the run form one family
named ``run:<test>`` -- the old behaviour, labelled as such. Every family is printed with its size.
"""

from __future__ import annotations

from typing import Literal

import pydantic

from medscope import config as cfgmod
from medscope.config import StrictModel
from medscope.errors import MedScopeError

TESTS = ("above_chance", "image_effect")


class Member(StrictModel):
    cohort: str = "*"
    qtype: str = "*"
    model: str = "*"

    def matches(self, row: dict) -> bool:
        return all(getattr(self, k) in ("*", row[k]) for k in ("cohort", "qtype", "model"))


class Family(StrictModel):
    name: str
    test: Literal["above_chance", "image_effect"]
    members: list[Member] = pydantic.Field(min_length=1)


class FamilyPlan(StrictModel):
    families: list[Family] = pydantic.Field(min_length=1)

    @pydantic.model_validator(mode="after")
    def _unique(self) -> "FamilyPlan":
        names = [f.name for f in self.families]
        if len(set(names)) != len(names):
            raise ValueError("family names must be unique")
        return self


def load_plan(uri: str | None) -> FamilyPlan | None:
    """The BH family plan a ``plan`` option names, or None without one.

    Parameters
    ----------
    uri : str or None
        Path or URI of the plan (YAML); None or empty for no plan.

    Returns
    -------
    FamilyPlan or None
        The validated plan; None when ``uri`` is empty.

    Raises
    ------
    MedScopeError
        When the file is not valid YAML or does not validate as a plan (family names must be unique,
        each family needs a member).

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, "Statistical analysis".
    """
    return None if not uri else cfgmod.load(FamilyPlan, uri)


THIN = "thin: not tested"


def assign_families(rows: list[dict], plan: FamilyPlan | None) -> dict[str, list[int]]:
    """``{family name: indices of its rows}`` (rows: test rows with family = test kind); sets each
    row's ``bh_family``. Raises on a member matching nothing or a row claimed twice.

    Parameters
    ----------
    rows : list of dict
        Test rows, each with ``family`` (the test kind: 'above_chance' or 'image_effect'), ``cohort``,
        ``qtype`` and ``model``, and optionally ``tested`` (False for a thin cell); updated in place with
        ``bh_family`` and ``family_size`` (None and 'undeclared' for a row in no family; None and
        :data:`THIN` for an untested row, which is in no family, so it neither adds to a family's size
        nor lowers another member's q).
    plan : FamilyPlan or None
        The declared families; None forms one family ``run:<test>`` per test kind in the rows.

    Returns
    -------
    dict of str to list of int
        Each family's name and the indices of its rows in ``rows``.

    Raises
    ------
    MedScopeError
        When a declared member matches no test of its kind in the rows, or a row is claimed by two
        families.

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, "Statistical analysis".
    """
    fams: dict[str, list[int]] = {}
    tested = [r.get("tested", True) for r in rows]
    if plan is None:
        for i, r in enumerate(rows):
            if tested[i]:
                fams.setdefault(f"run:{r['family']}", []).append(i)
    else:
        for fam in plan.families:
            idx = [i for i, r in enumerate(rows) if tested[i] and r["family"] == fam.test
                   and any(m.matches(r) for m in fam.members)]
            for m in fam.members:
                if not any(rows[i]["family"] == fam.test and m.matches(rows[i]) for i in range(len(rows))):
                    raise MedScopeError(f"BH family {fam.name}: member {m.model_dump()} matches no {fam.test} test "
                                        "in this run (the family would be smaller than declared)")
            for i in idx:
                if i in {j for v in fams.values() for j in v}:
                    r = rows[i]
                    raise MedScopeError(f"test {r['family']} {r['cohort']}/{r['qtype']}/{r['model']} is in two "
                                        "declared BH families")
            fams[fam.name] = idx
    for name, idx in fams.items():
        for i in idx:
            rows[i]["bh_family"], rows[i]["family_size"] = name, len(idx)
    for r, t in zip(rows, tested):
        r.setdefault("bh_family", "undeclared" if t else THIN)
        r.setdefault("family_size", None)
    return fams


def describe(rows: list[dict]) -> list[str]:
    """One line per family of scored test rows: name, test, size, members -- printed by score and
    the report, so a reader sees what each q was adjusted over.

    Parameters
    ----------
    rows : list of dict
        Scored test rows (mcq_tests), with ``bh_family``, ``family``, ``cohort``, ``qtype`` and ``model``.

    Returns
    -------
    list of str
        One line per family with its members, in order of first appearance; the undeclared tests as
        one line saying they get p only, the thin cells as one line saying they are not tested.
    """
    fams: dict[str, list[dict]] = {}
    for r in rows:
        fams.setdefault(r["bh_family"], []).append(r)
    out = []
    for name, members in fams.items():
        listed = ", ".join(f"{r['cohort']}/{r['qtype']}/{r['model']}" for r in members)
        if name == "undeclared":
            out.append(f"{len(members)} test(s) in no declared BH family: p only, no q: {listed}")
            continue
        if name == THIN:
            out.append(f"{len(members)} thin cell(s) not tested (no p, in no BH family): {listed}")
            continue
        kinds = "/".join(sorted({r["family"] for r in members}))
        out.append(f"BH family {name} ({kinds}): {len(members)} test(s): {listed}")
    return out
