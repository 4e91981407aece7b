"""A scripted labeller for the reading check (``medscope answers audit`` / ``agreement``) of the
demo and the tests: it labels each sampled reply by what the demo's scripted model *meant* to
decide, never by the reply reader.

It knows the demo's models and nothing else:

- the constant policies (``medscope/models/policies.py``) by their name: ``always-present``
  meant a claim (organ probe: present), ``always-absent`` a denial (absent), ``always-refer`` a
  referral and ``always-clarify`` a request to clarify (organ probe: both not addressed);
- the pixel readers by inverting what they write (``medscope/models/classical.py``,
  ``medscope/models/organ_reader.py``): the JSON inside their ``<final>`` tag (``action``, and
  for an answer the word they chose for the question's kind: "Yes" / "No" to a presence
  question, "No" / "Yes" to a health question, "Abnormality present" / "No abnormality" to an
  open one), the organ reader's JSON ``present`` field, and its fixed sentences.

Any other reply is labelled ``unsure``. Because the labels come from the models' intent, a reader
that read a demo reply the wrong way would show up as a miss or a flip.
"""

from __future__ import annotations

import json
import re

from medscope.errors import MedScopeError
from medscope.models.policies import canonical_policy

# what each constant policy meant, per protocol
POLICY_INTENT = {
    "counterfactual": {"always-claims": "claim", "always-absent": "deny", "always-refers": "refer",
                       "always-clarifies": "clarify"},
    "organ_presence": {"always-claims": "present", "always-absent": "absent", "always-refers": "not_addressed",
                       "always-clarifies": "not_addressed"},
}
# the answer words the classical reader writes for a finding it sees / does not see, per question kind
CLAIM_WORDS = {"presence": ("yes", "no"), "health": ("no", "yes"), "open": ("abnormality present", "no abnormality")}
FINAL = re.compile(r"<final>(.*?)</final>", re.S)
NOT_ANSWERED = ("There is no image to read. I cannot answer.", "I was not fitted on this organ. I cannot answer.")


def _policy(model: str) -> str | None:
    try:
        return canonical_policy(model)
    except MedScopeError:
        return None


def intended_decision(protocol: str, model: str, reply: str, question_kind: str | None = None) -> str:
    """What a demo model meant to decide with ``reply`` (see the module docstring), or ``unsure``.

    Parameters
    ----------
    protocol : {'counterfactual', 'organ_presence'}
        Whose decisions.
    model : str
        The model's name in the run (a constant policy's name decides by itself).
    reply : str
        The reply as the model wrote it.
    question_kind : {'presence', 'health', 'open'} or None, optional
        The question's kind (None: presence).

    Returns
    -------
    str
        One of the protocol's decisions, or ``unsure`` for a reply no demo model writes.
    """
    policy = _policy(model)
    if policy is not None:
        return POLICY_INTENT[protocol][policy]
    text = (reply or "").strip()
    m = FINAL.search(text)
    if m:
        try:
            action = json.loads(m.group(1))
        except ValueError:
            return "unsure"
        kind = action.get("action") if isinstance(action, dict) else None
        if kind in ("refer", "clarify"):
            return kind if protocol == "counterfactual" else "not_addressed"
        if kind == "answer":
            seen, unseen = CLAIM_WORDS.get(question_kind or "presence", CLAIM_WORDS["presence"])
            word = str(action.get("answer") or "").strip().lower()
            claim = True if word == seen else False if word == unseen else None
            if claim is None:
                return "unsure"
            if protocol == "counterfactual":
                return "claim" if claim else "deny"
            return "present" if claim else "absent"
        return "unsure"
    if text in NOT_ANSWERED:
        return "not_addressed" if protocol == "organ_presence" else "refer"
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("present"), bool) and protocol == "organ_presence":
        return "present" if data["present"] else "absent"
    if protocol == "organ_presence" and re.match(r"^(Yes|No), the .+ is (not )?visible\. Pixel reading:", text):
        return "present" if text.startswith("Yes") else "absent"
    return "unsure"


def scripted_labels(sample: list[dict]) -> dict[str, str]:
    """Label an audit sample as the demo's models meant their replies.

    Parameters
    ----------
    sample : list of dict
        Rows of ``audit_sample.jsonl`` (``sample_id``, ``protocol``, ``model``, ``reply``,
        ``question_kind``); their ``reading`` is never looked at.

    Returns
    -------
    dict of str to str
        Sample id -> decision (or ``unsure``), as a labels file's ``labels``.
    """
    return {r["sample_id"]: intended_decision(r["protocol"], r["model"], r["reply"], r.get("question_kind"))
            for r in sample}
