"""Statistics shared by the protocols: the case-clustered (and paired, patient- or
group-clustered) bootstrap (``bootstrap``; seed 000 §3.9, seed 001 Methods), the exact and
equivalence tests and multiplicity adjustments around it (``inference``: Bonferroni,
Benjamini-Hochberg, TOST, ...), and the label-noise sensitivity of seed 000 §5.5
(``labelnoise``)."""
