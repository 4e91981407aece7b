"""Statistics shared by the protocols: the case-clustered (and paired, patient- or
group-clustered) bootstrap (``bootstrap``; the counterfactual paper §3.9, the benchmark-MCQ paper Methods), the exact and
equivalence tests and multiplicity adjustments around it (``inference``: Bonferroni,
Benjamini-Hochberg, TOST, ...), and the label-noise sensitivity of the counterfactual paper §5.5
(``labelnoise``)."""
