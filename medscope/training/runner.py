"""From a recipe and a views table to a ready trainer: base model, adapter, examples.

This is the whole training run minus distribution; ``pipelines/train.py`` calls it inside each
Ray Train worker (rank / world shard the examples) and adds checkpoints and storage.
"""

from __future__ import annotations

from medscope.io import records
from medscope.errors import MedScopeError
from medscope.training import data, replay, trainers
from medscope.training.episodes import sampler_for
from medscope.training.recipes import TrainRecipe
from medscope.training.vlm import apply_lora, build_base, load_adapter


def build_model(recipe: TrainRecipe):
    """(vlm, peft model): a fresh LoRA (init seeded by the run seed) or the starting adapter.

    Parameters
    ----------
    recipe : TrainRecipe
        Reads ``base``, ``init_adapter``, ``lora`` and ``seed``.

    Returns
    -------
    vlm : VLM
        The base model and processor.
    model : peft.PeftModel
        The trainable adapted model.

    Raises
    ------
    MedScopeError
        When the base cannot be built or the starting adapter is missing.
    """
    vlm = build_base(recipe.base, seed=0)  # the base is the same for every seed; only LoRA init varies
    if recipe.init_adapter:
        model = load_adapter(vlm.model, init_adapter_uri(recipe), trainable=True)
    else:
        model = apply_lora(vlm.model, recipe.lora, recipe.seed)
    return vlm, model


def init_adapter_uri(recipe: TrainRecipe) -> str | None:
    """The adapter this run continues: ``init_adapter`` with ``{seed}`` filled in.

    Parameters
    ----------
    recipe : TrainRecipe
        Reads ``init_adapter`` and ``seed``.

    Returns
    -------
    str or None
        None when the recipe starts a fresh adapter.
    """
    return recipe.init_adapter.replace("{seed}", str(recipe.seed)) if recipe.init_adapter else None


def build_examples(recipe: TrainRecipe, views_table, vlm=None, model=None, rank: int = 0, world: int = 1,
                   replay_excluded: set[str] | None = None) -> tuple[list, dict]:
    """This worker's examples of the method (its shard when ``world`` > 1) and counts
    describing them. Every method builds only its own shard: the choice of what to train on
    (draws, pairs, triplets, the replay mix) is made from the tables' fields alone, the same in
    every worker, and only this worker's positions of it become examples, so the workers' shards
    together are the one-worker examples in the same order (:func:`data.shard`). Stage 2 splits
    its sampling and gathers the kept episodes (:func:`trainers.rejection_examples`).

    ``replay_excluded``: the question ids stage 3 leaves out as near-copies of evaluation images,
    when the driver has already found them (:func:`replay_pools`); otherwise they are found here.

    Parameters
    ----------
    recipe : TrainRecipe
        The run's recipe; ``method`` decides the examples.
    views_table : pyarrow.Table
        The training views table.
    vlm : VLM, optional
        The base bundle (stage 2's sampler).
    model : torch.nn.Module, optional
        The model to sample from (required for 'rft').
    rank : int, optional
        This worker's rank.
    world : int, optional
        Number of workers.
    replay_excluded : set of str, optional
        Question ids already found to be near-copies (stage 3).

    Returns
    -------
    examples : list
        This worker's examples: trajectories (sft), pairs (dpo), triplets (paired_view), trajectories
        or episodes (rft), or replay examples.
    info : dict
        ``views_allowed``, ``examples`` and the method's counts.

    Raises
    ------
    MedScopeError
        When no view is allowed, stage 2 has no model, a draw or mix fails, or there are no examples.
    """
    views = data.training_views(views_table, recipe.allowed_kinds)
    info: dict = {"views_allowed": len(views)}
    if recipe.method == "sft":
        ex = data.sft_trajectories(views, recipe, rank, world)
    elif recipe.method == "dpo":
        eligible = data.shuffled(data.dpo_pair_views(data.fixed_draw(views, recipe.n_views, recipe.draw_seed)), recipe.seed)
        info["pairs"] = len(eligible)
        ex = data.dpo_pairs(data.shard(eligible, rank, world))
    elif recipe.method == "paired_view":
        ex = trainers.paired_examples(views, recipe, rank, world)
    elif recipe.method == "rft":
        if model is None:
            raise MedScopeError("stage 2 needs the stage-1 model to sample from")
        sampler = sampler_for(vlm, model, recipe.trajectory.prompt, recipe.rft.max_turns, recipe.rft.max_new_tokens)
        model.eval()
        kept, counts = trainers.rejection_examples(trainers.rft_view_sample(views, recipe), sampler, recipe, rank, world)
        # "synthetic views": label-derived trajectories of a further draw of training views
        synth = data.sft_plan(views, recipe.model_copy(update={"n_views": recipe.rft.synthetic_views, "draw_seed": recipe.draw_seed + 2}))
        ex = trainers.rft_examples(kept, synth, recipe, rank, world)
        info.update(counts, synthetic=len(synth))
    elif recipe.method == "replay":
        mix, counts = replay_plan(recipe, views, replay_excluded)
        ex = trainers.replay_examples(mix, recipe, data.shard(list(range(len(mix))), rank, world))
        info.update(counts, mix=len(mix))
    else:  # pragma: no cover - the recipe's Literal forbids it
        raise MedScopeError(f"unknown method {recipe.method}")
    if not ex:
        raise MedScopeError(f"{recipe.method}: no training examples from the allowed views")
    info["examples"] = len(ex)  # this worker's
    return ex, info


def read_question_sets(recipe: TrainRecipe) -> dict[str, list[dict]]:
    """Each replay question set's rows (its vqa_items table), by name.

    Parameters
    ----------
    recipe : TrainRecipe
        Reads ``replay.question_sets``.

    Returns
    -------
    dict of str to list of dict
        Set name -> its ``vqa_items`` rows (every split).
    """
    return {name: records.read_table("vqa_items", qs.items).to_pylist() for name, qs in recipe.replay.question_sets.items()}


def replay_pools(recipe: TrainRecipe, question_sets: dict[str, list[dict]] | None = None) -> tuple[dict[str, list[dict]], list[dict]]:
    """Stage 3's usable training questions per set and a rejects row for each question left out
    as a near-copy of an evaluation image (every table in ``replay.eval_views`` and the sets'
    own test splits), at the crosswalk's thresholds (§4.1).

    Parameters
    ----------
    recipe : TrainRecipe
        Reads ``replay.question_sets`` and ``replay.eval_views``.
    question_sets : dict of str to list of dict, optional
        The sets' rows when already read.

    Returns
    -------
    pools : dict of str to list of dict
        Set name -> its training questions without near-copies.
    rejects : list of dict
        One rejects row per question left out.

    References
    ----------
    .. [1] counterfactual paper, §4.1.
    """
    sets = read_question_sets(recipe) if question_sets is None else question_sets
    views = {name: records.read_table("views", uri, columns=["view_id", "split", "image"]).to_pylist()
             for name, uri in recipe.replay.eval_views.items()}
    return replay.exclude_near_copies(sets, replay.evaluation_images(views, sets))


def replay_plan(recipe: TrainRecipe, views: list[dict], excluded: set[str] | None = None) -> tuple[list[dict], dict]:
    """The stage-3 mix (counterfactual paper §3.5) and its counts: ``vqa_share`` of ``n_items`` drawn from the
    question sets' training questions by their shares, near-copies of evaluation images left out;
    the rest MedScope views, "absent" targets at least ``absent_share_min`` of the mix.

    Parameters
    ----------
    recipe : TrainRecipe
        Reads the ``replay`` settings, ``seed`` and ``draw_seed``.
    views : list of dict
        The MedScope training views.
    excluded : set of str, optional
        Question ids already found to be near-copies; otherwise found here.

    Returns
    -------
    mix : list of dict
        ``replay.replay_mix``'s entries.
    counts : dict
        ``replay.mix_counts`` plus ``vqa_near_copies_excluded``.

    Raises
    ------
    MedScopeError
        When the question sets or views cannot fill the mix.

    References
    ----------
    .. [1] counterfactual paper, §3.5.
    """
    rp = recipe.replay
    pools: dict[str, list[dict]] = {}
    n_excluded = 0
    if rp.question_sets and rp.vqa_share > 0:
        if excluded is None:
            pools, rejects = replay_pools(recipe)
            n_excluded = len(rejects)
        else:
            pools = {name: [r for r in rows if r["split"] == "train" and r["item_id"] not in excluded]
                     for name, rows in read_question_sets(recipe).items()}
            n_excluded = len(excluded)
    n_vqa = round(rp.vqa_share * rp.n_items)
    shares = {name: qs.share for name, qs in rp.question_sets.items()}
    vqa = replay.draw_vqa(pools, n_vqa, shares, recipe.draw_seed) if n_vqa else []
    mix = replay.replay_mix(views, vqa, rp.n_items, rp.absent_share_min, recipe.seed, recipe.draw_seed)
    return mix, {**replay.mix_counts(mix), "vqa_near_copies_excluded": n_excluded}


def make_worker_trainer(recipe: TrainRecipe, views_table, rank: int = 0, world: int = 1, device="cpu",
                        replay_excluded: set[str] | None = None):
    """(trainer, info) as each Ray Train worker trains (``pipelines/train.py``), without Ray: for a
    ZeRO recipe the model and AdamW are wrapped in a DeepSpeed engine, which runs forward,
    backward and step (ZeRO shards optimiser state; at stage 3 parameters too) while the
    trainer's LambdaLR keeps driving the wrapped AdamW's lr. ``cluster/gpu-check.sh`` calls
    this directly on one GPU (docs/cluster.md, GPU runbook).

    Parameters
    ----------
    recipe : TrainRecipe
        The run's recipe.
    views_table : pyarrow.Table
        The training views table.
    rank : int, optional
        This worker's rank.
    world : int, optional
        Number of workers.
    device : str or torch.device, optional
        Where the model goes.
    replay_excluded : set of str, optional
        Question ids already found to be near-copies (stage 3).

    Returns
    -------
    trainer : BaseTrainer
        The method's trainer; with DeepSpeed its ``engine`` and ``model`` are the engine.
    info : dict
        As ``build_examples``.
    """
    trainer, info = make_trainer(recipe, views_table, rank, world, device, replay_excluded)
    if recipe.deepspeed is not None:
        import deepspeed

        from medscope.training.recipes import deepspeed_config

        trainer.engine, trainer.optimizer, _, _ = deepspeed.initialize(
            model=trainer.model, optimizer=trainer.optimizer,
            config=deepspeed_config(recipe.deepspeed, recipe.batch_size, recipe.grad_accum))
        trainer.model = trainer.engine
    return trainer, info


def make_trainer(recipe: TrainRecipe, views_table, rank: int = 0, world: int = 1, device="cpu",
                 replay_excluded: set[str] | None = None):
    """(trainer, info) for this worker, on its shard of the examples.

    Parameters
    ----------
    recipe : TrainRecipe
        The run's recipe.
    views_table : pyarrow.Table
        The training views table.
    rank : int, optional
        This worker's rank.
    world : int, optional
        Number of workers.
    device : str or torch.device, optional
        Where the model goes.
    replay_excluded : set of str, optional
        Question ids already found to be near-copies (stage 3).

    Returns
    -------
    trainer : BaseTrainer
        ``trainers.TRAINERS[recipe.method]`` over this worker's examples.
    info : dict
        As ``build_examples``.
    """
    vlm, model = build_model(recipe)
    model.to(device)
    examples, info = build_examples(recipe, views_table, vlm, model, rank, world, replay_excluded)
    trainer = trainers.TRAINERS[recipe.method](vlm, model, recipe, examples, device=device)
    return trainer, info
