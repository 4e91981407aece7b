"""Cost matrices (counterfactual paper §3.4, Table 2 and the four alternatives of §5.5) as validated configs.

A matrix has three rows of rewards (answerable views, views whose finding is absent, degraded
views) by four outcomes (correct, wrong / claims the finding, refer, clarify), plus the rules
around it: the box bonus, the critical-miss penalty, the unparseable score and the tool cost.
The files live in ``configs/cost_matrices/<name>.yaml``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pydantic

from medscope import config as cfgmod
from medscope.config import StrictModel
from medscope.errors import MedScopeError

CONFIG_DIR = Path(cfgmod.shipped("cost_matrices"))
DEFAULT = "table2"


class Row(StrictModel):
    correct: float
    wrong: float
    wrong_critical: float | None = None  # only the answerable row may name it
    refer: float
    clarify: float


class CostMatrix(StrictModel):
    name: str
    description: str = ""
    answerable: Row  # original, random removal, unmatched control, insertion (finding present)
    absent: Row  # target removal, natural negative (finding absent; identical by design)
    degraded: Row  # expected: clarify; a lesion-present answer is the correct one on a lesion case
    box_bonus: float = 0.5
    iou_threshold: float = pydantic.Field(0.3, gt=0.0, le=1.0)
    max_box_area_frac: float = pydantic.Field(0.5, gt=0.0, le=1.0)
    unparseable: float = -1.0
    tool_call_cost: float = pydantic.Field(0.05, ge=0.0)
    free_tool_calls: int = pydantic.Field(1, ge=0)

    @pydantic.model_validator(mode="after")
    def _critical_only_where_meant(self):
        if self.answerable.wrong_critical is None:
            raise ValueError("answerable.wrong_critical is required (penalty for a missed critical finding)")
        for row in ("absent", "degraded"):
            if getattr(self, row).wrong_critical is not None:
                raise ValueError(f"{row}.wrong_critical is not used; the critical penalty applies to answerable views")
        return self


def available() -> list[str]:
    """Names of the cost matrices shipped in configs/cost_matrices/ (table2 first).

    Returns
    -------
    list of str
        The names, ``table2`` first, then alphabetical.
    """
    names = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))
    return sorted(names, key=lambda n: (n != DEFAULT, n))


def load(name_or_path: str = DEFAULT) -> CostMatrix:
    """A cost matrix by name (``table2``, ``wrong_1`` ...) or by YAML path / URI.

    Parameters
    ----------
    name_or_path : str, optional
        A shipped matrix's name, or a path / URI of a YAML file (it holds a path separator, ends in
        ``.yaml`` / ``.yml`` or holds ``://``). Default ``table2``.

    Returns
    -------
    CostMatrix
        The validated matrix.

    Raises
    ------
    MedScopeError
        When no shipped matrix has the name, or the file's ``name`` differs from its file name.

    References
    ----------
    .. [1] counterfactual paper, §3.4, Table 2; §5.5.
    """
    if os.sep in name_or_path or name_or_path.endswith((".yaml", ".yml")) or "://" in name_or_path:
        return cfgmod.load(CostMatrix, name_or_path)
    path = CONFIG_DIR / f"{name_or_path}.yaml"
    if not path.exists():
        raise MedScopeError(f"no cost matrix {name_or_path!r}; available: {', '.join(available())}")
    matrix = cfgmod.load(CostMatrix, str(path))
    if matrix.name != name_or_path:
        raise MedScopeError(f"{path}: name {matrix.name!r} does not match the file name")
    return matrix


def load_all() -> list[CostMatrix]:
    """Every shipped cost matrix, in :func:`available`'s order.

    Returns
    -------
    list of CostMatrix
        The validated matrices.

    Raises
    ------
    MedScopeError
        When a shipped file's ``name`` differs from its file name.
    """
    return [load(n) for n in available()]
