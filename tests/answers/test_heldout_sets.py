"""The reader against the held-out reply sets of ``medscope/answers/data/heldout/``, each written by
someone who had not read the reader's rules and committed before the rules it was scored on.

Sets A to V were each read once as committed, then the rules were changed for the kinds they
showed; they are now regression tables (0 flips, each at or above its floor: A and B 0.97, C 0.93,
D 0.995, E 0.88, F 0.91, G 0.67, H 0.95, I 0.97, J 0.995, K 0.92, L 0.995, M 0.99, N 0.98, O 0.975, P 0.965, Q 0.995, R 0.98, S 0.985, T 0.945, U 0.8, V 0.995). F's honest figure is its first read: 0.710 with 16 flips; G's is
0.655 with 11 flips and 13 unclear (unchanged by the round tuned on F); I's is 0.885 with 1 flip
and 11 unclear (0.900, 1 flip, 11 unclear after the round tuned on H); J's is 0.845 with 2 flips and
9 unclear (0.860, 2 flips, 9 unclear after the round tuned on I); K's is 0.845 with 4 flips (0.850, 4
flips, 9 unclear after the round tuned on J); L's is 0.855 with 1 flip (0.865, 1 flip after the J
round; 0.870, 0 flips, 16 unclear after the K round), and its 200 / 200 after its own round is by
construction. M's honest figures are 0.900 with 2 flips after the J round, 0.910 with 1 flip after the
K round and after the L round; N's 0.865 with 1 flip after the K round, 0.870 with 1 flip after the L
round (docs/answers.md, the M+N round); both were tuned on together. O's honest figures are 0.865
with 0 flips and 5 unclear after the L round, 0.880 with 0 flips and 5 unclear after the M+N round
(docs/answers.md, the O round). P's honest figures are 0.885 with 1 flip and 4 unclear after the M+N round
and after the O round (docs/answers.md, the P round). Q's are 0.900 with 0 flips after the O round and
0.910 with 0 flips and 4 unclear misses after the P round (docs/answers.md, the Q round); its 200 / 200
after its own round is by construction. R's honest figure is 0.825 with 9 flips and 16 unclear after the Q round
(docs/answers.md, the R round); its 0.980 after its own round is by construction. S's honest figure is
0.865 with 2 flips and 9 unclear after the R round (docs/answers.md, the S round); its 0.985 after its own round is by construction. T's honest figure is 0.890 with 4 flips and 11 unclear
after the S round (docs/answers.md, the T round); its 0.945 after its own round is by construction. U's honest figure is
0.735 with 7 flips after the T round, V's 0.940 with 1 flip and 8 unclear after the U round (docs/answers.md, the U and
V rounds); their figures after their own rounds are by construction. D's and E's honest figures are their first reads (docs/answers.md: D 0.885 with
3 flips; E 0.623 with 18 flips, and 0.673 with 13 flips after the D round), taken before each was
tuned on; E was tuned on in the second round. J's 200 / 200 after its own round is by construction,
as D's is. The honest figure of a round is the next blind set's, which the rules have never seen
and which is not asserted here."""

from __future__ import annotations

from importlib import resources

import pytest

from medscope.answers.decisions import load_labelled_set, score_labelled_set

HELDOUT = resources.files("medscope.answers").joinpath("data", "heldout")


@pytest.mark.parametrize("name, floor", [("frozen_a.jsonl", 0.97), ("sealed_b.jsonl", 0.97),
                                         ("sealed_c.jsonl", 0.93), ("sealed_d.jsonl", 0.995),
                                         ("sealed_e.jsonl", 0.88), ("sealed_f.jsonl", 0.91),
                                         ("sealed_g.jsonl", 0.67), ("sealed_h.jsonl", 0.95),
                                         ("sealed_i.jsonl", 0.97), ("sealed_j.jsonl", 0.995),
                                         ("sealed_k.jsonl", 0.92), ("sealed_l.jsonl", 0.995),
                                         ("sealed_m.jsonl", 0.99), ("sealed_n.jsonl", 0.98),
                                         ("sealed_o.jsonl", 0.975), ("sealed_p.jsonl", 0.965),
                                         ("sealed_q.jsonl", 0.995), ("sealed_r.jsonl", 0.98),
                                         ("sealed_s.jsonl", 0.985), ("sealed_t.jsonl", 0.945),
                                         ("sealed_u.jsonl", 0.8), ("sealed_v.jsonl", 0.995)])
def test_tuned_sets_read_without_flips(name, floor):
    s = score_labelled_set(load_labelled_set(str(HELDOUT.joinpath(name))))
    assert s.flips == 0, [(r.row_id, r.label, g.decision, r.reply) for r, g in s.misses if g.decision != "unclear"]
    assert s.rate >= floor


def test_every_set_holds_both_protocols_and_parses():
    for name in ("frozen_a.jsonl", "sealed_b.jsonl", "sealed_c.jsonl", "sealed_d.jsonl", "sealed_e.jsonl",
                 "sealed_f.jsonl", "sealed_g.jsonl", "sealed_h.jsonl", "sealed_i.jsonl", "sealed_j.jsonl",
                 "sealed_k.jsonl", "sealed_l.jsonl", "sealed_m.jsonl", "sealed_n.jsonl", "sealed_o.jsonl",
                 "sealed_p.jsonl", "sealed_q.jsonl", "sealed_r.jsonl", "sealed_s.jsonl",
                 "sealed_t.jsonl", "sealed_u.jsonl", "sealed_v.jsonl"):
        rows = load_labelled_set(str(HELDOUT.joinpath(name)))
        assert len(rows) >= 200 and {r.protocol for r in rows} == {"counterfactual", "organ_presence"}
