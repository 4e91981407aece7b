"""``medscope agent``: look at the protocol without running a sweep.

- ``medscope agent prompt --condition cautious [--question Q --finding F --kind K]``: the
  messages a model receives under a condition (images shown as placeholders) and the prompt
  version that keys its episodes;
- ``medscope agent try --views URI --model always-absent|classical|<checkpoint folder>
  --condition agent --limit 5``: a few episodes on the first passed views, one line each;
- ``medscope agent tiny-vlm --out DIR``: write the tiny random Qwen2-VL for smoke runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from medscope.errors import MedScopeError


def _render(args) -> None:
    import numpy as np

    from medscope.agent import prompts
    from medscope.agent.episode import Episode
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
    from medscope.models.tiny_vlm import save_tiny_qwen2vl

    print(save_tiny_qwen2vl(args.out, seed=args.seed))


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

    tv = verbs.add_parser("tiny-vlm", help="write the tiny random-initialised Qwen2-VL")
    tv.add_argument("--out", required=True)
    tv.add_argument("--seed", type=int, default=0)
    tv.set_defaults(func=_tiny)


def bench_replies(args=None) -> None:
    """``medscope bench replies`` (and the first part of ``bench agent``): the free-text reader
    against the hand-labelled reply table: agreement, claim/denial flips, per style and per
    deciding rule, and every disagreement."""
    from collections import Counter

    from medscope.answers.corpus import agreement, load_corpus
    from medscope.answers.matching import read_text

    rows = load_corpus()
    readings = {id(r): read_text(r.reply, r.question, r.finding, r.kind) for r in rows}
    a = agreement(lambda *x: (lambda r: (r.action, r.claim))(read_text(*x)), rows)
    print(f"reply reading vs {a.n} hand-labelled replies: agreement {a.agree}/{a.n} = {a.rate:.3f}, "
          f"claim/denial flips {a.flips}")
    missed = Counter(row.style for row, _ in a.misses)
    by_style = Counter(r.style for r in rows)
    print("  per style: " + ", ".join(f"{s} {by_style[s] - missed[s]}/{by_style[s]}" for s in sorted(by_style)))
    rules = Counter(readings[id(r)].rule for r in rows)
    print("  deciding rule: " + ", ".join(f"{k}={v}" for k, v in rules.most_common()))
    for row, got in a.misses:
        print(f"  MISS [{row.style}] expected {row.expect}, read {got}: {row.reply!r}")


def bench(args) -> None:
    """``medscope bench agent``: the reader's agreement with the labelled replies
    (:func:`bench_replies`); local HF episodes one request at a time vs in lock-step
    batches (``run_episodes`` + ``complete_batch``) on the tiny Qwen2-VL, and reply reading
    (parser + matcher) throughput. Prints rates and their ratio, measured in one run."""
    import time

    bench_replies(args)

    import numpy as np

    from medscope.agent.episode import run_episode, run_episodes
    from medscope.answers.matching import claims_finding
    from medscope.answers.parser import parse_reply
    from medscope.protocols.base import Item
    from medscope.images import encode_png
    from medscope.models.base import Decoding
    from medscope.models.local_hf import LocalHFModel
    from medscope.models.tiny_vlm import build_tiny_qwen2vl

    n = 8 if args.quick else 32
    rng = np.random.default_rng(0)
    items = [Item(item_id=f"b{i}", case_id=f"c{i}", question="Is there a nodule?", truth="present",
                  images=(encode_png(rng.integers(0, 256, (160, 128), dtype=np.uint8)),),
                  meta={"finding": "nodule", "question_kind": "presence"}) for i in range(n)]
    model, processor = build_tiny_qwen2vl(seed=0)
    local = LocalHFModel("tiny", "in-memory", model=model, processor=processor, batch_size=8)
    dec = Decoding(max_output_tokens=16)
    run_episode(items[0], local, "agent", dec)  # warm-up
    t0 = time.perf_counter()
    one = [run_episode(it, local, "agent", dec) for it in items]
    t_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    batched = run_episodes([(it, "agent") for it in items], local, dec)
    t_batch = time.perf_counter() - t0
    same = [r.raw_text for r in one] == [r.raw_text for r in batched]
    print(f"local HF episodes: one by one {n / t_one:.1f}/s, batched (8) {n / t_batch:.1f}/s, "
          f"ratio {t_one / t_batch:.2f}x, identical replies: {same}")

    replies = [
        '<think>x</think> Zooming. <tool>{"name": "zoom", "box": [1, 2, 300, 400]}</tool>',
        'Seen. <final>{"action": "answer", "answer": "No pneumothorax", "confidence": 0.8}</final>',
        "Pneumothorax without mediastinal shift.",
        "```json\n{'action': 'answer', 'answer': 'Yes',}\n```",
    ] * (250 if args.quick else 2500)
    t0 = time.perf_counter()
    for r in replies:
        p = parse_reply(r)
        if p.kind == "final" and p.final.answer:
            claims_finding(p.final.answer, "Is there a pneumothorax?", "pneumothorax", "presence")
        elif p.kind == "free":
            claims_finding(p.text, "Is there a pneumothorax?", "pneumothorax", "presence")
    dt = time.perf_counter() - t0
    print(f"reply reading (parse + match): {len(replies) / dt:,.0f} replies/s")
