"""The reproduction registry: one YAML file per source paper, every numbered table and figure.

An entry is a table or figure of the paper. Its ``cells`` are the values MedScope derives from
numbers the paper prints (each cell names a function of ``medscope.reproduce.derive`` and its
arguments, printed inputs written as the paper prints them); its ``needs_data`` block says which
cohort, models and commands regenerate what cannot be derived, and why. An entry with neither
is ``qualitative`` (a diagram, related-work table or example images: nothing to compute).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import pydantic
import yaml

from medscope.config import StrictModel
from medscope.errors import MedScopeError

PAPERS_DIR = Path(__file__).parent / "papers"
PAPER_IDS = ("000", "001", "002", "003")
# a paper's key on the command line (--paper counterfactual) -> its id, the number of its file in seeds/
PAPER_KEYS = {"counterfactual": "000", "benchmark_mcq": "001", "paired_modality": "002", "organ_presence": "003"}
PAPER_NAMES = {
    "000": "counterfactual paper",
    "001": "benchmark-MCQ paper",
    "002": "paired-modality paper",
    "003": "organ-presence paper",
}
MINUS = "\u2212"


class Cell(StrictModel):
    id: str = pydantic.Field(description="row / column of the cell as the paper labels it")
    paper: str = pydantic.Field(description="the value as printed: '-0.478', '12.7', '< 0.001', 'Effect'")
    compute: str = pydantic.Field(description="a derivation of medscope.reproduce.derive")
    args: dict = pydantic.Field(default_factory=dict)
    scale: float = pydantic.Field(1.0, description="ours x scale is compared with the printed value (100: percent)")
    note: str = ""


class NeedsData(StrictModel):
    reason: str = pydantic.Field(description="why the printed numbers do not determine the cells")
    cohort: str
    models: str
    commands: list[str] = pydantic.Field(min_length=1)


class Entry(StrictModel):
    id: str = pydantic.Field(description="'Table 5', 'Figure 3', '§5.2' or an unnumbered table's label")
    title: str
    derivation: str = ""
    qualitative: str | None = None  # why there is nothing to compute
    cells: list[Cell] = pydantic.Field(default_factory=list)
    needs_data: NeedsData | None = None

    @pydantic.model_validator(mode="after")
    def _says_how(self):
        if not self.cells and self.needs_data is None and not self.qualitative:
            raise ValueError(f"{self.id}: give derivable cells, a needs_data block, or say why it is qualitative")
        if self.cells and not self.derivation:
            raise ValueError(f"{self.id}: derivable cells need a `derivation` line saying how")
        ids = [c.id for c in self.cells]
        if len(ids) != len(set(ids)):
            raise ValueError(f"{self.id}: duplicate cell ids")
        return self

    @property
    def status(self) -> str:
        if self.cells and self.needs_data:
            return "partly derivable"
        if self.cells:
            return "derivable"
        return "needs data" if self.needs_data else "qualitative"


class Paper(StrictModel):
    paper: Literal["000", "001", "002", "003"]
    title: str
    source: str = pydantic.Field(description="the paper's text file in shared/seeds")
    entries: list[Entry]

    def entry(self, entry_id: str) -> Entry:
        for e in self.entries:
            if norm_id(e.id) == norm_id(entry_id):
                return e
        raise MedScopeError(f"{PAPER_NAMES[self.paper]} has no entry {entry_id!r}; entries: {', '.join(e.id for e in self.entries)}")


def norm_id(entry_id: str) -> str:
    """'table 5', 'Table5', 'T5' -> 'table5'; 'Fig. 2', 'figure 2', 'F2' -> 'figure2'.

    Parameters
    ----------
    entry_id : str
        An entry label as a user or the registry writes it ('Table 5', 'T5', 'Fig. 2', '§5.2').

    Returns
    -------
    str
        The label lower-cased without spaces or dots, with a leading 'fig' / 'f' / 't' before a digit
        spelled out as 'figure' / 'table'; two labels name the same entry when these are equal.
    """
    s = entry_id.lower().replace(" ", "").replace(".", "")
    s = re.sub(r"^(fig|f)(?=\d)", "figure", s)
    s = re.sub(r"^t(?=\d)", "table", s)
    return s


def registry_path(paper_id: str) -> Path:
    """The shipped registry file of one paper.

    Parameters
    ----------
    paper_id : str
        The paper's id, "000" to "003" (not checked here).

    Returns
    -------
    Path
        ``papers/<paper key>.yaml`` beside this module (``PAPER_KEYS``).
    """
    return PAPERS_DIR / f"{next(k for k, v in PAPER_KEYS.items() if v == paper_id)}.yaml"


def load(paper_id: str, path: str | Path | None = None) -> Paper:
    """The registry of one paper (``path``: another file of the same model, e.g. in a test).

    Parameters
    ----------
    paper_id : str
        The paper's id, one of ``PAPER_IDS`` ("000" to "003").
    path : str or Path, optional
        The YAML file to read instead of the shipped ``registry_path(paper_id)``.

    Returns
    -------
    Paper
        The validated registry.

    Raises
    ------
    MedScopeError
        When ``paper_id`` is not a paper, the file cannot be read or parsed as YAML, or it does not
        validate as a ``Paper`` (the message lists each field's problem).
    """
    if paper_id not in PAPER_IDS:
        raise MedScopeError(f"no paper {paper_id!r}; papers: {', '.join(PAPER_IDS)}")
    p = Path(path) if path else registry_path(paper_id)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
        return Paper.model_validate(data)
    except (OSError, yaml.YAMLError) as err:
        raise MedScopeError(f"{p}: {err}") from None
    except pydantic.ValidationError as err:
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in err.errors())
        raise MedScopeError(f"{p}: {problems}") from None


def printed(text: str) -> tuple[float, float]:
    """A number as printed -> (value, half a unit of its last printed digit): the interval the
    true value lies in given the paper's rounding. '0.110' -> (0.11, 0.0005); '12.7' -> (12.7, 0.05);
    '+0.288' and the typographic minus are read too; '1,115' -> (1115, 0.5).

    Parameters
    ----------
    text : str
        A number as the paper prints it; commas, spaces and a trailing '%' are dropped, the typographic
        minus is read as '-'.

    Returns
    -------
    value : float
        The number.
    half_unit : float
        Half a unit of the last printed digit (0.5 for an integer).

    Raises
    ------
    MedScopeError
        When ``text`` is not a number.
    """
    s = str(text).strip().replace(MINUS, "-").replace(",", "").replace(" ", "").rstrip("%")
    try:
        value = float(s)
    except ValueError:
        raise MedScopeError(f"not a printed number: {text!r}") from None
    decimals = len(s.split(".", 1)[1]) if "." in s else 0
    return value, 0.5 * 10.0 ** (-decimals)


def bound(text: str) -> tuple[str, float] | None:
    """'< 0.001' -> ('<', 0.001); '>= 0.5' -> ('>=', 0.5); a plain number -> None.

    Parameters
    ----------
    text : str
        A printed cell value, possibly a comparison: '<', '<=', '>', '>=', '≤' or '≥' then a printed
        number.

    Returns
    -------
    tuple of (str, float) or None
        The operator ('≤' / '≥' written '<=' / '>=') and the bound's value; None when ``text`` is not a
        bound.

    Raises
    ------
    MedScopeError
        When the text after the operator is not a printed number.
    """
    m = re.fullmatch(r"\s*(<=|>=|<|>|≤|≥)\s*(.+)", str(text))
    if not m:
        return None
    op = {"≤": "<=", "≥": ">="}.get(m.group(1), m.group(1))
    return op, printed(m.group(2))[0]
