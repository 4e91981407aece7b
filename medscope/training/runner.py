"""From a recipe and a views table to a ready trainer: base model, adapter, examples.

This is the whole training run minus distribution; ``pipelines/train.py`` calls it inside each
Ray Train worker (rank / world shard the examples) and adds checkpoints and storage.
"""

from __future__ import annotations



from medscope import records, storage
from medscope.errors import MedScopeError
from medscope.training import data, trainers
from medscope.training.episodes import sampler_for
from medscope.training.recipes import TrainRecipe
from medscope.training.vlm import apply_lora, build_base, load_adapter


def build_model(recipe: TrainRecipe):
    """(vlm, peft model): a fresh LoRA (init seeded by the run seed) or the starting adapter."""
    vlm = build_base(recipe.base, seed=0)  # the base is the same for every seed; only LoRA init varies
    if recipe.init_adapter:
        model = load_adapter(vlm.model, init_adapter_uri(recipe), trainable=True)
    else:
        model = apply_lora(vlm.model, recipe.lora, recipe.seed)
    return vlm, model


def init_adapter_uri(recipe: TrainRecipe) -> str | None:
    """The adapter this run continues: ``init_adapter`` with ``{seed}`` filled in."""
    return recipe.init_adapter.replace("{seed}", str(recipe.seed)) if recipe.init_adapter else None


def build_examples(recipe: TrainRecipe, views_table, vlm=None, model=None, rank: int = 0, world: int = 1) -> tuple[list, dict]:
    """This worker's examples of the method (its shard when ``world`` > 1) and counts
    describing them. Stage 1 builds only its own shard; the other methods build all and cut."""
    views = data.training_views(views_table, recipe.allowed_kinds)
    info: dict = {"views_allowed": len(views)}
    if recipe.method == "sft":
        ex = data.sft_trajectories(views, recipe, rank, world)
    elif recipe.method == "dpo":
        ex = data.shuffled(data.dpo_pairs(data.fixed_draw(views, recipe.n_views, recipe.draw_seed)), recipe.seed)
    elif recipe.method == "paired_view":
        ex = trainers.paired_examples(views, recipe)
    elif recipe.method == "rft":
        if model is None:
            raise MedScopeError("stage 2 needs the stage-1 model to sample from")
        sampler = sampler_for(vlm, model, recipe.trajectory.prompt, recipe.rft.max_turns, recipe.rft.max_new_tokens)
        model.eval()
        kept, counts = trainers.rejection_examples(trainers.rft_view_sample(views, recipe), sampler, recipe, rank, world)
        # "synthetic views": label-derived trajectories of a further draw of training views
        synth = data.sft_trajectories(views, recipe.model_copy(update={"n_views": recipe.rft.synthetic_views, "draw_seed": recipe.draw_seed + 2}))
        ex = data.shuffled(kept + [t.messages for t in synth], recipe.seed)
        info.update(counts, synthetic=len(synth))
    elif recipe.method == "replay":
        rp = recipe.replay
        vqa, rejects = [], []
        if rp.vqa_table:
            eval_images = []
            if rp.eval_views:
                eval_images = [r for r in records.read_table("views", rp.eval_views, columns=["image"]).column("image").to_pylist() if r]
            vqa, rejects = data.vqa_items(read_parquet(rp.vqa_table), eval_images, rp, recipe.seed)
        mix = data.replay_mix(views, vqa, rp, recipe.seed)
        ex = trainers.replay_examples(mix, recipe)
        info.update(vqa_used=sum("vqa" in m for m in mix), vqa_near_copies_excluded=len(rejects), absent_share=round(data.absent_share(mix), 4))
    else:  # pragma: no cover - the recipe's Literal forbids it
        raise MedScopeError(f"unknown method {recipe.method}")
    if not ex:
        raise MedScopeError(f"{recipe.method}: no training examples from the allowed views")
    if recipe.method != "sft":
        ex = data.shard(ex, rank, world)
    info["examples"] = len(ex)  # this worker's
    return ex, info


def read_parquet(uri: str):
    if storage.is_dir(uri):
        import pyarrow as pa

        from medscope import parts

        return pa.concat_tables([records.read_parquet(f) for f in parts.visible_files(uri)])
    return records.read_parquet(uri)


def make_trainer(recipe: TrainRecipe, views_table, rank: int = 0, world: int = 1, device="cpu"):
    """(trainer, info) for this worker, on its shard of the examples."""
    vlm, model = build_model(recipe)
    model.to(device)
    examples, info = build_examples(recipe, views_table, vlm, model, rank, world)
    trainer = trainers.TRAINERS[recipe.method](vlm, model, recipe, examples, device=device)
    return trainer, info
