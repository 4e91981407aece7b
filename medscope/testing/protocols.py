"""A tiny single-turn protocol for testing the sweep without the agent protocol.

Condition ``agent``/``plain``: the question and every image of the item in one user turn;
``blind``: the question alone. The reply is read as yes/no; anything else is unparseable.
Each prompt carries ``[item <id> <condition>]`` so loopback servers can count requests per unit.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from medscope.io import tablescan
from medscope.items import EpisodeResult, Item
from medscope.models.base import ChatModel, Decoding, Message, Part
from medscope.protocols.base import ProtocolOptions, option


class SingleTurnOptions(ProtocolOptions):
    """The test protocol's one option (and every protocol's bootstrap ones)."""

    prompt_version: str = option("st-1", verb="eval", description="prompt version (part of every request key)")


class SingleTurnProtocol:
    name = "single_turn"
    Options = SingleTurnOptions

    def __init__(self, options: SingleTurnOptions | None = None):
        self.options = options or SingleTurnOptions()
        self.prompt_version = self.options.prompt_version

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        columns = None if images else tablescan.columns_without("views", "image")
        rows = tablescan.iter_rows("views", uri, columns, where=tablescan.id_filter("view_id", ids))
        return [
            Item(r["view_id"], r["case_id"], r["question"], r["expected"],
                 (r["image"],) if images and r["image"] else (),
                 private=r["private"], endpoint_allowlist=tuple(r["endpoint_allowlist"] or ()))
            for r in rows
        ]

    def conditions(self) -> tuple[str, ...]:
        return ("agent", "plain", "blind")

    def messages(self, item: Item, condition: str) -> list[Message]:
        parts = [] if condition == "blind" else [Part(png=p) for p in item.images]
        parts.append(Part(text=f"{item.question} Answer yes or no. [item {item.item_id} {condition}]"))
        return [Message.text("system", "You read medical images."), Message("user", tuple(parts))]

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        msgs = self.messages(item, condition)
        reply = model.complete(msgs, decoding)
        word = re.match(r"\s*(yes|no)\b", reply.text.lower())
        turns = [{"role": "user", "text": msgs[-1].joined_text, "image_ref": f"{item.item_id}#0" if item.images and condition != "blind" else None},
                 {"role": "assistant", "text": reply.text, "image_ref": None}]
        return EpisodeResult(
            turns=turns, raw_text=reply.text, action="answer" if word else "unparseable",
            answer=word.group(1) if word else None, claims_finding=(word.group(1) == "yes") if word else None,
            tool_calls=reply.text.count("<tool>"), input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
        )


def unit_tag(item_id: str, condition: str) -> str:
    """The tag each prompt of the protocol carries, for counting requests per unit.

    Parameters
    ----------
    item_id : str
        The item's id.
    condition : str
        "agent", "plain" or "blind".

    Returns
    -------
    str
        ``"[item <item_id> <condition>]"``.
    """
    return f"[item {item_id} {condition}]"
