"""Score the report-grounded rules on the frozen held-out abdominal-CT set (issue 49).

``tests/data/benchgen/heldout/heldout_abdomen_ct.yaml`` was written before the rules changed
and is never edited; this script prints, from it:

- schema keys: for every field of every report, the key the rule extractor emits against the
  radiologist's key -- right, wrong (another value), not stated (a key where the report settles
  nothing), and settled fields that got no question;
- planted report-derived questions: kept though the report does not assert the key, and
  correct questions rejected (with the reject reason).

Run from the worktree root: ``.venv/bin/python tests/benchgen/heldout_abdomen.py [heldout_abdomen_ct_b.yaml]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

HERE = Path(__file__).parents[1] / "data" / "benchgen" / "heldout"


def load(name: str = "heldout_abdomen_ct.yaml"):
    data = yaml.safe_load((HERE / name).read_text())
    return data, str(HERE / data["schema"])


def score(verbose: bool = True, name: str = "heldout_abdomen_ct.yaml") -> dict:
    """Every figure of one held-out set (set A by default; set B: ``heldout_abdomen_ct_b.yaml``)
    as a dict, printed when ``verbose``."""
    from medscope.benchgen import extract
    from medscope.benchgen.questions import grounded
    from medscope.benchgen.schema import load_schema

    data, schema_path = load(name)
    schema = load_schema(schema_path)
    with_reasons = getattr(extract, "extract_with_rejects", None)
    fig = {"keys_right": 0, "keys_wrong_value": 0, "keys_not_stated": 0, "settled_no_question": 0,
           "fields_settled": 0, "fields_total": 0, "planted_not_asserted": 0, "planted_not_asserted_kept": 0,
           "planted_asserted": 0, "planted_asserted_rejected": 0, "errors": []}
    for rid, r in data["reports"].items():
        if with_reasons:
            got, rejected = with_reasons(schema, r["findings"], r["impression"])
        else:
            got, rejected = extract.extract_rules(schema, r["findings"], r["impression"]), {}
        for f in schema.fields:
            want = r["keys"][f.name]
            value = got.get(f.name, (None, ""))[0]
            fig["fields_total"] += 1
            fig["fields_settled"] += want is not None
            if value is None:
                if want is not None:
                    fig["settled_no_question"] += 1
                    fig["errors"].append((rid, f.name, "no question", want, rejected.get(f.name, "")))
            elif want is None:
                fig["keys_not_stated"] += 1
                fig["errors"].append((rid, f.name, "key not stated", value, got[f.name][1]))
            elif value != want:
                fig["keys_wrong_value"] += 1
                fig["errors"].append((rid, f.name, f"wrong key (want {want})", value, got[f.name][1]))
            else:
                fig["keys_right"] += 1
        for question, options, answer, verdict, why in r["planted"]:
            q = {"question": question, "options": list(options), "answer": answer, "level": "perception"}
            kept, _, reason = grounded(q, r["findings"], r["impression"])
            if verdict == "assert":
                fig["planted_asserted"] += 1
                if not kept:
                    fig["planted_asserted_rejected"] += 1
                    fig["errors"].append((rid, question, f"correct rejected ({why})", options[answer], reason))
            else:
                fig["planted_not_asserted"] += 1
                if kept:
                    fig["planted_not_asserted_kept"] += 1
                    fig["errors"].append((rid, question, f"kept, not asserted ({why})", options[answer], ""))
    correct = fig["fields_settled"] + fig["planted_asserted"]
    lost = fig["settled_no_question"] + fig["planted_asserted_rejected"]
    fig["correct_questions"], fig["correct_rejected"] = correct, lost
    if verbose:
        print(f"held-out set {name} ({data['schema']}): {len(data['reports'])} reports, {fig['fields_total']} schema fields "
              f"({fig['fields_settled']} settled by the report), {fig['planted_asserted']} planted correct and "
              f"{fig['planted_not_asserted']} planted not-asserted questions")
        print(f"  schema keys: right {fig['keys_right']}, wrong value {fig['keys_wrong_value']}, "
              f"key the report does not state {fig['keys_not_stated']}; settled fields with no question "
              f"{fig['settled_no_question']} of {fig['fields_settled']}")
        print(f"  planted: kept though not asserted {fig['planted_not_asserted_kept']} of "
              f"{fig['planted_not_asserted']}; correct rejected {fig['planted_asserted_rejected']} of "
              f"{fig['planted_asserted']}")
        print(f"  wrong keys (wrong value + not stated) {fig['keys_wrong_value'] + fig['keys_not_stated']}; "
              f"kept not asserted {fig['planted_not_asserted_kept']}; correct questions rejected or never asked "
              f"{lost} of {correct} = {lost / correct:.3f}")
        for e in fig["errors"]:
            print("   ", " | ".join(str(x) for x in e))
    return fig


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parents[2]))
    score(name=sys.argv[1] if len(sys.argv) > 1 else "heldout_abdomen_ct.yaml")
