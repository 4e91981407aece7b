"""The standard-VQA report section (counterfactual paper §5.6): the paper's Table 16 from a scored
run's metrics table."""

from __future__ import annotations

from medscope.io import layout, records
from medscope.render import thin
from medscope.render.document import Section, Table


def report_sections(scored_run: str) -> list[Section]:
    """The report's sections for one scored standard-VQA run.

    Parameters
    ----------
    scored_run : str
        Folder (local path or ``s3://`` URI) of a run ``medscope score`` wrote for this protocol.

    Returns
    -------
    list of Section
        One section holding Table 16.
    """
    metrics = records.read_table("metrics", layout.ScoredRun(scored_run).metrics).to_pylist()
    return [Section("Standard medical VQA (Table 16)", [table16(metrics)])]


def table16(metrics: list[dict]) -> Table:
    """Closed / open / all accuracy per model (rows) and source (columns), as the paper's Table 16.

    Parameters
    ----------
    metrics : list of dict
        ``metrics`` rows of a scored standard-VQA run (breakdown ``source=<name>``).

    Returns
    -------
    Table
        One row per model (condition), one column per source; each cell "closed / open / all"
        accuracy to three decimals ("–" when missing), each header with the source's image count.

    References
    ----------
    .. [1] counterfactual paper, §5.6, Table 16.
    """
    cell: dict[tuple, dict] = {}
    for r in metrics:
        source = r["breakdown"].split("=", 1)[1]
        cell.setdefault((r["model"], r["condition"], source), {})[r["metric"]] = r
    sources = sorted({k[2] for k in cell})
    models = sorted({k[:2] for k in cell})

    def fmt(c, metric):
        r = (c or {}).get(metric)
        return "–" if r is None or r["value"] is None else f"{r['value']:.3f}"

    rows = [[f"{m} ({cond})"] + [" / ".join(fmt(cell.get((m, cond, s)), k) for k in
                                             ("accuracy_closed", "accuracy_open", "accuracy_all")) for s in sources]
            for m, cond in models]
    n = {s: max((r["n_cases"] for r in metrics if r["breakdown"] == f"source={s}" and r["metric"] == "accuracy_all"),
                default=0) for s in sources}
    return Table(headers=["model"] + [thin.cell(s, n[s]) for s in sources], rows=rows,
                 caption="Closed / open / all accuracy; closed by yes/no or exact match, open correct when every "
                         "answer token is in the reply; n: images per source. Intervals are in metrics.parquet. "
                         + thin.note())
