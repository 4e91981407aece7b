"""The tiny random Gemma-3 (MedGemma's architecture, the counterfactual paper §4.2 / §5.3), built offline.

``Gemma3ForConditionalGeneration`` with a 2-layer Gemma-3 text model (hidden 64) and a 1-layer
SigLIP tower on 32 px images (patch 4, so 8x8 patches pooled to 16 soft tokens per image), plus
the stock ``Gemma3Processor`` around a byte-level BPE tokenizer carrying Gemma's turn and image
tokens, and Gemma-3's chat template (system text folded into the first user turn, assistant
role written ``model``, images as ``<start_of_image>``, which the processor expands).
"""

from __future__ import annotations

SPECIAL_TOKENS = (
    "<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>",
    "<start_of_image>", "<end_of_image>", "<image_soft_token>",
)
IMAGE_SIZE = 32
TOKENS_PER_IMAGE = 16

# Gemma-3's template, as released, minus tool-use branches the episode loop never sends.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- if messages[0]['content'] is string -%}{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- else -%}{%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}{%- endif -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}{%- set first_user_prefix = '' -%}{%- set loop_messages = messages -%}{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- if message['role'] == 'assistant' -%}{%- set role = 'model' -%}{%- else -%}{%- set role = message['role'] -%}{%- endif -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}"
    "{%- if message['content'] is string -%}{{ message['content'] | trim }}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{ '<start_of_image>' }}"
    "{%- elif item['type'] == 'text' -%}{{ item['text'] | trim }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)


def build_tiny_gemma3_processor(build_tokenizer):
    """``Gemma3Processor`` (PIL image processor, 32 px, no pan-and-scan) around a tiny BPE
    tokenizer made by ``build_tokenizer`` (tiny_vlm's trainer) with Gemma's special tokens.

    Parameters
    ----------
    build_tokenizer : callable
        ``build_tokenizer(special_tokens=..., chat_template=..., **named_tokens)`` returning a
        ``PreTrainedTokenizerFast`` (``tiny_vlm._build_tokenizer``).

    Returns
    -------
    transformers.Gemma3Processor
        The processor, ``TOKENS_PER_IMAGE`` soft tokens per image.
    """
    from transformers import Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    tok = build_tokenizer(
        special_tokens=SPECIAL_TOKENS, chat_template=CHAT_TEMPLATE,
        pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
        extra_special_tokens={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                              "image_token": "<image_soft_token>"},
    )
    ip = Gemma3ImageProcessorPil(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}, do_pan_and_scan=False)
    return Gemma3Processor(image_processor=ip, tokenizer=tok, chat_template=CHAT_TEMPLATE,
                           image_seq_length=TOKENS_PER_IMAGE)


def tiny_gemma3_config(tokenizer):
    """A Gemma3Config with tiny sizes whose special token ids match ``tokenizer``.

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        A tokenizer holding every token of ``SPECIAL_TOKENS``.

    Returns
    -------
    transformers.Gemma3Config
        The config (text: 2 layers, hidden 64, sliding window 64; vision: 1 layer, 32 px, patch 4).
    """
    from transformers import Gemma3Config

    vocab = tokenizer.get_vocab()
    ids = {t: vocab[t] for t in SPECIAL_TOKENS}
    text = dict(
        vocab_size=len(vocab), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16,
        sliding_window=64, max_position_embeddings=4096,
        pad_token_id=ids["<pad>"], bos_token_id=ids["<bos>"], eos_token_id=[ids["<eos>"], ids["<end_of_turn>"]],
    )
    vision = dict(
        model_type="siglip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, image_size=IMAGE_SIZE, patch_size=4, vision_use_head=False,
    )
    return Gemma3Config(
        text_config=text, vision_config=vision, mm_tokens_per_image=TOKENS_PER_IMAGE,
        boi_token_index=ids["<start_of_image>"], eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"],
        eos_token_id=[ids["<eos>"], ids["<end_of_turn>"]], pad_token_id=ids["<pad>"], bos_token_id=ids["<bos>"],
    )
