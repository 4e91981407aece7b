"""A deterministic stand-in for the question-writing LLM, for a loopback OpenAI-wire server.

``author_responder`` answers benchgen's two generation prompts the way a careful but imperfect
model would: from the report it finds in the prompt it writes report-derived questions whose
answers the report states (location, size, diagnosis, gallbladder, spleen), plus one
hallucinated item the report does not support and one malformed item, so the structural and
report-grounded checks have something to discard. Asked to extract fields, it returns the JSON
the schema's deterministic rules give (so the LLM-extractor path can be compared with rules).
Asked to verify a key (``build --verify llm``), it says SUPPORTED exactly when the key is the
answer it derives itself from the report.
"""

from __future__ import annotations

import json
import re

from medscope.benchgen.extract import extract_rules, sentences
from medscope.benchgen.schema import Schema

SIZE_DISTRACTORS = ("0.5 cm", "1.2 cm", "3.8 cm", "6.5 cm", "9.0 cm")


def report_of(prompt: str) -> tuple[str, str]:
    """The (findings, impression) sections of a prompt that ends with the report.

    Parameters
    ----------
    prompt : str
        A benchgen prompt ending in ``FINDINGS:`` ... ``IMPRESSION:`` ....

    Returns
    -------
    findings : str
        The findings text; "" when the prompt has no such report.
    impression : str
        The impression text; "" when the prompt has no such report.
    """
    m = re.search(r"FINDINGS:\n(.*?)\n\nIMPRESSION:\n(.*)\Z", prompt, flags=re.S)
    return (m.group(1), m.group(2)) if m else ("", "")


def _q(question, options, answer, level, evidence, subcategory=""):
    return {"question": question, "options": list(options), "answer": answer, "level": level,
            "subcategory": subcategory, "evidence": evidence}


def _sizes(correct: str) -> list[str]:
    return [correct] + [d for d in SIZE_DISTRACTORS if d != correct][:3]


def write_questions(findings: str, impression: str) -> list[dict]:
    """Questions about a phantom-style report (see ``medscope.benchgen.phantom.write_report``).

    Parameters
    ----------
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.

    Returns
    -------
    list of dict
        Question items (``question``, ``options``, ``answer`` as an option index, ``level``,
        ``subcategory``, ``evidence``), including one hallucinated and one malformed item.
    """
    sents = sentences(findings) + sentences(impression)
    liver = next((s for s in sents if s.startswith("LIVER:")), "")
    out = []
    m = re.search(r"in (both hepatic lobes|the right hepatic lobe|the left hepatic lobe)", liver)
    size = re.search(r"(\d+\.\d) cm", liver)
    if m and size:
        where = m.group(1).replace("the ", "")
        out.append(_q("Where in the liver are the hypoattenuating lesions located?",
                      ["right hepatic lobe", "left hepatic lobe", "both hepatic lobes", "caudate lobe"],
                      ["right hepatic lobe", "left hepatic lobe", "both hepatic lobes"].index(where),
                      "perception", liver))
        out.append(_q("What is the size of the largest liver lesion?", _sizes(f"{size.group(1)} cm"), 0,
                      "characterization", liver))
        imp = next((s for s in sents if "suspicious for" in s), "")
        out.append(_q("What are the liver lesions suspicious for?",
                      ["metastatic disease", "simple cysts", "hemangiomas", "hepatic abscesses"], 0, "diagnosis", imp))
    else:
        no = next((s for s in sents if "No focal hepatic lesion" in s), "")
        out.append(_q("Is there a focal liver lesion?", ["Yes", "No"], 1, "perception", no))
    gb = next((s for s in sents if s.startswith("GALLBLADDER:")), "")
    if gb:
        state = "surgically absent" if "absent" in gb.lower() else "unremarkable"
        opts = ["unremarkable", "surgically absent", "distended with stones", "wall thickening"]
        out.append(_q("What is the appearance of the gallbladder?", opts, opts.index(state), "perception", gb))
    spleen = next((s for s in sents if s.startswith("SPLEEN:")), "")
    sm = re.search(r"(\d+\.\d) cm", spleen)
    if sm:
        out.append(_q("What is the craniocaudal length of the spleen?", _sizes(f"{sm.group(1)} cm"), 0,
                      "characterization", spleen))
    # a hallucination the grounded check must discard: the report calls the spleen normal
    out.append(_q("Is there splenomegaly?", ["Yes", "No"], 0, "perception", spleen))
    # a malformed item the structural check must discard: one option only
    out.append(_q("Which kidney shows hydronephrosis?", ["neither"], 0, "perception", ""))
    return out


def verify_key(text: str, findings: str, impression: str) -> str:
    """The verifier's reply: SUPPORTED when the proposed answer is the one this author derives
    from the report for that question, else NOT SUPPORTED (a question it would not ask too).

    Parameters
    ----------
    text : str
        The verification prompt, with ``QUESTION:`` and ``PROPOSED ANSWER:`` lines.
    findings : str
        The report's findings section.
    impression : str
        The report's impression section.

    Returns
    -------
    str
        "VERDICT: SUPPORTED ..." or "VERDICT: NOT SUPPORTED ...", a reason on the second line.
    """
    question = text.split("QUESTION:", 1)[1].split("\n", 1)[0].strip()
    answer = text.split("PROPOSED ANSWER:", 1)[1].split("\n", 1)[0].strip()
    own = {q["question"]: q["options"][q["answer"]] for q in write_questions(findings, impression)
           if len(q["options"]) > 1}
    if own.get(question) == answer:
        return "VERDICT: SUPPORTED\nThe report states it."
    return "VERDICT: NOT SUPPORTED\nThe report does not state this answer to this question."


def author_responder(schema: Schema | None = None):
    """A FakeProvider responder answering benchgen's question and extraction prompts.

    Parameters
    ----------
    schema : Schema or None, optional
        The extraction schema; without one, extraction prompts get the refusal reply.

    Returns
    -------
    callable
        ``respond(text, images) -> str`` for ``FakeProvider``.
    """

    def respond(text: str, images: int) -> str:
        findings, impression = report_of(text)
        if "PROPOSED ANSWER:" in text:  # the verification call (benchgen.verification)
            return verify_key(text, findings, impression)
        if '"questions"' in text:
            return "```json\n" + json.dumps({"questions": write_questions(findings, impression)}) + "\n```"
        if "fill in each field" in text and schema is not None:
            got = extract_rules(schema, findings, impression)
            obj = {f.name: (got[f.name][0] if f.name in got else None) for f in schema.fields}
            obj["evidence"] = {k: v[1] for k, v in got.items()}
            return json.dumps(obj)
        return "I cannot help with that."

    return respond
