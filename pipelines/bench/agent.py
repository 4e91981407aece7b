"""``medscope bench replies`` and ``medscope bench agent``: the free-text reader against the
hand-labelled replies, batched local episodes against one at a time, reply-reading throughput."""

from __future__ import annotations


def bench_replies(args=None) -> None:
    """``medscope bench replies`` (and the first part of ``bench agent``): the free-text reader
    against the hand-labelled reply table: agreement, claim/denial flips, per style and per
    deciding rule, and every disagreement.

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace or None, optional
        The ``medscope bench`` settings (:class:`pipelines.bench.BenchConfig`, or a namespace of its fields);
        not read (the reply tables are fixed).
    """
    from collections import Counter

    from medscope.answers.corpus import agreement, load_corpus, load_jsonl_table
    from medscope.answers.matching import read_decision

    rows = load_corpus()
    readings = {id(r): read_decision(r.reply, r.question, r.finding, r.kind) for r in rows}
    a = agreement(lambda *x: (lambda r: (r.action, r.claim))(read_decision(*x)), rows)
    print(f"reply reading vs {a.n} hand-labelled replies: agreement {a.agree}/{a.n} = {a.rate:.3f}, "
          f"claim/denial flips {a.flips}")
    missed = Counter(row.style for row, _ in a.misses)
    by_style = Counter(r.style for r in rows)
    print("  per style: " + ", ".join(f"{s} {by_style[s] - missed[s]}/{by_style[s]}" for s in sorted(by_style)))
    rules = Counter(readings[id(r)].rule for r in rows)
    print("  deciding rule: " + ", ".join(f"{k}={v}" for k, v in rules.most_common()))
    for row, got in a.misses:
        print(f"  MISS [{row.style}] expected {row.expect}, read {got}: {row.reply!r}")
    held = load_jsonl_table("replies_item6.jsonl")  # the held-out replies of item 6's kinds
    b = agreement(lambda *x: (lambda r: (r.action, r.claim))(read_decision(*x)), held)
    print(f"  held-out item-6 table (self-correction, post-negation, final colon, JSON keyed by the finding, health "
          f"denials): agreement {b.agree}/{b.n} = {b.rate:.3f}, claim/denial flips {b.flips}")
    for row, got in b.misses:
        print(f"  MISS [{row.style}] expected {row.expect}, read {got}: {row.reply!r}")
    _bench_heldout_sets()


def _bench_heldout_sets() -> None:
    """The held-out sets of issue 48's kinds (``data/heldout``): agreement, flips and unclear per set
    and protocol. A-S were each read once as committed and then tuned on (their first reads are in
    docs/answers.md; F's 0.680 with 19 flips, G's 0.655 with 11 flips, H's 0.870 with 3 flips, L's
    0.855 with 1 flip, M's 0.900 with 2 flips, N's 0.865 with 1 flip, O's 0.880 with 0 flips and 5 unclear, P's 0.885 with
    1 flip and 4 unclear, Q's 0.910 with 0 flips and 4 unclear misses, R's 0.825 with 9 flips and 16 unclear):
    regression figures. S was read once, blind, after the R round (0.865, 2 flips), then tuned on in the S
    round. A new blind set's first read is the honest figure."""
    from importlib import resources

    from medscope.answers.decisions import load_labelled_set, score_labelled_set

    folder = resources.files("medscope.answers").joinpath("data", "heldout")
    for name, what in (("frozen_a.jsonl", "tuned on"), ("sealed_b.jsonl", "tuned on"),
                       ("sealed_c.jsonl", "tuned on"), ("sealed_d.jsonl", "tuned on"),
                       ("sealed_e.jsonl", "tuned on"), ("sealed_f.jsonl", "tuned on"),
                       ("sealed_g.jsonl", "read blind, then tuned on"),
                       ("sealed_h.jsonl", "read blind, then tuned on"),
                       ("sealed_i.jsonl", "read blind, then tuned on"),
                       ("sealed_j.jsonl", "read blind, then tuned on"),
                       ("sealed_k.jsonl", "read blind, then tuned on"),
                       ("sealed_l.jsonl", "read blind, then tuned on"),
                       ("sealed_m.jsonl", "read blind, then tuned on"),
                       ("sealed_n.jsonl", "read blind, then tuned on"),
                       ("sealed_o.jsonl", "read blind, then tuned on"),
                       ("sealed_p.jsonl", "read blind, then tuned on"),
                       ("sealed_q.jsonl", "read blind, then tuned on"),
                       ("sealed_r.jsonl", "read blind, then tuned on"),
                       ("sealed_s.jsonl", "read blind, then tuned on"),
                       ("sealed_t.jsonl", "read blind, then tuned on"),
                       ("sealed_u.jsonl", "read blind, then tuned on"),
                       ("sealed_v.jsonl", "read blind, then tuned on")):
        rows = load_labelled_set(str(folder.joinpath(name)))
        parts = []
        for protocol in ("counterfactual", "organ_presence"):
            s = score_labelled_set([r for r in rows if r.protocol == protocol])
            parts.append(f"{protocol} {s.agree}/{s.n} flips {s.flips} unclear {s.unclear}")
        s = score_labelled_set(rows)
        print(f"  held-out {name} ({what}): agreement {s.agree}/{s.n} = {s.rate:.3f}, flips {s.flips}, "
              f"unclear {s.unclear} ({'; '.join(parts)})")


def bench(args) -> None:
    """``medscope bench agent``: the reader's agreement with the labelled replies
    (:func:`bench_replies`); local HF episodes one request at a time vs in lock-step
    batches of 8 (``run_episodes`` + ``complete_batch``) on the tiny Qwen2-VL, with and without
    the shared-prefix KV cache (:mod:`medscope.models.prefix_cache`), and reply reading
    (parser + matcher) throughput. Prints rates, their ratios and whether the batched replies
    and token counts are identical to one by one, measured in one run, with the load average.

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace
        The ``medscope bench`` settings (:class:`pipelines.bench.BenchConfig`, or a namespace of its fields);
        reads ``quick`` (8 items and 1,000 replies to read instead of 32 and 10,000).
    """
    import os
    import time

    bench_replies(args)

    import numpy as np
    import torch

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
    plain = LocalHFModel("tiny", "in-memory", model=model, processor=processor, batch_size=8, prefix_cache=False)
    dec = Decoding(max_output_tokens=16)
    load = os.getloadavg()[0]
    threads = torch.get_num_threads()
    # One torch thread: on a shared 2-core machine two threads spin against other work and the
    # wall times swing tenfold; CPU seconds of one thread are what the ratio is about.
    torch.set_num_threads(1)
    try:
        run_episode(items[0], local, "agent", dec)  # warm-up
        times = {}

        def timed(name, fn):
            w, c = time.perf_counter(), time.process_time()
            out = fn()
            times[name] = (time.perf_counter() - w, time.process_time() - c)
            return out

        one = timed("one", lambda: [run_episode(it, local, "agent", dec) for it in items])
        no_prefix = timed("plain", lambda: run_episodes([(it, "agent") for it in items], plain, dec))
        # its first batch computes the prefix cache, inside the timing
        batched = timed("prefix", lambda: run_episodes([(it, "agent") for it in items], local, dec))
    finally:
        torch.set_num_threads(threads)

    def same(rs):
        return [(r.raw_text, r.input_tokens, r.output_tokens) for r in rs] == \
               [(r.raw_text, r.input_tokens, r.output_tokens) for r in one]

    def rate(name):
        wall, cpu = times[name]
        return (f"{n / wall:.1f}/s wall, {n / cpu:.1f}/s CPU" if name == "one" else
                f"{n / wall:.1f}/s wall, {n / cpu:.1f}/s CPU, ratio {times['one'][0] / wall:.2f}x wall, "
                f"{times['one'][1] / cpu:.2f}x CPU")

    print(f"local HF episodes (tiny Qwen2-VL, one torch thread, n={n}, load average {load:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end):")
    print(f"  one by one: {rate('one')}")
    print(f"  batched (8), no prefix cache: {rate('plain')}; identical replies and token counts: {same(no_prefix)}")
    print(f"  batched (8), prefix cache: {rate('prefix')}; identical replies and token counts: {same(batched)} "
          f"({local.prefix_batches} batches from {local.prefix_forwards} prefix cache)")
    # judged on CPU seconds: with one thread they are the work done, while wall time on a
    # shared machine also counts waiting for other processes (both are printed above)
    ratio = times["one"][1] / times["prefix"][1]
    print(f"  aim >= 3x at batch 8 with identical replies: {'met' if ratio >= 3 and same(batched) else 'NOT met'} "
          f"({ratio:.2f}x CPU, {times['one'][0] / times['prefix'][0]:.2f}x wall)")

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
