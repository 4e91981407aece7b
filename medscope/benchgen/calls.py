"""What each of benchgen's language-model calls (generation, verification, schema proposal) does
the same way: its items are a JSON-lines file, its episode is one user message and one reply."""

from __future__ import annotations

from medscope.io import safe_text
from medscope.items import EpisodeResult
from medscope.models.base import ChatModel, Decoding, Message


def jsonl_rows(uri: str) -> list[dict]:
    """The records of a JSON-lines item file (the item files of benchgen's language-model calls).

    Parameters
    ----------
    uri : str
        Path or storage URI of the JSON-lines file.

    Returns
    -------
    list of dict
        One record per non-blank line, in file order.
    """
    return safe_text.read_jsonl(uri)


def text_call(model: ChatModel, text: str, decoding: Decoding) -> EpisodeResult:
    """One user message and its reply: the episode of each of benchgen's language-model calls
    (generation, verification, schema proposal); the caller reads the reply.

    Parameters
    ----------
    model : ChatModel
        The model asked.
    text : str
        The user message.
    decoding : Decoding
        Decoding settings of the call.

    Returns
    -------
    EpisodeResult
        The two turns, the reply as ``raw_text``, action ``answer`` (``unparseable`` when the reply is
        blank) and the call's token counts.
    """
    reply = model.complete([Message.text("user", text)], decoding)
    return EpisodeResult(
        turns=[{"role": "user", "text": text, "image_ref": None},
               {"role": "assistant", "text": reply.text, "image_ref": None}],
        raw_text=reply.text, action="answer" if reply.text.strip() else "unparseable",
        input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, model_turns=1)
