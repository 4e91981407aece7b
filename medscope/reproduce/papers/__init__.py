"""The registry files (counterfactual.yaml, benchmark_mcq.yaml, paired_modality.yaml, organ_presence.yaml); a package so that they ship with the wheel."""
