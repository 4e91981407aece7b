"""Report sections of a paired-modality scored run: the paper's Table 1 layout (rates with exact
95% intervals, the higher of the two settings in bold), the exact McNemar tests, judge agreement,
and a figure of the shift from photo only to photo + radiograph (paired-modality paper Table 1, Figure 3)."""

from __future__ import annotations

import io
import math


from medscope.io import records, safe_text, storage
from medscope.protocols.paired_modality import tables
from medscope.protocols.paired_modality.manifest import PHOTO_TYPES
from medscope.protocols.paired_modality.scoring import METRICS, SETTING_LABELS, SETTINGS
from medscope.render import thin
from medscope.render.document import Image, Para, Table

SHORT = {"fp_rate": "FP", "fn_rate": "FN", "any_rate": "Any"}


def _cell(r: dict | None, bold: bool) -> str:
    if r is None:
        return "–"
    text = f"{100 * r['value']:.1f} ({100 * r['ci_low']:.1f}–{100 * r['ci_high']:.1f})"
    # n: the photographs the judge labelled in this cell (its unjudged ones are not in it)
    return thin.cell(f"**{text}**" if bold else text, r["n_cases"])


def table1(metrics: list[dict]) -> Table:
    """Rows: model x setting; columns: matched FP / FN / Any, mismatched FP / FN / Any. Bold: the
    higher rate of the two settings within a model, photo type and metric (ties: neither).

    Parameters
    ----------
    metrics : list of dict
        metrics rows of the scored run (``scoring.rate_rows``).

    Returns
    -------
    Table
        Error rates in % with exact 95% intervals and each cell's n, thin cells marked; '–' where a cell
        has no rate.

    References
    ----------
    .. [1] paired-modality paper, Table 1.
    """
    at = {(r["model"], r["condition"], r["breakdown"].split("=", 1)[1], r["metric"]): r for r in metrics}
    models = sorted({r["model"] for r in metrics})
    rows = []
    for model in models:
        for setting in SETTINGS:
            cells = [model, SETTING_LABELS[setting]]
            for pt in PHOTO_TYPES:
                for metric in METRICS:
                    mine = at.get((model, setting, pt, metric))
                    other = at.get((model, SETTINGS[1 - SETTINGS.index(setting)], pt, metric))
                    bold = mine is not None and other is not None and mine["value"] > other["value"]
                    cells.append(_cell(mine, bold))
            rows.append(cells)
    headers = ["Model", "Setting"] + [f"{pt.capitalize()} {SHORT[m]}" for pt in PHOTO_TYPES for m in METRICS]
    return Table(headers, rows, caption="Per-photograph error rates (%) with exact (Clopper–Pearson) 95% CIs; n: "
                 "photographs judged in the cell. " + thin.note())


def mcnemar_table(tests: list[dict]) -> Table:
    """The exact McNemar tests, one row per model (or pool), photo type and metric.

    Parameters
    ----------
    tests : list of dict
        McNemar rows (``scoring.mcnemar_rows``).

    Returns
    -------
    Table
        Model (or 'pooled (models)'), photo type, metric, photographs, the rates photo only -> paired in %,
        the discordant counts b / c and the exact p ('–' when NaN).

    References
    ----------
    .. [1] paired-modality paper, §5.2.
    """
    rows = [[f"pooled ({t['pooled_models']})" if t.get("pooled_models") else t["model"], t["photo_type"], SHORT[t["metric"]], str(t["n"]),
             f"{100 * t['rate_before']:.1f} → {100 * t['rate_after']:.1f}", f"{t['b']} / {t['c']}",
             "–" if math.isnan(t["p_value"]) else f"{t['p_value']:.3g}"] for t in tests]
    return Table(["Model", "Photo type", "Metric", "Photos", "Photo only → paired (%)",
                  "Discordant (only photo-only / only paired)", "Exact McNemar p"], rows)


def cells_table(cells: list[dict]) -> Table:
    """Per model x setting x photo type: replies, extraction failures (not judged, not scored)
    and replies with findings the judge could not verify.

    Parameters
    ----------
    cells : list of dict
        Cell counts (``scoring.cell_counts``), as recorded in run.json.

    Returns
    -------
    Table
        One row per cell: model, setting, photo type, replies, extraction failures, unjudged replies and
        unverified replies (with their statement count).
    """
    rows = [[c["model"], SETTING_LABELS[c["setting"]], c["photo_type"], str(c["episodes"]), str(c["extraction_failed"]),
             str(c.get("unjudged", "–")), f"{c['unverified']} ({c['unverified_findings']} statements)"] for c in cells]
    return Table(["Model", "Setting", "Photo type", "Replies", "Extraction failed", "Unjudged", "Unverified findings"], rows,
                 caption="Replies per cell: extraction failures and replies the judge left unlabelled are left out of "
                         "every rate; unverified findings are asserted photo findings the judge could not match to a "
                         "known finding or the caption")


FLIPS_SHOWN = 6  # addition: how many flipped readings the report quotes (paired-modality paper Figures 1 and 4 show a few)


def flipped_readings(labels: list[dict], limit: int = FLIPS_SHOWN) -> list[dict]:
    """The same model on the same photograph, labelled differently with and without the radiograph
    (paired-modality paper Figures 1 and 4): FP or FN in one setting and not the other. Mismatched photographs
    turning FP with the radiograph first, the paper's failure.

    Parameters
    ----------
    labels : list of dict
        labels rows (``scoring.label_episodes``); rows the first judge did not label are left out.
    limit : int, optional
        Most flips returned (default 6).

    Returns
    -------
    list of dict
        Up to ``limit`` flips: ``model``, ``item_id``, ``photo_type``, ``label`` ('FP' or 'FN'),
        ``direction`` ('gained with radiograph' or 'lost with radiograph') and the extracted text of each
        setting (``photo_only``, ``paired``); mismatched before matched, FP before FN, gained before lost.

    References
    ----------
    .. [1] paired-modality paper, Figures 1 and 4.
    """
    by = {(r["model"], r["item_id"], r["setting"]): r for r in labels if r.get("fp") is not None}
    out = []
    for (model, item, setting), alone in sorted(by.items()):
        paired = by.get((model, item, "paired"))
        if setting != "photo_only" or paired is None:
            continue
        for col in ("fp", "fn"):
            if bool(alone[col]) != bool(paired[col]):
                out.append({"model": model, "item_id": item, "photo_type": alone["photo_type"], "label": col.upper(),
                            "direction": "gained with radiograph" if paired[col] else "lost with radiograph",
                            "photo_only": alone["extracted"], "paired": paired["extracted"]})
    out.sort(key=lambda f: (f["photo_type"] != "mismatched", f["label"] != "FP", f["direction"] != "gained with radiograph"))
    return out[:limit]


def flips_table(flips: list[dict]) -> Table:
    """The flipped readings, quoting the model's words in each setting (one line, at most 240 characters).

    Parameters
    ----------
    flips : list of dict
        Flipped readings (:func:`flipped_readings`).

    Returns
    -------
    Table
        One row per flip: model, photograph, label, change and the two quotes.

    References
    ----------
    .. [1] paired-modality paper, Figures 1 and 4.
    """
    quote = lambda t: (t or "").replace("\n", " ")[:240]  # noqa: E731 - one-line cell formatter
    return Table(["Model", "Photograph", "Label", "Change", "Photo only: the model's words", "Photo + radiograph: the model's words"],
                 [[f["model"], f["item_id"], f["label"], f["direction"], quote(f["photo_only"]), quote(f["paired"])]
                  for f in flips], caption="Flipped readings: same model, same photograph")


def shift_figure(metrics: list[dict]) -> bytes:
    """FP and FN rates (rows) on matched and mismatched photographs (columns), photo only ->
    paired, one line per model with its exact intervals.

    Parameters
    ----------
    metrics : list of dict
        metrics rows of the scored run (``scoring.rate_rows``); a model is drawn in a panel only when it has
        both settings' rate.

    Returns
    -------
    bytes
        The 2 x 2 figure as PNG (rates in %, 95% intervals as error bars).

    References
    ----------
    .. [1] paired-modality paper, Figure 3.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    at = {(r["model"], r["condition"], r["breakdown"].split("=", 1)[1], r["metric"]): r for r in metrics}
    models = sorted({r["model"] for r in metrics})
    fig, axes = plt.subplots(2, 2, figsize=(8, 6), sharey=True)
    for i, metric in enumerate(("fp_rate", "fn_rate")):
        for j, pt in enumerate(PHOTO_TYPES):
            ax = axes[i][j]
            for k, model in enumerate(models):
                pts = [at.get((model, s, pt, metric)) for s in SETTINGS]
                if any(p is None for p in pts):
                    continue
                x = [0 + 0.03 * k, 1 + 0.03 * k]
                v = [100 * p["value"] for p in pts]
                err = [[100 * (p["value"] - p["ci_low"]) for p in pts], [100 * (p["ci_high"] - p["value"]) for p in pts]]
                ax.errorbar(x, v, yerr=err, marker="o", capsize=3, label=model)
            ax.set_xticks([0, 1], [SETTING_LABELS[s] for s in SETTINGS])
            ax.set_xlim(-0.3, 1.5)
            ax.set_title(f"{pt} photographs: {SHORT[metric]}")
            ax.set_ylabel("% of photographs")
    axes[0][0].legend(fontsize=7, loc="best")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def _parquet_rows(uri: str) -> list[dict]:
    return records.read_parquet(uri).to_pylist() if storage.exists(uri) else []


def sections(scored_run: str) -> list[tuple[str, list]]:
    """(title, blocks) of the report for a scored run folder.

    Parameters
    ----------
    scored_run : str
        The scored run's folder (``medscope score`` output: metrics, run.json, and when written the McNemar,
        labels and agreement tables).

    Returns
    -------
    list of tuple of (str, list)
        One (title, blocks) section: the method note, Table 1, the shift figure, the McNemar tests, judge
        agreement, extraction counts, the cell counts and the flipped readings (each when there is data).

    References
    ----------
    .. [1] paired-modality paper, §4.2, §5, Table 1, Figures 1, 3 and 4.
    """
    metrics = records.read_table("metrics", storage.join(scored_run, tables.METRICS)).to_pylist()
    tests = _parquet_rows(storage.join(scored_run, tables.MCNEMAR))
    labels = _parquet_rows(storage.join(scored_run, tables.LABELS))
    run = safe_text.read_json_object(storage.join(scored_run, tables.RUN))
    blocks: list = [
        Para("Extract-then-judge (paired-modality paper §4.2): only each reply's PHOTO FINDINGS section is judged against the "
             "photograph's ground-truth caption. FP: a clinically significant abnormality the photograph does not "
             "contain; FN: one it contains but the reply misses; Any: at least one of them. "
             f"Judge(s): {', '.join(run['judges'])}; judge prompt {run['judge_prompt_version']}; "
             f"model prompt {run['prompt_version']}. Labelled episodes: {run['labelled']}, unjudged: {run['unjudged']}."),
        table1(metrics),
        Image(shift_figure(metrics), "pairs_shift.png", "photo only to photo + radiograph"),
    ]
    if tests:
        left = run.get("not_pooled") or {}
        blocks += [Para("Exact McNemar tests, photo only vs photo + radiograph on the same photographs, per model "
                        f"and pooled over the subject models: {', '.join(run.get('pooled_models') or []) or 'none'}"
                        + (f" (left out: {', '.join(f'{m}, {why}' for m, why in sorted(left.items()))})" if left else "")
                        + "."), mcnemar_table(tests)]
    if storage.exists(storage.join(scored_run, tables.AGREEMENT)):
        k = safe_text.read_json_object(storage.join(scored_run, tables.AGREEMENT))
        blocks.append(Para(f"Judge agreement ({' vs '.join(k['judges'])}, {k['n']} replies): Cohen's kappa "
                           + "; ".join(f"{SHORT.get(c + '_rate', c)} {k[c]['kappa']:.2f} (agreement {k[c]['agreement']:.2f})"
                                       for c in ("fp", "fn") if c in k)))
    if labels:
        methods: dict[str, int] = {}
        for r in labels:
            methods[r["extraction_method"]] = methods.get(r["extraction_method"], 0) + 1
        blocks.append(Para("Extraction: " + ", ".join(f"{k} {v}" for k, v in sorted(methods.items()))
                           + ". An extraction failure (no photo section could be isolated) is never judged and never "
                             "counted as \"no finding\"."))
    if run.get("cells"):
        blocks.append(cells_table(run["cells"]))
        if run.get("unverified"):
            blocks.append(Para(f"The judge could not verify asserted photo findings in {run['unverified']} replies: an "
                               "offline rule judge only recognises findings the manifest names, so these FP rates may "
                               "be too low. Use a model judge (score --judge NAME "
                               "--judge-models configs/models/pairs-judge.yaml)."))
    flips = flipped_readings(labels)
    if flips:
        blocks += [Para("Flipped readings (paired-modality paper Figures 1 and 4): the same photograph described differently by "
                        "the same model with and without the radiograph."), flips_table(flips)]
    return [("Paired modality: photo findings with and without a radiograph (paired-modality paper)", blocks)]
