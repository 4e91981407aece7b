"""The construction spec of a pair set (``medscope pairs generate --spec F``; the paired-modality paper §3.3).

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
from medscope.protocols.paired_modality import draw
from medscope.protocols.paired_modality.manifest import Finding

STRATEGIES = ("shared_base", "edit_from_matched", "independent")
# The options each generator kind reads; any other key set under `generator:` is an error, so a
# copied spec never silently ignores what it says (docs/paired-modality.md lists them).
GENERATOR_OPTIONS = {
    "procedural": {"kind", "size"},
    "diffusers": {"kind", "model_dir", "device", "dtype", "steps", "guidance_scale", "strength", "size"},
    "provider": {"kind", "model", "base_url", "api_key_env", "timeout_s", "size"},
}
REQUIRED_OPTIONS = {"diffusers": ("model_dir",), "provider": ("model",)}


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

    @pydantic.model_validator(mode="after")
    def _options_of_kind(self) -> "GeneratorSpec":
        if self.kind not in GENERATOR_OPTIONS:
            raise ValueError(f"unknown generator kind {self.kind!r}; known: {', '.join(GENERATOR_OPTIONS)}")
        stray = sorted(set(self.model_fields_set) - GENERATOR_OPTIONS[self.kind])
        if stray:
            raise ValueError(f"generator kind {self.kind} does not use {', '.join(stray)}; its options: "
                             f"{', '.join(sorted(GENERATOR_OPTIONS[self.kind]))}")
        missing = [k for k in REQUIRED_OPTIONS.get(self.kind, ()) if not getattr(self, k)]
        if missing:
            raise ValueError(f"generator kind {self.kind} needs {', '.join(missing)}")
        return self


class PhotoPlan(StrictModel):
    prompt: str
    caption: str
    findings: list[Finding | str] = []
    mark: str | None = None  # procedural generator: the sign drawn (medscope.protocols.paired_modality.draw.MARKS)
    # the paired-modality paper §3.3 strategy 2: a reference image of the finding (licensed for this use), relative
    # to the spec; sent beside the edited image (provider) or pasted into edit_box and harmonised
    # by the edit (diffusers)
    reference: str | None = None
    # §3.3 strategy 4: where the edit should be focused, as fractions of the image: [x0, y0, x1,
    # y1]; the edit is masked to it (provider: a transparent mask region; diffusers: inpainting)
    edit_box: list[float] | None = None

    @pydantic.field_validator("edit_box")
    @classmethod
    def _box(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and not (len(v) == 4 and 0 <= v[0] < v[2] <= 1 and 0 <= v[1] < v[3] <= 1):
            raise ValueError("edit_box is [x0, y0, x1, y1] with 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1")
        return v


class RadiographMeta(StrictModel):
    """What the radiograph's own metadata says of the patient (paired-modality paper §3.3: the photograph's
    subject is matched to it); any field may be missing."""

    age: int | None = pydantic.Field(None, ge=0, le=120)
    sex: str | None = None  # as the metadata says it: female | male | ...
    ethnicity: str | None = None  # rarely present (3 of 40 in the paper); else drawn


# addition: the four groups of the paired-modality paper §3.3 weighted by the US 2020 census shares (White alone,
# not Hispanic 57.8%; Hispanic or Latino 18.7%; Black alone 12.1%; Asian alone 5.9%), normalised
US_2020_WEIGHTS = {"White": 57.8, "Hispanic/Latino": 18.7, "Black": 12.1, "Asian": 5.9}


class DemographicsSpec(StrictModel):
    """The reproducible ethnicity draw (paired-modality paper §3.3): one draw per condition from ``seed`` and
    the condition's name, over ``ethnicity_weights``; a radiograph's own ethnicity wins."""

    seed: int = 0
    ethnicity_weights: dict[str, float] = US_2020_WEIGHTS

    @pydantic.field_validator("ethnicity_weights")
    @classmethod
    def _positive(cls, v: dict[str, float]) -> dict[str, float]:
        if not v or any(w < 0 for w in v.values()) or sum(v.values()) <= 0:
            raise ValueError("ethnicity_weights: non-negative weights, at least one positive")
        return v


class RadiographSpec(StrictModel):
    phantom: str  # nodular | patchy | none: a generated phantom radiograph


class ConditionPlan(StrictModel):
    condition: str
    body_region: str
    subject: str  # e.g. "a 45-year-old woman, upper back, clinical photograph, plain background"
    radiograph: str | RadiographSpec
    radiograph_findings: str = ""
    radiograph_meta: RadiographMeta = RadiographMeta()  # the photo subject's age / sex come from here
    region: str = "skin"  # procedural generator: skin | nail | face
    strategy: str = "shared_base"

    @pydantic.field_validator("strategy")
    @classmethod
    def _known_strategy(cls, v: str) -> str:
        if v not in STRATEGIES:
            raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}")
        return v
    seed: int = 0
    matched: PhotoPlan
    mismatched: PhotoPlan


class PairsSpec(StrictModel):
    name: str = "pairs"
    generator: GeneratorSpec = GeneratorSpec()
    candidates_per_round: int = 1
    # distinct reviewers whose approval a photograph needs before `build` takes it (paired-modality paper §3.3:
    # 1-3 board-certified physicians); addition: the default 1 is the paper's minimum
    approvals_required: int = pydantic.Field(1, ge=1)
    demographics: DemographicsSpec = DemographicsSpec()
    conditions: list[ConditionPlan]

    @pydantic.model_validator(mode="after")
    def _procedural_fields(self) -> "PairsSpec":
        """``region`` and ``mark`` belong to the procedural generator: it needs a known region and
        two different marks (the same mark twice draws the same picture); other kinds refuse them."""
        for c in self.conditions:
            for pt in ("matched", "mismatched"):
                p = getattr(c, pt)
                if (p.reference or p.edit_box) and self.generator.kind == "procedural":
                    raise ValueError(f"condition {c.condition!r}: {pt}.reference / edit_box need an image model "
                                     "(diffusers or provider), not the procedural generator")
                if p.reference and self.generator.kind == "diffusers" and not p.edit_box:
                    raise ValueError(f"condition {c.condition!r}: with diffusers a {pt}.reference is pasted into "
                                     "edit_box and harmonised; give edit_box")
                # an edit box needs an image to edit: a shared base, the matched photo, or a retry
                if p.edit_box and c.strategy == "independent":
                    raise ValueError(f"condition {c.condition!r}: {pt}.edit_box focuses an edit; strategy "
                                     "independent makes none (use shared_base or edit_from_matched)")
            used = ["region"] if "region" in c.model_fields_set else []
            used += [f"{pt}.mark" for pt in ("matched", "mismatched") if getattr(c, pt).mark is not None]
            if self.generator.kind != "procedural":
                if used:
                    raise ValueError(f"condition {c.condition!r}: {', '.join(used)} only apply to the procedural "
                                     f"generator, not {self.generator.kind}")
                continue
            if c.region not in draw.MARKS:
                raise ValueError(f"condition {c.condition!r}: region must be one of {', '.join(draw.MARKS)}")
            known = (*draw.MARKS[c.region], "none")
            marks = [getattr(c, pt).mark or "none" for pt in ("matched", "mismatched")]
            bad = [m for m in marks if m not in known]
            if bad:
                raise ValueError(f"condition {c.condition!r}: mark {bad[0]!r} is not drawn on {c.region}; "
                                 f"marks there: {', '.join(known)}")
            if marks[0] == marks[1]:
                raise ValueError(f"condition {c.condition!r}: the procedural generator needs two different marks "
                                 f"(matched.mark, mismatched.mark from {', '.join(known)}); the same mark twice "
                                 "draws the same picture")
        return self


def subject_demographics(plan: ConditionPlan, spec: DemographicsSpec) -> dict:
    """The photograph subject's age, sex and ethnicity (paired-modality paper §3.3): age and sex from the
    radiograph's metadata when present, ethnicity from it when present, else a reproducible draw
    (the same spec seed and condition always give the same group). ``source`` says which.

    Parameters
    ----------
    plan : ConditionPlan
        The condition, with its radiograph's metadata.
    spec : DemographicsSpec
        The draw's seed and ethnicity weights.

    Returns
    -------
    dict
        ``age`` (int or None), ``sex`` (str or None), ``ethnicity`` (str) and ``ethnicity_source``
        ('radiograph metadata' or 'drawn').

    References
    ----------
    .. [1] paired-modality paper, §3.3.
    """
    from medscope.seeding import rng_for

    meta = plan.radiograph_meta
    groups = list(spec.ethnicity_weights)
    if meta.ethnicity:
        ethnicity, source = meta.ethnicity, "radiograph metadata"
    else:
        w = [spec.ethnicity_weights[g] for g in groups]
        rng = rng_for(spec.seed, "ethnicity", plan.condition.strip().lower())
        ethnicity, source = groups[int(rng.choice(len(groups), p=[x / sum(w) for x in w]))], "drawn"
    return {"age": meta.age, "sex": meta.sex, "ethnicity": ethnicity, "ethnicity_source": source}


def demographics_phrase(d: dict) -> str:
    """"Patient: 52-year-old female, Black" (only what is known).

    Parameters
    ----------
    d : dict
        Demographics as ``subject_demographics`` gives them (``age``, ``sex``, ``ethnicity``; any may be
        None).

    Returns
    -------
    str
        'Patient: ' then what is known; 'Patient: ' alone when nothing is.
    """
    who = " ".join(x for x in (f"{d['age']}-year-old" if d.get("age") is not None else "", d.get("sex") or "") if x)
    return "Patient: " + ", ".join(x for x in (who, d.get("ethnicity") or "") if x)
