"""Reply reading, hedge lexicon, probe metrics and the protocol with scripted models."""

from __future__ import annotations

import json

import numpy as np
import pytest

from medscope.images import decode_png, encode_png
from medscope.models.base import Completion, Decoding
from medscope.volumes.config import DEFAULT_HEDGES, ProbeConfig, conditions
from medscope.protocols.organ_presence.scoring import cluster_bootstrap_ratio, probe_metrics, score_episodes, zdistance_logit
from medscope.protocols.organ_presence.protocol import OrganPresenceProtocol
from medscope.protocols.organ_presence.replies import read_reply

LEX = list(DEFAULT_HEDGES)


@pytest.mark.parametrize(
    "text, fmt, verdict, clean, cue",
    [
        ("Yes, the liver is visible in the right upper abdomen.", "free_text", "present", True, None),
        ("No. The spleen is not seen on this slice.", "free_text", "absent", True, None),
        ("The spleen is not clearly visible on this slice.", "free_text", "absent", True, "not clearly"),
        ("There is no evidence of the pancreas here.", "free_text", "absent", True, None),
        ("The kidney appears in the posterior abdomen.", "free_text", "present", True, "appears"),
        ("I am sorry, I can only describe the image in general.", "free_text", "not_addressed", False, None),
        ("This slice possibly contains the gallbladder, which is present.", "free_text", "present", True, "possibly"),
        ('{"present": true, "reason": "homogeneous organ on the right"}', "verdict_json", "present", True, None),
        ('```json\n{"present": false, "reason": "no definite spleen"}\n```', "verdict_json", "absent", True,
         "no definite"),
        ('{"observation": "obscured by artefact", "reasoning": "cannot confirm", "present": false}',
         "reasoning_json", "absent", True, "obscured"),
        ('{"observation": "x", "reasoning": "y", "present": "absent"}', "reasoning_json", "absent", True, None),
        ('{"observation": "x", "reasoning": "y"}', "reasoning_json", "not_addressed", False, None),
        ("The liver is visible.", "verdict_json", "present", False, None),  # not JSON: falls back, unclean
        ("", "free_text", "not_addressed", False, None),  # clean = parse rate: nothing resolved
    ],
)
def test_read_reply_table(text, fmt, verdict, clean, cue):
    r = read_reply(text, fmt, LEX)
    assert (r.verdict, r.clean, r.hedge_cue) == (verdict, clean, cue)


def test_hedge_cues_whole_words_and_all_reported():
    r = read_reply('{"observation": "Not clearly visible; possibly obscured.", "present": false}', "reasoning_json", LEX)
    assert r.hedge_cues == ("not clearly", "obscured", "possibly")
    assert read_reply("It is impossible to miss the liver, it is visible.", "free_text", LEX).hedge_cues == ()
    assert read_reply("The spleen is unlikely here; not visible.", "free_text", LEX).hedge_cues == ()


def _row(case, verdict, hedged=False, strategy="adversarial", truth="absent", z=0, organ="o", zd=10.0, whole=False):
    return {"model": "m", "condition": "free_text", "render": "gray", "case_id": case, "verdict": verdict,
            "hedged": hedged, "strategy": strategy, "truth": truth, "z": z, "organ": organ,
            "z_distance_mm": zd, "absent_from_volume": whole, "clean": True,
            "hedge_cue": "not clearly" if hedged else None}


def test_metrics_by_hand():
    rows = [
        _row("A", "absent", hedged=True, z=0), _row("A", "absent", z=1), _row("A", "present", z=2),
        _row("B", "absent", z=0, zd=45.0), _row("B", "not_addressed", z=1, zd=None, whole=True),
        _row("A", "present", strategy="positive", truth="present", z=0, zd=None),
        _row("B", "not_addressed", strategy="positive", truth="present", z=0, zd=None),
    ]
    m = {(r["breakdown"], r["metric"]): r for r in probe_metrics(rows, far_mm=40, b=2000, seed=42)}
    adv = "strategy=adversarial;render=gray"
    assert m[(adv, "specificity")]["value"] == pytest.approx(3 / 4)  # not-addressed leaves the denominator
    assert m[(adv, "confident_specificity")]["value"] == pytest.approx(2 / 3)  # the hedged item leaves both
    assert m[(adv, "abstention")]["value"] == pytest.approx(1 / 5)
    assert m[(adv, "not_addressed_rate")]["value"] == pytest.approx(1 / 5)
    # cases resampled, not rows: AA -> 2/3, BB -> 1, AB -> 3/4; 2.5% and 97.5% points are 2/3 and 1
    assert (m[(adv, "specificity")]["ci_low"], m[(adv, "specificity")]["ci_high"]) == pytest.approx((2 / 3, 1.0))
    assert m[(adv, "specificity")]["n_cases"] == 2
    pos = "strategy=positive;render=gray"
    assert m[(pos, "sensitivity")]["value"] == 1.0 and m[(pos, "not_addressed_rate")]["value"] == 0.5
    far = m[("strategy=all_negatives;render=gray;z>=40mm", "specificity")]
    assert far["value"] == 1.0 and far["n_cases"] == 1
    assert ("strategy=all_negatives;render=gray;absent_from_volume", "specificity") not in m  # only item unaddressed
    # one hedged negative, its cue the whole share
    assert m[("strategy=all_negatives;render=gray;cue=not clearly", "hedge_cue_share")]["value"] == 1.0


def test_score_episodes_reads_and_skips():
    items = {"i1": {"item_id": "i1", "case_id": "c", "z": 3, "organ": "spleen", "truth": "absent",
                    "strategy": "adversarial", "stratum": "transition", "z_distance_mm": 5.0,
                    "absent_from_volume": False, "render": "gray"}}
    eps = [
        {"model": "m", "condition": "reasoning_json", "item_id": "i1", "raw_text":
         '{"observation": "The spleen is not clearly visible.", "reasoning": "-", "present": false}', "error": None},
        {"model": "m", "condition": "free_text+blank", "item_id": "i1", "raw_text": "Yes.", "error": None},
        {"model": "m", "condition": "free_text", "item_id": "i1", "raw_text": None, "error": "HTTP 500"},
        {"model": "m", "condition": "agent", "item_id": "i1", "raw_text": "x", "error": None},
        {"model": "m", "condition": "free_text", "item_id": "other", "raw_text": "x", "error": None},
    ]
    rows, skipped = score_episodes(eps, items, LEX)
    assert skipped == 3
    assert [(r["verdict"], r["hedge_cue"], r["correct"], r["image_mode"]) for r in rows] == [
        ("absent", "not clearly", True, "image"), ("present", None, False, "blank")]


def test_cluster_bootstrap_single_case_and_empty():
    v, lo, hi, n = cluster_bootstrap_ratio(["a"] * 4, [1, 0, 1, 1], [1, 1, 1, 1], b=200)
    assert (v, lo, hi, n) == (0.75, 0.75, 0.75, 1)
    assert cluster_bootstrap_ratio(["a"], [0], [0]) == (None, None, None, 0)


def test_zdistance_logit_matches_logit_cluster():
    import statsmodels.api as sm

    rng = np.random.default_rng(0)
    cases = np.repeat(np.arange(20), 30)
    z = rng.uniform(0, 80, cases.size)
    y = (rng.random(cases.size) < 1 / (1 + np.exp(-(-1.0 + 0.05 * z)))).astype(float)
    slope, lo, hi = zdistance_logit(y, z, cases)
    # an independent fit: statsmodels' discrete Logit with cluster-robust covariance by case
    ref = sm.Logit(y, sm.add_constant(z)).fit(disp=0, cov_type="cluster", cov_kwds={"groups": cases})
    assert slope == pytest.approx(ref.params[1], rel=1e-6)
    assert (lo, hi) == pytest.approx(tuple(ref.conf_int()[1]), rel=1e-4)
    assert lo < 0.05 < hi and lo > 0
    assert zdistance_logit(np.ones(10), np.arange(10.0), np.arange(10) % 3) == (None, None, None)


class Scripted:
    """A ChatModel whose replies are a function of the prompt and whether an image came with it."""

    provider, endpoint = "policy", "local"

    def __init__(self, name, reply):
        self.name, self.reply, self.calls = name, reply, []

    def complete(self, messages, decoding):
        parts = messages[-1].parts
        images = [p.png for p in parts if p.is_image]
        text = "\n".join(p.text for p in parts if p.text)
        self.calls.append((text, images))
        return Completion(text=self.reply(text, images), input_tokens=len(text.split()), output_tokens=5)


def _item(truth="absent"):
    from medscope.protocols.base import Item

    img = np.zeros((12, 20, 3), np.uint8)
    img[2:5, 3:9] = 200
    return Item("pi-1", "c1", "Is the spleen visible in this axial CT slice?", truth, (encode_png(img),),
                meta={"organ": "spleen"})


def test_protocol_episode_conditions_and_controls():
    from medscope import protocols

    proto = OrganPresenceProtocol(OrganPresenceProtocol.Options(probe_config=ProbeConfig()))
    assert protocols.load("organ_presence", {"probe_config": {"image_modes": ["image", "blank"]}}
                          ).conditions()[-1] == "reasoning_json+blank"
    assert protocols.load("organ_presence", {"probe_config": "configs/probe/default.yaml"}).config == ProbeConfig()
    assert len(proto.conditions()) == 9 and "reasoning_json+blank" in proto.conditions()
    assert conditions(ProbeConfig(image_modes=["image"])) == ("free_text", "verdict_json", "reasoning_json")
    model = Scripted("s", lambda t, im: '{"observation": "not clearly seen", "reasoning": "r", "present": false}'
                     if "reasoning first" in t else ("Yes, it is visible." if im else "No."))
    item = _item()
    r = proto.run_episode(item, model, "free_text", Decoding())
    assert (r.answer, r.action, r.claims_finding) == ("present", "answer", True)
    assert model.calls[-1][1] == [item.images[0]] and model.calls[-1][0].endswith("Answer yes or no.")
    r = proto.run_episode(item, model, "free_text+no_image", Decoding())
    assert model.calls[-1][1] == [] and r.answer == "absent" and r.turns[0]["image_ref"] is None
    r = proto.run_episode(item, model, "verdict_json+blank", Decoding())
    blank = decode_png(model.calls[-1][1][0])
    assert blank.shape == (12, 20, 3) and (blank == 128).all() and r.turns[0]["image_ref"] == "blank:12x20"
    r = proto.run_episode(item, model, "reasoning_json", Decoding())
    assert r.answer == "absent" and r.raw_text.startswith("{") and r.output_tokens == 5
    assert '"presence": {"spleen": true or false}' in model.calls[-1][0]  # the presence map names the organ
    silent = Scripted("q", lambda t, im: "I cannot help with that.")
    r = proto.run_episode(item, silent, "free_text", Decoding())
    assert (r.action, r.answer, r.claims_finding) == ("unparseable", "not_addressed", None)
    with pytest.raises(ValueError):
        proto.run_episode(item, model, "json", Decoding())


def test_render_concordance_by_hand():
    rows = []
    # four matched negatives in two cases; gray vs triple disagree on one, flipping to present
    for case, z, g, t in (("A", 0, "absent", "absent"), ("A", 1, "absent", "present"),
                          ("B", 0, "present", "present"), ("B", 1, "absent", "absent")):
        rows.append(dict(_row(case, g, z=z), render="gray"))
        rows.append(dict(_row(case, t, z=z), render="triple"))
    m = {r["metric"]: r for r in probe_metrics(rows, b=500) if r["metric"].startswith("render_")}
    assert m["render_concordance"]["value"] == pytest.approx(3 / 4)
    assert m["render_concordance"]["breakdown"] == "renders=gray|triple;strategy=all_negatives"
    assert m["render_flips_to_present"]["value"] == 1.0
    # cases resampled: AA -> 1/2, BB -> 1, AB -> 3/4
    assert (m["render_concordance"]["ci_low"], m["render_concordance"]["ci_high"]) == pytest.approx((0.5, 1.0))


def _probe_items(tmp_path):
    """4 probe items of 2 cases: 3 adversarial negatives (truth absent) and 1 positive."""
    from medscope.io import records

    png = encode_png(np.zeros((8, 8), np.uint8))
    rows = [{"item_id": f"i{k}", "case_id": "A" if k < 3 else "B", "z": k, "z_mm": float(k), "organ": "spleen",
             "truth": "present" if k == 4 else "absent", "strategy": "positive" if k == 4 else "adversarial",
             "stratum": "mid", "z_distance_mm": None if k == 4 else 10.0, "absent_from_volume": False,
             "render": "gray", "question": "Is the spleen visible on this slice?", "image": png}
            for k in (1, 2, 3, 4)]
    uri = str(tmp_path / "probe_items.parquet")
    records.write_table("probe_items", rows, uri)
    return uri


def test_score_counts_every_item_against_the_fixed_denominator(tmp_path, capsys):
    """Issue 50: a missing episode (or a failed call) is a failed unit against the probe_items
    table, episodes outside it are excluded with the rule, and the exit code follows --max-failed.

    By hand: model m answers i1 "No." (correct), i2 "Yes." (wrong), i4 "Yes." and has no episode of
    i3; model n answers every item "No." but its i4 call failed; plus an episode of an item not in
    the table and one of a condition the probe does not have. free_text: 4 items each; m scored 3,
    missing 1; n scored 3, missing 1 (the failed call, also excluded as failed_call); 2 missing of
    6 + 2 = 8 units. m's adversarial specificity is 1/2 over its 2 answers, not 1/3 or 2/3: the
    missing i3 is in no n, and the exit code says so."""
    from medscope.io import records
    from pipelines import cli

    items = _probe_items(tmp_path)
    base = {"run_id": "t", "protocol": "organ_presence", "case_id": "A", "prompt_version": "probe-v2",
            "decoding": "d", "turns": [], "action": "answer", "answer": None, "tool_calls": 0, "input_tokens": 0,
            "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0, "attempts": 1, "error": None}
    replies = {("m", "i1"): "No.", ("m", "i2"): "Yes.", ("m", "i4"): "Yes.",
               ("n", "i1"): "No.", ("n", "i2"): "No.", ("n", "i3"): "No.", ("n", "i4"): None,
               ("n", "ghost"): "No."}
    eps = [dict(base, model=m, condition="free_text", item_id=i, raw_text=t, request_key=f"{m}|{i}",
                error="HTTP 500" if t is None else None) for (m, i), t in replies.items()]
    eps.append(dict(base, model="n", condition="agent", item_id="i1", raw_text="No.", request_key="n|agent|i1"))
    uri = str(tmp_path / "episodes.parquet")
    records.write_table("episodes", eps, uri)
    args = ["score", "--episodes", uri, "--items", items, "--n-boot", "20"]
    assert cli.main([*args, "--out", str(tmp_path / "strict")]) == 3
    err = capsys.readouterr().err
    assert "test set probe: 4 items" in err
    assert "2 of 8 episodes are missing (m:free_text 1 of 4; n:free_text 1 of 4" in err
    run = json.loads((tmp_path / "strict" / "run.json").read_text())
    cov = run["coverage"]
    assert cov["excluded_by_rule"] == {"failed_call": 1, "not_in_items": 1, "unknown_condition": 1}
    rows = {r["model"]: r for r in cov["by_model_condition"]}
    assert set(rows) == {"m", "n"}  # the agent condition owes nothing
    assert [rows["m"][k] for k in ("expected", "scored", "missing", "excluded", "missing_items")] == [4, 3, 1, 0, ["i3"]]
    assert [rows["n"][k] for k in ("expected", "scored", "missing", "excluded", "missing_items")] == [4, 3, 1, 2, ["i4"]]
    rejects = records.read_table("rejects", str(tmp_path / "strict" / "rejects.parquet")).to_pylist()
    assert sorted(r["item_id"] for r in rejects) == ["m/free_text/i3", "n/free_text/i4"]
    metrics = {(r["model"], r["breakdown"], r["metric"]): r
               for r in records.read_table("metrics", str(tmp_path / "strict" / "metrics.parquet")).to_pylist()}
    assert metrics[("m", "strategy=adversarial;render=gray", "specificity")]["value"] == pytest.approx(1 / 2)
    assert metrics[("n", "strategy=adversarial;render=gray", "specificity")]["value"] == pytest.approx(3 / 3)
    assert cli.main([*args, "--out", str(tmp_path / "one"), "--max-failed", "1"]) == 3
    assert cli.main([*args, "--out", str(tmp_path / "two"), "--max-failed", "2"]) == 0
    assert cli.main([*args, "--out", str(tmp_path / "quarter"), "--max-failed", "0.25"]) == 0  # 2 of 8


def test_score_excludes_a_second_episode_of_an_item_and_scores_the_first(tmp_path, capsys):
    """Issue 50: by hand, m answers i1 "No." (right), i2 "Yes." (wrong), i3 "No." (right) and i4
    "Yes."; adversarial specificity 2/3 over the negatives i1..i3 of cases A and B. A second episode
    of i2 answering "No." would, scored too, make it 3/4; it is excluded as duplicate_episode, listed
    in rejects, and the 4 items stay scored once each (none missing: exit 0)."""
    from medscope.io import records
    from pipelines import cli

    items = _probe_items(tmp_path)
    base = {"run_id": "t", "protocol": "organ_presence", "case_id": "A", "prompt_version": "probe-v2",
            "decoding": "d", "turns": [], "action": "answer", "answer": None, "tool_calls": 0, "input_tokens": 0,
            "output_tokens": 0, "cost_usd": 0.0, "latency_s": 0.0, "attempts": 1, "error": None}
    replies = [("i1", "No."), ("i2", "Yes."), ("i3", "No."), ("i4", "Yes."), ("i2", "No.")]
    eps = [dict(base, model="m", condition="free_text", item_id=i, raw_text=t, request_key=f"m|{i}|{k}")
           for k, (i, t) in enumerate(replies)]
    uri = str(tmp_path / "episodes.parquet")
    records.write_table("episodes", eps, uri)
    out = tmp_path / "scored"
    assert cli.main(["score", "--episodes", uri, "--items", items, "--n-boot", "20", "--out", str(out)]) == 0
    assert "duplicate_episode 1" in capsys.readouterr().err
    cov = json.loads((out / "run.json").read_text())["coverage"]
    assert cov["excluded_by_rule"] == {"duplicate_episode": 1}
    assert [cov["by_model_condition"][0][k] for k in ("expected", "scored", "missing", "excluded")] == [4, 4, 0, 1]
    rejects = records.read_table("rejects", str(out / "rejects.parquet")).to_pylist()
    assert [(r["item_id"], r["reason"]) for r in rejects] == [("m/free_text/i2", "duplicate_episode")]
    scores = records.read_table("probe_scores", str(out / "probe_scores.parquet")).to_pylist()
    assert sorted(r["item_id"] for r in scores) == ["i1", "i2", "i3", "i4"]
    spec = {r["metric"]: r for r in records.read_table("metrics", str(out / "metrics.parquet")).to_pylist()
            if r["breakdown"] == "strategy=adversarial;render=gray"}["specificity"]
    assert spec["value"] == pytest.approx(2 / 3)
    assert spec["n_cases"] == 2
