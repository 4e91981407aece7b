"""Candidate photographs from a text-to-image / image-edit model (seed 002 §3.3).

One interface: ``generate(prompt, seed, plan, init_png=None) -> (png bytes, metadata)``; with
``init_png`` the call is an edit of that image ("same person, other finding"). Three kinds:

- ``procedural``: ``medscope.protocols.paired_modality.draw`` (no model; the embedded set and tests);
- ``diffusers``: a diffusers pipeline from a local folder (``model_dir``; nothing is
  downloaded): ``AutoPipelineForText2Image`` for text, ``AutoPipelineForImage2Image`` (built
  from the same components) for edits, seeded with ``torch.Generator.manual_seed(seed)``;
- ``provider``: an OpenAI-compatible images endpoint (``images.generate`` / ``images.edit``)
  through the ``openai`` SDK; the key comes from the environment variable ``api_key_env``.
  Such endpoints take no seed: the seed is recorded but cannot make a call repeatable.
"""

from __future__ import annotations

import io

from medscope.errors import MedScopeError
from medscope.images import decode_png, encode_png
from medscope.protocols.paired_modality import draw
from medscope.pairs.spec import GeneratorSpec, PhotoPlan


class ProceduralGenerator:
    name = "procedural"
    seeded = True

    def __init__(self, spec: GeneratorSpec | None = None):
        self.spec = spec or GeneratorSpec()

    def generate(self, prompt: str, seed: int, plan: PhotoPlan | None = None, init_png: bytes | None = None,
                 region: str = "skin", subject_seed: int | None = None) -> tuple[bytes, dict]:
        mark = (plan.mark if plan else None) or "none"
        # The subject comes from the condition's seed alone, so every photograph, candidate and
        # retry of a condition shows the same person; ``seed`` only varies how the mark is drawn.
        subject = seed if subject_seed is None else subject_seed
        return draw_photo(region, mark, subject, self.spec.size or 256, mark_seed=seed), {"mark": mark, "region": region}


def draw_photo(region: str, mark: str, seed: int, size: int, mark_seed: int | None = None) -> bytes:
    return encode_png(draw.photo(region, mark, seed, size, mark_seed=mark_seed))


class DiffusersGenerator:
    """A diffusers pipeline loaded from ``spec.model_dir`` (see the module docstring)."""

    name = "diffusers"
    seeded = True

    def __init__(self, spec: GeneratorSpec):
        if not spec.model_dir:
            raise MedScopeError("generator kind diffusers needs model_dir: a local pipeline folder")
        import torch
        from diffusers import AutoPipelineForImage2Image, AutoPipelineForText2Image

        self.spec = spec
        self._torch = torch
        dtype = getattr(torch, spec.dtype)
        self.text2image = AutoPipelineForText2Image.from_pretrained(spec.model_dir, dtype=dtype).to(spec.device)
        self.text2image.set_progress_bar_config(disable=True)
        self.image2image = AutoPipelineForImage2Image.from_pipe(self.text2image)
        self.image2image.set_progress_bar_config(disable=True)

    def generate(self, prompt: str, seed: int, plan: PhotoPlan | None = None, init_png: bytes | None = None,
                 region: str = "skin", subject_seed: int | None = None) -> tuple[bytes, dict]:
        from PIL import Image

        s = self.spec
        gen = self._torch.Generator(device="cpu").manual_seed(int(seed))
        common = {"prompt": prompt, "generator": gen, "num_inference_steps": s.steps, "guidance_scale": s.guidance_scale}
        if init_png is not None:
            init = Image.fromarray(decode_png(init_png))
            out = self.image2image(image=init, strength=s.strength, **common).images[0]
        else:
            size = {"height": s.size, "width": s.size} if s.size else {}
            out = self.text2image(**common, **size).images[0]
        buf = io.BytesIO()
        out.convert("RGB").save(buf, format="PNG")
        return buf.getvalue(), {"model_dir": s.model_dir, "steps": s.steps, "guidance_scale": s.guidance_scale,
                                "strength": s.strength if init_png is not None else None}


class ProviderImageGenerator:
    """An OpenAI-compatible images endpoint (see the module docstring)."""

    name = "provider"
    seeded = False

    def __init__(self, spec: GeneratorSpec):
        import openai

        from medscope.models.api_common import api_key

        if not spec.model:
            raise MedScopeError("generator kind provider needs model: the image model id")
        self.spec = spec
        self._key = api_key(spec.api_key_env, f"image generator {spec.model}")
        self._client = openai.OpenAI(api_key=self._key, base_url=spec.base_url, timeout=spec.timeout_s, max_retries=2)

    def generate(self, prompt: str, seed: int, plan: PhotoPlan | None = None, init_png: bytes | None = None,
                 region: str = "skin", subject_seed: int | None = None) -> tuple[bytes, dict]:
        import base64

        from medscope.models.api_common import classify

        size = f"{self.spec.size}x{self.spec.size}" if self.spec.size else None
        extra = {"size": size} if size else {}
        try:
            if init_png is not None:
                res = self._client.images.edit(model=self.spec.model, prompt=prompt,
                                               image=("source.png", init_png, "image/png"), **extra)
            else:
                res = self._client.images.generate(model=self.spec.model, prompt=prompt, n=1, **extra)
        except Exception as err:  # noqa: BLE001 - mapped to transient / permanent, key scrubbed
            raise MedScopeError(f"image endpoint: {classify(err, self._key)}") from None
        if not res.data or not res.data[0].b64_json:
            raise MedScopeError("image endpoint returned no image")
        png = base64.b64decode(res.data[0].b64_json)
        decode_png(png)  # fail here, not in the manifest, if the bytes are not an image
        return png, {"model": self.spec.model, "edit": init_png is not None, "seed_honoured": False}


def build_generator(spec: GeneratorSpec):
    kinds = {"procedural": ProceduralGenerator, "diffusers": DiffusersGenerator, "provider": ProviderImageGenerator}
    if spec.kind not in kinds:
        raise MedScopeError(f"unknown generator kind {spec.kind!r}; known: {', '.join(kinds)}")
    return kinds[spec.kind](spec)
