"""``medscope bench replies`` and ``medscope bench agent``: the free-text reader against the
hand-labelled replies, batched local episodes against one at a time, reply-reading throughput."""

from __future__ import annotations


def bench_replies(args=None) -> None:
    """``medscope bench replies`` (and the first part of ``bench agent``): the free-text reader
    against the hand-labelled reply table: agreement, claim/denial flips, per style and per
    deciding rule, and every disagreement."""
    from collections import Counter

    from medscope.answers.corpus import agreement, load_corpus, load_jsonl_table
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
    held = load_jsonl_table("replies_item6.jsonl")  # issue 29's table of item 6's kinds
    b = agreement(lambda *x: (lambda r: (r.action, r.claim))(read_text(*x)), held)
    print(f"  issue 29 table (self-correction, post-negation, final colon, JSON keyed by the finding, health "
          f"denials): agreement {b.agree}/{b.n} = {b.rate:.3f}, claim/denial flips {b.flips}")
    for row, got in b.misses:
        print(f"  MISS [{row.style}] expected {row.expect}, read {got}: {row.reply!r}")


def bench(args) -> None:
    """``medscope bench agent``: the reader's agreement with the labelled replies
    (:func:`bench_replies`); local HF episodes one request at a time vs in lock-step
    batches (``run_episodes`` + ``complete_batch``) on the tiny Qwen2-VL, and reply reading
    (parser + matcher) throughput. Prints rates and their ratio, measured in one run."""
    import time

    bench_replies(args)

    import numpy as np

    from medscope.protocols.counterfactual.agent_episode import run_episode, run_episodes
    from medscope.answers.matching import claims_finding
    from medscope.answers.parser import parse_reply
    from medscope.items import Item
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
