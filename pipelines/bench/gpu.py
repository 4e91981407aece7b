"""The accelerator paths, each run once on tiny random models with a time budget and one result line
(docs/cluster.md, GPU runbook; ``cluster/gpu-check.sh`` wraps this with its wheels):

- ``lora_fp32`` / ``lora_bf16``: stage-1 LoRA steps on a tiny random Qwen2.5-VL through the trainer
  Ray Train's workers build (:func:`medscope.training.runner.make_worker_trainer`, called directly:
  no Ray), on a fixed batch: loss finite and falling, adapter saved and reloaded (same logits),
  vision tower unchanged, ms per step;
- ``zero2``: the bf16 run again under DeepSpeed ZeRO-2 on one GPU, its loss curve within
  ``ZERO2_TOLERANCE`` of the plain bf16 run's;
- ``sd_views``: the ``sd`` erasure tool (diffusers inpainting, fp16 on CUDA) on a tiny random pipeline,
  one phantom case per imaging type through the views builder, QC fields computed;
- ``local_eval``: local VLM evaluation (:class:`LocalHFModel`, bf16 on CUDA) batched and one by one:
  episodes/s of each and the same replies.

Each check runs in its own process (a crash or a hang is that check's FAIL line, and DeepSpeed's
process group stays in its own process). Nothing here imports Ray: the GPU machine has none.
``python -m pipelines.bench.gpu --device cpu|cuda --out DIR [--quick]``; exit 1 on any failure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time

CHECKS = ("lora_fp32", "lora_bf16", "zero2", "sd_views", "local_eval")
# seconds each check may take on one H200 (the whole run: < 8 min); --quick on CPU gets its own
BUDGET_S = {"lora_fp32": 75, "lora_bf16": 75, "zero2": 120, "sd_views": 90, "local_eval": 90}
QUICK_BUDGET_S = {"lora_fp32": 240, "lora_bf16": 240, "zero2": 240, "sd_views": 240, "local_eval": 240}
# addition: off the accelerator a check's budget is only a hang guard. The budgets above measure the
# accelerator paths; on a CPU shared with other work (a loaded CI machine, a busy workstation) the
# same check ran past 90 s and then past 240 s while nothing was wrong.
CPU_HANG_GUARD_S = 1800
# addition: how far ZeRO-2's per-step loss may sit from the plain bf16 run's, as a share of the
# first step's loss (ZeRO-2 keeps fp32 master weights, the plain bf16 run updates bf16 weights)
ZERO2_TOLERANCE = 0.10
SIZES = {False: {"steps": 20, "batch": 8, "episodes": 32, "sd_steps": 10, "sd_size": 256},
         True: {"steps": 6, "batch": 2, "episodes": 4, "sd_steps": 2, "sd_size": 32}}


def _row(check: str, status: str, result: str, **details) -> dict:
    return {"check": check, "status": status, "result": result, **details}


def _views(n_cases: int):
    from medscope.io import records
    from medscope.training.synthetic_views import synthetic_views

    return records.to_table("views", synthetic_views(n_cases, seed=0, size=64))


def _tiny_dir(out: str) -> str:
    from medscope.models.tiny_vlm import save_tiny

    path = os.path.join(out, "tiny-qwen2.5-vl")
    if not os.path.isdir(path):
        save_tiny(path, arch="qwen2.5-vl", seed=0)
    return path


def check_lora(device: str, out: str, quick: bool, dtype: str, zero: bool = False) -> dict:
    """Stage-1 LoRA steps on a fixed batch through the Ray Train worker's trainer (counterfactual paper §3.5).

    Parameters
    ----------
    device : {"cpu", "cuda"}
        Where the check runs.
    out : str
        Folder for the check's tiny models, adapters and files.
    quick : bool
        The small sizes of ``SIZES[True]`` (the suite's CPU form) instead of ``SIZES[False]``.
    dtype : {"fp32", "bf16"}
        ``"bf16"`` trains the saved tiny model (loaded in bf16 on CUDA); ``"fp32"`` the ``tiny:qwen2.5-vl``
        weights built in fp32.
    zero : bool, optional
        Train under DeepSpeed ZeRO-2 (stage 2, bf16) on one process, and compare the losses with the plain bf16
        run's ``losses-lora_bf16.json`` in ``out``.

    Returns
    -------
    dict
        The check's row: ``check`` (``lora_fp32``, ``lora_bf16`` or ``zero2``), ``status`` (``"ok"`` when the
        losses are finite and falling, the vision tower is unchanged and the reloaded adapter gives the same
        logits; else ``"FAIL"``), ``result`` (one line), ``losses``, ``ms_per_step``, ``finite``, ``falling``,
        ``vision_frozen``, ``adapter_reloaded``, ``steps``, ``dtype``, ``seconds``; with ``zero``, also
        ``max_gap_to_plain``, ``tolerance`` and ``status_vs_plain``.

    References
    ----------
    .. [1] counterfactual paper, §3.5
    """
    import torch

    from medscope.training.recipes import TrainRecipe
    from medscope.training.runner import make_worker_trainer
    from medscope.training.vlm import load_adapter, save_adapter, to_device, vision_parameter_names

    name = "zero2" if zero else f"lora_{dtype}"
    size = SIZES[quick]
    # the saved folder loads in bf16 on CUDA (vlm.build_base); "tiny:" builds the same weights in fp32
    base = _tiny_dir(out) if dtype == "bf16" else "tiny:qwen2.5-vl"
    recipe = TrainRecipe(name=name, method="sft", base=base, n_views=size["batch"], lr=5e-3, batch_size=size["batch"],
                         steps=size["steps"], warmup_frac=0.0, checkpoint_every=10**6, trajectory={"prompt": "short"},
                         allowed_kinds=["original", "target_removal", "random_removal", "degraded", "natural_negative"],
                         deepspeed={"stage": 2, "bf16": True} if zero else None)
    if zero:  # one process, one GPU: the env a launcher would set for deepspeed.initialize
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=os.environ.get("MASTER_PORT", "29517"))
    trainer, _ = make_worker_trainer(recipe, _views(size["batch"]), 0, 1, device)
    trainer.examples = trainer.examples[: size["batch"]]  # one micro-batch = the same examples every step
    vision = {n: p.detach().clone() for n, p in trainer.peft.named_parameters() if n in set(vision_parameter_names(trainer.peft))}
    times: list[float] = []

    def on_step(tr, metrics):
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter())

    start = time.perf_counter()
    trainer.fit(on_step)
    losses = [h["loss"] for h in trainer.history]
    step_ms = 1000 * (times[-1] - times[0]) / max(1, len(times) - 1)  # after the first (warm-up) step
    params = dict(trainer.peft.named_parameters())
    frozen = all(torch.equal(params[n].detach(), v) and not params[n].requires_grad for n, v in vision.items())
    falling = losses[-1] < losses[0]
    finite = all(math.isfinite(x) for x in losses)
    adapter = os.path.join(out, f"adapter-{name}")
    save_adapter(trainer.peft, adapter)
    from medscope.training.trainers import _chat

    batch = to_device(trainer._batch([_chat(e) for e in trainer.examples[:1]]), device)
    fwd = {k: v for k, v in batch.items() if k != "labels"}
    trainer.peft.eval()
    with torch.no_grad():
        trained = trainer.peft(**fwd).logits.float()
        from medscope.training.vlm import build_base

        fresh = build_base(base, seed=0).model.to(device)
        reloaded = load_adapter(fresh, adapter, trainable=False).to(device).eval()(**fwd).logits.float()
    same = bool(torch.allclose(trained, reloaded, atol=1e-2 if dtype == "bf16" or zero else 1e-5))
    ok = finite and falling and frozen and same and bool(vision)
    with open(os.path.join(out, f"losses-{name}.json"), "w") as f:
        json.dump(losses, f)
    result = (f"loss {losses[0]:.3f} -> {losses[-1]:.3f} over {len(losses)} steps (batch {size['batch']}), "
              f"{step_ms:.0f} ms/step; vision tower frozen: {frozen} ({len(vision)} tensors); adapter reloaded: {same}")
    row = _row(name, "ok" if ok else "FAIL", result, losses=losses, ms_per_step=step_ms, finite=finite,
               falling=falling, vision_frozen=frozen, adapter_reloaded=same, steps=len(losses),
               dtype=str(next(trainer.peft.parameters()).dtype), seconds=time.perf_counter() - start)
    if zero:
        row.update(_compare_to_plain(out, losses))
    return row


def _compare_to_plain(out: str, losses: list[float]) -> dict:
    """ZeRO-2's curve against the plain bf16 run's (same model, data, schedule)."""
    path = os.path.join(out, "losses-lora_bf16.json")
    if not os.path.exists(path):
        return {"status": "FAIL", "result": "no plain bf16 run to compare with (lora_bf16 failed?)"}
    plain = json.load(open(path))
    gap = max(abs(a - b) for a, b in zip(plain, losses, strict=True))
    ok = gap <= ZERO2_TOLERANCE * plain[0]
    return {"max_gap_to_plain": gap, "tolerance": ZERO2_TOLERANCE * plain[0],
            "status_vs_plain": "ok" if ok else "FAIL"} | ({} if ok else {"status": "FAIL"})


def build_tiny_sd_inpaint(out_dir: str, seed: int = 0) -> str:
    """A tiny random Stable Diffusion *inpainting* pipeline (9-channel UNet) saved to a folder,
    as :mod:`medscope.testing.tiny_diffusers` builds the text-to-image one.

    Parameters
    ----------
    out_dir : str
        Folder the text-to-image pipeline (``t2i``) and the inpainting one (``inpaint``) are saved under.
    seed : int, optional
        Seed of the random weights.

    Returns
    -------
    str
        The inpainting pipeline's folder, ``out_dir/inpaint``.
    """
    import torch
    from diffusers import StableDiffusionInpaintPipeline

    from medscope.testing.tiny_diffusers import build_tiny_sd

    src = build_tiny_sd(os.path.join(out_dir, "t2i"), seed)
    t2i = StableDiffusionInpaintPipeline.from_pretrained(src, local_files_only=True)
    from diffusers import UNet2DConditionModel

    cfg = dict(t2i.unet.config)
    cfg["in_channels"] = 9  # latents + mask + masked-image latents
    torch.manual_seed(seed)
    unet = UNet2DConditionModel.from_config(cfg)
    pipe = StableDiffusionInpaintPipeline(unet=unet, vae=t2i.vae, text_encoder=t2i.text_encoder, tokenizer=t2i.tokenizer,
                                          scheduler=t2i.scheduler, safety_checker=None, feature_extractor=None,
                                          requires_safety_checker=False)
    path = os.path.join(out_dir, "inpaint")
    pipe.save_pretrained(path)
    return path


def check_sd_views(device: str, out: str, quick: bool) -> dict:
    """The ``sd`` tool through the views builder: one phantom case per imaging type (counterfactual paper §2).

    Parameters
    ----------
    device : {"cpu", "cuda"}
        Where the check runs.
    out : str
        Folder for the check's tiny models, adapters and files.
    quick : bool
        The small sizes of ``SIZES[True]`` (the suite's CPU form) instead of ``SIZES[False]``.

    Returns
    -------
    dict
        The check's row: ``check`` ``"sd_views"``, ``status`` (``"ok"`` when at least 3 imaging types each got a
        target removal with an image and a measured contrast; else ``"FAIL"``), ``result``, ``per_type``
        ({imaging type: contrasts, ``passed``, ``reject_reason``, ``views``}), ``dtype`` and ``seconds``.

    References
    ----------
    .. [1] counterfactual paper, §2
    """
    from medscope.cohorts.phantom import phantom_cases
    from medscope.views.build import CaseContext, build_case_views
    from medscope.views.recipe import Recipe
    from medscope.views.tools import StableDiffusion

    size = SIZES[quick]
    start = time.perf_counter()
    eraser = StableDiffusion(build_tiny_sd_inpaint(os.path.join(out, "tiny-sd")), steps=size["sd_steps"],
                             size=size["sd_size"], device=device)
    cases, _ = phantom_cases(24, seed=0)
    per_type: dict[str, dict] = {}
    for case in cases:
        if case.get("mask") is not None and case["imaging_type"] not in per_type:
            per_type[case["imaging_type"]] = case
    lines, ok = [], len(per_type) >= 3
    details = {}
    for kind, case in sorted(per_type.items()):
        rows, _ = build_case_views(case, Recipe(tools=["sd"], seed=0), {"sd": eraser}, CaseContext(split="test"), "gpu-check")
        erased = [r for r in rows if r["kind"] == "target_removal"]
        qc = bool(erased) and erased[0]["image"] is not None and erased[0]["contrast_after"] is not None
        ok = ok and qc
        if erased:
            e = erased[0]
            details[kind] = {"contrast_before": e["contrast_before"], "contrast_after": e["contrast_after"], "passed": e["passed"],
                             "reject_reason": e["reject_reason"], "views": len(rows)}
            lines.append(f"{kind}: contrast {e['contrast_before']:.2f}->{e['contrast_after']:.2f} "
                         f"QC {'pass' if e['passed'] else e['reject_reason']}")
        else:
            lines.append(f"{kind}: no erased view")
    dtype = str(eraser.pipe.unet.dtype)
    return _row("sd_views", "ok" if ok else "FAIL", f"{len(per_type)} imaging types, {dtype}: " + "; ".join(lines),
                per_type=details, dtype=dtype, seconds=time.perf_counter() - start)


def check_local_eval(device: str, out: str, quick: bool) -> dict:
    """Local VLM evaluation batched and one by one (counterfactual paper §3.10: greedy; bf16 on GPU).

    Parameters
    ----------
    device : {"cpu", "cuda"}
        Where the check runs.
    out : str
        Folder for the check's tiny models, adapters and files.
    quick : bool
        The small sizes of ``SIZES[True]`` (the suite's CPU form) instead of ``SIZES[False]``.

    Returns
    -------
    dict
        The check's row: ``check`` ``"local_eval"``, ``status`` (``"ok"`` when batched and one-by-one replies are
        identical; else ``"FAIL"``), ``result``, ``episodes``, ``batched_eps`` and ``single_eps`` (episodes per
        second), ``same_replies`` (count) and ``dtype``.

    References
    ----------
    .. [1] counterfactual paper, §3.10
    """
    from medscope.protocols.counterfactual.agent_episode import run_episodes
    from medscope.items import Item
    from medscope.models.base import Decoding
    from medscope.models.local_hf import LocalHFModel

    n = SIZES[quick]["episodes"]
    views = [v for v in _views(n).to_pylist()][:n]
    items = [(Item(item_id=v["view_id"], case_id=v["case_id"], question=v["question"], truth=v["expected"],
                   images=(v["image"],), meta={"finding": v["finding"], "question_kind": v["question_kind"]}), "agent")
             for v in views]
    dec = Decoding(max_output_tokens=16)
    batched = LocalHFModel("tiny", _tiny_dir(out), device=device, batch_size=8)
    single = LocalHFModel("tiny", batched.path, device=device, batch_size=1, model=batched.model, processor=batched.processor)
    run_episodes(items[:2], batched, dec)  # warm-up (CUDA kernels, caches)
    t = time.perf_counter()
    a = run_episodes(items, batched, dec)
    t_batched = time.perf_counter() - t
    t = time.perf_counter()
    b = run_episodes(items, single, dec)
    t_single = time.perf_counter() - t
    same = sum(x.raw_text == y.raw_text for x, y in zip(a, b, strict=True))
    ok = same == len(items)
    return _row("local_eval", "ok" if ok else "FAIL",
                f"{len(items)} episodes, {batched.dtype}: batched {len(items) / t_batched:.1f} ep/s, one by one "
                f"{len(items) / t_single:.1f} ep/s; same replies {same}/{len(items)}",
                episodes=len(items), batched_eps=len(items) / t_batched, single_eps=len(items) / t_single,
                same_replies=same, dtype=str(batched.dtype))


# what a CPU run says instead of running these (medscope loads real bases in bf16 only on CUDA)
NEEDS_CUDA = {"lora_bf16": "skipped: needs CUDA (bases load in bf16 on CUDA only)",
              "zero2": "skipped: needs CUDA (DeepSpeed ZeRO-2 runs on CUDA GPUs only)"}


def run_check(name: str, device: str, out: str, quick: bool) -> dict:
    """Run one check by name in this process.

    Parameters
    ----------
    name : str
        One of ``CHECKS``; any name other than the first four runs ``local_eval``.
    device : {"cpu", "cuda"}
        Where the check runs.
    out : str
        Folder for the check's tiny models, adapters and files.
    quick : bool
        The small sizes of ``SIZES[True]`` (the suite's CPU form) instead of ``SIZES[False]``.

    Returns
    -------
    dict
        The check's row (see :func:`check_lora`, :func:`check_sd_views`, :func:`check_local_eval`).
    """
    if name == "lora_fp32":
        return check_lora(device, out, quick, "fp32")
    if name == "lora_bf16":
        return check_lora(device, out, quick, "bf16")
    if name == "zero2":
        return check_lora(device, out, quick, "bf16", zero=True)
    if name == "sd_views":
        return check_sd_views(device, out, quick)
    return check_local_eval(device, out, quick)


def environment(device: str) -> dict:
    """Versions as installed (read from their metadata, not imported: the checks import them).

    Parameters
    ----------
    device : {"cpu", "cuda"}
        The device the checks run on.

    Returns
    -------
    dict
        ``python``, ``device``, the version of each of torch, transformers, peft, diffusers, deepspeed and
        pydantic (``"missing"`` when not installed), and on CUDA with a GPU visible, ``gpu`` and ``cuda``.
    """
    from importlib.metadata import PackageNotFoundError, version

    env = {"python": platform.python_version(), "device": device}
    for dist in ("torch", "transformers", "peft", "diffusers", "deepspeed", "pydantic"):
        try:
            env[dist] = version(dist)
        except PackageNotFoundError:  # a missing package is its check's failure; said here once
            env[dist] = "missing"
    if device == "cuda":
        import torch

        if torch.cuda.is_available():
            env.update(gpu=torch.cuda.get_device_name(), cuda=torch.version.cuda)
    return env


def table(rows: list[dict]) -> str:
    """One line per check: name, status, seconds (of its budget), result.

    Parameters
    ----------
    rows : list of dict
        Check rows with ``check``, ``status``, ``result`` and optionally ``wall_s`` and ``budget_s``.

    Returns
    -------
    str
        A header line, then one line per row.
    """
    lines = [f"{'check':<11} {'status':<8} {'s / budget':>11}  result"]
    for r in rows:
        lines.append(f"{r['check']:<11} {r['status']:<8} {r.get('wall_s', 0):>5.0f} / {r.get('budget_s', 0):<4.0f}  {r['result']}")
    return "\n".join(lines)


def run_all(device: str, out: str, quick: bool, checks=CHECKS, budget_s: float | None = None) -> list[dict]:
    """Each check in its own process under its budget (``budget_s`` for every check, if given);
    a timeout or a crash is its FAIL line.

    Parameters
    ----------
    device : {"cpu", "cuda"}
        Where the check runs.
    out : str
        Folder for the check's tiny models, adapters and files.
    quick : bool
        The small sizes of ``SIZES[True]`` (the suite's CPU form) instead of ``SIZES[False]``.
    checks : sequence of str, optional
        The checks to run, in order (names of ``CHECKS``).
    budget_s : float or None, optional
        Seconds every check may take; None: ``BUDGET_S`` (``QUICK_BUDGET_S`` with ``quick``) on CUDA,
        at least ``CPU_HANG_GUARD_S`` elsewhere.

    Returns
    -------
    list of dict
        One row per check, with ``wall_s`` and ``budget_s`` added; on a non-CUDA device the checks of
        ``NEEDS_CUDA`` are ``"skipped"`` rows.
    """
    os.makedirs(out, exist_ok=True)
    budgets = QUICK_BUDGET_S if quick else BUDGET_S
    if device != "cuda":
        budgets = {name: max(b, CPU_HANG_GUARD_S) for name, b in budgets.items()}
    if budget_s is not None:
        budgets = {name: budget_s for name in budgets}
    rows = []
    for name in checks:
        row_file = os.path.join(out, f"row-{name}.json")
        if os.path.exists(row_file):
            os.remove(row_file)
        argv = [sys.executable, "-m", "pipelines.bench.gpu", "--device", device, "--out", out, "--one", name]
        argv += ["--quick"] if quick else []
        t = time.perf_counter()
        if device != "cuda" and name in NEEDS_CUDA:
            rows.append(_row(name, "skipped", NEEDS_CUDA[name]) | {"wall_s": 0.0, "budget_s": budgets[name]})
            print(table(rows[-1:]).splitlines()[1], flush=True)
            continue
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=budgets[name])
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            row = (json.load(open(row_file)) if os.path.exists(row_file)
                   else _row(name, "FAIL", f"exited {proc.returncode}: {' | '.join(tail)[-400:]}"))
        except subprocess.TimeoutExpired:
            row = _row(name, "FAIL", f"over its budget of {budgets[name]} s")
        row.update(wall_s=time.perf_counter() - t, budget_s=budgets[name])
        rows.append(row)
        print(table([row]).splitlines()[1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """The GPU check's command line (see the module docstring); writes ``gpu_check.json`` in ``--out``.

    Parameters
    ----------
    argv : list of str or None, optional
        The arguments (``--device``, ``--out``, ``--quick``, ``--only``, ``--budget-s``); None reads
        ``sys.argv``.

    Returns
    -------
    int
        The exit status: 1 when any check failed, else 0 (always 0 for ``--one``, which writes its row to a
        file).
    """
    p = argparse.ArgumentParser(prog="python -m pipelines.bench.gpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda when available")
    p.add_argument("--out", default="gpu-check", help="folder for gpu_check.json, the tiny models and adapters")
    p.add_argument("--quick", action="store_true", help="small sizes (the suite's CPU form)")
    p.add_argument("--only", default=None, help="comma-separated checks (default: all of " + ", ".join(CHECKS) + ")")
    p.add_argument("--budget-s", type=float, default=None,
                   help="one time budget for every check, in seconds (default: each check's own, sized for "
                        "a GPU lease); the test suite's CPU form passes a generous one, a hang guard only")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: run one check in this process
    args = p.parse_args(argv)
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.one:
        try:
            row = run_check(args.one, args.device, args.out, args.quick)
        except Exception as err:  # the check's FAIL line says what broke
            import traceback

            traceback.print_exc()
            row = _row(args.one, "FAIL", f"{type(err).__name__}: {str(err)[:300]}")
        with open(os.path.join(args.out, f"row-{args.one}.json"), "w") as f:
            json.dump(row, f, default=str)
        return 0
    checks = tuple(c for c in (args.only.split(",") if args.only else CHECKS))
    unknown = set(checks) - set(CHECKS)
    if unknown:
        p.error(f"unknown check(s) {sorted(unknown)}; choose from {', '.join(CHECKS)}")
    env = environment(args.device)
    print(f"gpu check on {env.get('gpu', args.device)}: python {env['python']}, torch {env['torch']}, "
          f"deepspeed {env['deepspeed']}, diffusers {env['diffusers']}", flush=True)
    print(table([]), flush=True)
    t = time.perf_counter()
    rows = run_all(args.device, args.out, args.quick, checks, args.budget_s)
    failed = [r["check"] for r in rows if r["status"] == "FAIL"]
    report = {"environment": env, "quick": args.quick, "total_s": time.perf_counter() - t, "checks": rows,
              "failed": failed, "date": time.strftime("%Y-%m-%d", time.gmtime())}
    with open(os.path.join(args.out, "gpu_check.json"), "w") as f:
        json.dump(report, f, indent=2, default=str)
    print(f"\n{table(rows)}\n{len(rows) - len(failed)} of {len(rows)} checks not failed in {report['total_s']:.0f} s; "
          f"table in {os.path.join(args.out, 'gpu_check.json')}")
    return 1 if failed else 0


def bench_gpu(args) -> None:
    """``medscope bench gpu [--quick]``: every check on this machine's accelerator (or CPU).

    Parameters
    ----------
    args : BenchConfig or argparse.Namespace
        The ``medscope bench`` settings (:class:`pipelines.bench.BenchConfig`, or a namespace of its fields);
        reads ``quick``.

    Raises
    ------
    SystemExit
        With :func:`main`'s status when a check failed.
    """
    code = main(["--out", "gpu-check"] + (["--quick"] if getattr(args, "quick", False) else []))
    if code:
        raise SystemExit(code)


if __name__ == "__main__":
    sys.exit(main())
