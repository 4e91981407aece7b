"""The probe's section of the report: specificity by strategy and format, and its plot (organ-presence paper)."""

from __future__ import annotations



import numpy as np
import pandas as pd

from medscope.answers.audit import reading_check_line
from medscope.io import layout, records, safe_text, storage
from medscope.protocols.organ_presence import plots
from medscope.render import thin
from medscope.protocols.organ_presence.scoring import NEGATIVE_STRATEGIES


def _fmt(v, lo, hi) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "–"
    if lo is None or (isinstance(lo, float) and np.isnan(lo)):
        return f"{v:.3f}"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def _breakdown(row: dict) -> dict:
    return dict(p.split("=", 1) for p in row["breakdown"].split(";") if "=" in p)


def specificity_table(metrics: list[dict], metric: str = "specificity") -> list[dict]:
    """One row per model x condition: the metric per negative strategy (value, low, high).

    Parameters
    ----------
    metrics : list of dict
        Rows of the probe's metrics table.
    metric : str, optional
        The metric tabled (``specificity``, ``confident_specificity``...).

    Returns
    -------
    list of dict
        One row per model x condition x render, sorted: ``model``, ``condition``, ``render`` and, per
        negative strategy with a value, the strategy -> (value, ci_low, ci_high, n_cases). Rows
        restricted to far z-distances are left out.
    """
    table: dict[tuple, dict] = {}
    for r in metrics:
        b = _breakdown(r)
        if r["metric"] != metric or b.get("strategy") not in NEGATIVE_STRATEGIES or "z>" in r["breakdown"]:
            continue
        key = (r["model"], r["condition"], b.get("render", ""))
        table.setdefault(key, {"model": key[0], "condition": key[1], "render": key[2]})[b["strategy"]] = (
            r["value"], r["ci_low"], r["ci_high"], r.get("n_cases"))
    return [table[k] for k in sorted(table)]


def specificity_long(spec: list[dict], constant=frozenset()) -> pd.DataFrame:
    """The specificity table in long form for ``plots.specificity_by_strategy``.

    Parameters
    ----------
    spec : list of dict
        :func:`specificity_table`'s rows.
    constant : collection of tuple, optional
        The (model, condition) pairs that gave one verdict everywhere.

    Returns
    -------
    pandas.DataFrame
        One row per table row and negative strategy: ``label`` ("model · condition"), ``strategy``,
        ``value``, ``lo``, ``hi`` (NaN when missing), ``n`` (cases, 0 when missing) and ``constant``.
    """
    rows = []
    for r in spec:
        for st in NEGATIVE_STRATEGIES:
            v, lo, hi, n = r.get(st, (np.nan, np.nan, np.nan, 0))
            rows.append({"label": f"{r['model']} · {r['condition']}", "strategy": st,
                         "value": np.nan if v is None else v, "lo": np.nan if lo is None else lo,
                         "hi": np.nan if hi is None else hi, "n": n or 0,
                         "constant": (r["model"], r["condition"]) in constant})
    return pd.DataFrame(rows, columns=["label", "strategy", "value", "lo", "hi", "n", "constant"])


def probe_report_section(metrics: list[dict], constant=frozenset()) -> tuple[str, str, dict[str, bytes]]:
    """(title, markdown, {file name: PNG bytes}) of the probe for the report (no plot when every
    run is a constant policy).

    ``metrics``: rows of the probe's metrics table (``medscope score`` of an organ-presence run);
    ``constant``: the (model, condition) pairs that gave one verdict everywhere.

    Parameters
    ----------
    metrics : list of dict
        Rows of the probe's metrics table.
    constant : collection of tuple, optional
        The (model, condition) pairs that gave one verdict everywhere.

    Returns
    -------
    title : str
        The section's title.
    markdown : str
        The explanation, the sensitivity / specificity table, and when present the z-distance slopes
        and hedge-cue shares.
    pngs : dict of str to bytes
        ``probe_specificity.png`` -> the plot; empty when nothing but constant policies would be drawn.

    References
    ----------
    .. [1] organ-presence paper.
    """
    title = "Volumetric organ presence (POPE for 3D anatomy)"
    spec = specificity_table(metrics, "specificity")
    conf = {(r["model"], r["condition"], r["render"]): r for r in specificity_table(metrics, "confident_specificity")}
    sens = {(r["model"], r["condition"]): r for r in metrics
            if r["metric"] == "sensitivity" and r["breakdown"].startswith("strategy=positive")}
    lines = [
        "Sensitivity: share of questions on an organ that is present answered 'present'; specificity: share of "
        "questions on an absent organ (a real absence, no pixel altered) answered 'absent', by the strategy that "
        "chose the absent organ (organ-presence paper); case-clustered 95% intervals in brackets. Confident-answer specificity "
        "drops hedged replies from numerator and denominator. (constant): the same verdict on every question, a "
        "reference that reads no image. " + thin.note(),
        "",
        "| model | condition | sensitivity | " + " | ".join(f"spec. {s}" for s in NEGATIVE_STRATEGIES)
        + " | conf. spec. adversarial |",
        "|---|---|---|" + "---|" * len(NEGATIVE_STRATEGIES) + "---|",
    ]
    for r in spec:
        s = sens.get((r["model"], r["condition"]))
        sv = thin.cell(_fmt(s["value"], s["ci_low"], s["ci_high"]), None, s.get("n_cases")) \
            if s and s["value"] is not None else "–"
        cells = [thin.cell(_fmt(*x[:3]), None, x[3]) if x[0] is not None else _fmt(*x[:3])
                 for x in (r.get(st, (None, None, None, None)) for st in NEGATIVE_STRATEGIES)]
        c = conf.get((r["model"], r["condition"], r["render"]), {}).get("adversarial", (None, None, None, None))
        name = r["model"] + (" (constant)" if (r["model"], r["condition"]) in constant else "")
        lines.append(f"| {name} | {r['condition']} | {sv} | " + " | ".join(cells) + f" | {_fmt(*c[:3])} |")
    slopes = [r for r in metrics if r["metric"] == "zdist_slope_per_mm" and r["value"] is not None]
    if slopes:
        lines += ["", "Correct rejection vs z-distance (logistic slope, log-odds per mm, cluster-robust CI):", ""]
        lines += [f"- {r['model']} / {r['condition']}: {_fmt(r['value'], r['ci_low'], r['ci_high'])}" for r in slopes]
    lines += ["", "Replies read as unclear (the reader's own evidence disagreed; in no n above): "
              + ("; ".join(f"{r['model']} / {r['condition']} ({r['breakdown'].split('render=')[-1]}) "
                           f"{r['value']:.1%} [{r['ci_low']:.1%}, {r['ci_high']:.1%}]"
                           for r in metrics if r["metric"] == "unclear_rate" and r["value"] is not None)
                 or "none") + "."]
    cues = [r for r in metrics if r["metric"] == "hedge_cue_share"]
    if cues:
        lines += ["", "Hedge cues (first cue that fired, share of hedged negatives):", ""]
        lines += [f"- {r['model']} / {r['condition']}: {r['breakdown'].rsplit('cue=', 1)[-1]} {r['value']:.2f}"
                  for r in cues]
    long = specificity_long(spec, constant)
    if long.empty or long.constant.all():  # nothing but reference lines to draw
        return title, "\n".join(lines), {}
    # the renderer writes images where the report lives (any URI), so nothing is written here
    return title, "\n".join(lines), {"probe_specificity.png": plots.specificity_by_strategy(long, NEGATIVE_STRATEGIES)}


def pope_summary(truth_present: np.ndarray, said_present: np.ndarray) -> dict:
    """POPE's summary (Li et al. 2023) of yes/no answers: accuracy, precision, recall and F1 of
    "yes", and the yes-ratio (share answered "yes"). ``said_present`` is the reading's "yes" (see
    :func:`pope_table`). NaN where a denominator is 0.

    Parameters
    ----------
    truth_present : numpy.ndarray
        ``[n]`` bool, whether the organ is present.
    said_present : numpy.ndarray
        ``[n]`` bool, whether the answer reads as "yes".

    Returns
    -------
    dict
        ``n``, ``accuracy``, ``precision``, ``recall``, ``f1`` and ``yes_ratio``.

    References
    ----------
    .. [1] Y. Li et al., "Evaluating object hallucination in large vision-language models", EMNLP 2023.
    """
    t, y = np.asarray(truth_present, bool), np.asarray(said_present, bool)
    tp, fp, fn = int((t & y).sum()), int((~t & y).sum()), int((t & ~y).sum())
    n = len(t)
    prec = tp / (tp + fp) if tp + fp else np.nan
    rec = tp / (tp + fn) if tp + fn else np.nan
    f1 = 2 * prec * rec / (prec + rec) if np.isfinite(prec) and np.isfinite(rec) and prec + rec else np.nan
    return {"n": n, "accuracy": float((t == y).mean()) if n else np.nan, "precision": prec, "recall": rec,
            "f1": f1, "yes_ratio": float(y.mean()) if n else np.nan}


POPE_READINGS = {
    # MedScope's reading: "yes" = a "present" verdict (a hedged "present" included), "no" = an
    # "absent" one; replies that are not addressed (or unclear) are neither and are left out of
    # its n (pope_table) -- POPE's rule instead makes a non-answer "no" or "yes" by its wording.
    "medscope": lambda g: g.verdict.eq("present").to_numpy(),
    # POPE's own rule on the raw reply (scoring.pope_rule_yes); tables written before it: absent.
    "pope": lambda g: g["pope_yes"].fillna(True).astype(bool).to_numpy(),
}


def pope_table(scores: pd.DataFrame, reading: str = "medscope") -> pd.DataFrame:
    """POPE's summary per model x condition x render x negative strategy: every present-organ
    question plus the absent-organ questions that strategy chose (POPE's random / popular /
    adversarial splits), under ``reading`` ("medscope": our verdicts; "pope": POPE's rule).

    Parameters
    ----------
    scores : pandas.DataFrame
        ``probe_scores`` rows; the "pope" reading needs ``pope_yes`` (missing values read as "yes").
    reading : {'medscope', 'pope'}, optional
        Which reading gives "yes" (:data:`POPE_READINGS`).

    Returns
    -------
    pandas.DataFrame
        One row per model x condition x render x negative strategy: those keys, :func:`pope_summary`'s
        fields and ``left_out``: replies neither present nor absent (not addressed, unclear), which
        MedScope's reading leaves out of n and POPE's rule reads by its wording (0 there).

    References
    ----------
    .. [1] Y. Li et al., "Evaluating object hallucination in large vision-language models", EMNLP 2023.
    """
    said = POPE_READINGS[reading]
    rows = []
    for (m, c, rend), g in scores.groupby(["model", "condition", "render"], sort=True):
        pos = g[g.truth == "present"]
        for st in NEGATIVE_STRATEGIES:
            part = pd.concat([pos, g[(g.truth == "absent") & (g.strategy == st)]])
            kept = part[part.verdict.isin(("present", "absent"))] if reading == "medscope" else part
            rows.append({"model": m, "condition": c, "render": rend, "strategy": st,
                         **pope_summary(kept.truth.eq("present").to_numpy(), said(kept)),
                         "left_out": len(part) - len(kept)})
    return pd.DataFrame(rows)


POPE_INTRO = ("POPE's summary, computed twice (for comparison with POPE results): each strategy's absent-organ "
              "questions with every present-organ question; precision, recall and F1 of 'yes'; yes-ratio = share "
              "answered 'yes'; n = questions. Point estimates (intervals are in the table above). The two readings "
              "differ on replies that are neither 'present' nor 'absent' (not addressed, or read as unclear): MedScope "
              "leaves them out of n (column 'left out'), never counting them as 'no'; POPE's rule reads every reply "
              "without 'no' / 'not' in its first sentence as 'yes' and the rest as 'no' -- POPE's 'no', in POPE's "
              "column only.")


def _pope_markdown(pope: pd.DataFrame, constant) -> str:
    f = lambda v: "–" if not np.isfinite(v) else f"{v:.3f}"  # noqa: E731
    lines = ["| model | condition | strategy | n | left out | accuracy | precision | recall | F1 | yes-ratio |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in pope.itertuples():
        name = r.model + (" (constant)" if (r.model, r.condition) in constant else "")
        left = getattr(r, "left_out", 0)
        lines.append(f"| {name} | {r.condition} | {r.strategy} | {r.n} | {left} | {f(r.accuracy)} | "
                     f"{f(r.precision)} | {f(r.recall)} | {f(r.f1)} | {f(r.yes_ratio)} |")
    return "\n".join(lines)


def summary_lines(spec: list[dict], constant) -> list[str]:
    """The probe's lines for the report's opening summary: per model and image condition, its
    adversarial specificity beside the same format's no-image and blank-image controls (organ-presence paper:
    a model that reads the image should lose specificity when the image is taken away).

    Parameters
    ----------
    spec : list of dict
        :func:`specificity_table`'s rows for ``specificity``.
    constant : collection of tuple
        The (model, condition) pairs that gave one verdict everywhere.

    Returns
    -------
    list of str
        Markdown lines: a lead-in, a blank line, a bullet per model and image condition (control
        conditions and constant policies aside) and one naming the models constant in every
        condition; empty when there is nothing to say.

    References
    ----------
    .. [1] organ-presence paper.
    """
    by = {(r["model"], r["condition"]): r.get("adversarial") for r in spec}
    out = []
    for (m, c), v in sorted(by.items()):
        if "+" in c or (m, c) in constant or not v or v[0] is None:
            continue
        parts = [f"{m} · {c}: adversarial specificity {thin.cell(_fmt(*v[:3]), None, v[3])}"]
        for ctl in ("no_image", "blank"):
            w = by.get((m, f"{c}+{ctl}"))
            if w and w[0] is not None:
                parts.append(f"{ctl.replace('_', '-')} control {thin.cell(_fmt(*w[:3]), None, w[3])}")
        out.append("- " + ", ".join(parts) + ".")
    # a model is a constant policy only if constant in every condition it ran (a reader declining
    # every no-image question is constant there, and still reads the image elsewhere)
    blind = sorted({m for m, _ in constant if all((m, c) in constant for mm, c in by if mm == m)})
    if blind:
        out.append("- Constant policies (the same verdict on every question; references): " + ", ".join(blind) + ".")
    if not out:
        return []
    return ["Organ-presence probe (organ-presence paper; specificity = 'absent' on a real absence, 95% case-clustered "
            "intervals; the [probe section](#probe) has every strategy and POPE's summary):", ""] + out


def report_sections(scored_run: str, work_dir: str) -> tuple[list, dict]:
    """The probe's report section: sensitivity / specificity with intervals, the specificity-by-
    strategy plot, and POPE's own summary so POPE users can compare.

    Parameters
    ----------
    scored_run : str
        Folder (local path or ``s3://`` URI) of a run ``medscope score`` wrote for this protocol.
    work_dir : str
        The report folder; nothing is written there.

    Returns
    -------
    sections : list of Section
        A summary section (when it has lines) and the probe section.
    files : dict
        Always empty.
    """
    from medscope.render.document import Image, Raw, Section

    run = layout.ScoredRun(scored_run)
    metrics = records.read_table("metrics", run.metrics).to_pylist()
    scores_uri = run.table("probe_scores")
    scores = records.read_table("probe_scores", scores_uri).to_pandas(use_threads=False) if storage.exists(scores_uri) else None
    constant = set()
    if scores is not None and len(scores):
        n = scores.groupby(["model", "condition"]).verdict.nunique()
        constant = {k for k, v in n.items() if v <= 1}
    title, markdown, pngs = probe_report_section(metrics, constant)
    blocks: list = [Raw(markdown)]
    for name, png in pngs.items():
        blocks.append(Image(png, name, "Probe specificity by negative strategy with 95% intervals, one series per "
                                       "model and condition that reads the image; constant policies as a grey band"))
    if pngs:
        blocks.append(Raw("Specificity per negative strategy, 95% case-clustered intervals; n under each strategy is "
                          "the number of cases. Constant policies are the dashed grey lines (always 'absent' scores "
                          "specificity 1 and sensitivity 0), never a competitor."))
    else:
        blocks.append(Raw("No specificity plot: every run in this probe is a constant policy (the same verdict on "
                          "every question), which reads no image; the tables show their values as references."))
    if scores is not None and len(scores):
        blocks.append(Raw(POPE_INTRO + "\n\n**With MedScope's reading** ('yes' = a 'present' verdict, a hedged "
                          "'present' included; 'absent' and not-addressed replies = 'no'):\n\n"
                          + _pope_markdown(pope_table(scores, "medscope"), constant)))
        if "pope_yes" in scores and scores["pope_yes"].notna().any():
            blocks.append(Raw("**With POPE's own rule** (the text before the first '.', commas dropped; a word 'No', "
                              "'no' or 'not' = 'no', anything else = 'yes': 'Absent.', 'Not visible.', refusals and "
                              "JSON replies count as 'yes'), for setting beside published POPE tables:\n\n"
                              + _pope_markdown(pope_table(scores, "pope"), constant)))
    manifest = safe_text.read_json_object(run.manifest) if storage.exists(run.manifest) else {}
    if manifest.get("episodes") and storage.exists(manifest["episodes"]):
        blocks.append(Raw(f"**How replies were read.** {reading_check_line(manifest['episodes'])}"))
    lines = summary_lines(specificity_table(metrics, "specificity"), constant)
    top = [Section("Summary: organ-presence probe", [Raw("\n".join(lines))], anchor="summary-probe")] if lines else []
    return top + [Section(title, blocks, anchor="probe")], {}
