"""``medscope reproduce``: every numbered table and figure of the four source papers, the paper's
printed values beside what MedScope computes.

``papers/<paper>.yaml`` (counterfactual, benchmark_mcq, paired_modality, organ_presence) is the registry (one file per paper, validated by ``registry.Paper``);
``derive`` holds the derivations, each a thin call into the scoring / statistics code a user's run
goes through; ``check`` compares them with the printed values; ``render`` writes the page.
"""
