"""Model adapters behind one interface, :class:`medscope.models.base.ChatModel`: the API
families (OpenAI-compatible, Anthropic, Gemini), local Hugging Face VLMs, tiny random-initialised
architectures for tests (``tiny_vlm``, ``tiny_gemma3``), trivial constant policies, the classical
pixel reader and the organ reader (image-dependent baselines); the registry that builds an
adapter from a ``configs/models/*.yaml`` entry, the provider rate limiter and the guarded retry
wrapper. Every protocol and the sweep reach a model only through ``ChatModel``."""
