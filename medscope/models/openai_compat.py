"""OpenAI Chat Completions and any OpenAI-compatible endpoint (vLLM, SGLang, Ollama) by base URL.

Images go as inline ``data:image/png;base64`` URLs, several in one user turn when a protocol
shows several (paired-modality paper Appendix A); ``image_detail`` and ``reasoning_effort`` are provider
settings from config (counterfactual paper §3.10, §5.5).
"""

from __future__ import annotations

from medscope.errors import MedScopeError
from medscope.models import api_common as common
from medscope.models.base import Completion, Decoding, Message
from medscope.models.config import ModelEntry


class OpenAIChatModel:
    """A ChatModel over ``client.chat.completions.create`` of the official ``openai`` SDK."""

    provider = "openai"

    def __init__(self, entry: ModelEntry):
        import openai

        self.entry = entry
        self.name = entry.name
        self.endpoint = entry.endpoint
        self._key = common.api_key(entry.api_key_env, entry.name)
        self._client = self.client(openai, entry)

    def client(self, openai, entry: ModelEntry):
        return openai.OpenAI(api_key=self._key, base_url=entry.base_url, timeout=entry.timeout_s, max_retries=0,
                             http_client=common.http_client(openai))

    def to_request(self, messages: list[Message], decoding: Decoding) -> dict:
        s = self.entry.settings
        wire = []
        for m in messages:
            if all(not p.is_image for p in m.parts):
                wire.append({"role": m.role, "content": m.joined_text})
                continue
            content = []
            for p in m.parts:
                if p.is_image:
                    url = {"url": f"data:image/png;base64,{common.b64png(p.png)}"}
                    if s.image_detail:
                        url["detail"] = s.image_detail
                    content.append({"type": "image_url", "image_url": url})
                elif p.text:
                    content.append({"type": "text", "text": p.text})
            wire.append({"role": m.role, "content": content})
        max_out = decoding.max_output_tokens
        if s.max_output_tokens_multi_image and common.image_count(messages) > 1:
            max_out = s.max_output_tokens_multi_image
        request = {"model": self.entry.model, "messages": wire, s.max_tokens_param: max_out}
        if self.entry.temperature is not None:
            request["temperature"] = decoding.temperature
        if decoding.seed is not None:
            request["seed"] = decoding.seed
        if s.reasoning_effort:
            request["reasoning_effort"] = s.reasoning_effort
        return request

    def complete(self, messages: list[Message], decoding: Decoding) -> Completion:
        request = self.to_request(messages, decoding)
        response = common.send_within_deadline(lambda: self._client.chat.completions.create(**request),
                                               self.entry.timeout_s, self._key)
        choices = getattr(response, "choices", None)
        if not choices:
            raise common.malformed("no choices")
        choice = choices[0]
        message = choice.message
        refusal_text = getattr(message, "refusal", None)
        usage = getattr(response, "usage", None)
        refused = bool(refusal_text) or choice.finish_reason == "content_filter"
        return Completion(
            text=(message.content or refusal_text or "") if message is not None else "",
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=choice.finish_reason,
            refusal=refused,
            raw={"id": getattr(response, "id", None), "model": getattr(response, "model", None)},
        )


class AzureOpenAIChatModel(OpenAIChatModel):
    """An Azure OpenAI deployment (paired-modality paper App. A ran its GPT model so): ``model`` is the
    deployment name, ``base_url`` the resource endpoint (https://NAME.openai.azure.com),
    ``settings.api_version`` the chat-completions API version (App. A: 2024-12-01-preview). The
    SDK's ``AzureOpenAI`` client posts to /openai/deployments/{deployment}/chat/completions
    ?api-version=... with the key in an ``api-key`` header; bodies are OpenAI's."""

    provider = "azure_openai"

    def client(self, openai, entry: ModelEntry):
        if not entry.base_url or not entry.settings.api_version:
            raise MedScopeError(f"model {entry.name}: kind azure_openai needs base_url (the resource endpoint) and "
                               "settings.api_version (e.g. 2024-12-01-preview)")
        return openai.AzureOpenAI(api_key=self._key, azure_endpoint=entry.base_url, api_version=entry.settings.api_version,
                                  timeout=entry.timeout_s, max_retries=0, http_client=common.http_client(openai))

