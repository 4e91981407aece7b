"""The organ-presence probe as an evaluation protocol (organ-presence paper; docs/design.md "One harness").

Items come from the probe_items table; one episode is a single turn: the slice image (none for
the no-image control, a uniform gray field of the same size for the blank control) and the
question under one of three output formats, then the reply is read as present / absent /
not-addressed. The same items serve every format, so format comparisons are paired.
"""

from __future__ import annotations

from collections.abc import Collection

from medscope import config as cfgmod
from medscope.io import tablescan
from medscope.protocols.base import EpisodeResult, Item
from medscope.protocols.organ_presence.options import OrganPresenceOptions
from medscope.images import blank_png, decode_png
from medscope.models.base import ChatModel, Decoding, Message, Part
from medscope.volumes.config import ProbeConfig, conditions, split_condition
from medscope.protocols.organ_presence.replies import probe_prompt, read_reply

META_COLUMNS = ("organ", "strategy", "stratum", "z", "z_mm", "z_distance_mm", "absent_from_volume", "render")


class OrganPresenceProtocol:
    """EvalProtocol of the volumetric organ-presence probe."""

    name = "organ_presence"
    prompt_version = "probe-v2"  # v2: the paper-worded formats
    Options = OrganPresenceOptions

    def __init__(self, options: OrganPresenceOptions | None = None):
        self.options = options or OrganPresenceOptions()
        config = self.options.probe_config
        self.config = cfgmod.load(ProbeConfig, config) if isinstance(config, str) else (config or ProbeConfig())

    def load_items(self, uri: str, ids: Collection[str] | None = None, images: bool = True) -> list[Item]:
        items = []
        columns = None if images else tablescan.columns_without("probe_items", "image")
        for row in tablescan.iter_rows("probe_items", uri, columns, where=tablescan.id_filter("item_id", ids)):
            items.append(
                Item(
                    item_id=row["item_id"],
                    case_id=row["case_id"],
                    question=row["question"],
                    truth=row["truth"],
                    images=(row["image"],) if images else (),
                    private=bool(row.get("private") or False),
                    endpoint_allowlist=tuple(row.get("endpoint_allowlist") or ()),
                    meta={k: row[k] for k in META_COLUMNS},
                )
            )
        return items

    def conditions(self) -> tuple[str, ...]:
        return conditions(self.config)

    def run_episode(self, item: Item, model: ChatModel, condition: str, decoding: Decoding) -> EpisodeResult:
        fmt, mode = split_condition(condition)
        if condition not in self.conditions():
            raise ValueError(f"unknown probe condition {condition!r}; known: {', '.join(self.conditions())}")
        prompt = probe_prompt(item.question, fmt, str(item.meta.get("organ") or ""))
        parts: list[Part] = []
        image_ref = None
        if mode == "image":
            parts.append(Part(png=item.images[0]))
            image_ref = item.item_id
        elif mode == "blank":
            h, w = decode_png(item.images[0], gray=True).shape
            parts.append(Part(png=blank_png(h, w)))
            image_ref = f"blank:{h}x{w}"
        parts.append(Part(text=prompt))
        completion = model.complete([Message("user", tuple(parts))], decoding)
        reading = read_reply(completion.text, fmt, self.config.hedge_lexicon,
                             organ=str(item.meta.get("organ") or ""), question=item.question)
        addressed = reading.verdict not in ("not_addressed", "unclear")
        return EpisodeResult(
            turns=[
                {"role": "user", "text": prompt, "image_ref": image_ref},
                {"role": "assistant", "text": completion.text, "image_ref": None},
            ],
            raw_text=completion.text,
            # not-addressed is its own outcome, never read as absent
            action="answer" if addressed else ("unclear" if reading.verdict == "unclear" else "unparseable"),
            answer=reading.verdict,
            claims_finding=(reading.verdict == "present") if addressed else None,
            # a clean JSON verdict is read from the format; anything else by the free-text rules
            reading="json" if reading.clean and fmt != "free_text" else "rules",
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
        )

    def score(self, episodes_uri: str, items_uri: str, out: str) -> dict:
        """Probe scores and metrics; the bootstrap B and seed come from the probe config (the
        paper's), unless ``medscope score`` was given other values."""
        from medscope.protocols.organ_presence.scoring import score_run

        cfg = self.config
        if self.options.n_boot is not None:
            cfg = cfg.model_copy(update={"bootstrap_b": self.options.n_boot})
        if self.options.seed is not None:
            cfg = cfg.model_copy(update={"bootstrap_seed": self.options.seed})
        return score_run(episodes_uri, items_uri, out, cfg)

    def report_sections(self, scored_run: str, work_dir: str) -> tuple[list, dict]:
        from medscope.protocols.organ_presence.report import report_sections

        return report_sections(scored_run, work_dir)
