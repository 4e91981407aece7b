"""Candidate photographs from a text-to-image / image-edit model (paired-modality paper §3.3).

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
                 region: str = "skin", subject_seed: int | None = None, reference_png: bytes | None = None
                 ) -> tuple[bytes, dict]:
        mark = (plan.mark if plan else None) or "none"
        # The subject comes from the condition's seed alone, so every photograph, candidate and
        # retry of a condition shows the same person; ``seed`` only varies how the mark is drawn.
        subject = seed if subject_seed is None else subject_seed
        return draw_photo(region, mark, subject, self.spec.size or 256, mark_seed=seed), {"mark": mark, "region": region}


def draw_photo(region: str, mark: str, seed: int, size: int, mark_seed: int | None = None) -> bytes:
    """A procedural photograph as PNG bytes (``draw.photo``).

    Parameters
    ----------
    region : str
        'skin', 'nail' or 'face'.
    mark : str
        The sign painted on, one of ``draw.MARKS[region]``, or 'none'.
    seed : int
        The subject's seed.
    size : int
        Height and width in pixels.
    mark_seed : int, optional
        Seed of the mark's placement; default ``seed``.

    Returns
    -------
    bytes
        An RGB PNG.
    """
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
        self._inpaint = None  # built on first use of an edit_box (strategy 4)

    def inpaint(self):
        if self._inpaint is None:
            from diffusers import AutoPipelineForInpainting

            self._inpaint = AutoPipelineForInpainting.from_pipe(self.text2image)
            self._inpaint.set_progress_bar_config(disable=True)
        return self._inpaint

    def generate(self, prompt: str, seed: int, plan: PhotoPlan | None = None, init_png: bytes | None = None,
                 region: str = "skin", subject_seed: int | None = None, reference_png: bytes | None = None
                 ) -> tuple[bytes, dict]:
        from PIL import Image

        s = self.spec
        gen = self._torch.Generator(device="cpu").manual_seed(int(seed))
        common = {"prompt": prompt, "generator": gen, "num_inference_steps": s.steps, "guidance_scale": s.guidance_scale}
        box = plan.edit_box if plan is not None else None
        if init_png is not None and box:
            # strategies 4 (and 2): the edit is confined to the box; a reference is pasted there
            # first and the masked edit harmonises it with the person around it
            source = Image.fromarray(decode_png(init_png)).convert("RGB")
            init = paste_reference(source, reference_png, box) if reference_png is not None else source
            mask = box_mask(init.size, box, "L")
            out = self.inpaint()(image=init, mask_image=mask, strength=s.strength,
                                 height=init.size[1], width=init.size[0], **common).images[0]
            # outside the box the person is the source's, pixel for pixel (the VAE would drift it)
            out = Image.composite(out.convert("RGB").resize(source.size), source, mask)
        elif init_png is not None:
            init = Image.fromarray(decode_png(init_png))
            out = self.image2image(image=init, strength=s.strength, **common).images[0]
        else:
            size = {"height": s.size, "width": s.size} if s.size else {}
            out = self.text2image(**common, **size).images[0]
        buf = io.BytesIO()
        out.convert("RGB").save(buf, format="PNG")
        return buf.getvalue(), {"model_dir": s.model_dir, "steps": s.steps, "guidance_scale": s.guidance_scale,
                                "strength": s.strength if init_png is not None else None,
                                "edit_box": box if init_png is not None else None,
                                "reference": reference_png is not None and init_png is not None and bool(box)}


class ProviderImageGenerator:
    """An OpenAI-compatible images endpoint (see the module docstring)."""

    name = "provider"
    seeded = False

    def __init__(self, spec: GeneratorSpec):
        import openai

        from medscope.models.api_common import api_key, http_client

        if not spec.model:
            raise MedScopeError("generator kind provider needs model: the image model id")
        self.spec = spec
        self._key = api_key(spec.api_key_env, f"image generator {spec.model}")
        # the deadline transport bounds the whole request (a trickled body too), not each read
        self._client = openai.OpenAI(api_key=self._key, base_url=spec.base_url, timeout=spec.timeout_s, max_retries=2,
                                     http_client=http_client(openai))

    def generate(self, prompt: str, seed: int, plan: PhotoPlan | None = None, init_png: bytes | None = None,
                 region: str = "skin", subject_seed: int | None = None, reference_png: bytes | None = None
                 ) -> tuple[bytes, dict]:
        import base64

        from medscope.models.api_common import classify
        from medscope.models.deadline import request_deadline

        size = f"{self.spec.size}x{self.spec.size}" if self.spec.size else None
        extra = {"size": size} if size else {}
        box = plan.edit_box if plan is not None else None
        sources = [("source.png", init_png, "image/png")] if init_png is not None else []
        if reference_png is not None:  # strategy 2: the finding's reference travels beside the image
            sources.append(("reference.png", reference_png, "image/png"))
        if init_png is not None and box:  # strategy 4: transparent where the edit may paint
            from PIL import Image

            size = Image.open(io.BytesIO(init_png)).size
            mask = io.BytesIO()
            box_mask(size, box, "RGBA").save(mask, format="PNG")
            extra["mask"] = ("mask.png", mask.getvalue(), "image/png")
        try:
            with request_deadline(self.spec.timeout_s):  # the whole request, SDK retries included
                if sources:
                    res = self._client.images.edit(model=self.spec.model, prompt=prompt,
                                                   image=sources[0] if len(sources) == 1 else sources, **extra)
                else:
                    res = self._client.images.generate(model=self.spec.model, prompt=prompt, n=1, **extra)
        except Exception as err:  # noqa: BLE001 - mapped to transient / permanent, key scrubbed
            raise MedScopeError(f"image endpoint: {classify(err, self._key)}") from None
        if not res.data or not res.data[0].b64_json:
            raise MedScopeError("image endpoint returned no image")
        png = base64.b64decode(res.data[0].b64_json)
        decode_png(png)  # fail here, not in the manifest, if the bytes are not an image
        return png, {"model": self.spec.model, "edit": init_png is not None, "seed_honoured": False,
                     "edit_box": box if init_png is not None else None, "reference": reference_png is not None}


def box_mask(size: tuple[int, int], box: list[float], mode: str):
    """A mask of ``size`` (w, h) for the fractional ``box``: "L" white inside (diffusers inpaints
    white), "RGBA" transparent inside and opaque outside (the OpenAI images edit convention).

    Parameters
    ----------
    size : tuple of int
        (width, height) in pixels.
    box : list of float
        [x0, y0, x1, y1] as fractions of the width and height.
    mode : str
        'L' or 'RGBA'.

    Returns
    -------
    PIL.Image.Image
        The mask, of ``size``.
    """
    from PIL import Image, ImageDraw

    w, h = size
    xy = (round(box[0] * w), round(box[1] * h), round(box[2] * w) - 1, round(box[3] * h) - 1)
    if mode == "L":
        mask = Image.new("L", size, 0)
        ImageDraw.Draw(mask).rectangle(xy, fill=255)
        return mask
    mask = Image.new("RGBA", size, (0, 0, 0, 255))
    ImageDraw.Draw(mask).rectangle(xy, fill=(0, 0, 0, 0))
    return mask


def paste_reference(init, reference_png: bytes, box: list[float]):
    """``init`` with the reference image resized into ``box`` (strategy 2 for a model that takes
    one image: the edit then blends the pasted finding into the person).

    Parameters
    ----------
    init : PIL.Image.Image
        The image to edit; not changed.
    reference_png : bytes
        The reference image (any format PIL reads).
    box : list of float
        [x0, y0, x1, y1] as fractions of ``init``'s width and height.

    Returns
    -------
    PIL.Image.Image
        A copy of ``init`` with the reference, as RGB, resized into the box.
    """
    from PIL import Image

    w, h = init.size
    x0, y0, x1, y1 = round(box[0] * w), round(box[1] * h), round(box[2] * w), round(box[3] * h)
    ref = Image.open(io.BytesIO(reference_png)).convert("RGB").resize((x1 - x0, y1 - y0))
    out = init.copy()
    out.paste(ref, (x0, y0))
    return out


def build_generator(spec: GeneratorSpec):
    """The generator of a spec's kind.

    Parameters
    ----------
    spec : GeneratorSpec
        The ``generator:`` block of a pairs spec.

    Returns
    -------
    ProceduralGenerator, DiffusersGenerator or ProviderImageGenerator
        Ready to ``generate``: a diffusers pipeline is loaded, a provider client made.

    Raises
    ------
    MedScopeError
        When the kind is unknown or a diffusers / provider spec lacks ``model_dir`` / ``model`` (or the
        provider's key is missing).
    """
    kinds = {"procedural": ProceduralGenerator, "diffusers": DiffusersGenerator, "provider": ProviderImageGenerator}
    if spec.kind not in kinds:
        raise MedScopeError(f"unknown generator kind {spec.kind!r}; known: {', '.join(kinds)}")
    return kinds[spec.kind](spec)
