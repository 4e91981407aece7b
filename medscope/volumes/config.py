"""Configuration of the volumetric organ-presence probe (organ-presence paper), validated by pydantic."""

from __future__ import annotations

from typing import Literal

import pydantic

from medscope.config import StrictModel

STRATEGIES = ("random", "popular", "adversarial")
FORMATS = ("free_text", "verdict_json", "reasoning_json")
IMAGE_MODES = ("image", "no_image", "blank")

DEFAULT_HEDGES = (
    "not clear",
    "not clearly",
    "unclear",
    "obscured",
    "cannot confirm",
    "can not confirm",
    "cannot be confirmed",
    "cannot determine",
    "cannot be determined",
    "no definite",
    "not definitively",
    "possibly",
    "possible",
    "may be",
    "might be",
    "could be",
    "appears",
    "likely",
    "suggest",
    "uncertain",
    "difficult to",
    "partially",
)

DEFAULT_VESSELS = ("aorta", "inferior vena cava", "portal vein and splenic vein", "portal vein", "splenic vein")


class Window(StrictModel):
    """A CT intensity window in Hounsfield units."""

    width: float = pydantic.Field(400.0, gt=0)
    level: float = 40.0


def _triple_default() -> list[Window]:
    # MedGemma's native CT encoding: wide, soft-tissue and brain windows as R, G, B.
    return [Window(width=2048, level=0), Window(width=350, level=40), Window(width=80, level=40)]


class ProbeConfig(StrictModel):
    """Every knob of ``medscope probe build`` / ``score`` (organ-presence paper)."""

    seed: int = pydantic.Field(0, description="seed of the slice and negative draws")
    volumes: str | None = pydantic.Field(None, description="volumes table, or the cohort folder holding it")
    out: str | None = pydantic.Field(None, description="output folder URI (probe_items/, slices, montages, rejects)")
    present_voxels: int = pydantic.Field(50, ge=1,
                                         description="an organ is present on a slice at >= this many voxels")
    absent_voxels: int = pydantic.Field(5, ge=1, description="an organ is absent from a slice below this many voxels")
    window: Window = pydantic.Field(Window(), description="gray render's CT window, {width, level} in HU")
    triple_windows: list[Window] = pydantic.Field(default_factory=_triple_default,
                                                  description="the triple render's three windows (R, G, B)")
    renders: list[Literal["gray", "triple"]] = pydantic.Field(
        ["gray"], description="how slices are rendered: gray, triple")
    strategies: list[Literal["random", "popular", "adversarial"]] = pydantic.Field(
        list(STRATEGIES), description="POPE negative-sampling strategies")
    negatives_per_slice: int = pydantic.Field(2, ge=1, description="absent-organ questions per slice and strategy")
    # Positives per slice: POPE's balance of present and absent questions per image; null = every
    # present organ. addition: 2 (drawn uniformly) with 66 slices a volume gives the paper's counts
    # on 30 volumes; the paper gives the counts, not these settings (docs/probe.md "Scale").
    positives_per_slice: int | None = pydantic.Field(
        2, ge=1, description="present-organ questions per slice (null: every present organ)")
    vessels: list[str] = pydantic.Field(list(DEFAULT_VESSELS),
                                        description="organs kept out of the adversarial setting")
    formats: list[Literal["free_text", "verdict_json", "reasoning_json"]] = pydantic.Field(
        list(FORMATS), description="output formats asked for")
    image_modes: list[Literal["image", "no_image", "blank"]] = pydantic.Field(
        list(IMAGE_MODES), description="image, and the no-image and blank controls")
    hedge_lexicon: list[str] = pydantic.Field(list(DEFAULT_HEDGES), description="words that mark a reply as hedged")
    # addition: 66 x 30 volumes = 1,980 slices: 3,960 negatives a strategy at 2 a slice, the paper's
    # 3,951 (docs/probe.md "Scale"); items/volume = slices x (positives + 2 x strategies)
    slices_per_volume: int = pydantic.Field(66, ge=1, description="slices sampled per volume")
    transition_mm: float = pydantic.Field(10.0, ge=0,
                                          description="width of the organ-boundary transition stratum, mm")
    far_mm: float = pydantic.Field(
        40.0, ge=0, description="z distance from the organ (mm) from which a negative counts as far")
    max_image_side: int = pydantic.Field(768, ge=16, description="long side of a rendered slice, pixels")
    montage: bool = pydantic.Field(False, description="also write one 12x12 montage PNG per volume")
    montage_window: str = pydantic.Field("soft_tissue", description="CT window preset of the montages")
    bootstrap_b: int = pydantic.Field(2000, ge=10, description="case-bootstrap resamples of the intervals")
    bootstrap_seed: int = pydantic.Field(42, description="case-bootstrap seed")
    workers: int | None = pydantic.Field(
        None, description="Ray Data concurrency (default: as many as the cluster allows)")

    @pydantic.model_validator(mode="after")
    def _thresholds(self) -> "ProbeConfig":
        if self.absent_voxels > self.present_voxels:
            raise ValueError(
                f"absent_voxels ({self.absent_voxels}) must not exceed present_voxels ({self.present_voxels})"
            )
        if len(self.triple_windows) != 3:
            raise ValueError("triple_windows needs exactly three windows (R, G, B)")
        if not self.hedge_lexicon:
            raise ValueError("hedge_lexicon must not be empty")
        return self


def conditions(cfg: ProbeConfig) -> tuple[str, ...]:
    """Condition names: ``<format>`` with the image, ``<format>+no_image`` / ``<format>+blank`` controls.

    Parameters
    ----------
    cfg : ProbeConfig
        Supplies ``image_modes`` and ``formats``.

    Returns
    -------
    tuple of str
        One name per (image mode, format), image modes outer.
    """
    out = []
    for mode in cfg.image_modes:
        for fmt in cfg.formats:
            out.append(fmt if mode == "image" else f"{fmt}+{mode}")
    return tuple(out)


def split_condition(condition: str) -> tuple[str, str]:
    """``"verdict_json+blank"`` -> ("verdict_json", "blank").

    Parameters
    ----------
    condition : str
        A condition name (:func:`conditions`).

    Returns
    -------
    format : str
        The output format.
    mode : str
        The image mode, ``"image"`` when the name has no ``+``.
    """
    fmt, _, mode = condition.partition("+")
    return fmt, (mode or "image")
