"""Training recipes: one pydantic-validated config per stage / method (counterfactual paper §3.5, §3.7).

Defaults are the paper's values; each YAML in ``configs/train/`` overrides what differs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from medscope import config as cfgmod
from medscope.config import StrictModel
from medscope.io.records import VIEW_KINDS

Method = Literal["sft", "rft", "replay", "dpo", "paired_view"]

# The view kinds each training arm of the counterfactual paper draws from (§3.2, §3.5, §3.7, §4.2). A recipe names
# its own; these are the paper's sets, for recipes, arms files and tests to refer to.
RECIPE_KINDS = ("original", "target_removal", "random_removal", "degraded", "natural_negative", "insertion")
WITHOUT_CF_KINDS = ("original", "degraded", "natural_negative")  # "without counterfactual views"
C2_PAIR_KINDS = ("original", "target_removal", "natural_negative")  # no control edits, degraded views, tools
C3_PAIR_KINDS = C2_PAIR_KINDS + ("insertion",)  # "the recipe's own pools (insertions included)"
# C1: the matched-control arm with every control view replaced by an unmatched edit
C1_KINDS = ("original", "target_removal", "unmatched_control", "degraded", "natural_negative")


class LoraSettings(StrictModel):
    """LoRA on every linear layer of the language model; the vision tower stays frozen.

    ``target_modules: language-linear`` finds those layers from the model itself (its
    ``get_decoder()``), whatever the family; a list or regex is passed to PEFT as written."""

    r: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.05, ge=0.0, lt=1.0)
    target_modules: str | list[str] = "language-linear"
    exclude_modules: str | list[str] | None = None


class TrajectorySettings(StrictModel):
    prompt: Literal["agent", "short"] = "agent"  # system prompt (trajectories.PROMPTS)
    small_frac: float = 0.02
    small_repeat: int = Field(2, ge=1)  # lesions under small_frac appear this many times
    p_zoom: float = Field(0.5, ge=0, le=1)  # addition: §3.5 "optionally a zoom", no rate
    p_window: float = Field(0.3, ge=0, le=1)
    p_paraphrase: float = Field(0.5, ge=0, le=1)


class RFTSettings(StrictModel):
    """Stage 2: rejection sampling from the stage-1 model through the agent loop."""

    k: int = Field(4, ge=1)
    temperature: float = Field(1.2, gt=0)
    views_per_kind: int = Field(200, ge=1)
    # addition: stage2_sample_sizes (read as on top of the 200 per kind; §3.5's sentence allows both readings)
    extra_per_kind: dict[str, int] = {"natural_negative": 500, "target_removal": 300}
    failed_max_right: int = 2  # views with at most this many right of k ...
    failed_repeat: int = 3  # ... are repeated this many times
    synthetic_views: int = Field(3000, ge=0)  # label-derived trajectories added to the sampled ones
    max_turns: int = 5  # model replies: 3 tools + final + 1 spare, as the agent loop
    max_new_tokens: int = 256


class QuestionSet(StrictModel):
    """One ordinary-VQA question set of the replay (its ``train`` split is drawn from)."""

    items: str  # vqa_items table or cohort folder (``medscope cohort import --format vqa-rad|slake-vqa|pathvqa``)
    share: float = Field(..., gt=0)  # of the VQA part of the mix (normalised over the sets)


class ReplaySettings(StrictModel):
    """Stage 3: MedScope views mixed with ordinary VQA questions (counterfactual paper §3.5).

    Near-copies of evaluation images are found with the crosswalk's own thresholds (dhash
    within 8 bits, 64 px correlation ≥ 0.97, §4.1; ``medscope.qc.near_copies``), not set here."""

    # name (vqa-rad, slake, pathvqa) -> its table and share of the VQA items
    question_sets: dict[str, QuestionSet] = {}
    # every evaluation views table (name -> URI) whose images no replay image may copy; the
    # question sets' own test splits (the standard-VQA test) are protected as well
    eval_views: dict[str, str] = {}
    n_items: int = Field(5000, ge=1)
    vqa_share: float = Field(..., ge=0, le=1)  # of n_items: the paper gives no number (see ``addition``)
    absent_share_min: float = Field(0.35, ge=0, le=1)
    addition: str | None = None  # what the recipe sets that the paper does not state, and why

    @model_validator(mode="after")
    def _sets_if_vqa(self):
        if self.vqa_share > 0 and not self.question_sets:
            raise ValueError("replay.vqa_share > 0 needs replay.question_sets (VQA-RAD, SLAKE, PathVQA vqa_items tables)")
        return self


class DPOSettings(StrictModel):
    beta: float = Field(0.1, gt=0)


class PairedViewSettings(StrictModel):
    """C4: s(x) = log p(present | x) - log p(absent | x) over original O, control C, erasure E."""

    tau: float = 2.0
    max_cases: int | None = Field(3000, ge=1)  # "continued for 3,000 triplet cases" (drawn by draw_seed)
    w_margin: float = Field(0.5, ge=0)
    w_invariance: float = Field(0.5, ge=0)
    w_first_action: float = Field(0.5, ge=0)


class DeepSpeedSettings(StrictModel):
    stage: Literal[0, 1, 2, 3] = 2
    offload_optimizer: bool = False
    bf16: bool = True


class TrainRecipe(StrictModel):
    name: str
    method: Method = "sft"
    base: str = "tiny"  # "tiny[:qwen2-vl|qwen2.5-vl|gemma3]" or a local HF model directory
    # continue from this adapter (stages 2, 3, DPO, C4); "{seed}" is replaced by the run seed, so
    # each seed continues its own adapter ("each pair from that seed's recipe adapter", §3.7 C4)
    init_adapter: str | None = None
    seed: int = 0  # LoRA init, data order, trajectory sampling
    draw_seed: int = 0  # the fixed draw of views, shared by every seed (Appendix B)
    n_views: int | None = 16000  # None = every allowed view
    # required: every recipe says which view kinds it trains on (§3.5, §4.2); unmatched-control
    # edits belong to C1's arm only, where they replace the random-removal controls
    allowed_kinds: list[str]
    # "absent"-share matched arm (§4.2): lesion-free views repeated until this share of the draw
    match_absent_share: float | None = Field(None, ge=0, lt=1)
    lr: float = Field(2e-4, gt=0)
    batch_size: int = Field(4, ge=1)
    grad_accum: int = Field(1, ge=1)
    epochs: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1)  # cap on optimiser steps (smoke runs); 0 or less trained nothing
    # a fixed number of optimiser steps: the examples are passed over again (each pass in a new
    # seed order) until it is reached, or cut. The sweep sets every arm's to the reference
    # arm's one-pass count, so all arms have the same steps and schedule (§4.2).
    steps: int | None = Field(None, ge=1)
    warmup_frac: float = Field(0.03, ge=0, lt=1)  # addition: §3.5 gives no schedule
    checkpoint_every: int = Field(200, ge=1)
    lora: LoraSettings = LoraSettings()
    trajectory: TrajectorySettings = TrajectorySettings()
    rft: RFTSettings = RFTSettings()
    replay: ReplaySettings = ReplaySettings(vqa_share=0.0)
    dpo: DPOSettings = DPOSettings()
    paired: PairedViewSettings = PairedViewSettings()
    deepspeed: DeepSpeedSettings | None = None

    @model_validator(mode="after")
    def _kinds_known(self):
        bad = sorted(set(self.allowed_kinds) - set(VIEW_KINDS))
        if bad:
            raise ValueError(f"unknown view kind(s) {bad}; known: {', '.join(VIEW_KINDS)}")
        if self.method == "replay" and "replay" not in self.model_fields_set:
            raise ValueError("a replay recipe needs its `replay:` block (question sets, vqa_share, evaluation views)")
        if {"unmatched_control", "random_removal"} <= set(self.allowed_kinds):
            raise ValueError("allowed_kinds: unmatched_control replaces random_removal (C1, the counterfactual paper §3.7); "
                             "an arm trains on one control edit or the other, never both")
        return self


def load_recipe(uri: str) -> TrainRecipe:
    """A training recipe from YAML.

    Parameters
    ----------
    uri : str
        The recipe file (path or storage URI).

    Returns
    -------
    TrainRecipe
        The validated recipe.
    """
    return cfgmod.load(TrainRecipe, uri)


def deepspeed_config(ds: DeepSpeedSettings, batch_size: int, grad_accum: int) -> dict:
    """A DeepSpeed ZeRO config dict for ``ds`` (what ``deepspeed.initialize`` takes, together
    with the trainer's own AdamW, so the learning-rate schedule is the same with or without).

    Parameters
    ----------
    ds : DeepSpeedSettings
        ZeRO stage, optimiser offload, bf16.
    batch_size : int
        Micro-batch size per GPU.
    grad_accum : int
        Gradient-accumulation steps.

    Returns
    -------
    dict
        The DeepSpeed config (gradient clipping 1.0).
    """
    zero: dict = {"stage": ds.stage, "overlap_comm": True, "contiguous_gradients": True}
    if ds.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    return {
        "train_micro_batch_size_per_gpu": batch_size,
        "gradient_accumulation_steps": grad_accum,
        "bf16": {"enabled": ds.bf16},
        "zero_optimization": zero,
        "gradient_clipping": 1.0,  # addition: §3.5 gives no clipping
    }
