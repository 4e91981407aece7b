"""Tiny random-initialised VLMs built from config, with processors that work offline.

Tests, the demo and the training smoke runs need real vision-language architectures but have
no weights and no internet. ``ARCHS`` names the three built here (counterfactual paper §4.2, §5.3: the
Qwen family and MedGemma's Gemma-3): ``qwen2-vl`` (the real ``Qwen2VLForConditionalGeneration``
with text hidden 64, 2 layers; vision depth 1, patch 4), ``qwen2.5-vl``
(``Qwen2_5_VLForConditionalGeneration``, windowed vision blocks) and ``gemma3``
(``Gemma3ForConditionalGeneration`` with a 1-layer SigLIP tower on 32 px images, 16 soft tokens
per image; see :mod:`medscope.models.tiny_gemma3`). The Qwen pair share a processor:

- a byte-level BPE tokenizer trained here on a small built-in corpus (any text encodes, since
  byte-level BPE falls back to bytes), carrying the Qwen2-VL special tokens and chat template;
- the PIL Qwen2-VL image processor (the fast one needs torchvision, which is not installed);
- :class:`ImageOnlyQwen2VLProcessor`, the Qwen2-VL processor without a video processor.

``save_tiny(dir, arch)`` writes model and processor with ``save_pretrained`` so that
``AutoModelForImageTextToText.from_pretrained(dir)`` and :func:`load_processor` read them back
(``medscope agent tiny-vlm --arch A --out DIR``; a training recipe's ``base:`` takes DIR).
"""

from __future__ import annotations

import json
from pathlib import Path

from transformers.models.qwen2_vl.processing_qwen2_vl import Qwen2VLProcessor

from medscope.errors import MedScopeError

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|vision_pad|>",
)

# The Qwen2-VL chat template, reduced to what the episode loop sends: string or list content
# with image and text parts. Images become <|vision_start|><|image_pad|><|vision_end|>; the
# processor expands <|image_pad|> to one token per merged patch.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# What the tiny tokenizer's merges are learned from: the action format and radiology words, so
# that trajectories tokenize into a few hundred tokens rather than one per byte.
_CORPUS = (
    'I will zoom in to look closer. <tool>{"name": "zoom", "box": [120, 340, 560, 780]}</tool>',
    'Adjusting the window. <tool>{"name": "window", "center": 128, "width": 100}</tool>',
    '<final>{"action": "answer", "answer": "Yes", "box": [100, 200, 300, 400], "confidence": 0.85}</final>',
    '<final>{"action": "answer", "answer": "No", "confidence": 0.9}</final>',
    '<final>{"action": "refer", "reason": "image quality too poor to decide"}</final>',
    '<final>{"action": "clarify", "question": "Which side should I examine?"}</final>',
    "Is there a pneumothorax? Is there a nodule? Is there a mass? Is there a fracture? "
    "Is there an effusion? Is there a lesion? Is the image normal? Is the patient healthy?",
    "chest x-ray CT MRI ultrasound fundus dermoscopy histology lung liver kidney brain heart "
    "opacity consolidation cardiomegaly atelectasis edema hemorrhage tumor polyp no finding",
    "You are a careful radiologist. Look at the image and answer the question. The question may "
    "name a finding that is absent. Use the tools zoom and window at most three times.",
)


def _build_tokenizer(vocab_size: int = 800, special_tokens=SPECIAL_TOKENS, chat_template=CHAT_TEMPLATE, **named):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # Training is deterministic for a fixed corpus, so the same vocabulary comes out every time.
    tok.train_from_iterator(list(_CORPUS) * 4, trainer)
    named = named or {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        chat_template=chat_template,
        padding_side="left",  # decoder-only batched generation pads on the left
        **named,
    )


class ImageOnlyQwen2VLProcessor(Qwen2VLProcessor):
    """Qwen2-VL processor without the video processor (that one needs torchvision).

    ProcessorMixin reads its attributes from the ``__init__`` signature, so leaving
    ``video_processor`` out of it is what makes save/load skip the video processor.
    Defined at module level so that instances pickle (Ray actors, dataloader workers).
    """

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(
            image_processor=image_processor,
            tokenizer=tokenizer,
            video_processor=None,
            chat_template=chat_template,
            **kwargs,
        )


def build_tiny_processor(max_pixels: int = 64 * 64, min_pixels: int = 16 * 16):
    """The offline processor: tiny BPE tokenizer + PIL Qwen2-VL image processor (patch 4).

    Parameters
    ----------
    max_pixels : int, optional
        Most pixels an image is resized to.
    min_pixels : int, optional
        Fewest pixels an image is resized to.

    Returns
    -------
    ImageOnlyQwen2VLProcessor
        The processor.
    """
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tokenizer = _build_tokenizer()
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=4, temporal_patch_size=2, merge_size=2, min_pixels=min_pixels, max_pixels=max_pixels
    )
    return ImageOnlyQwen2VLProcessor(image_processor=image_processor, tokenizer=tokenizer, chat_template=CHAT_TEMPLATE)


def tiny_qwen2vl_config(tokenizer, arch: str = "qwen2-vl"):
    """A Qwen2VLConfig (or Qwen2_5_VLConfig) with tiny sizes whose special token ids match
    ``tokenizer``.

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        A tokenizer holding every token of ``SPECIAL_TOKENS``.
    arch : str, optional
        "qwen2.5-vl" for a Qwen2_5_VLConfig; any other value gives a Qwen2VLConfig.

    Returns
    -------
    transformers.Qwen2VLConfig or transformers.Qwen2_5_VLConfig
        The config.
    """
    from transformers import Qwen2_5_VLConfig, Qwen2VLConfig

    vocab = tokenizer.get_vocab()
    ids = {t: vocab[t] for t in SPECIAL_TOKENS}
    text = dict(
        vocab_size=len(vocab),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        # head_dim 16 -> 8 rotary frequencies split over (time, height, width)
        rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 10000.0},
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    vision = dict(
        depth=1, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2,
        patch_size=4, spatial_merge_size=2, temporal_patch_size=2, in_channels=3,
    )
    cls = Qwen2VLConfig
    if arch == "qwen2.5-vl":
        # Qwen2.5-VL's vision blocks: windowed attention except the full-attention indexes, a
        # gated MLP, and a merger projecting to the text width (out_hidden_size)
        cls = Qwen2_5_VLConfig
        vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64,
                      patch_size=4, spatial_merge_size=2, temporal_patch_size=2, in_channels=3,
                      window_size=16, fullatt_block_indexes=[1])
    return cls(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )


ARCHS = ("qwen2-vl", "qwen2.5-vl", "gemma3")


def build_tiny(arch: str = "qwen2-vl", seed: int = 0):
    """``(model, processor)``: a random-initialised tiny ``arch`` (one of :data:`ARCHS`; eval
    mode, fp32, CPU). ``seed`` fixes the weights; the caller's global RNG is left as it was.

    Parameters
    ----------
    arch : str, optional
        One of ``ARCHS``.
    seed : int, optional
        Torch seed of the random weights.

    Returns
    -------
    model : transformers.PreTrainedModel
        The model, greedy generation config.
    processor : transformers.ProcessorMixin
        Its processor (``ImageOnlyQwen2VLProcessor`` or ``Gemma3Processor``).

    Raises
    ------
    MedScopeError
        If ``arch`` is not in ``ARCHS``.
    """
    import torch
    from transformers import AutoModelForImageTextToText

    if arch not in ARCHS:
        raise MedScopeError(f"tiny VLM arch {arch!r}: use one of {', '.join(ARCHS)}")
    if arch == "gemma3":
        from medscope.models.tiny_gemma3 import build_tiny_gemma3_processor, tiny_gemma3_config

        processor = build_tiny_gemma3_processor(_build_tokenizer)
        config = tiny_gemma3_config(processor.tokenizer)
    else:
        processor = build_tiny_processor()
        config = tiny_qwen2vl_config(processor.tokenizer, arch)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForImageTextToText.from_config(config)
    eos = config.eos_token_id if config.eos_token_id is not None else config.get_text_config().eos_token_id
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = config.get_text_config().pad_token_id
    model.generation_config.do_sample = False
    return model.eval(), processor


def build_tiny_qwen2vl(seed: int = 0):
    """``(model, processor)``: a random-initialised tiny Qwen2-VL (eval mode, fp32, CPU).

    Parameters
    ----------
    seed : int, optional
        Torch seed of the random weights.

    Returns
    -------
    model : transformers.Qwen2VLForConditionalGeneration
        The model.
    processor : ImageOnlyQwen2VLProcessor
        Its processor.
    """
    return build_tiny("qwen2-vl", seed)


def save_tiny(directory: str | Path, arch: str = "qwen2-vl", seed: int = 0) -> Path:
    """Write a tiny ``arch`` model and its processor to ``directory`` (``save_pretrained``).

    Parameters
    ----------
    directory : str or pathlib.Path
        The checkpoint folder, created if missing.
    arch : str, optional
        One of ``ARCHS``.
    seed : int, optional
        Torch seed of the random weights.

    Returns
    -------
    pathlib.Path
        ``directory``.

    Raises
    ------
    MedScopeError
        If ``arch`` is not in ``ARCHS``.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model, processor = build_tiny(arch, seed)
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return directory


def save_tiny_qwen2vl(directory: str | Path, seed: int = 0) -> Path:
    """Write a tiny Qwen2-VL model and its processor to ``directory``
    (``save_tiny(directory, "qwen2-vl", seed)``).

    Parameters
    ----------
    directory : str or pathlib.Path
        The checkpoint folder, created if missing.
    seed : int, optional
        Torch seed of the random weights.

    Returns
    -------
    pathlib.Path
        ``directory``.
    """
    return save_tiny(directory, "qwen2-vl", seed)


def load_processor(directory: str | Path):
    """Load the processor of a local HF VLM checkpoint.

    Qwen2-VL / Qwen2.5-VL checkpoints load through :class:`ImageOnlyQwen2VLProcessor` (their
    stock processor wants a torchvision video processor); anything else through AutoProcessor.

    Parameters
    ----------
    directory : str or pathlib.Path
        A local checkpoint folder.

    Returns
    -------
    transformers.ProcessorMixin
        The processor.

    Raises
    ------
    MedScopeError
        If AutoProcessor cannot load one (not raised for the Qwen-VL types, whose errors pass through).
    """
    from transformers import AutoProcessor

    directory = Path(directory)
    model_type = None
    cfg = directory / "config.json"
    if cfg.exists():
        model_type = json.loads(cfg.read_text()).get("model_type")
    if model_type in ("qwen2_vl", "qwen2_5_vl"):
        return ImageOnlyQwen2VLProcessor.from_pretrained(str(directory))
    try:
        return AutoProcessor.from_pretrained(str(directory))
    except Exception as err:  # noqa: BLE001 - one-line user error with the cause
        raise MedScopeError(f"cannot load a processor from {directory}: {err}") from err
