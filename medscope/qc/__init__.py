"""Quality control of counterfactual views (counterfactual paper §3.3, §4.1, §5.4): the contrast-ring
test that an erased lesion no longer stands out (``contrast``), the edit detector and
adversarial filtering (``detector``), the near-copy crosswalk between sources (``crosswalk``),
patient-grouped train / validation / test splits (``splits``) and the edit-visibility detectors
(``visibility``)."""
