"""The reader study as a report section (medscope.render.document blocks)."""

from __future__ import annotations

from medscope.reader import READER_KINDS
from medscope.render.document import Para, Section, Table, to_html, to_markdown

KIND_LABEL = {"lesion": "unmodified, finding", "erased": "erased", "control": "control-edited",
              "lesion_free": "unmodified, no finding"}
# the counterfactual paper §5.4: zero-shot frontier models' AUC for erased-lesion views vs originals, quoted when
# no measured reference file is given
PAPER_REFERENCE = "zero-shot frontier models 0.70-0.75 on erased views, 0.52-0.55 on control edits (counterfactual paper §5.4)"


def _f(x, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _residual(r: dict) -> str:
    if not r["n"]:
        return "n/a"
    return f"{r['k']}/{r['n']} = {_pct(r['rate'])} [{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]"


def _verdict(r: dict, acceptable: float) -> str:
    if not r["n"]:
        return "n/a"
    return f"upper bound < {_pct(acceptable)}" if r["below_acceptable"] else f"not shown < {_pct(acceptable)}"


def reader_section(analysis: dict) -> tuple[str, list]:
    """("Reader study", blocks): per-reader edit visibility and residual findings, agreement,
    majority criterion, results by source and stress test, the reference line.

    Parameters
    ----------
    analysis : dict
        What ``analysis.analyse`` returns (or ``analysis.json`` holds).

    Returns
    -------
    title : str
        'Reader study'.
    blocks : list
        ``Para`` and ``Table`` blocks of ``medscope.render.document``.
    """
    acc = analysis["acceptable_residual"]
    packs = ", ".join(f"{p['name']} ({p['images']} images, {p['pack_hash'][:12]})" for p in analysis["packs"])
    blocks: list = [Para(
        f"Blinded physician reading (counterfactual paper §7) of packs {packs}: {analysis['answers_scored']} answers from "
        f"{len(analysis['readers'])} readers. An image is 'rated edited' when the reader chose probably or "
        f"definitely edited. AUCs use the four-level rating (0.5: no separation). The residual-finding rate is the "
        f"share of erased images still answered \"yes\", with its exact (Clopper-Pearson) 95% interval, read "
        f"against an acceptable rate of {_pct(acc)}.")]
    if analysis.get("files_rejected"):
        blocks.append(Para(f"Answer files not scored (see rejects.parquet): {', '.join(analysis['files_rejected'])}."))
    head = ["Reader", "Specialty", "Years", "Images"] + [f"Rated edited: {KIND_LABEL[k]}" for k in READER_KINDS] + \
        ["AUC edited vs unmodified", "AUC erased vs control", "AUC erased vs unmodified with finding"]
    rows = []
    for rid, r in analysis["readers"].items():
        rows.append([rid, r.get("specialty") or "", str(r.get("years_experience") or ""), str(r["n"])] +
                    [_pct(r["kinds"][k]["edited"]) for k in READER_KINDS] +
                    [_f(r["auc_edited_vs_unmodified"]), _f(r["auc_erased_vs_control"]), _f(r["auc_erased_vs_original"])])
    blocks.append(Table(head, rows, "Edit visibility per reader. The last AUC compares like for like with the "
                              "models' reference (erased-lesion views vs unedited images with the finding)."))
    ref = analysis.get("reference")
    if ref:
        blocks.append(Table(["Model (zero-shot)", "Measure", "AUC"],
                            [[m, k.replace("_", " "), _f(v)] for m, d in ref.items() for k, v in d.items()],
                            "Reference line: the models' edit-visibility AUCs (§5.4 detectors)."))
    else:
        blocks.append(Para(f"Reference line: {PAPER_REFERENCE}; no measured reference file was given."))
    head = ["Reader"] + [f"\"Yes\": {KIND_LABEL[k]}" for k in READER_KINDS] + ["Cannot tell (all)",
                                                                                 "Residual findings [95% CI]", "Criterion"]
    rows = []
    for rid, r in analysis["readers"].items():
        ct = sum((r["kinds"][k]["cannot_tell"] or 0) * r["kinds"][k]["n"] for k in READER_KINDS) / max(r["n"], 1)
        rows.append([rid] + [_pct(r["kinds"][k]["yes"]) for k in READER_KINDS] + [_pct(ct), _residual(r["residual"]),
                                                                               _verdict(r["residual"], acc)])
    blocks.append(Table(head, rows, "Clinical question per reader; residual findings = erased images answered \"yes\"."))
    m = analysis["majority_localized"]
    blocks.append(Table(["Erased images (localized)", "Readers per image", "Majority \"yes\"", "Ties",
                         "Residual rate [95% CI]", "Criterion"],
                        [[str(m["n"]), ", ".join(map(str, m["readers_per_image"])), str(m["k"]), str(m["ties"]),
                          _residual(m), _verdict(m, acc)]],
                        "The pre-specified criterion: residual findings by reader majority on localized findings "
                        "(ties, half the readers saying \"yes\", are counted apart for the adjudicator)."))
    if analysis["agreement"]:
        blocks.append(Table(["Reader A", "Reader B", "Images read by both", "κ edited yes/no", "κ clinical answer"],
                            [[a["reader_a"], a["reader_b"], str(a["n"]), _f(a["kappa_edited"]), _f(a["kappa_clinical"])]
                             for a in analysis["agreement"]], "Agreement between readers (Cohen's κ)."))
    rows = []
    for src, r in analysis["by_source"].items():
        rows.append([src, str(r["n"])] + [f"{_pct(r['kinds'][k]['edited'])} / {_pct(r['kinds'][k]['yes'])}" for k in READER_KINDS]
                    + [_f(r["auc_edited_vs_unmodified"]), _residual(r["residual"])])
    blocks.append(Table(["Source", "Answers"] + [f"{KIND_LABEL[k]}: edited / yes" for k in READER_KINDS]
                        + ["AUC edited vs unmodified", "Residual findings"], rows, "By source, pooled over readers."))
    if analysis["stress_tests"]:
        blocks.append(Table(["Stress test", "Residual findings [95% CI]"],
                            [[t, _residual(r)] for t, r in analysis["stress_tests"].items()],
                            "Named stress tests (not part of the criterion), pooled over readers."))
    return "Reader study", blocks


def write_report(analysis: dict) -> tuple[str, str, dict[str, bytes]]:
    """(Markdown, HTML, image files) of a document holding only the reader-study section.

    Parameters
    ----------
    analysis : dict
        What ``analysis.analyse`` returns (or ``analysis.json`` holds).

    Returns
    -------
    markdown : str
        The document as Markdown.
    html : str
        The same document as self-contained HTML.
    images : dict of str to bytes
        Image files to write beside the Markdown, by relative path.
    """
    title, blocks = reader_section(analysis)
    sections = [Section(title, blocks)]
    md, images = to_markdown("MedScope reader study", sections)
    return md, to_html("MedScope reader study", sections), images
