"""Anthropic Messages API through the official ``anthropic`` SDK.

The system prompt goes beside the turns; consecutive turns of one role are merged because the
Messages API wants user and assistant to alternate. Images go as base64 PNG blocks, before
the text of their turn (Anthropic's recommended order), several per turn when needed.
``max_output_tokens_multi_image`` gives paired-image requests a larger cap (paired-modality paper App. A).
"""

from __future__ import annotations

from medscope.models import api_common as common
from medscope.models.base import Completion, Decoding, Message
from medscope.models.config import ModelEntry


class AnthropicChatModel:
    provider = "anthropic"

    def __init__(self, entry: ModelEntry):
        import anthropic

        self.entry = entry
        self.name = entry.name
        self.endpoint = entry.endpoint
        self._key = common.api_key(entry.api_key_env, entry.name)
        headers = {"anthropic-version": entry.settings.anthropic_version} if entry.settings.anthropic_version else None
        self._client = anthropic.Anthropic(
            api_key=self._key, base_url=entry.base_url, timeout=entry.timeout_s, max_retries=0,
            default_headers=headers, http_client=common.http_client(anthropic),
        )

    def to_request(self, messages: list[Message], decoding: Decoding) -> dict:
        s = self.entry.settings
        system, turns = common.split_system(messages)
        wire: list[dict] = []
        for m in turns:
            images = [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": common.b64png(p.png)}}
                for p in m.parts if p.is_image
            ]
            texts = [{"type": "text", "text": p.text} for p in m.parts if p.text]
            role = "assistant" if m.role == "assistant" else "user"
            if wire and wire[-1]["role"] == role:
                wire[-1]["content"].extend(images + texts)
            else:
                wire.append({"role": role, "content": images + texts})
        max_out = decoding.max_output_tokens
        if s.max_output_tokens_multi_image and common.image_count(messages) > 1:
            max_out = s.max_output_tokens_multi_image
        request = {"model": self.entry.model, "messages": wire, "max_tokens": max_out}
        if system:
            request["system"] = system
        if self.entry.temperature is not None:
            # The current SDK no longer exposes sampling parameters; an explicit temperature
            # from config is passed through for endpoints that still honour it.
            request["extra_body"] = {"temperature": decoding.temperature}
        if s.thinking_budget:
            request["thinking"] = {"type": "enabled", "budget_tokens": s.thinking_budget}
        return request

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        request = self.to_request(messages, decoding)
        response = common.send_within_deadline(lambda: self._client.messages.create(**request),
                                               self.entry.timeout_s, self._key)
        content = getattr(response, "content", None)
        if content is None or getattr(response, "usage", None) is None:
            raise common.malformed("no content")
        text = "".join(getattr(b, "text", "") or "" for b in content if getattr(b, "type", None) == "text")
        return Completion(
            text=text,
            input_tokens=int(response.usage.input_tokens or 0),
            output_tokens=int(response.usage.output_tokens or 0),
            finish_reason=response.stop_reason,
            refusal=response.stop_reason == "refusal",
            raw={"id": getattr(response, "id", None), "model": getattr(response, "model", None)},
        )
