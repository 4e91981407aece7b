"""The report rules against the frozen held-out report sets of ``tests/data/benchgen/heldout/``
(issue 49), each written blind by someone who had not read the rules.

Sets A to E, E2, F and H were each read blind first (their honest figures are in docs/benchgen.md,
"Agreement with hand labels") and then tuned on; they are now regression tables: no wrong key, no
kept question the report does not assert, and no more correct questions lost (fields left unasked
plus planted correct questions rejected) than after their round. Set G (adnexa) was tuned on in
part: it is a ratchet row, no more wrong keys, kept questions or losses than after its round (its
remaining wrong keys are listed in docs/benchgen.md). Set H (scrotum) was read blind at 7 / 3 / 58
and reaches 0 / 0 after its round: a regression row. Set I (soft-tissue masses) was read blind at
5 / 3 / 97 and reaches 0 / 0 / 85 after its round: a regression row. Set J (salivary glands and neck)
was read blind at 9 / 3 / 58 and reaches 0 / 0 / 20 after its round: a regression row (the J round also
took E to 30 lost, G to 47 and I to 82, bounds tightened to match). Set K (brain, intracranial masses) was
read blind at 6 / 5 / 59 and reaches 0 / 0 / 54 after its round: a regression row (the K round also took F to
55 lost, G to 4 wrong keys and 46 lost, H to 56 and I to 81, bounds tightened to match). Set L (liver: LI-RADS
observations, metastases, treated lesions) was read blind at 8 / 6 / 55 and reaches 0 / 0 / 48 after its round:
a regression row (the L round left A to K's figures as they were). Set M (uterus and cervix: fibroids by FIGO
position, endometrial and cervical carcinoma) was read blind at 8 / 6 / 64 and reaches 0 / 0 / 36 after its round: a
regression row (the M round also took G to 2 kept, bound tightened to match). Set N (spine: vertebral metastases,
myeloma, intradural tumours, fractures, discitis) was read blind at 3 / 2 / 89 and reaches 0 / 0 / 61 after its round: a
regression row (the N round also took H to 55 lost, I to 79, J to 18 and K to 53, bounds tightened to match). Every
frozen set is also checked to be well formed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from medscope.benchgen.schema import load_schema
from tests.benchgen.heldout_abdomen import score

HELDOUT = Path(__file__).parents[1] / "data" / "benchgen" / "heldout"


@pytest.mark.parametrize("name, lost_at_most", [("heldout_abdomen_ct.yaml", 0), ("heldout_abdomen_ct_b.yaml", 0),
                                                ("heldout_thyroid_us.yaml", 15), ("heldout_pancreas.yaml", 0),
                                                ("heldout_prostate.yaml", 30), ("heldout_prostate_b.yaml", 9),
                                                ("heldout_breast.yaml", 55), ("heldout_scrotum.yaml", 55),
                                                ("heldout_soft_tissue.yaml", 79), ("heldout_salivary.yaml", 18),
                                                ("heldout_brain.yaml", 53), ("heldout_liver.yaml", 48),
                                                ("heldout_uterus.yaml", 36), ("heldout_spine.yaml", 61)])
def test_tuned_report_sets_give_no_wrong_key_and_keep_nothing_unasserted(name, lost_at_most):
    fig = score(verbose=False, name=name)
    assert fig["keys_wrong_value"] + fig["keys_not_stated"] == 0, [e for e in fig["errors"] if "key" in e[2]]
    assert fig["planted_not_asserted_kept"] == 0, [e for e in fig["errors"] if e[2].startswith("kept")]
    assert fig["correct_rejected"] <= lost_at_most


def test_set_g_no_worse_than_after_its_round():
    # G round (issue 49): 11 wrong keys / 4 kept / 81 lost blind; 5 / 3 / 49 after the round (47 after the
    # J round: a fibroid's size read from its own noun, "a single projection" counted). Not yet the
    # 0 / 0 bar: a04's side (header rule vs the dominant lesion), a14's fibroid size, a20's solid nodule
    # described in its own sentence, a21's region-limited ascites denial, a02 and a15's kept questions
    fig = score(verbose=False, name="heldout_adnexa.yaml")
    # K round: 4 / 3 / 46 (a14's fibroid, named "adnexal mass" in quotes, is placed by the uterine fundus)
    assert fig["keys_wrong_value"] + fig["keys_not_stated"] <= 4, [e for e in fig["errors"] if "key" in e[2]]
    assert fig["planted_not_asserted_kept"] <= 2, [e for e in fig["errors"] if e[2].startswith("kept")]
    assert fig["correct_rejected"] <= 46


@pytest.mark.parametrize("name", sorted(p.name for p in HELDOUT.glob("heldout_*.yaml")))
def test_every_frozen_report_set_is_well_formed(name):
    data = yaml.safe_load((HELDOUT / name).read_text())
    schema = load_schema(str(HELDOUT / data["schema"]))
    fields = {f.name: f for f in schema.fields}
    assert data["reports"]
    for rid, report in data["reports"].items():
        assert set(report["keys"]) == set(fields), rid
        for question, options, answer, verdict, _why in report["planted"]:
            assert 0 <= answer < len(options) and verdict in ("assert", "not_asserted"), (rid, question)
