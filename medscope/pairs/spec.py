"""The construction spec of a pair set (``medscope pairs generate --spec F``; seed 002 §3.3).

Per condition: the radiograph (a file, or a phantom pattern for the generated set), the subject
(age, sex, body region, setting) shared by both photographs, a prompt for the disease sign
(matched) and one for the look-alike alternative (mismatched), each photograph's ground-truth
caption and clinically significant findings, and how "same person, other finding" is made:

- ``shared_base``: a base image of the subject is generated once, then both photographs are
  edits of it (image-to-image / image edit);
- ``edit_from_matched``: the matched photograph is generated from text; the mismatched one is an
  edit of the approved matched photograph (made in the round after that approval);
- ``independent``: both from text with the same seed (weakest control of the person).
"""

from __future__ import annotations

import pydantic

from medscope.config import StrictModel
from medscope.protocols.paired_modality.manifest import Finding

STRATEGIES = ("shared_base", "edit_from_matched", "independent")


class GeneratorSpec(StrictModel):
    kind: str = "procedural"  # procedural | diffusers | provider
    model_dir: str | None = None  # diffusers: a local pipeline folder (never downloaded)
    device: str = "cpu"
    dtype: str = "float32"
    steps: int = 30
    guidance_scale: float = 7.0
    strength: float = 0.6  # image-to-image: how far an edit may move from its source
    size: int | None = None  # diffusers height = width; provider "WxH" from it
    model: str | None = None  # provider: image model id
    base_url: str | None = None  # provider: an OpenAI-compatible images endpoint
    api_key_env: str | None = None  # provider: NAME of the variable holding the key
    timeout_s: float = pydantic.Field(300.0, gt=0)


class PhotoPlan(StrictModel):
    prompt: str
    caption: str
    findings: list[Finding | str] = []
    mark: str | None = None  # procedural generator: the sign drawn (medscope.protocols.paired_modality.draw.MARKS)


class RadiographSpec(StrictModel):
    phantom: str  # nodular | patchy | none: a generated phantom radiograph


class ConditionPlan(StrictModel):
    condition: str
    body_region: str
    subject: str  # e.g. "a 45-year-old woman, upper back, clinical photograph, plain background"
    radiograph: str | RadiographSpec
    radiograph_findings: str = ""
    region: str = "skin"  # procedural generator: skin | nail | face
    strategy: str = "shared_base"
    seed: int = 0
    matched: PhotoPlan
    mismatched: PhotoPlan


class PairsSpec(StrictModel):
    name: str = "pairs"
    generator: GeneratorSpec = GeneratorSpec()
    candidates_per_round: int = 1
    conditions: list[ConditionPlan]
