"""The judge of extract-then-judge (paired-modality paper §4.2, Appendix A): FP and FN labels of one
photo-findings text against the photograph's ground-truth caption, under one rubric.

- ``ModelJudge``: any ChatModel (medscope.models registry: OpenAI, Anthropic, Gemini, local...)
  asked with the versioned prompt + rubric (``data/judge.yaml``); its JSON reply is read by
  :func:`read_verdict`.
- ``RuleJudge``: a deterministic judge for tests and the demo (no service): a finding is
  reported when one of its terms is affirmed (not negated in its clause); FP when the text
  affirms an abnormality term of the manifest's vocabulary that is not this photograph's, or,
  on a photograph with no significant finding, a generic abnormality; FN when a significant
  finding is not reported. It cannot recognise a hallucination the manifest never names, so it
  lists every asserted statement it could not verify (``unverified``) beside its labels.
  ``rule_judge_responder`` serves it from a loopback provider.
- ``judge_all``: every request keyed by (judge identity, prompt version, full prompt text);
  replies are stored as ``<cache>/<key>.json`` and reused, so a rescoring or a resumed run
  never asks twice.
"""

from __future__ import annotations

import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from medscope.io import safe_text, storage
from medscope.answers.matching import mention_statuses
from medscope.models.base import ChatModel, Decoding, Message, PermanentModelError, TransientModelError
from medscope.seeding import stable_hash

GENERIC_ABNORMALITY = ("abnormality", "abnormalities", "abnormal finding", "abnormal findings", "pathology",
                       "pathologic finding", "lesion", "lesions")


@lru_cache(maxsize=1)
def judge_spec() -> dict:
    """The judge's versioned prompt spec, ``data/judge.yaml`` of this package (read once).

    Returns
    -------
    dict
        ``version`` (the prompt version, part of every request key), ``rubric`` and ``template``.

    References
    ----------
    .. [1] paired-modality paper, §4.2, Appendix A.
    """
    return yaml.safe_load(resources.files(__package__).joinpath("data/judge.yaml").read_text())


def judge_prompt(description: str, caption: str, findings: list[tuple[str, list[str]]]) -> str:
    """The judge's prompt for one text: rubric, caption, significant findings (with synonyms).

    Parameters
    ----------
    description : str
        The extracted photo findings (``extraction.extract_photo_findings``).
    caption : str
        The photograph's ground-truth caption.
    findings : list of tuple of (str, list of str)
        The photograph's significant findings: name and its lower-case terms (the name among them);
        the other terms are listed as synonyms.

    Returns
    -------
    str
        ``template`` of :func:`judge_spec` filled with the rubric, caption, findings ('- none' when there
        are none) and description.

    References
    ----------
    .. [1] paired-modality paper, Appendix A.
    """
    spec = judge_spec()
    lines = [f"- {name}" + (f" (also: {', '.join(t for t in terms if t != name.lower())})"
                            if any(t != name.lower() for t in terms) else "") for name, terms in findings]
    return spec["template"].format(rubric=spec["rubric"].strip(), caption=caption.strip(),
                                   findings="\n".join(lines) or "- none", description=description.strip())


def parse_judge_prompt(text: str) -> tuple[str, str, list[tuple[str, list[str]]]]:
    """(description, caption, findings) back from a judge prompt: what a loopback judge reads.

    Parameters
    ----------
    text : str
        A prompt written by :func:`judge_prompt`.

    Returns
    -------
    description : str
        The model's photo findings ('' when the block is not found).
    caption : str
        The ground-truth caption ('' when not found).
    findings : list of tuple of (str, list of str)
        Each listed finding's name and its lower-case terms (the name, then the synonyms); empty for
        '- none'.
    """
    caption = re.search(r'GROUND-TRUTH CAPTION:\s*"""(.*?)"""', text, re.S)
    desc = re.search(r'MODEL\'S PHOTO FINDINGS:\s*"""(.*?)"""', text, re.S)
    block = re.search(r"CLINICALLY SIGNIFICANT FINDINGS IN THE PHOTOGRAPH:\s*\n(.*?)\nMODEL'S", text, re.S)
    findings = []
    for line in (block.group(1) if block else "").splitlines():
        m = re.match(r"\s*-\s*(.+?)(?:\s*\(also:\s*(.*)\))?\s*$", line)
        if m and m.group(1).strip().lower() != "none":
            name = m.group(1).strip()
            extra = [t.strip().lower() for t in (m.group(2) or "").split(",") if t.strip()]
            findings.append((name, [name.lower(), *extra]))
    return (desc.group(1) if desc else ""), (caption.group(1) if caption else ""), findings


@dataclass(frozen=True)
class Verdict:
    fp: bool | None
    fn: bool | None
    raw: str = ""
    error: str | None = None  # why no labels could be read
    # asserted photo findings the judge could not match to anything it knows (a rule judge's
    # vocabulary and the caption); None when the judge does not say (a model judge)
    unverified: tuple[str, ...] | None = None


def read_verdict(text: str) -> Verdict:
    """FP / FN from a judge reply: the first JSON object with both keys (fences, prose around it
    tolerated), else ``FALSE POSITIVE: yes`` style lines; otherwise an error, never a guess.

    Parameters
    ----------
    text : str
        The judge's reply.

    Returns
    -------
    Verdict
        ``fp`` and ``fn`` with the reply as ``raw`` (and ``unverified`` when the JSON lists it); both None
        with ``error`` set when no labels can be read.
    """
    body = text or ""
    for m in re.finditer(r"\{[^{}]*\}", body, re.S):
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        keys = {k.lower().replace(" ", "_"): v for k, v in obj.items()}
        fp, fn = keys.get("false_positive", keys.get("fp")), keys.get("false_negative", keys.get("fn"))
        if isinstance(fp, bool) and isinstance(fn, bool):
            extra = keys.get("unverified")
            return Verdict(fp, fn, body, unverified=tuple(map(str, extra)) if isinstance(extra, list) else None)
    got = {}
    for name, key in (("false[ _-]?positive|fp", "fp"), ("false[ _-]?negative|fn", "fn")):
        m = re.search(rf"\b(?:{name})\b\W{{0,4}}(yes|no|true|false)\b", body, re.I)
        if m:
            got[key] = m.group(1).lower() in ("yes", "true")
    if len(got) == 2:
        return Verdict(got["fp"], got["fn"], body)
    return Verdict(None, None, body, "judge reply has no FP / FN labels")


def affirmed(text: str, term: str) -> bool:
    """Whether ``term`` is reported in ``text`` at least once: a mention the shared reply reader
    (medscope.answers) reads as affirmed or possible, not negated, hypothetical or
    historical ("no vesicles", "acne rather than vesicles", "look for vesicles" do not report them).

    Parameters
    ----------
    text : str
        The photo-findings text.
    term : str
        A finding term.

    Returns
    -------
    bool
        True when some mention of ``term`` is affirmed or possible.
    """
    return any(st in ("affirmed", "possible") for st in mention_statuses(text, term))


_NOT_A_FINDING = re.compile(r"\b(?:no|not|none|without|absent|negative|normal|unremarkable|nothing|"
                            r"cannot|can't|unable|unclear)\b", re.IGNORECASE)
_FILLER = frozenset("""with some there this that these those which appears appear seen visible noted present
presence area areas region skin photo photograph image picture shows showing shown patient person also
about around along over under into onto from their mild small large several multiple scattered
few single left right upper lower side surface overall otherwise keeping""".split())


def _stem(word: str) -> str:
    return word.lower()[:5]


def unverified_statements(description: str, known_terms: list[str], caption: str) -> list[str]:
    """Statements of ``description`` that assert a finding the rule judge cannot check: not
    negated or "normal", naming no known finding term, and sharing no content word with the
    caption (paired-modality paper §4.2: a hallucination need not be a finding named anywhere else). A
    non-empty list means the offline judgement may have missed a false positive.

    Parameters
    ----------
    description : str
        The photo-findings text, split into statements at sentence marks, commas, bullets and line breaks.
    known_terms : list of str
        Terms the judge can check (its vocabulary, this photograph's finding terms, the generic
        abnormality words).
    caption : str
        The photograph's ground-truth caption.

    Returns
    -------
    list of str
        The unverifiable statements, in order, list marks stripped.

    References
    ----------
    .. [1] paired-modality paper, §4.2.
    """
    caption_stems = {_stem(w) for w in re.findall(r"[a-z]{3,}", caption.lower())}
    out = []
    for clause in re.split(r"[.;!?\n,•]+", description):
        text = re.sub(r"^[\s*\-\d)]+", "", clause).strip()
        low = text.lower()
        if not text or _NOT_A_FINDING.search(low) or any(t in low for t in known_terms if t):
            continue
        content = [w for w in re.findall(r"[a-z]{4,}", low) if w not in _FILLER]
        # a statement sharing a content word with the caption describes what is there (the
        # judge's terms decide FP / FN); one sharing none is a claim it cannot check
        if content and not any(_stem(w) in caption_stems for w in content):
            out.append(text)
    return out


class RuleJudge:
    """Deterministic judge (see the module docstring). ``vocabulary``: every significant-finding
    term of the manifest; ``generic_fp``: count an unnamed "abnormality" on a photograph without
    significant findings as FP (a stricter second rule judge sets it False)."""

    kind = "rule"

    def __init__(self, vocabulary: list[str], generic_fp: bool = True, name: str | None = None):
        self.vocabulary = sorted({v.lower() for v in vocabulary})
        self.generic_fp = generic_fp
        self.name = name or ("rule" if generic_fp else "rule-named-only")

    def identity(self) -> str:
        return f"rule:{self.name}:generic_fp={self.generic_fp}:{stable_hash(*self.vocabulary)}"

    def label(self, description: str, findings: list[tuple[str, list[str]]], caption: str = "") -> Verdict:
        own = {t for _, terms in findings for t in terms}
        # a bare "abnormality" is the generic claim this judge already weighs (generic_fp), not an unnamed finding
        unverified = unverified_statements(description, [*self.vocabulary, *own, *GENERIC_ABNORMALITY], caption)
        reported = [any(affirmed(description, t) for t in terms) for _, terms in findings]
        fn = not all(reported)
        invented = [t for t in self.vocabulary if t not in own and not any(t in o or o in t for o in own)
                    and affirmed(description, t)]
        generic = self.generic_fp and not findings and any(affirmed(description, g) for g in GENERIC_ABNORMALITY)
        fp = bool(invented) or generic
        why = f"invented {invented}" if invented else ("generic abnormality claimed" if generic else "none invented")
        raw = json.dumps({"false_positive": fp, "false_negative": fn, "rationale": f"{why}; reported {reported}",
                          "unverified": unverified})
        return Verdict(fp, fn, raw, unverified=tuple(unverified))

    def ask(self, prompt: str) -> str:
        description, caption, findings = parse_judge_prompt(prompt)
        return self.label(description, findings, caption).raw


def rule_judge_responder(vocabulary: list[str], generic_fp: bool = True):
    """A ``FakeProvider`` responder that judges each request with a RuleJudge: a loopback judge
    server speaking a provider's wire format, so the demo exercises the real adapter path.

    Parameters
    ----------
    vocabulary : list of str
        Every significant-finding term of the manifest.
    generic_fp : bool, optional
        Count a generic "abnormality" on a photograph without significant findings as FP (default True).

    Returns
    -------
    callable
        ``(text, images) -> str``: the RuleJudge's JSON reply to the judge prompt ``text``; images ignored.
    """
    judge = RuleJudge(vocabulary, generic_fp)
    return lambda text, images: judge.ask(text)


class ModelJudge:
    """A judge behind any ChatModel. Transient errors (429, 5xx, timeouts) are retried with
    backoff up to ``max_attempts``; the sampling settings are the entry's (default: provider's)."""

    kind = "model"

    def __init__(self, model: ChatModel, decoding: Decoding, identity: str, max_attempts: int = 6,
                 backoff_s: float = 0.5):
        self.model = model
        self.name = model.name
        self.decoding = decoding
        self._identity = identity
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s

    def identity(self) -> str:
        return self._identity

    def ask(self, prompt: str) -> str:
        for attempt in range(1, self.max_attempts + 1):
            try:
                return self.model.complete([Message.text("user", prompt)], self.decoding).text
            except TransientModelError as err:
                if attempt == self.max_attempts:
                    raise
                time.sleep(err.retry_after_s if err.retry_after_s is not None else self.backoff_s * 2 ** (attempt - 1))
        raise AssertionError("unreachable")


def judge_key(judge, prompt: str) -> str:
    """The request key of one judge call: who judges, which prompt version, which text.

    Parameters
    ----------
    judge : RuleJudge or ModelJudge
        The judge (its ``identity()``).
    prompt : str
        The full judge prompt.

    Returns
    -------
    str
        24-character hash of the judge identity, the prompt version and the prompt.
    """
    return stable_hash(judge.identity(), judge_spec()["version"], prompt, length=24)


def judge_all(judge, prompts: list[str], cache_uri: str, workers: int = 4) -> tuple[list[Verdict], dict]:
    """Verdicts for ``prompts`` in order; cached replies are reused, new ones stored as they come.

    Parameters
    ----------
    judge : RuleJudge or ModelJudge
        The judge; a transient or permanent model error fails that request only.
    prompts : list of str
        Judge prompts (:func:`judge_prompt`); repeated prompts are asked once.
    cache_uri : str
        Folder of the cached replies, ``<key>.json`` each (written once).
    workers : int, optional
        Concurrent requests (default 4; at least 1).

    Returns
    -------
    verdicts : list of Verdict
        One per prompt, in order; a failed request gives a Verdict with no labels and its error.
    counts : dict of str to int
        ``cached`` (distinct keys already stored), ``requested`` and ``failed``.
    """
    keys = [judge_key(judge, p) for p in prompts]
    todo = {k: p for k, p in zip(keys, prompts) if not storage.exists(storage.join(cache_uri, f"{k}.json"))}
    counts = {"cached": len(set(keys)) - len(todo), "requested": 0, "failed": 0}
    errors: dict[str, str] = {}

    def one(item):
        key, prompt = item
        try:
            reply = judge.ask(prompt)
        except (TransientModelError, PermanentModelError) as err:
            return key, None, str(err)[:300]
        storage.write_once(storage.join(cache_uri, f"{key}.json"), json.dumps(
            {"key": key, "judge": judge.name, "prompt_version": judge_spec()["version"], "reply": reply}).encode())
        return key, reply, None

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for key, reply, err in pool.map(one, todo.items()):
            counts["requested"] += 1
            if err:
                counts["failed"] += 1
                errors[key] = err
    if counts["failed"]:
        print(f"  judge {judge.name}: {counts['failed']} requests failed (rerun to retry them)", file=sys.stderr)
    out = []
    for key in keys:
        if key in errors:
            out.append(Verdict(None, None, "", errors[key]))
            continue
        cached = safe_text.read_json_object(storage.join(cache_uri, f"{key}.json"))
        out.append(read_verdict(cached["reply"]))
    return out, counts
