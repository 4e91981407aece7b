"""The benchmark's report sections in the benchmark-MCQ paper's layout: Tables 1-4, Supplementary Table 1, Fig. 2."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from medscope.io import layout, records, safe_text
from medscope.render import thin
from medscope.render.document import Image, Para, Table
from medscope.stats.bootstrap import format_p

QTYPES = (("rads", "RADS-style"), ("report", "Report-derived"))


def _pm(v, lo, hi, signed=False) -> str:
    if v is None or pd.isna(v):
        return "–"
    s = f"{v:+.3f}" if signed else f"{v:.3f}"
    return s if lo is None or pd.isna(lo) else f"{s} ± {(hi - lo) / 2:.3f}"


def p_text(p, n_boot: int, sides: int = 1, family_size=None) -> str:
    """A bootstrap p (or its BH q) for a table: at the resampling bound it is "< k/B", never 0.

    A one-sided bootstrap p is the share of B resamples on the far side of zero, so its smallest
    non-zero value is 1/B and p = 0 means p < 1/B; a two-sided p (twice the smaller tail) is
    bounded by 2/B. A q of 0 comes from such a p; BH multiplies p by at most the family size m, so
    it is printed as "< (k·m)/B".

    Parameters
    ----------
    p : float or None
        The p- or q-value; None or NaN prints as "–" (a thin cell is not tested).
    n_boot : int
        Number of resamples B.
    sides : int, optional
        1 for a one-sided p (Family 1, TOST), 2 for a two-sided one (Family 2's Δ != 0).
    family_size : int or None, optional
        m, for a q-value; None for a p-value.

    Returns
    -------
    str
        "–", "< k/B" at the bound, else p to three decimals (``.1e`` below 0.001).

    References
    ----------
    .. [1] benchmark-MCQ paper, Methods, "Statistics and reproducibility" (B = 10,000 for the tests).
    """
    if p is None or pd.isna(p):
        return "–"
    if p <= 0.0:
        m = 1 if family_size is None or pd.isna(family_size) else int(family_size)
        return f"< {sides * m}/{int(n_boot)}"
    return format_p(p, n_boot)


def _pq(p, q, b, sides=1, m=None) -> str:
    return "–" if p is None or pd.isna(p) else f"{p_text(p, b, sides)} / {p_text(q, b, sides, m or 1)}"


def _fam(r) -> str:
    name = r.get("bh_family") or "run"
    size = r.get("family_size")
    return name if size is None or pd.isna(size) else f"{name} ({int(size)})"


def _metric(m: pd.DataFrame, cohort, qtype, model, cond, metric) -> pd.Series | None:
    sel = m[(m["test_set"] == cohort) & (m["breakdown"] == f"qtype={qtype}") & (m["model"] == model)
            & (m["condition"] == cond) & (m["metric"] == metric)]
    return None if sel.empty else sel.iloc[0]


def _valid_n(scores: pd.DataFrame | None) -> dict:
    """(cohort, qtype, model) -> valid sighted answers: the n of a Table 1 cell."""
    if scores is None or scores.empty:
        return {}
    v = scores[(scores["condition"] == "sighted") & scores["valid"]]
    return v.groupby(["cohort", "qtype", "model"]).size().to_dict()


def table1(m: pd.DataFrame, items: pd.DataFrame, scores: pd.DataFrame | None = None) -> Table:
    """Table 1: zero-shot sighted accuracy per model and cohort, each question type with its random baseline.

    Parameters
    ----------
    m : pandas.DataFrame
        metrics rows of the scored run (``scoring.metrics_rows``).
    items : pandas.DataFrame
        The mcq_items of the run's builds (cases and questions per cohort).
    scores : pandas.DataFrame or None, optional
        mcq_scores rows; the valid sighted answers give each cell's n (none shown without them).

    Returns
    -------
    Table
        One column per cohort: case and question counts, then per question type the random baseline and
        each model's accuracy ± half-width of its 95 % interval, thin cells marked.

    References
    ----------
    .. [1] benchmark-MCQ paper, Table 1.
    """
    cohorts = sorted(items["cohort"].unique())
    n_valid = _valid_n(scores)
    models = sorted(m.loc[(m["metric"] == "accuracy") & (m["condition"] == "sighted"), "model"].unique())
    rows = [["Cases", *[str(items.loc[items["cohort"] == c, "case_id"].nunique()) for c in cohorts]],
            ["Questions (RADS / Report-derived)",
             *[" / ".join(str(int(((items["cohort"] == c) & (items["qtype"] == q)).sum())) for q, _ in QTYPES)
               for c in cohorts]]]
    for q, label in QTYPES:
        rows.append([f"**({'a' if q == 'rads' else 'b'}) {label} questions**", *[""] * len(cohorts)])
        base = [_metric(m, c, q, "random", "-", "random_baseline") for c in cohorts]
        rows.append(["Random baseline", *["–" if r is None else f"{r['value']:.3f}" for r in base]])
        for model in models:
            cells = [(c, _metric(m, c, q, model, "sighted", "accuracy")) for c in cohorts]
            rows.append([model, *["–" if r is None else thin.cell(_pm(r["value"], r["ci_low"], r["ci_high"]),
                                                                  n_valid.get((c, q, model)), r["n_cases"])
                                  for c, r in cells]])
    return Table(["", *cohorts], rows, "Table 1. Zero-shot accuracy (sighted) over valid responses: mean ± half-width "
                 "of the 95% case-clustered bootstrap interval (n valid answers, cases); random baseline = mean of 1/k "
                 "over the pool. " + thin.note())


def _paired_n(scores: pd.DataFrame | None) -> dict:
    """(cohort, qtype, model) -> questions valid in both the sighted and the blind run: the n of a
    Table 2 or Table 3 cell."""
    if scores is None or scores.empty:
        return {}
    from medscope.protocols.benchmark_mcq.scoring import paired_frame

    return {k: len(paired_frame(g)) for k, g in scores.groupby(["cohort", "qtype", "model"], sort=True)}


def _paired_cell(r, n_items, signed=False) -> str:
    """A Table 2 / Table 3 figure ± the half-width of its interval, with the questions and cases it is over."""
    if r is None:
        return "–"
    return thin.cell(_pm(r["value"], r["ci_low"], r["ci_high"], signed), n_items, r["n_cases"])


def table2(m: pd.DataFrame, scores: pd.DataFrame | None = None) -> Table:
    """Table 2: the blind ablation, blind accuracy and Δ = sighted - blind per cohort, question type and
    model.

    Parameters
    ----------
    m : pandas.DataFrame
        metrics rows of the scored run (``accuracy_paired`` and ``delta``).
    scores : pandas.DataFrame or None, optional
        mcq_scores rows; the questions valid in both runs give each cell's n (cases only without them).

    Returns
    -------
    Table
        One row per cohort and question type with any figure; two columns (blind, Δ, each ± half-width
        with its questions and cases, thin cells marked) per model.

    References
    ----------
    .. [1] benchmark-MCQ paper, Table 2.
    """
    d = m[m["metric"] == "delta"]
    models = sorted(d["model"].unique())
    n_paired = _paired_n(scores)
    rows = []
    for cohort in sorted(d["test_set"].unique()):
        for q, label in QTYPES:
            cells = []
            for model in models:
                n = n_paired.get((cohort, q, model))
                cells += [_paired_cell(_metric(m, cohort, q, model, "blind", "accuracy_paired"), n),
                          _paired_cell(_metric(m, cohort, q, model, "sighted", "delta"), n, signed=True)]
            if any(c != "–" for c in cells):
                rows.append([cohort, label, *cells])
    headers = ["Dataset", "Q. type", *[f"{m_} {h}" for m_ in models for h in ("blind", "Δ")]]
    return Table(headers, rows, "Table 2. Blind ablation on the questions valid in both runs: blind accuracy ± "
                 "half-width of its 95% case-clustered bootstrap interval; Δ = sighted − blind ± half-width of the 95% "
                 "case-clustered paired bootstrap interval; (n questions valid in both runs, cases). " + thin.note())


def identical_generation(cohorts, build_records: dict[str, dict]) -> tuple[bool, str]:
    """Whether the cohorts' build records show identical generation (same approved schema and
    wording, extractor, question writer, prompt, seed, montage geometry), and why not.

    Parameters
    ----------
    cohorts : list of str
        The cohorts of one matched group.
    build_records : dict of str to dict
        Each cohort's build record (``builds.build_cohorts``), holding its ``generation_record``.

    Returns
    -------
    same : bool
        True when every cohort has a generation record and all are equal.
    why : str
        The cohorts with no record, or the keys that differ; empty when ``same``.

    References
    ----------
    .. [1] benchmark-MCQ paper, Table 3.
    """
    recs = {c: (build_records.get(c) or {}).get("generation_record") for c in cohorts}
    missing = sorted(c for c, r in recs.items() if not r)
    if missing:
        return False, f"no build record for {', '.join(missing)}"
    first = recs[sorted(recs)[0]]
    differ = sorted({k for r in recs.values() for k in set(r) | set(first) if r.get(k) != first.get(k)})
    return (not differ), ("differs in " + ", ".join(differ)) if differ else ""


def table3(m: pd.DataFrame, scores: pd.DataFrame, build_records: dict[str, dict] | None = None) -> Table:
    """Table 3: cohorts of one matched group whose build records show identical generation --
    checked from the records (``generation_record`` in build.json), not trusted from the flag.

    Parameters
    ----------
    m : pandas.DataFrame
        metrics rows of the scored run (``accuracy_paired`` and ``delta``).
    scores : pandas.DataFrame
        mcq_scores rows (``matched_group``, ``cohort``, ``imaging_source``).
    build_records : dict of str to dict or None, optional
        Each cohort's build record (``builds.build_cohorts``); None is taken as no records, so every group is
        left out.

    Returns
    -------
    Table
        One row per cohort, question type and model of the identically generated groups: sighted, blind and
        Δ, each ± half-width with its questions and cases; the caption says which groups were left out and why.

    References
    ----------
    .. [1] benchmark-MCQ paper, Table 3.
    """
    groups = scores.dropna(subset=["matched_group"]).groupby("matched_group")["cohort"].unique()
    n_paired = _paired_n(scores)
    rows, notes = [], []
    for group, cohorts in groups.items():
        if len(cohorts) < 2:
            continue
        same, why = identical_generation(list(cohorts), build_records or {})
        if not same:
            notes.append(f"group {group} left out: not generated identically ({why})")
            continue
        for cohort in sorted(cohorts):
            src = scores.loc[scores["cohort"] == cohort, "imaging_source"].iloc[0]
            for q, label in QTYPES:
                for model in sorted(m.loc[(m["metric"] == "delta") & (m["test_set"] == cohort), "model"].unique()):
                    s = _metric(m, cohort, q, model, "sighted", "accuracy_paired")
                    b = _metric(m, cohort, q, model, "blind", "accuracy_paired")
                    dl = _metric(m, cohort, q, model, "sighted", "delta")
                    if dl is not None:
                        n = n_paired.get((cohort, q, model))
                        rows.append([f"{cohort} ({src})", label, model, _paired_cell(s, n), _paired_cell(b, n),
                                     _paired_cell(dl, n, signed=True)])
    caption = ("Table 3. Public versus private imaging under matched generation (cohorts sharing a matched_group); "
               "paired on sighted ∩ blind: each figure ± half-width of its 95% case-clustered bootstrap interval "
               "(n questions valid in both runs, cases). " + thin.note())
    if not rows:
        caption += " No matched group with two identically generated cohorts was evaluated in this run."
    if notes:
        caption += " " + "; ".join(notes) + "."
    return Table(["Cohort", "Question type", "Model", "Sighted", "Blind", "Δ"], rows, caption)


def table4(t: pd.DataFrame) -> Table:
    """Table 4: the image effect (Family 2) under Benjamini-Hochberg control, with TOST equivalence.

    Parameters
    ----------
    t : pandas.DataFrame
        mcq_tests rows (``scoring.test_rows``); the image_effect rows are shown.

    Returns
    -------
    Table
        One row per test: cohort, question type, model, BH family (size), Δ with its 95 % interval, p / q,
        TOST p / q, the 90 % interval and the verdict (withheld for thin cells).

    References
    ----------
    .. [1] benchmark-MCQ paper, Table 4.
    """
    rows = []
    for r in t[t["family"] == "image_effect"].to_dict("records"):
        b = int(r["n_boot"])
        rows.append([r["cohort"], dict(QTYPES)[r["qtype"]], r["model"], _fam(r),
                     thin.cell(f"{r['estimate']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]", r["n_items"], r["n_cases"]),
                     _pq(r["p_value"], r["q_value"], b, 2, r.get("family_size")),
                     _pq(r["tost_p"], r["tost_q"], b, 1, r.get("family_size")),
                     f"[{r['ci90_low']:+.3f}, {r['ci90_high']:+.3f}]", thin.claim(r["verdict"], r["n_items"], r["n_cases"])])
    return Table(["Cohort", "Q. type", "Model", "BH family (size)", "Δ (95% CI)", "p / q (FDR)", "TOST p / q", "90% CI", "Verdict"], rows,
                 "Table 4. Image effect under multiplicity control (Family 2, Benjamini–Hochberg; TOST at ±0.05). "
                 + thin.note())


def supp_table1(t: pd.DataFrame) -> Table:
    """Supplementary Table 1: accuracy above per-question chance (Family 1).

    Parameters
    ----------
    t : pandas.DataFrame
        mcq_tests rows (``scoring.test_rows``); the above_chance rows are shown.

    Returns
    -------
    Table
        One row per test: cohort, question type, model, BH family (size), acc - chance with its 95 % interval,
        one-sided p / q and the verdict (withheld for thin cells).

    References
    ----------
    .. [1] benchmark-MCQ paper, Supplementary Table 1.
    """
    rows = [[r["cohort"], dict(QTYPES)[r["qtype"]], r["model"], _fam(r),
             thin.cell(f"{r['estimate']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]", r["n_items"], r["n_cases"]),
             _pq(r["p_value"], r["q_value"], int(r["n_boot"]), 1, r.get("family_size")), thin.claim(r["verdict"], r["n_items"], r["n_cases"])]
            for r in t[t["family"] == "above_chance"].to_dict("records")]
    return Table(["Cohort", "Q. type", "Model", "BH family (size)", "acc − chance (95% CI)", "p / q (FDR, one-sided)", "Verdict"], rows,
                 "Supplementary Table 1. Accuracy above per-question chance (Family 1). " + thin.note())


def subcategory_plot(m: pd.DataFrame, out_dir: str) -> list[Image]:
    """Fig. 2: per-cohort polar plots of report-derived accuracy by subcategory, chance dashed; a
    subcategory where a model gave no valid answer is left out of its line (a gap, never a zero).

    Parameters
    ----------
    m : pandas.DataFrame
        metrics rows of the scored run (sighted ``accuracy`` and ``chance_valid_pool`` by subcategory).
    out_dir : str
        Local folder the PNGs are written to (``mcq_subcategories_<cohort>.png``; created if needed).

    Returns
    -------
    list of Image
        One plot per cohort; empty when the run has no report-derived subcategory rows.

    References
    ----------
    .. [1] benchmark-MCQ paper, Fig. 2.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sub = m[m["breakdown"].str.startswith("qtype=report;subcategory=") & (m["condition"] == "sighted")].copy()
    if sub.empty:
        return []
    sub["subcategory"] = sub["breakdown"].str.split("subcategory=").str[1]
    images = []
    for cohort, g in sub.groupby("test_set"):
        cats = sorted(g["subcategory"].unique())
        theta = np.linspace(0, 2 * np.pi, len(cats), endpoint=False)
        fig = plt.figure(figsize=(5.5, 5.5))
        ax = fig.add_subplot(projection="polar")
        for model, gm in g.groupby("model"):
            acc = gm[gm["metric"] == "accuracy"].set_index("subcategory")["value"].reindex(cats).to_numpy(dtype=float)
            ax.plot(np.r_[theta, theta[:1]], np.r_[acc, acc[:1]], marker="o", label=model)
        ch = g[g["metric"] == "chance_valid_pool"].groupby("subcategory")["value"].mean().reindex(cats)
        ax.plot(np.r_[theta, theta[:1]], np.r_[ch.to_numpy(), ch.to_numpy()[:1]], "k--", marker="x", lw=1, label="chance")
        ax.set_xticks(theta, cats, fontsize=7)
        ax.set_ylim(0, 1)
        ax.set_title(f"{cohort}: report-derived accuracy by subcategory", fontsize=9)
        ax.legend(fontsize=6, loc="lower left", bbox_to_anchor=(-0.15, -0.15))
        fig.tight_layout()
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, f"mcq_subcategories_{cohort}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        with open(path, "rb") as f:
            images.append(Image(f.read(), os.path.basename(path), f"{cohort} subcategory accuracy"))
    return images


def thin_cells(t: pd.DataFrame) -> list[str]:
    """The tests' cells too small to be tested (medscope.render.thin), for the summary line.

    Parameters
    ----------
    t : pandas.DataFrame
        mcq_tests rows (``family``, ``cohort``, ``qtype``, ``model``, ``n_items``, ``n_cases``).

    Returns
    -------
    list of str
        One label per thin test: family, cohort, question type, model and its counts.
    """
    return [f"{r['family']} {r['cohort']} {r['qtype']} {r['model']} ({thin.n_text(r['n_items'], r['n_cases'])})"
            for r in t.to_dict("records") if thin.is_thin(r["n_items"], r["n_cases"])]


def sections(scored_run: str, work_dir: str) -> list[tuple[str, list]]:
    """The report's one section for a scored multiple-choice run: the bootstrap note with invalid-response
    counts, the BH families, the thin cells, Tables 1-4, Supplementary Table 1 and Fig. 2.

    Parameters
    ----------
    scored_run : str
        The scored run's folder (``medscope score`` output: run.json, metrics, mcq_tests, mcq_scores).
    work_dir : str
        Local folder for the figure files.

    Returns
    -------
    list of tuple of (str, list)
        One (title, blocks) section.

    References
    ----------
    .. [1] benchmark-MCQ paper, Tables 1-4, Supplementary Table 1, Fig. 2.
    """
    sr = layout.ScoredRun(scored_run)
    run = safe_text.read_json_object(sr.manifest)
    m = records.read_table("metrics", sr.metrics).to_pandas(use_threads=False)
    t = records.read_table("mcq_tests", sr.table("mcq_tests")).to_pandas(use_threads=False)
    scores = records.read_table("mcq_scores", sr.table("mcq_scores")).to_pandas(use_threads=False)
    from medscope.protocols.benchmark_mcq.families import describe
    from medscope.protocols.benchmark_mcq.builds import build_cohorts, build_folders, read_items

    items = read_items(run["items"])
    build_records = {c: rec for f in build_folders(run["items"]) for c, rec in build_cohorts(f).items()}
    invalid = scores.groupby(["model", "condition"])["valid"].agg(lambda v: int((~v).sum())).to_dict()
    note = Para(f"Case-clustered bootstrap: B = {run['n_boot']} for intervals, B = {run['n_boot_tests']} for the "
                f"tests, seed {run['seed']}; TOST margin ±{run['margin']}. Invalid responses (excluded): "
                + ", ".join(f"{k[0]} {k[1]} {v}" for k, v in sorted(invalid.items())) + ".")
    return [("Contamination-controlled multiple-choice benchmark (benchmark-MCQ paper)",
             [note, Para("; ".join(describe(t.to_dict("records"))) + "." if len(t) else "No tests."),
              Para(thin.summary(thin_cells(t))),
              table1(m, items, scores), table2(m, scores), table3(m, scores, build_records), table4(t), supp_table1(t),
              *subcategory_plot(m, work_dir)])]
