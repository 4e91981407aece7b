"""View recipes: configs/views/<name>.yaml, validated by pydantic (counterfactual paper §3.2–3.3)."""

from __future__ import annotations

import os
import typing
from typing import Literal

import pydantic

from medscope import config as cfgmod
from medscope.config import StrictModel
from medscope.errors import MedScopeError
from medscope.qc.near_copies import MAX_BITS, NEAR_COPY_CORR
from medscope.views.degrade import DEGRADATIONS
from medscope.views.tools import TOOLS

Tool = Literal["telea", "ns", "texture", "fsr_fast", "fsr_best", "shiftmap", "exemplar", "transplant", "graft", "lama", "sd"]
Degradation = Literal["blur", "noise", "downup", "jpeg", "motion", "other_type"]


class Recipe(StrictModel):
    name: str = "default"
    seed: int = 0
    # erasure tools; "per_case": one tool per case drawn from the list (training: half LaMa,
    # half transplant); "all": target and random removal with every tool (held-out tools, §5.4)
    tools: list[Tool] = ["telea", "transplant"]
    tool_mode: Literal["per_case", "all"] = "per_case"
    # §3.7 C1: tool that fills the unmatched ellipse, per erasure tool; default: the next tool
    # of ``tools`` (transplant for LaMa erasures, LaMa for transplant erasures)
    control_tool: dict[str, Tool] = {}
    unmatched_control: bool = True
    # a held-out recipe (§5.4) names the training recipe it is held out from; loading it refuses
    # a tool the two share (``check_heldout``)
    heldout_from: str | None = None
    insertion: bool = True
    degradations: list[Degradation] = list(DEGRADATIONS)
    dilation_px: int = pydantic.Field(5, ge=0)
    min_lesion_px: int = pydantic.Field(20, ge=1)
    max_lesion_frac: float = pydantic.Field(0.2, gt=0, le=1)
    control_away_px: int = pydantic.Field(5, ge=1)  # addition: §3.2 says only "does not touch"
    # degradation parameters
    blur_divisor: float = pydantic.Field(40.0, gt=0)
    noise_sigma: float = pydantic.Field(60.0, ge=0)
    downup_factor: int = pydantic.Field(8, ge=2)
    jpeg_quality: int = pydantic.Field(5, ge=1, le=100)  # addition: §3.2 gives no JPEG quality
    motion_length_frac: float = pydantic.Field(1 / 15, gt=0, le=1)  # addition: §3.2 gives no motion length
    # QC thresholds (§3.3)
    ring_inner_px: float = 6.0
    ring_outer_px: float = 14.0
    contrast_abs: float = 1.0
    contrast_rel: float = 0.35
    edit_detector: bool = True  # train the edit detector and drop erasures it scores >= edit_score_max
    edit_score_max: float = pydantic.Field(0.5, gt=0, le=1)
    near_copy_bits: int = pydantic.Field(MAX_BITS, ge=0, le=64)  # §4.1, the crosswalk's own constants
    near_copy_corr: float = pydantic.Field(NEAR_COPY_CORR, gt=0, le=1)
    adversarial_auc_max: float = pydantic.Field(0.6, ge=0.5, le=1)
    adversarial_max_drop_frac: float = pydantic.Field(0.5, ge=0, le=1)  # addition: §3.3 caps no drop
    # group splits over patients / near-copy groups
    split_fractions: dict[str, float] = {"train": 0.7, "validation": 0.15, "test": 0.15}  # addition
    # model-holding tools
    lama_model: str | None = None  # default: env LAMA_MODEL
    sd_model_dir: str | None = None  # default: env SD_INPAINT_MODEL
    sd_steps: int = pydantic.Field(25, ge=1)
    sd_size: int = pydantic.Field(512, ge=32)

    @pydantic.model_validator(mode="after")
    def _check(self) -> "Recipe":
        if not self.tools:
            raise ValueError("tools must name at least one erasure tool")
        if len(set(self.tools)) != len(self.tools):
            raise ValueError("tools lists a tool twice")
        if set(self.split_fractions) != {"train", "validation", "test"}:
            raise ValueError("split_fractions needs exactly train, validation and test")
        if abs(sum(self.split_fractions.values()) - 1.0) > 1e-6 or min(self.split_fractions.values()) < 0:
            raise ValueError("split_fractions must be non-negative and sum to 1")
        if self.ring_outer_px <= self.ring_inner_px:
            raise ValueError("ring_outer_px must exceed ring_inner_px")
        return self

    def control_tool_for(self, tool: str) -> str:
        if tool in self.control_tool:
            return self.control_tool[tool]
        i = self.tools.index(tool) if tool in self.tools else -1
        return self.tools[(i + 1) % len(self.tools)]

    def all_tools(self) -> list[str]:
        """Every tool the recipe can call (erasure and unmatched-control fills)."""
        names = list(self.tools)
        if self.unmatched_control:
            names += [self.control_tool_for(t) for t in self.tools]
        return [t for t in TOOLS if t in names]


def default_recipe(lama_model: str | None = None) -> tuple[str, str]:
    """The recipe ``views build`` uses when none is named: the paper's training recipe where LaMa's
    weights are at hand, else its offline stand-in.

    Parameters
    ----------
    lama_model : str, optional
        Path of LaMa's TorchScript weights; default the ``LAMA_MODEL`` environment variable.

    Returns
    -------
    uri : str
        ``configs/views/training.yaml`` (LaMa + transplant) when the weights file exists, else
        ``configs/views/offline.yaml`` (transplant + graft), as shipped in the package.
    why : str
        One line saying which recipe and why, for the console.

    References
    ----------
    .. [1] counterfactual paper, §3.2 (LaMa and tissue transplant), §5.4 (Telea and diffusion held out).
    """
    from medscope.config import shipped

    path = lama_model if lama_model is not None else os.environ.get("LAMA_MODEL")
    if path and os.path.isfile(path):
        return shipped("views", "training.yaml"), (f"no --recipe: the paper's training recipe, configs/views/training.yaml "
                                                   f"(LaMa + transplant; LaMa weights {path})")
    missing = "LAMA_MODEL is not set" if not path else f"LAMA_MODEL={path} is not a file"
    return shipped("views", "offline.yaml"), (
        f"no --recipe: configs/views/offline.yaml (transplant + graft, graft standing in for LaMa: {missing}); "
        "the paper's training recipe is configs/views/training.yaml (LaMa + transplant, weights from LAMA_MODEL)")


def load_recipe(uri: str | None, tools: list[str] | None = None) -> Recipe:
    """A recipe from YAML (or the defaults), optionally with the tools overridden.

    Parameters
    ----------
    uri : str or None
        Path or URI of the recipe YAML; None for the defaults.
    tools : list of str or None, optional
        Erasure tools replacing the recipe's ``tools`` when given (and not empty).

    Returns
    -------
    Recipe
        The validated recipe.

    Raises
    ------
    MedScopeError
        If the YAML is invalid or fails validation, or a held-out recipe (``heldout_from``) shares a
        tool with its training recipe.
    """
    data = cfgmod.load_yaml(uri) if uri else {}
    if tools:
        # else pydantic blamed the recipe file ("demo.yaml: invalid Recipe: tools.0") and never
        # named the flag's value (issue 51, seventh campaign)
        unknown = [t for t in tools if t not in typing.get_args(Tool)]
        if unknown:
            raise MedScopeError(f"--tools {', '.join(unknown)}: unknown erasure tool(s) "
                                f"(one of: {', '.join(typing.get_args(Tool))})")
        data["tools"] = tools
    recipe = cfgmod.parse(Recipe, data, source=uri or "recipe")
    if recipe.heldout_from:
        _refuse_heldout_cycle(uri or "recipe", recipe.heldout_from)
        training = load_recipe(recipe.heldout_from)
        check_heldout(recipe.all_tools(), training.all_tools(), recipe.name, f"{training.name} ({recipe.heldout_from})")
    return recipe


def _refuse_heldout_cycle(uri: str, first: str) -> None:
    # Recipes that name each other through heldout_from recursed until Python's limit and the error
    # named no file (issue 51, tenth campaign): walk the chain first and name it.
    def key(u: str) -> str:
        return u if "://" in u else os.path.realpath(u)

    chain, seen, nxt = [uri], {key(uri)}, first
    while nxt:
        chain.append(nxt)
        if key(nxt) in seen:
            raise MedScopeError(f"{uri}: heldout_from forms a cycle ({' -> '.join(chain)}): a held-out "
                                f"recipe must name a training recipe that is not itself held out from it")
        seen.add(key(nxt))
        data = cfgmod.load_yaml(nxt)
        nxt = data.get("heldout_from") if isinstance(data, dict) else None


def recipe_hash(recipe: Recipe) -> str:
    """The recipe's content hash (``medscope.config.content_hash`` of its JSON).

    Parameters
    ----------
    recipe : Recipe
        The recipe.

    Returns
    -------
    str
        16 hex characters.
    """
    return cfgmod.content_hash(recipe)


def check_heldout(heldout_tools: list[str] | tuple[str, ...], training_tools: list[str] | tuple[str, ...],
                  heldout_name: str = "heldout_tools", training_name: str = "training") -> None:
    """Refuse a held-out set that shares a tool with the training recipe it is checked against.

    §3.7 (C1): "Telea and diffusion stay unseen"; §5.4: the held-out tools were "neither used in
    training or selection". ``training_tools`` is every tool the training recipe calls (its
    erasure tools and the unmatched-control fills).

    Parameters
    ----------
    heldout_tools : list or tuple of str
        Every tool the held-out set uses.
    training_tools : list or tuple of str
        Every tool the training recipe calls.
    heldout_name : str, optional
        The held-out set's name, for the message.
    training_name : str, optional
        The training recipe's name, for the message.

    Raises
    ------
    MedScopeError
        If the two share a tool.

    References
    ----------
    .. [1] Counterfactual paper, §3.7 (C1) and §5.4.
    """
    shared = sorted(set(heldout_tools) & set(training_tools))
    if shared:
        raise MedScopeError(
            f"held-out set {heldout_name!r} uses {', '.join(shared)}, which training recipe {training_name!r} also "
            f"uses ({', '.join(sorted(set(training_tools)))}); a held-out tool must be unseen in training "
            "(counterfactual paper §3.7, §5.4)")
