"""The counterfactual protocol's report sections (counterfactual paper §5.1-§5.5) for a scored run.

Reads the run's scores, metrics, comparisons and ``run.json`` (which names the views and
episodes) and writes nothing into the run; into the report folder it writes per-model transcript
files ``transcripts/<model>.jsonl``, ``transcripts.md``, and ``comparisons.parquet`` when the run
holds no comparisons against the report's reference. ``medscope.report.build`` composes these
sections with other protocols' into one Markdown + self-contained HTML report.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from medscope import images
from medscope.answers.audit import reading_check_line
from medscope.io import layout, records, safe_text, storage
from medscope.errors import MedScopeError
from medscope.protocols.counterfactual import report_summary as rs
from medscope.protocols.counterfactual import plots
from medscope.render import gallery, palette, thin
from medscope.render.plots import png
from medscope.protocols.counterfactual import summary
from medscope.protocols.counterfactual.agent_episode import IMAGE_BLIND_CONDITIONS
from medscope.render.document import Image, Panels, Para, Raw, Section, Table, slug
from medscope.analysis import paired_differences as cmp
from medscope.protocols.counterfactual import costs, rewards
from medscope.analysis import significance as pt
from medscope.analysis import view_metrics as scoring_metrics
from medscope.stats import bootstrap as bs

# every value with its interval: a rate without one reads as more certain than an ESG with one
MAIN = [("ccr", "CCR", True), ("esg", "ESG", True), ("erased_claims", "Erased %", True),
        ("healthy_claims", "Healthy %", True), ("net_utility", "Net utility", True)]
MORE = ["strict_esg", "sensitivity", "grounded_accuracy", "clarify_rate", "control_denial", "referral_rate",
        "unparseable_rate", "net_utility_no_degraded", "selective_risk@1.00", "selective_risk@0.70", "aurc",
        "decision_risk@0.70", "decision_aurc"]
# what each "Further metrics" column counts and over which views, as medscope.analysis.view_metrics
# computes it (O, T, R, N, D: original, target removal, random removal, natural negative, degraded)
MORE_DEFS = {
    "strict_esg": "ESG counting explicit 'absent' answers only (T; R)",
    "sensitivity": "correct on O only (addition: C3's 'sensitivity on unedited lesions' is CCR, O ∪ R)",
    "grounded_accuracy": "correct with IoU ≥ 0.3 on O",
    "clarify_rate": "clarify on D",
    "control_denial": "'absent' or refer on R (Table 10's Denial)",
    "referral_rate": "refer on O ∪ R",
    "unparseable_rate": "unparseable over O ∪ T ∪ R ∪ N ∪ D",
    "net_utility_no_degraded": "mean reward over O ∪ T ∪ R ∪ N (§5.5)",
    "selective_risk@c, aurc": "share wrong among the c most confident of O ∪ R, ties in table order, and the area "
                              "under that curve (§3.8, §5.5)",
    "decision_risk@c, decision_aurc": "addition: the same over O ∪ T ∪ R ∪ N, ties averaged",
}


def _fmt(v, pct=False) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "–"
    return f"{100 * v:.1f}" if pct else f"{v:.3f}"


def _ci(r, pct=False) -> str:
    if r is None:
        return "–"
    s = _fmt(r.value, pct)
    if pd.notna(r.ci_low):
        s += f" [{_fmt(r.ci_low, pct)}, {_fmt(r.ci_high, pct)}]"
    return s


def _get(m: pd.DataFrame, model, cond, test_set, metric, breakdown="all"):
    r = m[(m.model == model) & (m.condition == cond) & (m.test_set == test_set) & (m.metric == metric)
          & (m.breakdown == breakdown)]
    return r.iloc[0] if len(r) else None


def _label(model, cond, multi) -> str:
    return f"{model} [{cond}]" if multi else model


def report_sections(run: str, work_dir: str, reference: str | None = None, gallery_cases: int = 4,
                    plan: str | None = None) -> tuple[list, dict]:
    """The counterfactual protocol's report sections for scored run ``run`` (counterfactual paper §5.1-§5.5).

    ``plan``: a plan file whose ``families`` (e.g. configs/plans/primary_27.yaml) are adjusted
    and printed as the paper's Table 6 with its multiplicity verdict.
    Nothing is written into ``run``: transcript files, and the paired comparisons when the run
    holds none for the reference, are written under ``work_dir`` (the report folder); returns the
    sections and what else was written (the transcripts index, the comparisons, the reference).

    Parameters
    ----------
    run : str
        Folder (local path or ``s3://`` URI) of a scored counterfactual run.
    work_dir : str
        The report folder, where transcripts and computed comparisons are written.
    reference : str, optional
        The model every run is compared with (default: the first run in the report's order).
    gallery_cases : int, optional
        Cases shown in the gallery.
    plan : str, optional
        A plan file whose families are adjusted and printed as Table 6.

    Returns
    -------
    sections : list of Section
        The report's sections, summary first.
    written : dict
        ``transcripts`` (the transcripts index, or None), ``comparisons`` (the file written, or None)
        and ``reference``.

    Raises
    ------
    MedScopeError
        When the run has no scores.

    References
    ----------
    .. [1] counterfactual paper, §5.1-§5.5.
    """
    manifest, scores_t, scores, metrics = _read_scored(run)
    test_sets = sorted(set(metrics.test_set))
    ts0 = manifest.get("test_set", test_sets[0]) if manifest.get("test_set") in test_sets else test_sets[0]
    keys, constant = _ordered_runs(scores, metrics, ts0)
    reference = reference or keys[0][0]
    comps, comps_written = paired_differences(run, scores_t, manifest, reference, work_dir)
    multi = scores.groupby("model")["condition"].nunique().max() > 1
    sections = _summary_sections(manifest, scores, metrics, comps, keys, constant, ts0, reference, multi)
    sections += [Section(f"Main table: {ts}", [_main_table(metrics, keys, ts, multi, constant)],
                         anchor=f"main-{slug(ts)}") for ts in test_sets]
    sections.append(Section(f"Paired differences against {reference}", [_paired_table(comps, multi, keys)],
                            anchor="paired"))
    sections.append(Section("Further tests", _tests_blocks(scores, reference, ts0, comps, plan, manifest),
                            anchor="tests"))
    sections += _breakdown_sections(metrics, keys, ts0, multi, constant)
    sections += _curve_sections(scores, metrics, keys, ts0, multi, constant)
    sections.append(Section("Further metrics", [_more_table(metrics, keys, ts0, multi, constant)], anchor="more"))
    sections.append(Section("Sensitivity by asked finding", [_by_breakdown(
        metrics, keys, ts0, "finding", multi, metric_list=("sensitivity", "erased_claims", "healthy_claims",
                                                             "referral_rate"), constant=constant)],
                            anchor="finding"))
    sections.append(Section("Rankings under every cost matrix", [_rankings(scores_t, keys, multi, constant, ts0, manifest)],
                            anchor="rankings"))
    sections.append(Section("How replies were read", _reading_blocks(manifest), anchor="reading"))
    transcripts = _write_transcripts(manifest, work_dir)
    gal = _gallery(manifest, scores, keys, multi, gallery_cases)
    sections.append(Section("Gallery", gal["blocks"], anchor="gallery"))
    sections.append(Section("Transcripts", _transcript_blocks(transcripts, gal["views"]), anchor="transcripts",
                            appendix=True))
    return sections, {"transcripts": transcripts.get("index"), "comparisons": comps_written, "reference": reference}


def _read_scored(run: str) -> tuple[dict, pa.Table, pd.DataFrame, pd.DataFrame]:
    """The scored run's manifest, scores (table and frame) and metrics without comparison rows."""
    scored = layout.ScoredRun(run)
    manifest = safe_text.read_json_object(scored.manifest) if storage.exists(scored.manifest) else {}
    scores_t = records.read_table("scores", scored.scores)
    scores = scores_t.to_pandas(use_threads=False)
    metrics = records.read_table("metrics", scored.metrics).to_pandas(use_threads=False)
    if scores.empty:
        raise MedScopeError(f"{run}: no scores to report")
    return manifest, scores_t, scores, metrics[metrics.reference.isna()]


def _ordered_runs(scores: pd.DataFrame, metrics: pd.DataFrame, ts0: str) -> tuple[list, set]:
    """The (model, condition) runs, models that may read the image first by ESG on ``ts0``, then
    conditions that show no image, constant policies (reference rows that read no image) last; and
    the set of constant ones."""
    keys = sorted({(r.model, r.condition) for r in scores[["model", "condition"]].drop_duplicates().itertuples()})

    def esg_of(k):
        r = _get(metrics, k[0], k[1], ts0, "esg")
        return -np.inf if r is None or pd.isna(r.value) else r.value

    constant = summary.constant_policies(scores)
    keys.sort(key=lambda k: (k in constant, k[1] in IMAGE_BLIND_CONDITIONS, -esg_of(k), k))
    return keys, constant


def paired_differences(run: str, scores_t: pa.Table, manifest: dict, reference: str,
                       work_dir: str) -> tuple[pd.DataFrame, str | None]:
    """Every run minus ``reference`` (paired case bootstrap, the counterfactual paper §3.9): the run's own
    ``comparisons.parquet`` (``medscope compare``) when it holds that reference, else computed
    here with the run's B and seed and written to the report folder, never into the run (a
    report does not change what it reads). Returns the rows and the file written, if any.

    Parameters
    ----------
    run : str
        Folder of the scored run.
    scores_t : pyarrow.Table
        The run's scores.
    manifest : dict
        The run's ``run.json``; its ``n_boot`` and ``seed`` are used when the comparisons are computed.
    reference : str
        The reference model.
    work_dir : str
        The report folder.

    Returns
    -------
    comps : pandas.DataFrame
        Comparison rows against ``reference`` (metrics schema).
    written : str or None
        The ``comparisons.parquet`` written under ``work_dir``; None when the run's own were used.

    References
    ----------
    .. [1] counterfactual paper, §3.9.
    """
    comp_uri = layout.ScoredRun(run).comparisons
    comps = records.read_table("metrics", comp_uri).to_pandas(use_threads=False) if storage.exists(comp_uri) else pd.DataFrame()
    written = None
    if comps.empty or not comps.reference.str.split(":").str[0].eq(reference).any():
        n_boot = int(manifest.get("n_boot", bs.DEFAULT_B)) or bs.DEFAULT_B
        table = cmp.compare(scores_t, reference, n_boot=n_boot, seed=int(manifest.get("seed", bs.DEFAULT_SEED)))
        written = layout.Report(work_dir).file("comparisons.parquet")
        records.write_table("metrics", table, written)
        comps = table.to_pandas(use_threads=False)
    return comps[comps.reference.str.split(":").str[0] == reference], written


def _summary_sections(manifest, scores, metrics, comps, keys, constant, ts0, reference, multi) -> list:
    """The front page (models and differences), its figures, and what the run was."""
    def label(m, c):
        return _label(m, c, multi)

    facts = summary.RunFacts(int(scores.case_id.nunique()), int(scores.view_id.nunique()), rs.sources(manifest),
                             ts0, str(manifest.get("cost_matrix", scores.cost_matrix.iloc[0])))
    return [rs.summary_section(rs.model_rows(metrics, keys, ts0, constant, label),
                               rs.differences(comps, ts0, constant, label), facts),
            rs.figures_section(metrics, keys, ts0, constant, label),
            Section("Run", [Para(_run_text(manifest, scores, keys, reference))])]


def _breakdown_sections(metrics, keys, ts0, multi, constant) -> list:
    """The main metrics within imaging type, source (Table 15) and erasure tool (Table 12)."""
    return [
        Section("By imaging type", [_by_breakdown(metrics, keys, ts0, "imaging_type", multi, constant=constant)],
                anchor="imaging"),
        Section("By source (Table 15)", [_by_breakdown(
            metrics, keys, ts0, "source", multi, metric_list=("ccr", "esg", "net_utility"), constant=constant)],
            anchor="source"),
        Section("By erasure tool (Table 12)", [_by_breakdown(
            metrics, keys, ts0, "tool", multi, metric_list=("esg", "erased_claims", "control_denial"),
            constant=constant)], anchor="tool")]


def _curve_sections(scores, metrics, keys, ts0, multi, constant) -> list:
    """ESG by lesion-size quartile and the risk-coverage curves (§5.5), for the models that
    read the image only."""
    readers = [k for k in keys if k not in constant]
    labels = [_label(m, c, multi) for m, c in readers]
    omitted = ("; constant policies (" + ", ".join(_label(m, c, multi) for m, c in keys if (m, c) in constant)
               + ") are left out: they read no image" if constant else "")
    sm = metrics.assign(model=[_label(m, c, multi) for m, c in zip(metrics.model, metrics.condition)])
    ss = scores.assign(model=[_label(m, c, multi) for m, c in zip(scores.model, scores.condition)])
    points = plots.size_quartile_points(sm[sm.test_set == ts0], labels)
    bare = points[~points.interval] if len(points) else points
    hollow = (f" Hollow points have no interval: {len(bare)} of {len(points)} points, each a quartile of one case "
              "(a bootstrap over one case cannot vary) or a value whose bounds were not computed." if len(bare) else "")
    return [
        Section("ESG by lesion-size quartile", [
            Image(png(plots.esg_by_size_quartile_figure(points, labels)), "esg_by_size.png",
                  "ESG by quartile of lesion area with 95% intervals where a quartile has them, one series per model "
                  "that is not a constant policy, n cases per quartile under each tick"),
            Para(f"ESG on {ts0} by quartile of lesion area (share of the image), each point with its 95% "
                 f"case-bootstrap interval; n under each quartile is the number of cases with a lesion mask in it, so "
                 f"intervals on a few cases are wide{omitted}.{hollow}"),
            _by_breakdown(metrics, readers, ts0, "size_quartile", multi, metric_list=("esg", "erased_claims"))],
            anchor="size"),
        Section("Risk-coverage", [
            Image(plots.risk_coverage(ss[ss.test_set == ts0], labels), "risk_coverage.png",
                  "Selective risk against coverage on original and random-removal views, one curve per model that "
                  "reads the image"),
            Para(f"Selective risk (share answered wrongly) on the answerable views of {ts0}: original and "
                 "random-removal views (counterfactual paper §3.8), ranked by stated confidence (stable sort on ties; missing "
                 "confidence ranks last); AURC is the area under each curve. Erased and lesion-free views are not in "
                 "this curve, so a policy that always says 'present' would be right on every view in it: constant "
                 "policies are left out (one confidence tie, no ranking). These curves describe each model's own "
                 "trade-off and do not rank models (counterfactual paper §5.5). decision_risk / decision_aurc (Further metrics) "
                 "use every view that expects an answer, with ties averaged, where a constant policy sits at its "
                 "own error rate.")], anchor="risk")]


def _run_text(manifest, scores, keys, reference) -> str:
    n_cases = scores.case_id.nunique()
    bits = [f"{len(keys)} model/condition runs, {scores.view_id.nunique()} views of {n_cases} cases",
            f"cost matrix `{manifest.get('cost_matrix', scores.cost_matrix.iloc[0])}`",
            f"{manifest.get('n_boot', '?')} bootstrap resamples of {manifest.get('cluster', 'case_id')} "
            f"(seed {manifest.get('seed', '?')})", f"paired differences against **{reference}**"]
    from medscope.protocols.counterfactual.additions import in_force

    bits.append("additions in force (values the paper does not give, docs/counterfactual.md): " + "; ".join(in_force(manifest)))
    if manifest.get("disputed_cases"):
        bits.append(f"{len(manifest['disputed_cases'])} disputed lesion-free labels (metrics without them: "
                    f"test set '<name>-undisputed')")
    return "; ".join(bits) + "."


def _main_table(metrics, keys, ts, multi, constant=frozenset()) -> Table:
    rows = []
    for m, c in keys:
        cells = [_label(m, c, multi) + (" (constant)" if (m, c) in constant else "")]
        for metric, _, with_ci in MAIN:
            r = _get(metrics, m, c, ts, metric)
            pct = metric.endswith("claims")
            # a cell with an interval says how many cases it is over, and is marked when thin
            # every number with its n: the cases a rate is over too, not only an interval's
            text = _ci(r, pct) if with_ci else (_fmt(r.value, pct) if r is not None else "–")
            cells.append(text if r is None else thin.cell(text, None, r.n_cases))
        rows.append(cells)
    return Table(["Model"] + [h for _, h, _ in MAIN], rows,
                 f"Test set {ts}. CCR: share of original and random-removal views answered correctly; ESG: "
                 "P(absent or refer | erased) − P(absent or refer | edit elsewhere); Erased / Healthy: % of erased-lesion "
                 "and of lesion-free views on which the finding is claimed; net utility: mean reward over all views. "
                 "95% case-bootstrap intervals in brackets; the cases each value is over in parentheses. (constant): the same "
                 "decision on every view, a reference that reads no image. " + thin.note())


def _paired_table(comps, multi, keys=()) -> Table:
    order = ["esg", "erased_claims", "healthy_claims", "ccr", "net_utility"]
    names = {"esg": "ESG", "erased_claims": "Erased-lesion claims", "healthy_claims": "Healthy-image claims",
             "ccr": "CCR", "net_utility": "Net utility"}
    rows = []
    for (ts, m, c, ref), part in comps[comps.breakdown == "all"].groupby(["test_set", "model", "condition", "reference"],
                                                                         sort=False):
        rm, _, rc = str(ref).partition(":")
        cells = [f"{_label(m, c, multi)} ({ts})", _label(rm, rc or c, multi)]
        for metric in order:
            r = part[part.metric == metric]
            if r.empty:
                cells.append("–")
                continue
            r = r.iloc[0]
            cells.append(f"{r.value + 0.0:+.3f} [{r.ci_low + 0.0:+.3f}, {r.ci_high + 0.0:+.3f}], "
                         f"{bs.p_text(r.p_value, int(r.n_boot) if pd.notna(r.n_boot) else 0)}")
        rows.append(cells)
    refs = sorted(set(comps.reference)) if len(comps) else []
    # the B these comparisons used (the run's --n-boot, or what the report computed them with)
    boots = sorted({int(b) for b in comps.n_boot.dropna()}) if len(comps) and "n_boot" in comps else []
    floor = " or ".join(f"B = {b:,}: {bs.p_text(0.0, b)}" for b in boots) or "B unknown"
    return Table(["Model (test set)", "minus"] + [names[o] for o in order], rows,
                 "Each row: the model minus the reference run named in 'minus' (the reference model in the same "
                 f"condition: {', '.join(refs) or '?'}), paired bootstrap over shared cases: difference [95% CI], p "
                 f"(twice the smaller tail; below 2/B when no resample crossed zero, here {floor}). Positive is better for ESG, CCR and "
                 "net utility; negative is better for the claim rates. Table 6 prints the reverse, reference minus "
                 "model: `medscope compare --direction paper`.")


def _by_breakdown(metrics, keys, ts, dim, multi, metric_list=("esg", "erased_claims", "net_utility"),
                  constant=frozenset(), with_ci=True) -> Table:
    part = metrics[(metrics.test_set == ts) & metrics.breakdown.str.startswith(f"{dim}=")]
    groups = sorted(set(part.breakdown))
    rows = []
    show = _ci if with_ci else (lambda r: _fmt(getattr(r, "value", None)))
    for g in groups:
        n = part[part.breakdown == g].n_cases.max()
        cells = [thin.cell(g.split("=", 1)[1], None, n)]  # "label (n cases)", marked when thin
        for m, c in keys:
            cells.append(" / ".join(show(_get(metrics, m, c, ts, k, g)) for k in metric_list))
        rows.append(cells)
    over = {"esg": "ESG (erased and random-removal views)", "erased_claims": "erased-lesion claims (share of erased "
            "views)", "net_utility": "net utility (all views)", "sensitivity": "sensitivity (original views)",
            "healthy_claims": "healthy-image claims (share of lesion-free views)",
            "referral_rate": "referral rate (original and random-removal views)",
            "ccr": "CCR (original and random-removal views)", "control_denial": "control denial (random-removal views)"}
    return Table([dim.replace("_", " ") + " (cases)"] + [_label(m, c, multi) + (" (constant)" if (m, c) in constant
                                                                                   else "") for m, c in keys], rows,
                 "Each cell: " + " / ".join(over.get(k, k) for k in metric_list)
                 + f", on {ts}, within each {dim.replace('_', ' ')}"
                 + ("; each with its 95% case-bootstrap interval in square brackets" if with_ci else "")
                 + "; the group's cases in parentheses. " + thin.note())


def _more_table(metrics, keys, ts, multi, constant=frozenset()) -> Table:
    def cell(m, c, k):
        if (m, c) in constant and (k.startswith("selective_risk") or k == "aurc"):
            return "n/a"  # one confidence tie: no ranking to select by
        r = _get(metrics, m, c, ts, k)
        return "–" if r is None else thin.cell(_ci(r), None, r.n_cases)

    rows = [[_label(m, c, multi) + (" (constant)" if (m, c) in constant else "")] + [cell(m, c, k) for k in MORE]
            for m, c in keys]
    head = [k + (" (addition)" if k.startswith("decision_") or k == "sensitivity" else "") for k in MORE]
    return Table(["Model"] + head, rows,
                 f"Test set {ts}. Each value with its 95% case-bootstrap interval and the cases it is over. O, T, R, N, "
                 "D: original, target-removal, random-removal, natural-negative and degraded views. "
                 + "; ".join(f"{k}: {v}" for k, v in MORE_DEFS.items())
                 + ". n/a: not defined for a constant policy (one confidence tie). " + thin.note())


def _answerable() -> str:
    # the scoring owns this view set; say whatever it currently is
    kinds = getattr(scoring_metrics, "ANSWERABLE", ())
    return ", ".join(kinds) if kinds else "the scoring calls answerable"


def _rankings(scores_t, keys, multi, constant=frozenset(), test_set: str = "main", manifest: dict | None = None) -> Table:
    """Rank and net utility with its clustered bootstrap interval under every cost matrix (§5.5), over
    the views of ``test_set`` only (a scores table may also hold ``-undisputed`` copies of them).

    The interval resamples the run's clusters (``run.json``'s ``cluster``, B and seed), as the main
    table's net utility does, so the Table 3 row of this matrix reads the same here and there."""
    manifest = manifest or {}
    keep = pc.equal(scores_t.column("test_set"), test_set)
    part = scores_t.filter(keep)
    cluster = manifest.get("cluster") or "case_id"
    df = part.select(["model", "condition", cluster]).to_pandas(use_threads=False)
    n_boot = int(manifest.get("n_boot") or bs.DEFAULT_B)
    _, codes = bs.codes_of(df[cluster])
    n_clusters = int(codes.max()) + 1 if len(codes) else 0
    counts = bs.resample_counts(n_clusters, n_boot, int(manifest.get("seed", bs.DEFAULT_SEED)))
    runs = list(df.groupby(["model", "condition"], sort=False).indices.items())
    member = np.zeros((len(df), len(runs)))  # row x run indicator: every run's mean is one ratio column
    for j, (_, rows) in enumerate(runs):
        member[rows, j] = 1.0
    den = bs.cluster_sums(member, codes, n_clusters)
    cols, ranks = [], {}
    for matrix in costs.load_all():
        reward = rewards.rescore(part, matrix)
        num = bs.cluster_sums(member * reward[:, None], codes, n_clusters)
        low, high = bs.percentile_ci(bs.ratio_samples(num, den, counts))
        nu = pd.Series({k: reward[rows].mean() for k, rows in runs})
        ci = {k: (low[i], high[i]) for i, (k, _) in enumerate(runs)}
        order = nu[[k not in constant for k in nu.index]].sort_values(ascending=False, kind="stable")
        ranks[matrix.name] = {k: (i + 1, v, ci[k]) for i, (k, v) in enumerate(order.items())}
        ranks[matrix.name].update({k: ("ref.", v, ci[k]) for k, v in nu.items() if k in constant})
        cols.append(matrix.name)
    n_views = {k: len(rows) for k, rows in runs}

    def cell(name, k):
        rank, v, (lo, hi) = ranks[name][k]
        return f"{rank} ({v:.3f} [{lo:.3f}, {hi:.3f}])"

    rows = [[_label(m, c, multi), n_views[(m, c)]] + [cell(n, (m, c)) for n in cols]
            for m, c in sorted(keys, key=lambda k: (k in constant, ranks[cols[0]][k][0] if k not in constant else 0))]
    return Table(["Model", "n views"] + cols, rows,
                 f"Rank by net utility (mean reward over the {test_set} test set's views, with its 95% interval "
                 f"from {n_boot} bootstrap resamples of {cluster}) under each cost matrix (configs/cost_matrices/), "
                 "among models that read the image; 'ref.': a constant policy, shown with its net utility but not "
                 "ranked. Ranks are by the point values: overlapping intervals mean the order is not settled.")


def _gallery(manifest, scores, keys, multi, n_cases) -> dict:
    views_uri = manifest.get("views")
    if not views_uri or not storage.exists(views_uri) or n_cases <= 0:
        return {"blocks": [Para("No views table recorded in run.json; no gallery.")], "views": []}
    views = records.read_table("views", views_uri).to_pandas(use_threads=False)
    # only views the models were evaluated on: a gallery case shows every model's decision
    views = views[views.view_id.isin(set(scores.view_id))].drop_duplicates(["case_id", "kind"])
    edited = views[views.kind == "target_removal"]
    chosen = []
    for _, part in edited.groupby("imaging_type", sort=True):
        chosen.append(part.case_id.iloc[0])
    for c in edited.case_id:
        if len(chosen) >= n_cases:
            break
        if c not in chosen:
            chosen.append(c)
    chosen = chosen[:n_cases]
    blocks, shown = [], []
    header = ["View"] + [_label(m, c, multi) for m, c in keys]
    for case in chosen:
        cv = views[views.case_id == case].set_index("kind")
        lesion = None
        if "target_removal" in cv.index and cv.loc["target_removal", "edit_mask"] is not None:
            lesion = images.decode_mask(cv.loc["target_removal", "edit_mask"])  # the dilated lesion mask
        blocks.append(Para(f"**{case}** ({cv.imaging_type.iloc[0]}): {cv.question.iloc[0]}"))
        rows, panels = [], Panels([], [])
        for k in palette.PANEL_KINDS:
            if k not in cv.index:
                continue
            v = cv.loc[k].to_dict() | {"kind": k}
            png = gallery.panel(v, lesion)
            if png is not None:
                caption = palette.PANEL_CAPTIONS[k]
                panels.images.append(Image(png, f"{slug(case)}_{k}.png",
                                           f"Case {case} ({cv.imaging_type.iloc[0]}): {caption}"))
                panels.captions.append(caption)
            shown.append(v["view_id"])
            cells = [k]
            for m, c in keys:
                s = scores[(scores.model == m) & (scores.condition == c) & (scores.view_id == v["view_id"])]
                if s.empty:
                    cells.append("–")
                    continue
                s = s.iloc[0]
                what = ("claims finding" if s.claims_finding else "absent") if s.action == "answer" else s.action
                mark = "✓" if s.correct else "✗"
                cells.append(f"[{what} {mark} ({s.reward:+.2f})](#{_tr_anchor(m, c, v['view_id'])})")
            rows.append(cells)
        if panels.images:
            blocks.append(panels)
        blocks.append(Table(header, rows, "Each model's decision (reward) on each view above; links go to its "
                                          f"transcript at the end of the report. {palette.LEGEND.capitalize()}."))
    return {"blocks": blocks, "views": shown}


def _reading_blocks(manifest) -> list:
    """Per model and condition: how many decisions were read from the action format, a bare
    JSON action, the free-text rules or a judge (episodes' ``reading``), and how many replies the
    reader did not commit on (``unclear``: left out of every n); then the reading check of this
    run's replies, when one was made (``medscope answers agreement``), or how to make one."""
    uri = manifest.get("episodes")
    if not uri or not storage.exists(uri):
        return [Para("No episodes table recorded in run.json; reading paths unknown.")]
    ep = records.read_table("episodes", uri, columns=["model", "condition", "reading", "action"]).to_pylist()
    counts: dict[tuple[str, str], dict] = {}
    for r in ep:
        c = counts.setdefault((r["model"], r["condition"]), {})
        c[r["reading"] or "not recorded"] = c.get(r["reading"] or "not recorded", 0) + 1
        c["unclear"] = c.get("unclear", 0) + (r["action"] == "unclear")
    paths = ("format", "json", "rules", "judge", "not recorded")
    rows = []
    for (m, cond), c in sorted(counts.items()):
        n = sum(c.get(p, 0) for p in paths)
        k = c.get("unclear", 0)
        rows.append([m, cond, str(n)] + [str(c.get(p, 0)) for p in paths] + [f"{k} of {n} ({k / n:.1%})" if n else "–"])
    return [Table(["model", "condition", "episodes", *paths, "unclear"], rows,
                  "format: a <final> action tag; json: a bare JSON action; rules: free text read by the rule "
                  "reader (docs/answers.md); judge: a judge model's reading (medscope judge-replies); "
                  "not recorded: tool-limit endings and tables written before the column existed. unclear: replies "
                  "the reader did not commit on because its own evidence disagreed (two verdicts, a negation of a "
                  "negation it cannot resolve); they are in no n of this report (medscope answers read shows why)."),
            Para(reading_check_line(uri))]


def _tests_blocks(scores, reference, ts, comps, plan, manifest) -> list:
    """The exact and equivalence tests against the reference, and the plan's families."""
    n_boot = int(manifest.get("n_boot") or bs.DEFAULT_B)
    t = pt.tests_against(scores, reference, ts, n_boot=n_boot, seed=int(manifest.get("seed", bs.DEFAULT_SEED)))
    def fmt(v, own=False):  # exact tests' p: no B; the reference against itself: no test
        if own:
            return "– (reference)"
        return "–" if v is None or (isinstance(v, float) and not np.isfinite(v)) else bs.p_text(v)

    def tost(r, own):
        v = getattr(r, "tost_ccr", None)
        return "– (reference)" if own else (v if isinstance(v, str) and v and v.lower() != "nan" else "–")

    rows = []
    for r in t.itertuples():
        own = r.model == reference
        rows.append([f"{r.model} [{r.condition}]", fmt(r.mcnemar_ccr_p, own) if "mcnemar_ccr_p" in t else "–",
                     fmt(getattr(r, "fisher_erased_p", None), own), fmt(getattr(r, "fisher_healthy_p", None), own),
                     tost(r, own), fmt(r.chance_ccr_p)])
    blocks = [Table(["Model", f"McNemar CCR vs {reference}", "Fisher erased", "Fisher healthy",
                     "TOST CCR ±0.05 (90% CI)", "CCR vs chance"], rows,
                    f"On {ts}, unadjusted (secondary). Fisher's exact test of erased- and healthy-image claims is "
                    "§3.9's ('proportions on small subsets'); exact McNemar on the original and random-removal views "
                    "both models answered, TOST of the CCR difference on the paired case bootstrap and the one-sided "
                    "binomial test of CCR against 1/2 are additions, not the counterfactual paper's tests (the benchmark-MCQ paper/002 use them).")]
    if plan:
        from medscope.analysis import decision_rules as rules

        for fam in rules.load_plan(plan)[0].families:
            try:
                blocks.append(Raw("```\n" + pt.format_family(fam, pt.family(comps, fam)) + "\n```"))
            except MedScopeError as err:
                blocks.append(Para(f"Family {fam.name}: {err}"))
    return blocks


def _tr_anchor(model, cond, view_id) -> str:
    return "tr-" + slug(f"{model}-{cond}-{view_id}")


def _write_transcripts(manifest, out) -> dict:
    uri = manifest.get("episodes")
    if not uri or not storage.exists(uri):
        return {}
    ep = records.read_table("episodes", uri, columns=["model", "condition", "item_id", "turns", "raw_text", "action",
                                                      "answer", "confidence", "tool_calls"]).to_pandas(use_threads=False)
    ep = ep.rename(columns={"item_id": "view_id"})  # this protocol's items are views
    files, index = {}, ["# Transcripts", ""]
    for (m, c), part in ep.groupby(["model", "condition"], sort=True):
        name = f"transcripts/{re.sub(r'[^A-Za-z0-9._-]+', '_', f'{m}__{c}')}.jsonl"
        lines = [json.dumps({k: _plain(v) for k, v in r.items()}, ensure_ascii=False) for r in part.to_dict("records")]
        storage.write_text(layout.Report(out).file(name), "\n".join(lines) + "\n")
        files[(m, c)] = (name, part)
        index.append(f"- [{m} ({c})]({name}): {len(part)} episodes")
    index_uri = layout.Report(out).transcripts_index
    storage.write_text(index_uri, "\n".join(index) + "\n")
    return {"index": index_uri, "files": files}


def _plain(v):
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    if isinstance(v, float) and np.isnan(v):
        return None
    return v


def _transcript_blocks(transcripts, shown_views) -> list:
    if not transcripts:
        return [Para("No episodes table recorded in run.json; no transcripts.")]
    md = ["Full transcripts, one JSON line per episode: [transcripts.md](transcripts.md)"]
    md += [f"- {m} ({c}): [{name}]({name})" for (m, c), (name, _) in transcripts["files"].items()]
    html_parts = ["<p>Full transcripts, one JSON line per episode, are written beside this report: "
                  "<code>transcripts.md</code> and:</p><ul>"]
    html_parts += [f"<li><code>{name}</code> ({m}, {c})</li>" for (m, c), (name, _) in transcripts["files"].items()]
    html_parts.append("</ul>")
    import html as h

    for (m, c), (_, part) in transcripts["files"].items():
        for r in part[part.view_id.isin(shown_views)].to_dict("records"):
            turns = _plain(r["turns"]) or []
            body = "\n\n".join(f"[{t.get('role')}] {t.get('text') or ''}" for t in turns) or (r["raw_text"] or "")
            html_parts.append(f'<details id="{_tr_anchor(m, c, r["view_id"])}"><summary>{h.escape(m)} ({h.escape(c)}) '
                              f'on {h.escape(r["view_id"])}: {h.escape(str(r["action"]))}</summary>'
                              f"<pre>{h.escape(body)}</pre></details>")
    return [Raw("\n".join(md), "\n".join(html_parts))]
