"""``medscope agent``: look at the protocol without running a sweep.

- ``medscope agent prompt --condition cautious [--question Q --finding F --kind K]``: the
  messages a model receives under a condition (images shown as placeholders) and the prompt
  version that keys its episodes;
- ``medscope agent try --views URI --model always-absent|classical|<checkpoint folder>
  --condition agent --limit 5``: a few episodes on the first passed views, one line each;
- ``medscope agent tiny-vlm --arch qwen2-vl|qwen2.5-vl|gemma3 --out DIR``: write a tiny random
  VLM of that architecture for smoke runs (a training recipe's ``base:`` takes DIR).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

from pydantic import Field as F

from medscope.config import StrictModel
from medscope.errors import MedScopeError
from pipelines.support.flags import add_action


def _render(args) -> None:
    import numpy as np

    from medscope.protocols.counterfactual import prompts
    from medscope.protocols.counterfactual.agent_episode import Episode
    from medscope.protocols.base import Item
    from medscope.images import encode_png

    item = Item(item_id="example", case_id="example", question=args.question, truth="present",
                images=(encode_png(np.full((512, 512), 100, np.uint8)),),
                meta={"finding": args.finding, "question_kind": args.kind})
    ep = Episode(item, args.condition)
    print(f"# prompt version {prompts.PROMPT_VERSION}, condition {ep.condition}")
    for m in ep.messages:
        body = " ".join("[image]" if p.is_image else p.text for p in m.parts)
        print(f"--- {m.role}\n{body}")


def _model(spec: str):
    from medscope.models.classical import ClassicalReader
    from medscope.models.policies import POLICIES, TrivialPolicy

    if spec in POLICIES:
        return TrivialPolicy(spec)
    if spec == "classical":
        return ClassicalReader()
    if Path(spec).is_dir():
        from medscope.models.local_hf import LocalHFModel

        return LocalHFModel(Path(spec).name, spec)
    raise MedScopeError(f"--model {spec!r}: use one of {', '.join(POLICIES)}, classical, or a checkpoint folder")


def _try(args) -> None:
    from medscope.protocols.counterfactual.protocol import CounterfactualProtocol
    from medscope.models.base import Decoding

    proto = CounterfactualProtocol()
    items = proto.load_items(args.views)[: args.limit]
    if not items:
        raise MedScopeError(f"{args.views}: no passed views to run")
    model = _model(args.model)
    for item in items:
        r = proto.run_episode(item, model, args.condition, Decoding(max_output_tokens=args.max_tokens))
        print(f"{item.item_id}\t{item.meta.get('kind')}\texpected={item.truth}\taction={r.action}"
              f"\tclaims={r.claims_finding}\ttools={r.tool_calls}")
    if proto.rejects:
        print(f"{len(proto.rejects)} passed views without an image were skipped", file=sys.stderr)


def _tiny(args) -> None:
    from medscope.models.tiny_vlm import save_tiny

    print(save_tiny(args.out, args.arch, seed=args.seed))


# Conditions are checked by the episode (one clear error), so building the CLI imports nothing heavy.
_CONDITIONS = "agent, plain, cautious, few-shot, blind, blank, tools-off, paraphrase"


class AgentPromptConfig(StrictModel):
    """``medscope agent prompt``: the messages of a condition."""

    condition: str = F("agent", description=f"prompting condition: {_CONDITIONS}")
    question: str = F("Is there a nodule?", description="the question asked")
    finding: str = F("nodule", description="the finding the question is about")
    kind: Literal["presence", "health", "open"] = F("presence", description="the question's kind")


class AgentTryConfig(StrictModel):
    """``medscope agent try``: a few episodes on a views table."""

    views: str = F(description="views table URI")
    model: str = F(description="a policy name, 'classical', or a local checkpoint folder")
    condition: str = F("agent", description=f"prompting condition: {_CONDITIONS}")
    limit: int = F(5, ge=1, description="episodes to run (the first passed views)")
    max_tokens: int = F(256, ge=1, description="output tokens per reply")


class TinyVLMConfig(StrictModel):
    """``medscope agent tiny-vlm``: a tiny random-initialised VLM."""

    # the choices are tiny_vlm.ARCHS, written out so that building the CLI imports no torch
    arch: Literal["qwen2-vl", "qwen2.5-vl", "gemma3"] = F("qwen2-vl", description="architecture")
    out: str = F(description="checkpoint folder to write")
    seed: int = F(0, description="initialisation seed")


def register(sub) -> None:
    """Add the ``agent`` verb and its actions (prompt, try, tiny-vlm).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``medscope`` parser's subparsers; ``agent`` is added to them.
    """
    p = sub.add_parser("agent", help="inspect the agent protocol: prompts, a few episodes, the tiny VLM")
    verbs = p.add_subparsers(dest="agent_verb", metavar="ACTION")
    verbs.required = True
    add_action(verbs, "prompt", AgentPromptConfig, _render, "print the messages of a condition")
    add_action(verbs, "try", AgentTryConfig, _try, "run a few episodes on a views table")
    add_action(verbs, "tiny-vlm", TinyVLMConfig, _tiny,
               "write a tiny random-initialised VLM (Qwen2-VL, Qwen2.5-VL or Gemma-3)")
