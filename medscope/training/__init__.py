"""Training as the counterfactual paper (counterfactual paper, §3.5-§3.7) describes it; a random seed here
is ``TrainRecipe.seed``, never a paper. Recipes (``recipes``), label-derived trajectories
(``trajectories``), what each stage trains on (``data``, ``replay``), the base VLM and its LoRA
adapter (``vlm``), loss terms beyond likelihood (``losses``: DPO, the paired-view C4 terms), one
trainer per method (``trainers``), recipe to ready trainer (``runner``), sampling and scoring
episodes of the model in training (``episodes``, ``evaluation``), pre-registered stage
selection (``selection``) and synthetic views for smoke runs (``synthetic_views``). Ray Train
and Tune drive it from ``pipelines/train.py`` and ``pipelines/sweep.py``."""
