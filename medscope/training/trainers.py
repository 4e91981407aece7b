"""One trainer per method (TRL style), each configured by a :class:`TrainRecipe`.

A trainer owns the optimisation loop over its examples; where checkpoints go is the caller's
business (``on_step`` gets the trainer and can save :meth:`state`). The data order is fixed by
the seed, so resuming from step ``s`` skips the first ``s`` optimiser steps' examples and
continues exactly where the killed run was.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch

from medscope.seeding import derive_seed
from medscope.answers.actions import ToolCall
from medscope.training import data, episodes, losses
from medscope.training import trajectories as tj
from medscope.training.recipes import TrainRecipe
from medscope.training.vlm import VLM, collate, encode, sequence_logps, to_device, token_nll


def single_turn(view: dict, reply: str, system: str = tj.SYSTEM_PROMPT) -> list[dict]:
    """The one-turn chat used for decision log-odds and preference pairs.

    Parameters
    ----------
    view : dict
        Gives ``question`` and ``image`` (PNG bytes).
    reply : str
        The assistant's reply.
    system : str, optional
        The system prompt.

    Returns
    -------
    list of dict
        System, user (question and image) and assistant messages, {role, text, image}.
    """
    return [
        {"role": "system", "text": system, "image": None},
        {"role": "user", "text": view["question"], "image": view["image"]},
        {"role": "assistant", "text": reply, "image": None},
    ]


class BaseTrainer:
    """Optimiser, schedule (linear warm-up, linear decay), accumulation, checkpoint state.

    addition: the paper gives no schedule; linear warm-up and linear decay to 0 are ours."""

    def __init__(self, vlm: VLM, model, recipe: TrainRecipe, examples: list, device="cpu"):
        self.vlm, self.model, self.recipe, self.examples = vlm, model, recipe, examples
        self.peft = model  # the unwrapped PEFT model (``model`` may become a DDP wrapper)
        self.engine = None  # a DeepSpeed engine, when the recipe asks for ZeRO
        self.device = torch.device(device)
        self.model.to(self.device)
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=recipe.lr, weight_decay=0.0)
        total = self.total_steps
        warm = max(1, int(recipe.warmup_frac * total)) if recipe.warmup_frac else 0

        def factor(step: int) -> float:
            if warm and step < warm:
                return (step + 1) / warm
            return max(0.0, (total - step) / max(1, total - warm))

        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, factor)
        self.step = 0
        self.history: list[dict] = []
        self.system = tj.PROMPTS[recipe.trajectory.prompt]

    @property
    def total_steps(self) -> int:
        if self.recipe.steps:
            steps = self.recipe.steps
        else:
            steps = data.one_pass_steps(len(self.examples), self.recipe) * self.recipe.epochs
        return min(steps, self.recipe.max_steps) if self.recipe.max_steps else steps

    def micro_batches(self):
        """The examples in micro-batches: ``epochs`` passes, or as many passes as a fixed
        ``steps`` needs (passes after the first in a new order of the run seed)."""
        b = self.recipe.batch_size
        passes = range(self.recipe.epochs) if not self.recipe.steps else itertools.count()
        for p in passes:
            order = self.examples if p == 0 else data.shuffled(self.examples, self.recipe.seed, f"pass{p}")
            for i in range(0, len(order), b):
                yield order[i : i + b]

    def loss(self, batch: list) -> tuple[torch.Tensor, dict]:
        raise NotImplementedError

    def state(self) -> dict:
        from peft import get_peft_model_state_dict

        return {
            "adapter": get_peft_model_state_dict(self.peft),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "step": self.step,
            "history": self.history,
        }

    def load_state(self, state: dict) -> None:
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(self.peft, state["adapter"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step = int(state["step"])
        self.history = list(state.get("history", []))

    def fit(self, on_step: Callable[["BaseTrainer", dict], None] | None = None) -> list[dict]:
        """Train to ``total_steps`` from ``self.step``; returns the per-step history."""
        self.model.train()
        accum = self.recipe.grad_accum
        skip = self.step * accum  # micro-batches already consumed before a resume
        acc: list[dict] = []
        for i, batch in enumerate(self.micro_batches()):
            if self.step >= self.total_steps:
                break
            if i < skip:
                continue
            loss, parts = self.loss(batch)
            if self.engine is not None:  # DeepSpeed accumulates, clips and steps by its config
                self.engine.backward(loss)
                self.engine.step()
            else:
                (loss / accum).backward()
            acc.append({"loss": float(loss.detach()), **{k: float(v) for k, v in parts.items()}})
            if len(acc) == accum:
                self._optimiser_step(acc, on_step)
                acc = []
        if acc and self.engine is None and self.step < self.total_steps:
            # the pass ended inside an accumulation window: its micro-batches make the last step
            # (ceil in the step count), their gradients averaged over what there is
            for p in self.params:
                if p.grad is not None:
                    p.grad.mul_(accum / len(acc))
            self._optimiser_step(acc, on_step)
        return self.history

    def _optimiser_step(self, acc: list[dict], on_step) -> None:
        lr = self.optimizer.param_groups[0]["lr"]  # the rate this step used (the schedule, logged)
        if self.engine is None:
            torch.nn.utils.clip_grad_norm_(self.params, 1.0)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        self.step += 1
        metrics = {k: sum(a[k] for a in acc) / len(acc) for k in acc[0]} | {"step": self.step, "lr": lr,
                                                                             "examples": len(self.examples)}
        self.history.append(metrics)
        if on_step:
            on_step(self, metrics)

    def _batch(self, chats: list[list[dict]]) -> dict:
        return to_device(collate(self.vlm, [encode(self.vlm, c) for c in chats]), self.device)


class SFTTrainer(BaseTrainer):
    """Stage 1 (and the likelihood part of every other stage): token NLL of the trajectories.

    Examples are chats: lists of {role, text, image}; only assistant turns are trained."""

    def loss(self, batch):
        return token_nll(self.model, self._batch([_chat(e) for e in batch])), {}


class RFTTrainer(SFTTrainer):
    """Stage 2: the same likelihood on kept sampled episodes plus synthetic trajectories; its
    examples come from :func:`rejection_examples`."""


class ReplayTrainer(SFTTrainer):
    """Stage 3: the same likelihood on the replay mix (see :func:`replay_examples`)."""


class DPOTrainer(BaseTrainer):
    """C2: DPO on single-turn reply pairs; the reference is the starting adapter, whose
    log-probabilities are computed once before the first update (it never changes)."""

    def __init__(self, vlm, model, recipe, examples, device="cpu"):
        super().__init__(vlm, model, recipe, examples, device)
        self.model.eval()
        with torch.no_grad():
            for i in range(0, len(examples), recipe.batch_size):
                part = examples[i : i + recipe.batch_size]
                c, r = self._pair_logps(part)
                for e, lc, lr in zip(part, c.tolist(), r.tolist()):
                    e["ref_chosen"], e["ref_rejected"] = lc, lr

    def _pair_logps(self, part):
        chats = [single_turn(e["view"], e["chosen"], self.system) for e in part] + [single_turn(e["view"], e["rejected"], self.system) for e in part]
        logp, _ = sequence_logps(self.model, self._batch(chats))
        return logp[: len(part)], logp[len(part) :]

    def loss(self, batch):
        c, r = self._pair_logps(batch)
        ref_c = torch.tensor([e["ref_chosen"] for e in batch], device=c.device)
        ref_r = torch.tensor([e["ref_rejected"] for e in batch], device=c.device)
        loss, margin = losses.dpo_loss(c, r, ref_c, ref_r, self.recipe.dpo.beta)
        return loss, {"reward_margin": margin.mean(), "pref_acc": (margin > 0).float().mean()}


class PairedViewTrainer(BaseTrainer):
    """C4: trajectory NLL + w·softplus(τ − (s(C) − s(E))) + w·(s(O) − s(C))² + w·first-action term.

    With every weight zero this is the matched-compute control: same cases, same trajectories,
    no paired-view terms. Examples are {"O", "C", "E", "trajectories", "first_action"} (see
:func:`paired_examples`).
    """

    def loss(self, batch):
        nll = token_nll(self.model, self._batch([_chat(t) for e in batch for t in e["trajectories"]]))
        p = self.recipe.paired
        if p.w_margin == 0 and p.w_invariance == 0 and p.w_first_action == 0:
            return nll, {"nll": nll.detach()}
        chats = []
        for e in batch:
            present, absent = tj.reply_texts(e["O"])  # one reply pair for all three views of the case
            for k in ("O", "C", "E"):
                chats += [single_turn(e[k], present, self.system), single_turn(e[k], absent, self.system)]
        firsts = [e for e in batch if e["first_action"] is not None]  # cases whose O makes a tool call
        for e in firsts:
            chats += [single_turn(e["O"], e["first_action"], self.system), single_turn(e["C"], e["first_action"], self.system)]
        logp, _ = sequence_logps(self.model, self._batch(chats))
        views = logp[: 6 * len(batch)].view(len(batch), 6)
        first = logp[6 * len(batch):].view(len(firsts), 2)
        s = views[:, 0::2] - views[:, 1::2]  # columns O, C, E
        terms = losses.paired_view_terms(s[:, 0], s[:, 1], s[:, 2], first[:, 0], first[:, 1], p.tau)
        total = nll + p.w_margin * terms["margin"] + p.w_invariance * terms["invariance"] + p.w_first_action * terms["first_action"]
        return total, {"nll": nll.detach(), **{k: v.detach() for k, v in terms.items()}}


TRAINERS: dict[str, type[BaseTrainer]] = {
    "sft": SFTTrainer,
    "rft": RFTTrainer,
    "replay": ReplayTrainer,
    "dpo": DPOTrainer,
    "paired_view": PairedViewTrainer,
}


def _chat(e) -> list[dict]:
    return e.messages if isinstance(e, tj.Trajectory) else e


# ---------------------------------------------------------------- examples per method

def paired_examples(views: list[dict], recipe: TrainRecipe, rank: int = 0, world: int = 1) -> list[dict]:
    """C4's cases (counterfactual paper §3.7): at most ``paired.max_cases`` triplets; per triplet one
    trajectory view (O, C or E in turn), plus a lesion-free image's trajectory every third case
    when natural negatives are allowed; the first action is O's first tool call (§3.7: "the
    agent's first tool call"), None when O's trajectory goes straight to its final action (that
    case then has no first-action term). In the run seed's order; with ``world`` > 1
    only this ``rank``'s shard of that order is built (:func:`data.shard`).

    Parameters
    ----------
    views : list of dict
        The arm's training views.
    recipe : TrainRecipe
        Reads ``seed``, ``draw_seed``, ``paired.max_cases`` and the ``trajectory`` settings.
    rank : int, optional
        This worker's rank.
    world : int, optional
        Number of workers.

    Returns
    -------
    list of dict
        Per case: its triplet ``O``, ``C``, ``E`` (views), ``trajectories`` (one or two) and
        ``first_action`` (text of O's first assistant turn when it is a tool call, else None).

    References
    ----------
    .. [1] counterfactual paper, §3.7 (C4).
    """
    out = []
    t = recipe.trajectory
    kw = dict(small_frac=t.small_frac, p_zoom=t.p_zoom, p_paraphrase=t.p_paraphrase, system=tj.PROMPTS[t.prompt],
              via_agent_loop=t.prompt == "agent")
    negatives = data.fixed_draw([v for v in views if v["kind"] == "natural_negative"], None, recipe.draw_seed)
    triplets = data.paired_triplets(views)
    if recipe.paired.max_cases is not None:  # the 3,000 cases: a fixed draw, shared by the seeds
        triplets = sorted(sorted(triplets, key=lambda t: derive_seed(recipe.draw_seed, t["O"]["case_id"], "c4"))[: recipe.paired.max_cases],
                          key=lambda t: t["O"]["case_id"])
    # case i's roles depend on i (its position among the cases), not on where it lands
    for i in data.shard(data.shuffled(list(range(len(triplets))), recipe.seed), rank, world):
        trip = triplets[i]
        k = ("O", "C", "E")[i % 3]
        trajs = [tj.build_trajectory(trip[k], recipe.seed, p_window=t.p_window, **kw)]
        if i % 3 == 2 and negatives:
            trajs.append(tj.build_trajectory(negatives[(i // 3) % len(negatives)], recipe.seed, p_window=t.p_window, **kw))
        o_traj = tj.build_trajectory(trip["O"], recipe.seed, p_window=0.0, **{**kw, "p_paraphrase": 0.0})
        first = next(m["text"] for m in o_traj.messages if m["role"] == "assistant")
        first = first if isinstance(episodes.parse_action(first), ToolCall) else None  # addition: c4_first_action
        out.append({**trip, "trajectories": trajs, "first_action": first})
    return out


def rejection_examples(views: list[dict], sampler, recipe: TrainRecipe, rank: int = 0, world: int = 1) -> tuple[list[list[dict]], dict]:
    """Stage 2: ``k`` episodes per view at the recipe's temperature; the best successful one
    is kept, repeated ``failed_repeat`` times when at most ``failed_max_right`` of k were right;
    then ``synthetic_views`` label-derived trajectories are added. Returns (chats, counts).

    With ``world`` > 1 (Ray Train workers), each worker samples every ``world``-th view from
    ``rank`` and the kept episodes are gathered from all workers (torch.distributed), so the
    sampling is split, not repeated, and every worker ends with the same list, in view order.

    Parameters
    ----------
    views : list of dict
        The views to sample on (``rft_view_sample``).
    sampler : callable
        ``sampler(view, temperature, seed)`` -> Episode with a scored outcome.
    recipe : TrainRecipe
        Reads ``seed`` and the ``rft`` settings.
    rank : int, optional
        This worker's rank.
    world : int, optional
        Number of workers.

    Returns
    -------
    chats : list of list of dict
        The kept episodes' messages, repeats included, in view order.
    counts : dict
        ``sampled_views``, ``kept``, ``failed_repeated`` and ``none_right``, summed over workers.
    """
    rft = recipe.rft
    mine: dict[int, list] = {}
    counts = {"sampled_views": 0, "kept": 0, "failed_repeated": 0, "none_right": 0}
    for i in range(rank, len(views), world):
        v = views[i]
        counts["sampled_views"] += 1
        eps = [sampler(v, rft.temperature, derive_seed(recipe.seed, v["view_id"], j)) for j in range(rft.k)]
        right = [e for e in eps if e.outcome.right]
        if not right:
            counts["none_right"] += 1
            continue
        best = max(right, key=lambda e: e.outcome.reward)
        reps = rft.failed_repeat if len(right) <= rft.failed_max_right else 1
        counts["kept"] += 1
        counts["failed_repeated"] += int(reps > 1)
        mine[i] = [best.messages] * reps
    if world > 1:
        parts = all_gather((mine, counts))
        mine = {i: m for part, _ in parts for i, m in part.items()}
        counts = {k: sum(c[k] for _, c in parts) for k in counts}
    return [m for i in sorted(mine) for m in mine[i]], counts


def rft_examples(kept: list, synth_plan: list, recipe: TrainRecipe, rank: int = 0, world: int = 1) -> list:
    """Stage 2's examples: the kept episodes (every worker has all of them, gathered) and the
    synthetic trajectories of ``synth_plan`` (:func:`data.sft_plan`), in the run seed's order;
    only this worker's shard is built, so no worker builds the other workers' trajectories.

    Parameters
    ----------
    kept : list of list of dict
        The kept episodes' chats (``rejection_examples``).
    synth_plan : list of tuple of (dict, int)
        (view, copy index) of the synthetic trajectories.
    recipe : TrainRecipe
        Reads ``seed`` and the ``trajectory`` settings.
    rank : int, optional
        This worker's rank.
    world : int, optional
        Number of workers.

    Returns
    -------
    list of list of dict
        This worker's chats.
    """
    n = len(kept) + len(synth_plan)
    out = []
    for i in data.shard(data.shuffled(list(range(n)), recipe.seed), rank, world):
        out.append(kept[i] if i < len(kept) else data.sft_build(synth_plan[i - len(kept)], recipe).messages)
    return out


def all_gather(obj) -> list:
    """``obj`` from every worker of the torch.distributed group (Ray Train sets it up), in rank
    order; ``[obj]`` when there is no group.

    Parameters
    ----------
    obj : object
        Any picklable object.

    Returns
    -------
    list
        One per worker, in rank order.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return [obj]
    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def rft_view_sample(views: list[dict], recipe: TrainRecipe) -> list[dict]:
    """The views stage 2 samples on: ``views_per_kind`` per kind, plus the extra lesion-free
    and erased views of ``extra_per_kind``; drawn by the draw seed.

    Parameters
    ----------
    views : list of dict
        The arm's training views.
    recipe : TrainRecipe
        Reads ``draw_seed`` and ``rft.views_per_kind`` / ``rft.extra_per_kind``.

    Returns
    -------
    list of dict
        Views grouped by kind, kinds in name order.
    """
    out = []
    for kind in sorted({v["kind"] for v in views}):
        pool = data.fixed_draw([v for v in views if v["kind"] == kind], None, recipe.draw_seed + 1)
        out += pool[: recipe.rft.views_per_kind + recipe.rft.extra_per_kind.get(kind, 0)]
    return out


def replay_examples(mix: list[dict], recipe: TrainRecipe, positions=None) -> list[list[dict]]:
    """Chats for the stage-3 mix (those at ``positions`` only, when given: a worker's shard); a
    VQA item is one question and its short answer. A view's trajectory is seeded by its position
    in the whole mix, so a shard's chats are the one-worker build's chats at those positions.

    Parameters
    ----------
    mix : list of dict
        ``replay.replay_mix``'s entries, {"view": row} or {"vqa": row}.
    recipe : TrainRecipe
        Reads ``seed`` and the ``trajectory`` settings.
    positions : iterable of int, optional
        Positions in ``mix`` to build; default all.

    Returns
    -------
    list of list of dict
        One chat per position, in the order given.
    """
    from medscope.answers.actions import FinalAction, format_final

    out = []
    t = recipe.trajectory
    for i in range(len(mix)) if positions is None else positions:
        m = mix[i]
        if "view" in m:
            out.append(tj.build_trajectory(m["view"], derive_seed(recipe.seed, i), small_frac=t.small_frac, p_zoom=t.p_zoom,
                                           p_window=t.p_window, p_paraphrase=t.p_paraphrase, system=tj.PROMPTS[t.prompt], via_agent_loop=t.prompt == "agent").messages)
        else:
            r = m["vqa"]
            final = format_final(FinalAction("answer", answer=str(r["answer"]), confidence=0.9))
            out.append(single_turn({"image": r["image"], "question": r["question"]}, final, tj.PROMPTS[t.prompt]))
    return out
