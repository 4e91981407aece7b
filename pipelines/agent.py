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

from medscope.errors import MedScopeError


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


def register(sub) -> None:
    p = sub.add_parser("agent", help="inspect the agent protocol: prompts, a few episodes, the tiny VLM")
    verbs = p.add_subparsers(dest="agent_verb", metavar="ACTION")
    verbs.required = True
    # Conditions are checked by the episode (one clear error), so building the CLI imports nothing heavy.
    conditions = "agent, plain, cautious, few-shot, blind, blank, tools-off, paraphrase"

    pr = verbs.add_parser("prompt", help="print the messages of a condition")
    pr.add_argument("--condition", default="agent", help=conditions)
    pr.add_argument("--question", default="Is there a nodule?")
    pr.add_argument("--finding", default="nodule")
    pr.add_argument("--kind", default="presence", choices=("presence", "health", "open"))
    pr.set_defaults(func=_render)

    tr = verbs.add_parser("try", help="run a few episodes on a views table")
    tr.add_argument("--views", required=True, help="views table URI")
    tr.add_argument("--model", required=True, help="a policy name, 'classical', or a local checkpoint folder")
    tr.add_argument("--condition", default="agent", help=conditions)
    tr.add_argument("--limit", type=int, default=5)
    tr.add_argument("--max-tokens", type=int, default=256)
    tr.set_defaults(func=_try)

    tv = verbs.add_parser("tiny-vlm", help="write a tiny random-initialised VLM (Qwen2-VL, Qwen2.5-VL or Gemma-3)")
    # the choices are tiny_vlm.ARCHS, written out so that building the CLI imports no torch
    tv.add_argument("--arch", default="qwen2-vl", choices=("qwen2-vl", "qwen2.5-vl", "gemma3"))
    tv.add_argument("--out", required=True)
    tv.add_argument("--seed", type=int, default=0)
    tv.set_defaults(func=_tiny)


