"""Google Gemini ``generateContent`` through the official ``google-genai`` SDK.

Images go as inline PNG parts; ``media_resolution`` and ``thinking_budget`` are provider
settings (counterfactual paper §3.10, §5.5). Thinking tokens are billed as output, so they count there.
"""

from __future__ import annotations

from medscope.models import api_common as common
from medscope.models import deadline
from medscope.models.base import Completion, Decoding, Message
from medscope.models.config import ModelEntry

REFUSAL_REASONS = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}


class GeminiChatModel:
    provider = "gemini"

    def __init__(self, entry: ModelEntry):
        from google import genai
        from google.genai import types

        self.entry = entry
        self.name = entry.name
        self.endpoint = entry.endpoint
        self._key = common.api_key(entry.api_key_env, entry.name)
        options = {"timeout": int(entry.timeout_s * 1000),
                   "client_args": {"transport": deadline.DeadlineTransport(), "follow_redirects": False}}
        if entry.base_url:
            options["base_url"] = entry.base_url
        self._types = types
        self._client = genai.Client(api_key=self._key, http_options=types.HttpOptions(**options))

    def to_request(self, messages: list[Message], decoding: Decoding) -> dict:
        types = self._types
        s = self.entry.settings
        system, turns = common.split_system(messages)
        contents = []
        for m in turns:
            parts = [
                types.Part.from_bytes(data=p.png, mime_type="image/png") if p.is_image else types.Part.from_text(text=p.text)
                for p in m.parts if p.is_image or p.text
            ]
            contents.append(types.Content(role="model" if m.role == "assistant" else "user", parts=parts))
        max_out = decoding.max_output_tokens
        if s.max_output_tokens_multi_image and common.image_count(messages) > 1:
            max_out = s.max_output_tokens_multi_image
        config = {"max_output_tokens": max_out}
        if system:
            config["system_instruction"] = system
        if self.entry.temperature is not None:
            config["temperature"] = decoding.temperature
        if decoding.seed is not None:
            config["seed"] = decoding.seed
        if s.thinking_budget is not None:
            config["thinking_config"] = types.ThinkingConfig(thinking_budget=s.thinking_budget)
        if s.media_resolution:
            config["media_resolution"] = s.media_resolution
        return {"model": self.entry.model, "contents": contents, "config": types.GenerateContentConfig(**config)}

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        request = self.to_request(messages, decoding)
        response = common.send_within_deadline(lambda: self._client.models.generate_content(**request),
                                               self.entry.timeout_s, self._key)
        candidates = response.candidates or []
        feedback = getattr(response, "prompt_feedback", None)
        blocked = getattr(feedback, "block_reason", None)
        usage = response.usage_metadata
        if not candidates and not blocked:
            raise common.malformed("no candidates")
        finish = None
        text = ""
        if candidates:
            cand = candidates[0]
            finish = getattr(cand.finish_reason, "value", cand.finish_reason)
            parts = (cand.content.parts if cand.content else None) or []
            text = "".join(p.text for p in parts if getattr(p, "text", None) and not getattr(p, "thought", False))
        out_tokens = (getattr(usage, "candidates_token_count", 0) or 0) + (getattr(usage, "thoughts_token_count", 0) or 0)
        return Completion(
            text=text,
            input_tokens=int(getattr(usage, "prompt_token_count", 0) or 0),
            output_tokens=int(out_tokens),
            finish_reason=str(finish) if finish else (str(getattr(blocked, "value", blocked)) if blocked else None),
            refusal=bool(blocked) or (finish in REFUSAL_REASONS),
            raw={"model": getattr(response, "model_version", None)},
        )
