"""Training library on CPU with the tiny Qwen2-VL: trajectories, draws, LoRA, losses, trainers,
selection (counterfactual paper §3.5-§3.7). Expected values are worked out by hand from the definitions."""

from __future__ import annotations

import glob
import math

import numpy as np
import pyarrow as pa
import pytest
import torch
import yaml

from medscope import images
from medscope.io import records
from medscope.answers.actions import FinalAction, ToolCall
from medscope.errors import MedScopeError
from medscope.training import data, losses, selection, trainers
from medscope.training.synthetic_views import synthetic_views
from medscope.training import trajectories as tj
from medscope.training.episodes import parse_action, view_reward
from medscope.training.recipes import RECIPE_KINDS, DeepSpeedSettings, LoraSettings, TrainRecipe, deepspeed_config, load_recipe
from medscope.training.vlm import apply_lora, build_base, collate, encode, sequence_logps, token_nll


def parse(text):
    """The evaluation parser once merged; until then the strict tag + JSON reader."""
    try:
        from medscope.answers.parser import parse_reply  # type: ignore
    except ImportError:
        return parse_action(text)
    reply = parse_reply(text)
    return reply.final if reply.kind == "final" else reply.tool


@pytest.fixture(scope="module")
def views():
    return synthetic_views(9, seed=3)


@pytest.fixture(scope="module")
def many_views():
    return synthetic_views(60, seed=5, size=48)


def small_recipe(**kw) -> TrainRecipe:
    base = dict(name="t", n_views=None, batch_size=2, allowed_kinds=list(RECIPE_KINDS), lr=1e-2, warmup_frac=0.0, trajectory={"prompt": "short"},
                lora={"r": 8, "alpha": 16, "dropout": 0.0})
    return TrainRecipe.model_validate({**base, **kw})


# ---------------------------------------------------------------- trajectories

def test_trajectories_parse_back_to_the_expected_action(views):
    for v in views:
        traj = tj.build_trajectory(v, seed=0)
        assistant = [m["text"] for m in traj.messages if m["role"] == "assistant"]
        *tools, final = assistant
        assert [parse(t) for t in tools] == traj.tools
        got = parse(final)
        assert isinstance(got, FinalAction)
        if v["expected"] == "clarify":
            assert got.action == "clarify"
            continue
        x1, y1, x2, y2 = v["lesion_bbox"] or (0, 0, 0, 0)
        want_box = tuple(round(c * 1000 / 64) for c in (x1, y1, x2, y2))
        if v["expected"] == "present":
            assert (got.answer, got.box) == ("Yes", want_box)
        else:
            assert (got.answer, got.box) == ("No", None)
        # the label-derived answer earns the full reward under Table 2 (+0.5 box bonus on O / R)
        bonus = 0.5 if v["kind"] in ("original", "random_removal", "unmatched_control", "insertion") else 0.0
        assert view_reward(v, got, len(tools)).reward == pytest.approx(1.0 + bonus - 0.05 * max(0, len(tools) - 1))


def test_stage2_success_is_the_views_expected_action(views):
    """§3.5's "successful" episode read as §3.2's expected action: on a degraded view only a clarify is
    one (Table 2 still pays a correct answer there +0.25: rewarded, not successful)."""
    degraded = next(v for v in views if v["kind"] == "degraded")
    original = next(v for v in views if v["kind"] == "original")
    clarify = view_reward(degraded, FinalAction("clarify", question="a sharper image?"), 0)
    assert clarify.right and clarify.reward == pytest.approx(0.5)
    truth = tj.expected_final("present" if clarify.present else "absent", degraded["question_kind"],
                              degraded.get("finding", "lesion"), None)  # the label's answer, without a box
    answered = view_reward(degraded, truth, 0)
    assert answered.correct and answered.reward == pytest.approx(0.25) and not answered.right
    assert view_reward(original, FinalAction("answer", answer="Yes"), 0).right
    assert not view_reward(original, FinalAction("clarify", question="?"), 0).right


def test_c4_first_action_is_os_first_tool_call_or_none(views):
    ex = trainers.paired_examples(views, small_recipe())
    for e in ex:
        o = tj.build_trajectory(e["O"], small_recipe().seed, p_window=0.0, p_paraphrase=0.0,
                                small_frac=small_recipe().trajectory.small_frac,
                                p_zoom=small_recipe().trajectory.p_zoom, system=tj.PROMPTS[small_recipe().trajectory.prompt],
                                via_agent_loop=small_recipe().trajectory.prompt == "agent")
        if o.tools:
            assert isinstance(parse_action(e["first_action"]), ToolCall)
        else:
            assert e["first_action"] is None


def test_c4_first_action_term_over_the_cases_with_a_tool_call():
    s = torch.tensor([1.0, 0.5])
    none = losses.paired_view_terms(s, s, s, torch.empty(0), torch.empty(0), tau=2.0)
    assert none["first_action"].item() == 0.0
    one = losses.paired_view_terms(s, s, s, torch.tensor([-3.0]), torch.tensor([-1.0]), tau=2.0)
    assert one["first_action"].item() == pytest.approx(4.0)  # (−1 − (−3))², over the one case that has it


def test_answer_conventions_for_health_and_open_questions():
    assert tj.expected_final("present", "health", "mass", (1, 2, 3, 4)).answer == "No"
    assert tj.expected_final("absent", "health", "mass", None).answer == "Yes"
    assert tj.expected_final("absent", "open", "mass", None).answer == "No abnormality"
    assert tj.expected_final("present", "open", "mass", (1, 2, 3, 4)).answer == "Mass"


def test_small_lesions_are_always_zoomed_inside_a_box_that_holds_the_lesion(many_views):
    small = [v for v in many_views if v["lesion_bbox"] and v["lesion_area_frac"] < 0.02 and v["expected"] != "clarify"]
    assert len(small) > 10
    for v in small:
        traj = tj.build_trajectory(v, seed=1, p_zoom=0.0, p_window=0.0)
        zooms = [t for t in traj.tools if t.name == "zoom"]
        assert len(zooms) == 1
        lx1, ly1, lx2, ly2 = tj.box_to_1000(v["lesion_bbox"], v["width"], v["height"])
        zx1, zy1, zx2, zy2 = zooms[0].box
        assert zx1 <= lx1 and zy1 <= ly1 and zx2 >= lx2 and zy2 >= ly2 and 0 <= zx1 and zx2 <= 1000


def test_windowing_share_and_only_on_grayscale(many_views):
    usable = [v for v in many_views if v["expected"] != "clarify"]
    rate = np.mean([any(t.name == "window" for t in tj.build_trajectory(v, seed=2).tools) for v in usable])
    assert 0.2 < rate < 0.4  # 30% of grey-scale images, binomial with n ~ 300
    rgb = dict(usable[0], image=images.encode_png(np.dstack([np.full((32, 32), c, np.uint8) for c in (10, 80, 200)])))
    assert not any(t.name == "window" for t in tj.build_trajectory(rgb, seed=2, p_window=1.0).tools)


def test_paraphrases_half_of_questions_and_held_out_wordings_never_train(many_views):
    from medscope.seeding import rng_for

    picks = [tj.paraphrase("Is there a nodule?", "nodule", "presence", rng_for(s, i), 0.5)[1] for i in range(1000) for s in range(2)]
    share = np.mean([p is not None for p in picks])
    assert 0.46 < share < 0.54  # binomial(2000, 0.5): sd 0.011
    assert {p for p in picks if p is not None} == {0, 1, 2, 3}
    from medscope.protocols.counterfactual.prompts import load_templates

    health = load_templates().paraphrases["health"]
    q, i = tj.paraphrase("Is the liver healthy?", "mass", "health", rng_for(0, 0), 1.0)
    assert q == health.train[i] and q not in health.test
    trajs = [tj.build_trajectory(v, seed=s, p_zoom=0.0, p_window=0.0) for v in many_views[:60] for s in range(2)]
    held = {p.format(finding="nodule") for p in tj.HELD_OUT_PARAPHRASES}
    train = {p.format(finding="nodule") for p in tj.TRAIN_PARAPHRASES}
    asked = {t.question for t in trajs}
    assert not asked & held and train <= asked
    assert len(tj.TRAIN_PARAPHRASES) == 4 and len(tj.HELD_OUT_PARAPHRASES) == 3
    assert tj.held_out_question("nodule", 1) == tj.HELD_OUT_PARAPHRASES[1].format(finding="nodule")


def test_trajectories_are_deterministic_per_seed_and_vary_across_seeds(many_views):
    def texts(seed):
        out = []
        for v in many_views[:30]:
            t = tj.build_trajectory(v, seed=seed)
            out.append([m["text"] for m in t.messages])
        return out

    a = texts(0)
    assert a == texts(0) and a != texts(1)


# ---------------------------------------------------------------- draws and mixes

def test_fixed_draw_is_shared_by_seeds_and_small_lesions_repeat_twice(many_views):
    r0, r1 = small_recipe(n_views=40, seed=0), small_recipe(n_views=40, seed=1)
    t0, t1 = data.sft_trajectories(many_views, r0), data.sft_trajectories(many_views, r1)
    assert sorted(t.view_id for t in t0) == sorted(t.view_id for t in t1)  # same draw
    assert [t.view_id for t in t0] != [t.view_id for t in t1]  # different order
    drawn = data.fixed_draw(many_views, 40, 0)
    n_small = sum(1 for v in drawn if v["lesion_bbox"] and v["lesion_area_frac"] < 0.02)
    assert len(t0) == 40 + n_small and n_small > 0


def test_workers_build_only_their_own_shard_of_stage_1(many_views):
    recipe = small_recipe(n_views=10, seed=4)
    full = data.sft_trajectories(many_views, recipe)

    def key(t):
        return (t.view_id, tuple(m["text"] for m in t.messages))

    shards = [data.sft_trajectories(many_views, recipe, rank, 3) for rank in range(3)]
    usable = len(full) // 3 * 3
    assert len(full) > usable  # a remainder is dropped, so shards stay equal (DDP lock step)
    for rank, part in enumerate(shards):
        assert len(part) == usable // 3
        assert [key(t) for t in part] == [key(t) for t in full[:usable][rank::3]]
    assert sorted(key(t) for p in shards for t in p) == sorted(key(t) for t in full[:usable])


def test_absent_share_matching_reaches_the_reference_share_at_the_same_draw_size(many_views):
    without = data.fixed_draw([v for v in many_views if v["kind"] in ("original", "degraded", "natural_negative")], 40, 0)
    target = data.absent_fraction(data.fixed_draw([v for v in many_views if v["kind"] != "unmatched_control"], 40, 0))
    assert data.absent_fraction(without) < target
    matched = data.match_absent_share(without, target)
    assert len(matched) == len(without) and data.absent_fraction(matched) >= target
    # the fewest replacements: one fewer would miss the share
    k = sum(a is not b for a, b in zip(without, matched))
    assert (sum(v["expected"] == "absent" for v in without) + k - 1) / len(without) < target
    assert {v["kind"] for a, v in zip(without, matched) if a is not v} == {"natural_negative"}


@pytest.mark.slow
def test_ablation_arms_are_step_matched_in_the_trainers_own_logs(tiny, many_views):
    """§4.2: every stage-1 arm has the same optimiser steps and learning-rate schedule and draws
    the same number of views from its own kinds; read back from each trainer's step log."""
    import copy

    from pipelines.sweep import arm_overrides, load_arms

    arms = load_arms("configs/arms/counterfactual.yaml")
    table = records.to_table("views", many_views)
    recipe = small_recipe(n_views=8, batch_size=2, lr=1e-3, warmup_frac=0.5)
    logs, draws = {}, {}
    for arm in arms.arms:
        r = TrainRecipe.model_validate({**recipe.model_dump(), **arm_overrides(arm, arms, table, recipe)})
        views = data.training_views(table, r.allowed_kinds)
        draws[arm.name] = data.fixed_draw(views, r.n_views, r.draw_seed)
        examples = data.sft_trajectories(views, r)
        model = apply_lora(copy.deepcopy(tiny.model), LoraSettings(r=2, alpha=4, dropout=0.0), seed=0)
        logs[arm.name] = trainers.SFTTrainer(tiny, model, r, examples).fit()
    ref = logs["with_cf"]
    # the reference arm trains one pass: ceil(its examples / batch) steps, from its own log
    assert len(ref) == math.ceil(ref[0]["examples"] / 2) >= 4
    for name, log in logs.items():
        assert [h["step"] for h in log] == list(range(1, len(ref) + 1)), name
        assert [h["lr"] for h in log] == pytest.approx([h["lr"] for h in ref]), name
        assert len(draws[name]) == 8, name
    # the arms without counterfactual views have fewer examples (fewer small-lesion repeats), so
    # they pass over their examples more than once to make the same steps
    assert logs["without_cf"][0]["examples"] < ref[0]["examples"]
    lrs = [h["lr"] for h in ref]
    assert lrs[0] < lrs[1] and lrs[-1] < max(lrs)  # warm-up, then decay


def test_dpo_pairs_follow_the_c2_polarities(views):
    pairs = data.dpo_pairs([v for v in views if v["kind"] in ("original", "target_removal", "natural_negative")])
    by_kind = {}
    for p in pairs:
        by_kind.setdefault(p["view"]["kind"], []).append(p)
    assert set(by_kind) == {"target_removal", "original", "natural_negative"}
    for kind, ps in by_kind.items():
        for p in ps:
            chosen = parse(p["chosen"])
            want = "Yes" if kind == "original" else "No"
            assert chosen.answer == want and parse(p["rejected"]).answer != want
    erased = by_kind["target_removal"][0]
    assert parse(erased["rejected"]).box is not None  # the finding with its former box


def test_c3_pairs_include_insertions_as_lesions(views):
    inserted = [v for v in views if v["kind"] == "insertion"]
    assert inserted
    pairs = data.dpo_pairs(inserted)
    assert len(pairs) == len(inserted)
    for p in pairs:
        chosen, rejected = parse(p["chosen"]), parse(p["rejected"])
        assert (chosen.answer, rejected.answer) == ("Yes", "No") and chosen.box is not None


def _vqa_items(n_each: int, eval_png: bytes) -> pa.Table:
    """A vqa_items table (train split) whose last question sits on an evaluation image."""
    rng = np.random.default_rng(0)
    rows = []

    def add(img, q, a):
        rows.append({"item_id": f"q{len(rows)}", "source": "vqa-rad", "split": "train", "image_file": f"f{len(rows)}.png",
                     "image": img, "question": q, "answer": a, "answer_type": "closed", "private": False})

    for i in range(n_each):
        img = images.encode_png(rng.integers(0, 255, (32, 32), dtype=np.uint8))
        add(img, "Is the liver healthy?", "Yes")
        add(img, "Is there a fracture?", "yes")
    for i in range(2):
        add(images.encode_png(rng.integers(0, 255, (32, 32), dtype=np.uint8)), "Is the lung healthy?", "No")
    add(eval_png, "Is there a mass?", "No")
    return records.to_table("vqa_items", rows)


# ---------------------------------------------------------------- model, LoRA, losses

@pytest.fixture(scope="module")
def tiny():
    return build_base("tiny", seed=0)


def test_lora_adapter_has_the_configured_rank_alpha_dropout_and_spares_the_vision_tower(tiny):
    import copy

    model = apply_lora(copy.deepcopy(tiny.model), LoraSettings(), seed=0)
    cfg = model.peft_config["default"]
    assert (cfg.r, cfg.lora_alpha, cfg.lora_dropout) == (16, 32, 0.05)
    lora_modules = [n for n, m in model.named_modules() if hasattr(m, "lora_A") and "default" in m.lora_A]
    assert lora_modules and not [n for n in lora_modules if "visual" in n]
    for suffix in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
        assert sum(n.endswith(suffix) for n in lora_modules) == tiny.model.config.text_config.num_hidden_layers
    layer = model.get_submodule(lora_modules[0])
    assert layer.lora_A["default"].weight.shape[0] == 16 and layer.scaling["default"] == pytest.approx(32 / 16)
    assert layer.lora_dropout["default"].p == 0.05
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n and "visual" not in n for n in trainable)


def test_labels_cover_only_assistant_turns(tiny, views):
    traj = tj.build_trajectory(views[1], seed=0, system=tj.SHORT_PROMPT)
    enc = encode(tiny, traj.messages)
    trained = tiny.tokenizer.decode([t for t in enc["labels"].tolist() if t != -100])
    want = "".join(m["text"] + "<|im_end|>" for m in traj.messages if m["role"] == "assistant")
    assert trained == want


@pytest.mark.slow
def test_sft_loss_falls_on_a_fixed_batch(tiny, views):
    import copy

    recipe = small_recipe(max_steps=6)
    traj = [tj.build_trajectory(v, seed=0, system=tj.SHORT_PROMPT) for v in views[:2]]
    model = apply_lora(copy.deepcopy(tiny.model), recipe.lora, seed=0)
    tr = trainers.SFTTrainer(tiny, model, recipe, traj * 6)
    hist = tr.fit()
    assert len(hist) == 6 and tr.step == 6
    losses_ = [h["loss"] for h in hist]
    assert all(b < a for a, b in zip(losses_, losses_[1:]))  # every step on the same batch lowers it
    assert losses_[-1] < losses_[0] - 0.15


def test_c4_terms_match_hand_computation():
    s_o, s_c, s_e = torch.tensor([1.0, 0.5]), torch.tensor([0.0, 2.0]), torch.tensor([-1.0, 1.5])
    f_o, f_c = torch.tensor([-3.0, -2.0]), torch.tensor([-2.5, -2.0])
    t = losses.paired_view_terms(s_o, s_c, s_e, f_o, f_c, tau=2.0)
    # case 1: C−E = 1 -> softplus(1) = ln(1+e); case 2: C−E = 0.5 -> softplus(1.5)
    assert t["margin"].item() == pytest.approx((math.log1p(math.e) + math.log1p(math.exp(1.5))) / 2, rel=1e-6)
    assert t["invariance"].item() == pytest.approx((1.0 + 2.25) / 2)
    assert t["first_action"].item() == pytest.approx((0.25 + 0.0) / 2)
    lp, la = torch.tensor([-2.0]), torch.tensor([-5.0])
    assert losses.decision_logodds(lp, la).item() == pytest.approx(3.0)


def test_dpo_loss_matches_hand_computation():
    loss, margin = losses.dpo_loss(torch.tensor([-10.0]), torch.tensor([-12.0]), torch.tensor([-11.0]), torch.tensor([-11.0]), beta=0.1)
    # margin = 0.1 * ((−10 + 11) − (−12 + 11)) = 0.2
    assert margin.item() == pytest.approx(0.2)
    assert loss.item() == pytest.approx(math.log1p(math.exp(-0.2)), rel=1e-6)


@pytest.mark.slow
def test_dpo_trainer_runs_a_step_from_the_reference(tiny, views):
    import copy

    recipe = small_recipe(method="dpo", max_steps=2, lr=5e-3, dpo={"beta": 0.1})
    pairs = data.dpo_pairs(views)[:2] * 2  # the same two pairs twice: step 2 sees step 1's pairs
    model = apply_lora(copy.deepcopy(tiny.model), recipe.lora, seed=0)
    model.eval()  # dropout 0: the reference log-probs equal the policy's before any update
    tr = trainers.DPOTrainer(tiny, model, recipe, [dict(p) for p in pairs])
    hist = tr.fit()
    assert hist[0]["loss"] == pytest.approx(math.log(2), abs=1e-4)  # policy == reference
    assert hist[0]["reward_margin"] == pytest.approx(0.0, abs=1e-4)
    assert tr.step == 2 and hist[1]["reward_margin"] > 0  # the update moved towards the chosen


@pytest.mark.slow
def test_paired_view_trainer_adds_c4_terms_and_control_is_plain_nll(tiny, views):
    import copy

    ex = trainers.paired_examples(views, small_recipe())
    assert ex and all({"O", "C", "E", "trajectories", "first_action"} <= set(e) for e in ex)
    # one trajectory view per case, plus a lesion-free image every third case
    assert sorted(len(e["trajectories"]) for e in ex) == [1] * (len(ex) - len(ex) // 3) + [2] * (len(ex) // 3)
    assert all(e["trajectories"][1].kind == "natural_negative" for e in ex if len(e["trajectories"]) == 2)
    model = apply_lora(copy.deepcopy(tiny.model), LoraSettings(r=8, alpha=16, dropout=0.0), seed=0).eval()
    control = trainers.PairedViewTrainer(tiny, model, small_recipe(method="paired_view", paired={"w_margin": 0, "w_invariance": 0, "w_first_action": 0}), ex[:2])
    loss, _ = control.loss(ex[:2])
    nll = token_nll(model, collate(tiny, [encode(tiny, t.messages) for e in ex[:2] for t in e["trajectories"]]))
    assert loss.item() == pytest.approx(nll.item(), rel=1e-5)
    full = trainers.PairedViewTrainer(tiny, model, small_recipe(method="paired_view"), ex[:2])
    loss2, parts = full.loss(ex[:2])
    want = parts["nll"] + 0.5 * (parts["margin"] + parts["invariance"] + parts["first_action"])
    assert loss2.item() == pytest.approx(want.item(), rel=1e-5) and parts["margin"] > 0


def test_sequence_logps_equal_a_manual_sum(tiny, views):
    chat = trainers.single_turn(views[0], 'Yes <final>{"action": "refer", "reason": "x"}</final>', tj.SHORT_PROMPT)
    batch = collate(tiny, [encode(tiny, chat)])
    lp, n = sequence_logps(tiny.model, batch)
    logits = tiny.model(**{k: v for k, v in batch.items() if k != "labels"}).logits[0].float()
    ids, labels = batch["input_ids"][0], batch["labels"][0]
    manual = sum(torch.log_softmax(logits[i - 1], -1)[ids[i]].item() for i in range(1, len(ids)) if labels[i] != -100)
    assert lp.item() == pytest.approx(manual, rel=1e-4) and n.item() == int((labels != -100).sum())


# ---------------------------------------------------------------- recipes and selection

def test_every_recipe_and_arms_file_validates():
    from pipelines.sweep import load_arms

    for path in glob.glob("configs/train/*.yaml"):
        load_recipe(path)
    for path in glob.glob("configs/arms/*.yaml"):
        load_arms(path)
    stage1 = load_recipe("configs/train/stage1_sft.yaml")
    assert (stage1.lora.r, stage1.lora.alpha, stage1.lora.dropout, stage1.lr) == (16, 32, 0.05, 2e-4)
    assert load_recipe("configs/train/dpo_c2.yaml").dpo.beta == 0.1


def test_each_shipped_recipe_names_the_view_kinds_the_paper_trains_on():
    # the counterfactual paper §3.2/§3.5: the recipe's pools are the four views of a case (original, target
    # removal, random-removal control, degraded), lesion-free images and training-only insertions;
    # §3.7 C2: "no control edits, degraded views or tools"; C3: the recipe's pools, insertions
    # included (its preference pairs have no degraded or control-edit pair); C4: triplets O, C, E
    # plus a lesion-free image every third case.
    pools = {"original", "target_removal", "random_removal", "degraded", "natural_negative", "insertion"}
    want = {"stage1_sft": pools, "stage2_rft": pools, "stage3_replay": pools, "stage1_sft_zero2": pools, "smoke": pools,
            "dpo_c2": {"original", "target_removal", "natural_negative"},
            "dpo_c3": {"original", "target_removal", "natural_negative", "insertion"},
            "paired_c4": {"original", "random_removal", "target_removal", "natural_negative"},
            "paired_c4_control": {"original", "random_removal", "target_removal", "natural_negative"}}
    import yaml

    got = {}
    for path in glob.glob("configs/train/*.yaml"):
        raw = yaml.safe_load(open(path))
        assert "allowed_kinds" in raw, f"{path} does not name its view kinds"
        got[raw["name"]] = set(load_recipe(path).allowed_kinds)
    assert got == want
    # unmatched-control edits appear in C1's arm only, in place of the random-removal control
    from pipelines.sweep import load_arms

    for path in glob.glob("configs/arms/*.yaml"):
        for arm in load_arms(path).arms:
            if "unmatched_control" in arm.allowed_kinds:
                assert arm.name == "unmatched_control" and "random_removal" not in arm.allowed_kinds
    factorial = {a.name: set(a.allowed_kinds) for a in load_arms("configs/arms/factorial.yaml").arms}
    assert factorial["unmatched_control"] == factorial["control_edits_only"] - {"random_removal"} | {"unmatched_control"}


def test_c4_recipes_take_3000_cases_in_375_steps_from_each_seed_s_adapter(views):
    # §3.7 / §5.3: "the recipe adapter continued for 3,000 triplet cases", "the C4 arms add 375
    # steps on 3,000 triplet cases" (8 cases a step), "each pair from that seed's recipe adapter"
    from medscope.training.runner import init_adapter_uri

    for name in ("paired_c4", "paired_c4_control"):
        r = load_recipe(f"configs/train/{name}.yaml")
        assert r.paired.max_cases == 3000 and data.one_pass_steps(3000, r) == 375
        assert init_adapter_uri(r.model_copy(update={"seed": 2})).endswith("/with_cf/seed2/adapter")
    capped = [trainers.paired_examples(views, small_recipe(seed=s, paired={"max_cases": 2})) for s in (0, 1)]
    all_cases = {e["O"]["case_id"] for e in trainers.paired_examples(views, small_recipe(paired={"max_cases": None}))}
    assert len(all_cases) > 2 and all(len(c) == 2 for c in capped)
    assert {e["O"]["case_id"] for e in capped[0]} == {e["O"]["case_id"] for e in capped[1]} <= all_cases  # one draw


def test_a_recipe_must_name_its_kinds_and_never_mixes_the_two_controls(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("name: x\n")
    with pytest.raises(MedScopeError, match="allowed_kinds"):
        load_recipe(str(p))
    p.write_text("name: x\nallowed_kinds: [original, random_removal, unmatched_control]\n")
    with pytest.raises(MedScopeError, match="unmatched_control replaces random_removal"):
        load_recipe(str(p))


def test_bad_recipe_is_a_clear_error(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: x\nallowed_kinds: [original, erased]\n")
    with pytest.raises(MedScopeError, match="erased"):
        load_recipe(str(p))
    p.write_text("name: x\nallowed_kinds: [original]\nlora: {rank: 8}\n")
    with pytest.raises(MedScopeError, match="lora.rank"):
        load_recipe(str(p))


def test_zero2_recipe_without_a_gpu_is_one_clear_error():
    from pipelines.train import check_deepspeed

    zero2 = load_recipe("configs/train/zero2.yaml")
    with pytest.raises(MedScopeError, match="ZeRO-2, which needs CUDA GPUs"):
        check_deepspeed(zero2, use_gpu=False)
    check_deepspeed(zero2, use_gpu=True)  # nothing to say where GPUs are
    check_deepspeed(load_recipe("configs/train/stage1_sft.yaml"), use_gpu=False)


def test_deepspeed_zero_config_builds():
    from deepspeed.runtime.config import DeepSpeedConfig

    cfg = deepspeed_config(DeepSpeedSettings(stage=2, offload_optimizer=True), batch_size=4, grad_accum=2)
    ds = DeepSpeedConfig(cfg)
    assert ds.zero_optimization_stage == 2 and ds.train_batch_size == 8 and ds.bfloat16_config.enabled
    assert ds.zero_config.offload_optimizer.device == "cpu"


def test_selection_rule_reproduces_the_paper_and_its_fallbacks():
    paper = {"stage1": {"U": 0.585, "H": 0.136}, "stage2": {"U": 0.610, "H": 0.127}, "stage3": {"U": 0.613, "H": 0.077}}
    sel = selection.select_stage(paper, previous={"U": 0.593, "H": 0.082})
    assert sel.chosen == "stage3" and any("stage3 vs stage2" in r and "True; H" in r for r in sel.reasons)
    worse3 = dict(paper, stage3={"U": 0.589, "H": 0.077})  # U3 < U2 − 0.02
    assert selection.select_stage(worse3).chosen == "stage2"
    worse2 = dict(worse3, stage2={"U": 0.610, "H": 0.160})  # H2 > H1 + 0.02, and U3 vs U2 fails
    assert selection.select_stage(worse2).chosen == "stage1"
    assert selection.select_stage(paper, previous={"U": 0.64, "H": 0.05}).chosen == "previous"


def test_job_configs_validate():
    from medscope import config as cfgmod
    from pipelines.sweep import SweepJob
    from pipelines.train import TrainJob, resolve_recipe

    for path in glob.glob("configs/train/jobs/*.yaml"):
        model = SweepJob if "sweep" in path else TrainJob
        job = cfgmod.load(model, path)
        if model is TrainJob:
            assert resolve_recipe(job).name


def test_cli_verbs_parse():
    from pipelines.cli import build_parser

    from pipelines.support.flags import config_from_args

    args = build_parser().parse_args(["train", "--recipe", "configs/train/smoke.yaml", "--views", "v", "--out", "o", "--seed", "3",
                                      "--overrides", "{seed: 1, lr: 0.5}", "--eval-views", "val"])
    assert (args.verb, args.recipe) == ("train", "configs/train/smoke.yaml") and callable(args.func)
    job = config_from_args(args)  # the shorthands fold into overrides / evaluation, over what those say
    assert (job.overrides, job.evaluation.views, job.evaluation.split) == ({"seed": 3, "lr": 0.5}, "val", "validation")
    args = build_parser().parse_args(["sweep", "--arms", "configs/arms/smoke.yaml", "--views", "v", "--out", "o"])
    assert (args.verb, args.arms) == ("sweep", "configs/arms/smoke.yaml") and callable(args.func)


def test_rejection_sampling_keeps_the_best_right_episode_and_repeats_mostly_failed_views(views):
    from medscope.training.episodes import Episode, Outcome

    plan = {  # view index -> (correct, reward) of its k = 4 samples
        0: [(False, -2.0), (True, 1.0), (True, 1.5), (False, -1.0)],  # 2 of 4 right: best kept x3
        1: [(True, 1.0), (True, 1.2), (True, 1.0), (True, 0.5)],  # 4 of 4: best kept once
        2: [(False, -2.0)] * 4,  # none right: dropped
    }
    index = {views[i]["view_id"]: i for i in plan}
    calls = []

    def sampler(view, temperature, seed):
        j = sum(1 for c in calls if c[0] == view["view_id"])
        calls.append((view["view_id"], temperature, seed))
        ok, r = plan[index[view["view_id"]]][j]
        return Episode(view, [{"role": "assistant", "text": f"{view['view_id']}:{r}", "image": None}], None, 0,
                       Outcome("answer", None, ok, r, 0, right=ok))

    recipe = small_recipe(method="rft")
    kept, counts = trainers.rejection_examples([views[i] for i in plan], sampler, recipe)
    texts = [k[0]["text"] for k in kept]
    assert texts == [f"{views[0]['view_id']}:1.5"] * 3 + [f"{views[1]['view_id']}:1.2"]
    assert counts == {"sampled_views": 3, "kept": 2, "failed_repeated": 1, "none_right": 1}
    assert {t for _, t, _ in calls} == {1.2} and len({s for *_, s in calls}) == 12  # k distinct seeds per view


def _hash_sampler(view, temperature, seed):
    """A stateless stand-in policy: right / reward a fixed function of (view, seed)."""
    from medscope.training.episodes import Episode, Outcome

    h = seed % 7
    ok = h % 3 != 0
    return Episode(view, [{"role": "assistant", "text": f"{view['view_id']}:{h}", "image": None}], None, 0,
                   Outcome("answer", None, ok, float(h), 0, right=ok))


def _rft_worker(rank, world, port, views, vqa_uri, build_views, out):
    """One of two gloo workers: stage 2's sampling (gathered) and this worker's DPO, C4 and
    replay examples (one spawn for both tests' worth of work: starting processes is the slow part)."""
    import pickle

    import torch.distributed as dist

    from medscope.training import runner

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        calls = []

        def sampler(view, temperature, seed):
            calls.append(view["view_id"])
            return _hash_sampler(view, temperature, seed)

        result = trainers.rejection_examples(views, sampler, small_recipe(method="rft"), rank, world)
        table = records.to_table("views", build_views)
        built = {m: [_example_key(m, e) for e in runner.build_examples(r, table, rank=rank, world=world)[0]]
                 for m, r in _shard_recipes(vqa_uri).items()}
        built["rft"] = [_example_key("rft", e) for e in trainers.rft_examples(result[0], *_rft_synth(build_views), rank, world)]
        with open(f"{out}/{rank}.pkl", "wb") as fh:
            pickle.dump((*result, calls, built), fh)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_each_worker_samples_and_builds_only_its_share_and_together_the_one_worker_data(many_views, views, tmp_path):
    """Two gloo workers, as Ray Train runs them. Stage 2: each samples its share of the views and
    the kept episodes are gathered in view order, and only its shard of the kept episodes and
    synthetic trajectories is built. DPO, C4 and replay: each builds only its shard,
    and the shards together are the one-worker examples, in its order, none twice."""
    import pickle
    import socket
    from collections import Counter

    import torch.multiprocessing as mp

    from medscope.training import runner

    rft_views = many_views[:9]
    single = trainers.rejection_examples(rft_views, _hash_sampler, small_recipe(method="rft"))
    assert single[1]["kept"] >= 3 and single[1]["sampled_views"] == 9
    vqa_uri = str(tmp_path / "vqa.parquet")
    records.write_table("vqa_items", _vqa_items(4, views[0]["image"]), vqa_uri)
    table = records.to_table("views", views)
    single_built = {m: [_example_key(m, e) for e in runner.build_examples(r, table)[0]] for m, r in _shard_recipes(vqa_uri).items()}
    # stage 2's examples: the gathered kept episodes plus its synthetic trajectories, sharded
    single_built["rft"] = [_example_key("rft", e) for e in trainers.rft_examples(single[0], *_rft_synth(views))]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_rft_worker, args=(2, port, rft_views, vqa_uri, views, str(tmp_path)), nprocs=2, join=True)
    sampled, built = [], []
    for rank in range(2):
        with open(tmp_path / f"{rank}.pkl", "rb") as fh:
            kept, counts, calls, mine = pickle.load(fh)
        assert counts == single[1]  # gathered: the counts of all nine views
        assert [c[0]["text"] for c in kept] == [c[0]["text"] for c in single[0]]  # same list, view order
        assert len(calls) == 4 * (5 - rank)  # k = 4 episodes on each of this worker's 5 or 4 views
        sampled.append(set(calls))
        built.append(mine)
    assert not sampled[0] & sampled[1] and len(sampled[0] | sampled[1]) == 9  # split, not repeated
    for method, full in single_built.items():
        assert len(full) >= 5, method
        usable = len(full) // 2 * 2  # equal shards (DDP lock step): an odd last example is left out
        a, b = built[0][method], built[1][method]
        assert len(a) == len(b) == usable // 2, method
        assert a == full[:usable][0::2] and b == full[:usable][1::2], method  # the one-worker order
        # together exactly the one-worker examples: none built twice, none missing (a replay mix may
        # hold equal examples, e.g. a view repeated to reach the absent share: count, not set)
        assert Counter(a) + Counter(b) == Counter(full[:usable]), method


def _example_key(method, e):
    """A comparable form of one example of ``method``."""
    if method == "dpo":
        return (e["view"]["view_id"], e["chosen"], e["rejected"])
    if method == "paired_view":
        return (e["O"]["case_id"], tuple(tuple(m["text"] for m in t.messages) for t in e["trajectories"]), e["first_action"])
    return tuple(m["text"] for m in e)  # replay: a chat


def _rft_synth(views):
    """(stage 2's synthetic plan, recipe): 6 label-derived trajectories of a further draw."""
    recipe = small_recipe(method="rft", seed=3, rft={"synthetic_views": 6})
    return data.sft_plan(views, recipe.model_copy(update={"n_views": 6, "draw_seed": 2})), recipe


def _shard_recipes(vqa_uri):
    return {"dpo": small_recipe(method="dpo", seed=3),
            "paired_view": small_recipe(method="paired_view", seed=3, paired={"max_cases": 5}),
            "replay": small_recipe(method="replay", seed=3, replay={"question_sets": {"vqa-rad": {"items": vqa_uri, "share": 1}},
                                                                    "n_items": 15, "vqa_share": 0.4})}


@pytest.mark.slow
def test_every_method_builds_examples_from_a_views_table(tiny, views, tmp_path):
    from medscope.training import runner

    table = records.to_table("views", views)
    eval_uri = str(tmp_path / "eval.parquet")
    records.write_table("views", synthetic_views(2, seed=9, split="test"), eval_uri)
    vqa_uri = str(tmp_path / "vqa.parquet")
    records.write_table("vqa_items", _vqa_items(3, records.read_table("views", eval_uri).column("image")[0].as_py()), vqa_uri)
    model = apply_lora(__import__("copy").deepcopy(tiny.model), LoraSettings(r=4, alpha=8), seed=0)
    common = {"rft": {"k": 2, "views_per_kind": 1, "extra_per_kind": {}, "synthetic_views": 5, "max_turns": 1, "max_new_tokens": 4},
              "replay": {"question_sets": {"vqa-rad": {"items": vqa_uri, "share": 1}}, "eval_views": {"test": eval_uri},
                         "n_items": 20, "vqa_share": 0.3}}
    infos = {}
    for method in ("sft", "dpo", "paired_view", "rft", "replay"):
        ex, info = runner.build_examples(small_recipe(method=method, **common), table, tiny, model)
        assert ex and info["examples"] == len(ex)
        infos[method] = info
    assert infos["rft"]["sampled_views"] == len(RECIPE_KINDS) and 5 <= infos["rft"]["synthetic"] <= 10  # small lesions twice
    assert infos["replay"]["vqa_near_copies_excluded"] == 1 and infos["replay"]["absent_share"] >= 0.35
    assert infos["paired_view"]["examples"] == len(data.paired_triplets(views))


def test_train_select_reads_each_stage_s_validation_numbers(tmp_path):
    import json

    from pipelines.train import select_stages

    runs = {}
    for name, (u, h) in {"stage1": (0.585, 0.136), "stage2": (0.610, 0.127), "stage3": (0.613, 0.077)}.items():
        d = tmp_path / name
        d.mkdir()
        (d / "train_summary.json").write_text(json.dumps({"eval": {"net_utility": u, "healthy_claims": h}}))
        runs[name] = str(d)
    rec = select_stages(runs, str(tmp_path / "selection.json"))
    assert rec["chosen"] == "stage3" and rec["adapter"] == str(tmp_path / "stage3" / "adapter")
    assert json.loads((tmp_path / "selection.json").read_text())["numbers"]["stage2"] == {"U": 0.610, "H": 0.127}
    (tmp_path / "stage1" / "train_summary.json").write_text("{}")
    with pytest.raises(MedScopeError, match="no validation metrics"):
        select_stages(runs, str(tmp_path / "s2.json"))


def test_sweep_seed_pairs_are_paired_differences_of_the_scored_trials(tmp_path):
    from medscope.training.evaluation import score_row
    from medscope.analysis.testsets import EVAL_KINDS
    from pipelines.sweep import apply_checks, arms_table, seed_pair_tests

    evals = synthetic_views(6, seed=4, split="validation")
    replies = {"yes": FinalAction("answer", answer="Yes"), "no": FinalAction("answer", answer="No")}
    policy = {("claim", 0): "yes", ("claim", 1): "yes", ("deny", 0): "no", ("deny", 1): "no"}
    means, n_views = {}, 0
    for (arm, seed), reply in policy.items():
        # the sweep's trial names each run <arm>@seed<k>: the seeds of one arm are distinct models
        rows = [score_row(v, view_reward(v, replies[reply], 0), f"{arm}@seed{seed}", "validation") for v in evals]
        d = tmp_path / arm / f"seed{seed}"
        d.mkdir(parents=True)
        records.write_table("scores", rows, str(d / "scores.parquet"))
        # net utility: the mean reward over the main test's five kinds (never the training-only ones)
        means[(arm, seed)] = np.mean([r["reward"] for r in rows if r["kind"] in EVAL_KINDS])
        n_views = len(rows)
    uri = seed_pair_tests(str(tmp_path), ["claim", "deny"], [0, 1], n_boot=200)
    scores = records.read_table("scores", str(tmp_path / "scores.parquet")).to_pandas()
    assert len(scores) == 4 * n_views  # no seed's episodes were merged into another's
    assert scores.groupby(["arm", "seed"]).size().to_dict() == {(a, s): n_views for a, s in policy}
    pairs = records.read_table("metrics", uri).to_pylist()
    nu = {r["model"]: r for r in pairs if r["metric"] == "net_utility" and r["breakdown"] == "all"}
    assert set(nu) == {"deny@seed0", "deny@seed1"}
    assert nu["deny@seed0"]["value"] == pytest.approx(means[("deny", 0)] - means[("claim", 0)])
    assert nu["deny@seed0"]["reference"].startswith("claim@seed0")
    esg = {r["model"]: r["value"] for r in pairs if r["metric"] == "esg" and r["breakdown"] == "all"}
    assert esg["deny@seed1"] == pytest.approx(0.0)  # constant policies: ESG 0 for both
    # pooled over seeds: each arm's two seeds as one model, paired by case with the reference's
    pooled = records.read_table("metrics", str(tmp_path / "pooled.parquet")).to_pylist()
    pnu = {r["model"]: r for r in pooled if r["metric"] == "net_utility" and r["breakdown"] == "all"}
    assert set(pnu) == {"deny"} and pnu["deny"]["reference"] == "claim:agent"
    pooled_diff = (means[("deny", 0)] + means[("deny", 1)]) / 2 - (means[("claim", 0)] + means[("claim", 1)]) / 2
    assert pnu["deny"]["value"] == pytest.approx(pooled_diff)
    # `medscope compare --reference claim --pool-seeds` on the same scores: the same rows
    from pipelines.score import compare_run

    cli_rows = compare_run(str(tmp_path / "x"), "claim", str(tmp_path / "scores.parquet"), str(tmp_path / "cmp.parquet"), n_boot=200,
                           pool_seeds=True)
    got = {(r.model, r.metric): r.value for r in cli_rows.itertuples() if r.breakdown == "all"}
    assert got[("deny@seed0", "net_utility")] == pytest.approx(nu["deny@seed0"]["value"])
    assert got[("deny", "net_utility")] == pytest.approx(pooled_diff)
    assert {m for m, _ in got} == {"deny@seed0", "deny@seed1", "deny"}
    # the arms table: mean and sd over seeds, per-seed differences
    results = [{"arm": a, "seed": s, "net_utility": means[(a, s)], "esg": 0.0, "ccr": 0.0, "erased_claims": 0.0,
                "healthy_claims": 0.0} for a, s in policy]
    rows, md = arms_table(results, ["claim", "deny"], [0, 1])
    by = {(r["arm"], r["row"]): r for r in rows}
    assert by[("deny", "sd")]["net_utility"] == pytest.approx(0.0)
    assert by[("deny", "seed 1 - claim")]["net_utility"] == pytest.approx(means[("deny", 1)] - means[("claim", 1)])
    assert "| deny | mean |" in md

    # the sweep's checks: a C4-worded rule (erased-lesion claims lower in every seed pair, pooled
    # interval excluding zero). "deny" never claims (0 of the erased views), "claim" always (1):
    # -1 in each seed, so the rule passes; on ESG (0 for both constant policies) each seed pair
    # ties, and a tie is not lower; a third seed that was never run fails the every-seed condition.
    def c4(rule_id, metric, seeds):
        return {"id": rule_id, "kind": "check", "outcomes": [{"label": "pass", "all_of": [
            {"test_set": "validation", "metric": metric, "model": "deny", "reference": "claim", "direction": "lower",
             "ci_excludes_zero": False, "every_seed_pair": True, "seeds": seeds},
            {"test_set": "validation", "metric": metric, "model": "deny", "reference": "claim", "direction": "lower"}]}],
            "otherwise": "fail"}
    plan = {"name": "sweep-checks", "registered": "2026-11-07", "test_sets": ["validation", "fresh_external"],
            "endpoints": ["erased_claims", "esg"],
            "rules": [c4("deny", "erased_claims", [0, 1]), c4("esg", "esg", [0, 1]),
                      c4("three seeds", "erased_claims", [0, 1, 2]),
                      {"id": "C2", "kind": "check", "outcomes": [{"label": "beats", "all_of": [
                          {"test_set": "fresh_external", "metric": "erased_claims", "model": "deny", "reference": "claim",
                           "direction": "lower"}]}]}]}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    verdicts = apply_checks(str(tmp_path), str(tmp_path / "plan.yaml"))
    assert verdicts == {"deny": "pass", "esg": "fail", "three seeds": "fail", "C2": "not applied"}
    text = (tmp_path / "checks.txt").read_text()
    assert "seed 0: -1.000, seed 1: -1.000, seed 2: missing" in text
    assert "no erased_claims row for deny - claim on fresh_external" in text


def test_agent_loop_sampler_runs_the_evaluation_loop_on_the_model_in_training(tiny, views):
    import copy

    from medscope.protocols.counterfactual.prompts import system_prompt
    from medscope.protocols.counterfactual import costs
    from medscope.training.episodes import AgentLoopSampler

    model = apply_lora(copy.deepcopy(tiny.model), LoraSettings(r=4, alpha=8), seed=0)
    sampler = AgentLoopSampler(tiny, model, max_turns=2, max_new_tokens=6)
    ep = sampler(views[0], temperature=1.2, seed=7)
    assert ep.messages[0] == {"role": "system", "text": system_prompt("agent"), "image": None}
    assert ep.messages[1]["image"] is not None and views[0]["question"] in ep.messages[1]["text"]
    assert [m["text"] for m in ep.messages if m["role"] == "assistant"] == ep.texts and 1 <= len(ep.texts) <= 2
    if ep.outcome.action == "unparseable":
        assert ep.outcome.reward == costs.load().unparseable - 0.05 * max(0, ep.tool_calls - 1)
    assert encode(tiny, ep.messages)["labels"].ne(-100).any()  # the transcript is trainable as is
    # the same seed samples the same episode
    assert sampler(views[0], temperature=1.2, seed=7).texts == ep.texts


@pytest.mark.slow
def test_training_evaluation_scores_validation_and_every_named_test_set(tiny, views):
    """A sweep trial scores its adapter on the validation split and on each named test set (seed
    000 Tables 3-4) read on that set's own splits, rows labelled by test set, so C1-C4 (§3.7),
    worded on the test sets, find their rows in the sweep's own scores."""
    import copy

    from medscope.training.evaluation import EvalSettings, evaluate_all, evaluate_model, select_eval_views
    from pipelines.sweep import ArmsFile

    def relabel(rows, split):
        return [{**v, "split": split, "view_id": f"{split}-{v['view_id']}"} for v in rows]

    tables = {"val": relabel(views[:14], "validation"), "main": relabel(views[14:28], "test") + relabel(views[:7], "validation"),
              # a held-out-tools build: its edits made with an unseen tool (§5.4: Telea, diffusion)
              "tools": [{**v, "tool": "telea" if v["tool"] == "synthetic" else v["tool"]} for v in relabel(views[28:], "test")]}
    model = apply_lora(copy.deepcopy(tiny.model), LoraSettings(r=4, alpha=8), seed=0)
    ev = EvalSettings(views="val", test_sets={"main": "main", "heldout_tools": "tools"}, max_new_tokens=4, max_turns=1)
    metrics, per_set, rows = evaluate_all(tiny, model, "short", ev, "arm@seed0", lambda uri: tables[uri])

    def expected(table, split):  # by hand: passed views of the evaluation kinds in that split
        return sorted(v["view_id"] for v in table if v["split"] == split and v["passed"]
                      and v["kind"] in ("original", "target_removal", "random_removal", "natural_negative", "degraded"))

    by_set = {}
    for r in rows:
        by_set.setdefault(r["test_set"], []).append(r["view_id"])
    assert by_set == {"validation": expected(tables["val"], "validation"), "main": expected(tables["main"], "test"),
                      "heldout_tools": expected(tables["tools"], "test")}
    assert all(r["arm"] == "arm" and r["seed"] == 0 for r in rows)
    # the validation metrics are those of the validation split alone, as before test sets existed
    alone, _ = evaluate_model(tiny, model, "short", select_eval_views(tables["val"], "validation", None), ev, "arm@seed0")
    assert metrics == alone and set(per_set) == {"main", "heldout_tools"}
    with pytest.raises(ValueError, match="training pool"):
        ArmsFile(recipe="r.yaml", arms=[], eval_test_sets={"c1_unmatched_pool": "x"})
