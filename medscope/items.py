"""What flows between a protocol and the shared harness: an item to evaluate and what one
episode on it produced. Low in the layers so the agent loop, the models' test doubles and
every protocol can name them without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Item:
    """One unit of evaluation: a 2D view, a probe slice x organ, a question of a montage..."""

    item_id: str  # a view's view_id, a question's or slice's item_id: the episodes table's item_id
    case_id: str  # the bootstrap cluster: one source image or volume
    question: str
    truth: str  # the protocol's expected outcome (present | absent | clarify | a letter ...)
    images: tuple[bytes, ...] = ()  # PNG bytes, in the order the prompt shows them
    private: bool = False
    endpoint_allowlist: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)  # protocol-specific (finding, kind, box, ...)


READINGS = ("format", "json", "rules", "judge")  # how an episode's decision was read


@dataclass
class EpisodeResult:
    """What one episode produced; the sweep adds run/model/condition/key columns and timing."""

    turns: list[dict]  # {"role", "text", "image_ref"}
    raw_text: str  # the final reply's raw text
    action: str  # answer | refer | clarify | unparseable | unclear (the reader did not commit)
    answer: str | None = None
    claims_finding: bool | None = None
    box: list[int] | None = None
    confidence: float | None = None
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    parse_error: str | None = None  # why the reply was unparseable, or a tool-call problem
    model_turns: int = 0  # how many replies the model wrote in this episode
    reading: str | None = None  # how the decision was read: format | json | rules | judge (READINGS)
    reading_rule: str | None = None  # the reader's rule that decided (medscope.answers.matching.RULES)
    reading_note: str | None = None  # the text that decided, or why the reading is unclear
