"""Model entries of ``configs/models/*.yaml`` (counterfactual paper §3.10, §4.2; the paired-modality paper Appendix A).

An entry names a model, its adapter kind, where it is served, its price per million tokens,
its rate limits and its provider settings. API keys never appear here: ``api_key_env`` names
the environment variable that holds the key, and the adapter reads it when it is built.
"""

from __future__ import annotations

import re

import pydantic

from medscope.config import StrictModel
from medscope.models.base import Decoding

API_KINDS = ("openai", "anthropic", "gemini", "azure_openai")

# addition: the longest deadline one request may have (no paper sets one). A day is past any
# provider's slowest reply; `timeout_s: 1e30` overflowed the deadline's clock and failed every
# unit of a sweep against a healthy provider (issue 51).
MAX_TIMEOUT_S = 86_400.0


class ProviderSettings(StrictModel):
    """Provider-specific request settings; every one is part of the request key."""

    image_detail: str | None = None  # OpenAI image detail: auto | low | high
    reasoning_effort: str | None = None  # OpenAI reasoning_effort: minimal | low | medium | high
    thinking_budget: int | None = None  # Anthropic extended thinking / Gemini thinking budget
    media_resolution: str | None = None  # Gemini: MEDIA_RESOLUTION_LOW | _MEDIUM | _HIGH
    max_tokens_param: str = "max_completion_tokens"  # OpenAI-compatible servers may want max_tokens
    max_output_tokens_multi_image: int | None = None  # the paired-modality paper App. A: larger cap for 2-image requests
    anthropic_version: str | None = None  # header override; None keeps the SDK's
    api_version: str | None = None  # azure_openai: the api-version query (paired-modality paper App. A: 2024-12-01-preview)

    def items(self) -> tuple[tuple[str, str], ...]:
        return tuple((k, str(v)) for k, v in sorted(self.model_dump(exclude_none=True).items()))


class ModelEntry(StrictModel):
    """One model to evaluate."""

    name: str  # the model column of every table
    kind: str  # openai | anthropic | gemini | local_hf | policy kinds ... (medscope.models.registry)
    model: str | None = None  # provider model id / HF checkpoint / policy name
    base_url: str | None = None  # API endpoint; checked against a private cohort's allow-list
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    price_in_per_mtok: float = pydantic.Field(0.0, ge=0)  # USD per 1M input tokens
    price_out_per_mtok: float = pydantic.Field(0.0, ge=0)  # USD per 1M output tokens
    rpm: float | None = pydantic.Field(None, gt=0)  # requests per minute for this provider (None: unlimited)
    tpm: float | None = pydantic.Field(None, gt=0)  # tokens per minute (input + output)
    rate_group: str | None = None  # models sharing one provider quota share a limiter; default: base_url
    timeout_s: float = pydantic.Field(120.0, gt=0, le=MAX_TIMEOUT_S)
    max_attempts: int = pydantic.Field(6, ge=1)  # tries per request for transient errors (429, 5xx, timeouts, resets)
    temperature: float | None = None  # None: the provider's default sampling (counterfactual paper §3.10)
    max_output_tokens: int = pydantic.Field(4000, ge=1)
    seed: int | None = None
    placement: str = "auto"  # auto | pool | dedicated (one actor holding the model; GPU if any)
    settings: ProviderSettings = ProviderSettings()
    options: dict[str, str | int | float | bool] = {}  # kind-specific extras (local models, policies)

    @pydantic.field_validator("name")
    @classmethod
    def _name_not_blank(cls, v: str) -> str:
        # A blank name was accepted and became an empty model column (issue 51, seventh campaign).
        if not v.strip():
            raise ValueError("must not be empty: it is the model column of every table")
        return v

    @pydantic.field_validator("api_key_env")
    @classmethod
    def _env_name_not_key(cls, v: str | None) -> str | None:
        # An environment variable name is upper case; a pasted key (sk-..., AIza...) never is.
        if v is not None and not re.fullmatch(r"[A-Z_][A-Z0-9_]*", v):
            raise ValueError("must be the NAME of an environment variable (e.g. OPENAI_API_KEY), never the key")
        return v

    @pydantic.field_validator("base_url")
    @classmethod
    def _base_url_is_a_url(cls, v: str | None) -> str | None:
        # Else '${HOST}/v1' (a shell reference YAML does not expand) fails only at the first
        # request, with urllib's "unknown url type" (issue 51, fresh campaign).
        if v is None:
            return v
        if "${" in v or re.match(r"\$[A-Za-z_]", v):
            raise ValueError(f"{v!r} holds an environment reference, which is not expanded here; write the URL itself")
        if not re.match(r"https?://[^/\s]+", v):
            raise ValueError(f"{v!r} is not an http:// or https:// URL with a host")
        return v

    @pydantic.model_validator(mode="after")
    def _api_fields(self) -> "ModelEntry":
        if self.kind in API_KINDS and not self.model:
            raise ValueError(f"kind {self.kind} needs a model id (model: ...)")
        return self

    @property
    def provider(self) -> str:
        return self.kind

    @property
    def endpoint(self) -> str:
        return self.base_url or ("local" if self.kind not in API_KINDS else f"default:{self.kind}")

    @property
    def limiter_group(self) -> str:
        return self.rate_group or f"{self.kind}@{self.endpoint}"

    def may_receive(self, private: bool, endpoint_allowlist: tuple[str, ...] | list[str]) -> bool:
        """Privacy (docs/design.md): a private item goes only to endpoints on its allow-list. Models
        that run here (local weights, policies: endpoint "local") send nothing anywhere."""
        if not private or self.endpoint == "local":
            return True
        return self.endpoint.rstrip("/") in {a.rstrip("/") for a in endpoint_allowlist}

    def decoding(self) -> Decoding:
        """The decoding settings of this entry; provider settings go into the request key."""
        extra = list(self.settings.items())
        if self.temperature is None:
            extra.append(("sampling", "provider_default"))
        return Decoding(
            temperature=0.0 if self.temperature is None else self.temperature,
            max_output_tokens=self.max_output_tokens,
            seed=self.seed,
            extra=tuple(sorted(extra)),
        )

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float:
        """List-price cost of one request from the provider's token counts (counterfactual paper §4.3)."""
        return (input_tokens * self.price_in_per_mtok + output_tokens * self.price_out_per_mtok) / 1e6


class ModelsConfig(StrictModel):
    models: list[ModelEntry]

    @pydantic.model_validator(mode="after")
    def _unique(self) -> "ModelsConfig":
        names = [m.name for m in self.models]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"model names must be unique; repeated: {', '.join(dupes)}")
        return self
