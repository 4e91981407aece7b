"""Generate -> review -> build: how an institution makes its own pair set (paired-modality paper §3.3).

- ``generate_round``: for every photograph slot (condition x matched / mismatched) still without
  an approved or pending candidate, generate ``candidates_per_round`` new candidates. A slot
  whose last candidate was sent back with ``retry`` gets a new attempt whose prompt carries the
  reviewer's feedback and which is an edit of that candidate (the paper's strategies 1 and 3).
  "Same person, other finding": with ``shared_base`` both photographs are edits of one base
  image of the subject; with ``edit_from_matched`` the mismatched photograph is an edit of the
  approved matched one (it waits for that approval).
- The review file (``review.yaml``) lists every candidate with ``decision: pending``; a person
  sets ``approve``, ``reject`` or ``retry`` (with ``feedback``), by hand or with
  ``medscope pairs review``. Nothing is ever deleted from it: it is the review history.
- ``build``: only approved photographs enter the manifest (the latest approved per slot), with
  their prompt, seed, generator settings and the slot's whole review history; conditions
  lacking an approved matched or mismatched photograph are listed as incomplete.
"""

from __future__ import annotations

import yaml

from medscope.io import bounded, guarded, storage
from medscope.errors import MedScopeError
from medscope.protocols.paired_modality import draw
from medscope.pairs.spec import ConditionPlan, PairsSpec, RadiographSpec, demographics_phrase, subject_demographics
from medscope.images import encode_png
from medscope.protocols.paired_modality import tables
from medscope.protocols.paired_modality.manifest import PHOTO_TYPES, slug

DECISIONS = ("pending", "approve", "reject", "retry")


def load_review(work: str) -> dict:
    """The review file of a work folder, or an empty review when there is none yet.

    Parameters
    ----------
    work : str
        The work folder (path or storage URI) holding ``review.yaml``.

    Returns
    -------
    dict
        The review: ``candidates`` (a list of candidate dicts, in the order made) and ``bases`` (condition
        slug -> the shared base image's record); both present, empty when the file has none.

    Raises
    ------
    MedScopeError
        When the file is not valid YAML (a key twice included), its candidates are not a list of
        entries, or a candidate's ``decision`` is not one of ``DECISIONS``; the message names the file.
    """
    uri = storage.join(work, tables.REVIEW)
    if not storage.exists(uri):
        return {"candidates": [], "bases": {}}
    from medscope import config as cfgmod

    # a reviewer edits this file by hand: its errors name it (bad YAML, a key twice, a list at the top)
    data = cfgmod.load_yaml(uri)
    data["candidates"] = data.get("candidates") or []
    data["bases"] = data.get("bases") or {}
    if not isinstance(data["candidates"], list) or not all(isinstance(c, dict) for c in data["candidates"]):
        raise MedScopeError(f"{uri}: candidates must be a list of candidate entries (id, decision, ...)")
    if not isinstance(data["bases"], dict):
        raise MedScopeError(f"{uri}: bases must be a mapping of condition -> base image record")
    for c in data["candidates"]:
        if c.get("decision") not in DECISIONS:
            raise MedScopeError(f"{uri}: candidate {c.get('id')} has decision {c.get('decision')!r}; "
                                f"use one of {', '.join(DECISIONS)}")
    return data


def save_review(work: str, review: dict) -> None:
    """Write the review file (a header saying how to fill it in, then the review as YAML).

    Parameters
    ----------
    work : str
        The work folder (path or storage URI); ``review.yaml`` there is replaced.
    review : dict
        The review, as ``load_review`` returns it.
    """
    header = ("# Review file: set each candidate's decision to approve, reject or retry (retry: say what to\n"
              "# change in feedback). `medscope pairs generate` makes new attempts; `build` takes approved ones.\n")
    storage.write_text(storage.join(work, tables.REVIEW), header + yaml.safe_dump(review, sort_keys=False, width=110))


def _slot(review: dict, condition: str, photo_type: str) -> list[dict]:
    return [c for c in review["candidates"] if c["condition"] == condition and c["photo_type"] == photo_type]


def approvers(c: dict) -> list[str]:
    """The distinct reviewers who approved a candidate (an older review file, from before approvals were
    kept per reviewer, holds one ``reviewer`` per decision).

    Parameters
    ----------
    c : dict
        A candidate of the review file.

    Returns
    -------
    list of str
        The reviewers in first-approval order without repeats: its ``approvals``, else its one
        ``reviewer`` ('unnamed' when blank) if its decision is 'approve', else none.
    """
    names = c.get("approvals") or ([c.get("reviewer") or "unnamed"] if c["decision"] == "approve" else [])
    return list(dict.fromkeys(names))


def _approved(cands: list[dict], need: int = 1) -> dict | None:
    """The latest candidate approved by at least ``need`` different reviewers (paired-modality paper §3.3:
    each question approved by 1-3 physicians)."""
    ok = [c for c in cands if c["decision"] == "approve" and len(approvers(c)) >= need]
    return ok[-1] if ok else None


def _base(plan: ConditionPlan, generator, review: dict, work: str, who: str = "") -> tuple[bytes | None, str | None]:
    """The shared base image of a condition (generated once, recorded in the review file)."""
    if plan.strategy != "shared_base" or generator.name == "procedural":
        return None, None  # the procedural subject is already fixed by the condition's seed
    key = slug(plan.condition)
    rec = review["bases"].get(key)
    if rec is None:
        prompt = f"{plan.subject}. {who}. Normal skin, no visible abnormality."
        png, meta = generator.generate(prompt, plan.seed, None, None, plan.region)
        path = f"{tables.CANDIDATES}/{key}/base.png"
        storage.write_bytes(storage.join(work, path), png)
        rec = review["bases"][key] = {"image": path, "prompt": prompt, "seed": plan.seed, "generator": generator.name,
                                       "meta": meta}
    return storage.read_bytes(storage.join(work, rec["image"])), f"base:{key}"


def _reference(photo, spec_dir: str) -> bytes | None:
    """The reference image of a photograph (paired-modality paper §3.3 strategy 2), or None."""
    if not photo.reference:
        return None
    ref = photo.reference
    uri = ref if ("://" in ref or ref.startswith("/")) else storage.join(spec_dir, ref)
    if not storage.exists(uri):
        raise MedScopeError(f"reference image {uri} does not exist")
    return storage.read_bytes(uri)


def generate_round(spec: PairsSpec, work: str, generator, spec_dir: str = ".") -> dict:
    """One round of candidates (see the module docstring); returns counts. ``spec_dir``: where
    the spec's relative paths (reference images) start.

    Parameters
    ----------
    spec : PairsSpec
        The construction spec.
    work : str
        The work folder (path or storage URI): ``review.yaml`` and the candidate PNGs; the review file
        is rewritten with the new candidates.
    generator : object
        A generator of ``medscope.pairs.generators`` (``generate``, ``name``, ``seeded``).
    spec_dir : str, optional
        Where the spec's relative paths (reference images) start.

    Returns
    -------
    dict
        ``generated`` (candidates made), ``pending_review`` (pending candidates in the file),
        ``waiting_for_matched`` (edit_from_matched slots whose matched photograph is not approved yet),
        ``retries_waiting_on_pending`` (a list of {retry, pending}: retries held back by a pending
        candidate in their slot) and ``review_file`` (its URI).

    Raises
    ------
    MedScopeError
        When the review file holds an unknown decision, a reference image does not exist, or the
        generator fails.

    References
    ----------
    .. [1] paired-modality paper, §3.3.
    """
    review = load_review(work)
    made, waiting, held = 0, 0, []
    for plan in spec.conditions:
        demo = subject_demographics(plan, spec.demographics)
        for pt in PHOTO_TYPES:
            cands = _slot(review, plan.condition, pt)
            # a slot with an approval (complete or awaiting more reviewers) or a pending candidate waits
            if any(c["decision"] in ("pending", "approve") for c in cands):
                # a retry asked for in a slot whose sibling is still pending waits: said, not dropped
                held += [{"retry": c["id"], "pending": [p["id"] for p in cands if p["decision"] == "pending"]}
                         for c in cands if c["decision"] == "retry" and not c.get("retried")
                         and not any(a["decision"] == "approve" for a in cands)]
                continue
            photo = getattr(plan, pt)
            retry = next((c for c in reversed(cands) if c["decision"] == "retry" and not c.get("retried")), None)
            init, parent, subject = None, None, None
            if retry is not None:
                init, parent = storage.read_bytes(storage.join(work, retry["image"])), retry["id"]
                subject = retry.get("subject")  # an edit of that candidate: its person stays
            elif plan.strategy == "shared_base":
                init, parent = _base(plan, generator, review, work, demographics_phrase(demo))
                subject = f"base:{slug(plan.condition)}:seed{plan.seed}" if parent else None
            elif plan.strategy == "edit_from_matched" and pt == "mismatched":
                # only an approved matched photograph: the person must be the one who stays
                source = _approved(_slot(review, plan.condition, "matched"), spec.approvals_required)
                if source is None:
                    waiting += 1
                    continue
                init, parent = storage.read_bytes(storage.join(work, source["image"])), source["id"]
                subject = source.get("subject")
            feedback = [c["feedback"] for c in cands if c.get("feedback")]
            prompt = f"{plan.subject}. {demographics_phrase(demo)}. {photo.prompt}" + "".join(f"\nReviewer feedback: {f}" for f in feedback)
            attempt = 1 + max((c["attempt"] for c in cands), default=0)
            for k in range(spec.candidates_per_round):
                seed = plan.seed + 1000 * (attempt - 1) + k
                png, meta = generator.generate(prompt, seed, photo, init, plan.region, subject_seed=plan.seed,
                                               reference_png=_reference(photo, spec_dir))
                cid = f"{slug(plan.condition)}:{pt}:a{attempt}:{k}"
                # who is pictured: kept across retries and candidates so `pairs check` can refuse
                # a pair of two different people. A seeded text-to-image candidate is its seed's
                # person (the procedural subject is always the condition's seed); an unseeded
                # endpoint draws someone new every time.
                who = subject or (f"seed:{plan.seed if generator.name == 'procedural' else seed}" if generator.seeded
                                  else f"generated:{cid}")
                path = f"{tables.CANDIDATES}/{slug(plan.condition)}/{pt}-a{attempt}-{k}.png"
                storage.write_bytes(storage.join(work, path), png)
                review["candidates"].append({
                    "id": cid, "condition": plan.condition, "photo_type": pt, "attempt": attempt, "image": path,
                    "prompt": prompt, "seed": seed if generator.seeded else None, "generator": generator.name,
                    "generator_meta": meta, "parent": parent, "subject": who, "decision": "pending", "feedback": "", "reviewer": ""})
                made += 1
            if retry is not None:
                retry["retried"] = True
    save_review(work, review)
    pending = sum(1 for c in review["candidates"] if c["decision"] == "pending")
    return {"generated": made, "pending_review": pending, "waiting_for_matched": waiting,
            "retries_waiting_on_pending": held, "review_file": storage.join(work, tables.REVIEW)}


def decide(work: str, ids: list[str], decision: str, feedback: str = "", reviewer: str = "") -> int:
    """Record a decision for candidates ``ids`` (``all-pending`` = every pending one).

    Parameters
    ----------
    work : str
        The work folder (path or storage URI) holding ``review.yaml``.
    ids : list of str
        Candidate ids, or ``["all-pending"]`` for every pending candidate.
    decision : str
        One of ``DECISIONS``: 'pending', 'approve', 'reject', 'retry'.
    feedback : str, optional
        What the next attempt should change (required with 'retry'); empty keeps a candidate's earlier
        feedback.
    reviewer : str, optional
        Who decides; an approval adds them to the candidate's ``approvals`` ('unnamed' when empty).

    Returns
    -------
    int
        The number of candidates the decision was recorded for.

    Raises
    ------
    MedScopeError
        When the decision is unknown, a retry has no feedback, or an id is not in the review file.
    """
    if decision not in DECISIONS:
        raise MedScopeError(f"decision must be one of {', '.join(DECISIONS)}")
    if decision == "retry" and not feedback:
        raise MedScopeError("a retry needs feedback: say what the next attempt should change")
    review = load_review(work)
    by_id = {c["id"]: c for c in review["candidates"]}
    chosen = [c for c in review["candidates"] if c["decision"] == "pending"] if ids == ["all-pending"] else []
    for i in ids if ids != ["all-pending"] else []:
        if i not in by_id:
            raise MedScopeError(f"no candidate {i!r} in {storage.join(work, tables.REVIEW)}")
        chosen.append(by_id[i])
    for c in chosen:
        if decision == "approve":  # approvals accumulate: one per reviewer, however often they approve
            c["approvals"] = list(dict.fromkeys([*approvers(c), reviewer or "unnamed"]))
        c.update(decision=decision, feedback=feedback or c.get("feedback", ""), reviewer=reviewer)
    save_review(work, review)
    return len(chosen)


def checked_image(uri: str) -> bytes:
    """The bytes of an image file that decodes whole (a truncated approved candidate is never
    copied into a pair set); ``bounded.InputRejected`` with the reason otherwise.

    Parameters
    ----------
    uri : str
        The image file (path or storage URI).

    Returns
    -------
    bytes
        The file's bytes, unchanged.

    Raises
    ------
    bounded.InputRejected
        When the file is over the size limit, not an image, or does not decode whole.
    """
    data = bounded.read_bounded(uri, guarded.DEFAULT_LIMITS.max_file_bytes)
    with guarded.open_image(data, guarded.DEFAULT_LIMITS, "image") as img:
        try:
            img.load()
        except Exception as err:  # Pillow raises many types for broken files
            raise bounded.InputRejected("unreadable image", guarded.pil_error(err)) from None
    return data


def _radiograph(plan: ConditionPlan, spec_dir: str, out: str) -> str:
    key = slug(plan.condition)
    if isinstance(plan.radiograph, RadiographSpec):
        rel = f"radiographs/{key}.png"
        storage.write_bytes(storage.join(out, rel), encode_png(draw.radiograph(plan.seed, pattern=plan.radiograph.phantom)))
        return rel
    src = plan.radiograph if ("://" in plan.radiograph or plan.radiograph.startswith("/")) else storage.join(spec_dir, plan.radiograph)
    if not storage.exists(src):
        raise MedScopeError(f"{plan.condition}: radiograph {src} does not exist")
    rel = f"radiographs/{key}.{src.rsplit('.', 1)[-1].lower()}"
    try:
        data = checked_image(src)
    except bounded.InputRejected as err:
        raise MedScopeError(f"{plan.condition}: radiograph {src}: {err.reason} ({err.detail}); replace the file") from None
    storage.write_bytes(storage.join(out, rel), data)
    return rel


def build(spec: PairsSpec, work: str, out: str, spec_dir: str = ".") -> dict:
    """Write ``<out>/manifest.yaml`` (+ photographs and radiographs) from approved candidates.

    Parameters
    ----------
    spec : PairsSpec
        The construction spec.
    work : str
        The work folder (path or storage URI) with ``review.yaml`` and the candidates.
    out : str
        The pair set's folder (path or storage URI): ``manifest.yaml``, ``photos/`` and ``radiographs/``.
    spec_dir : str, optional
        Where the spec's relative radiograph paths start.

    Returns
    -------
    dict
        ``manifest`` (its URI), ``conditions`` (how many entered the manifest) and ``incomplete`` (per
        condition left out: its ``missing`` photo types, and ``unreadable`` approved photographs with
        reason, detail and error class).

    Raises
    ------
    MedScopeError
        When the review file holds an unknown decision, or a condition's radiograph file does not exist
        or does not decode.

    References
    ----------
    .. [1] paired-modality paper, §3.3.
    """
    review = load_review(work)
    entries, incomplete = [], []
    for plan in spec.conditions:
        chosen = {pt: _approved(_slot(review, plan.condition, pt), spec.approvals_required) for pt in PHOTO_TYPES}
        if not all(chosen.values()):
            incomplete.append({"condition": plan.condition, "missing": [pt for pt, c in chosen.items() if not c]})
            continue
        photos, unreadable = {}, []
        for pt, cand in chosen.items():
            try:
                photos[pt] = checked_image(storage.join(work, cand["image"]))
            except Exception as err:  # noqa: BLE001 - one bad photograph leaves its condition out, named
                err = guarded.as_reject(err)
                unreadable.append({"photo_type": pt, "candidate": cand["id"], "image": cand["image"],
                                   "reason": err.reason, "detail": err.detail, "error_class": bounded.error_class(err)})
        if unreadable:  # approved, but not a whole image: review it again (or regenerate)
            incomplete.append({"condition": plan.condition, "missing": [], "unreadable": unreadable})
            continue
        entry = {"condition": plan.condition, "body_region": plan.body_region,
                 "radiograph": _radiograph(plan, spec_dir, out), "radiograph_findings": plan.radiograph_findings}
        for pt, cand in chosen.items():
            photo = getattr(plan, pt)
            rel = f"photos/{slug(plan.condition)}-{pt}.png"
            storage.write_bytes(storage.join(out, rel), photos[pt])
            history = [{k: c.get(k) for k in ("id", "attempt", "prompt", "seed", "parent", "decision", "feedback", "reviewer",
                                              "approvals")}
                       for c in _slot(review, plan.condition, pt)]
            entry[pt] = {"image": rel, "caption": photo.caption,
                         "findings": [f if isinstance(f, str) else f.model_dump() for f in photo.findings],
                         "provenance": {"candidate": cand["id"], "prompt": cand["prompt"], "seed": cand["seed"],
                                        "generator": cand["generator"], "generator_meta": cand.get("generator_meta"),
                                        "parent": cand.get("parent"), "subject": cand.get("subject"),
                                        "review_history": history}}
        entry["provenance"] = {"strategy": plan.strategy, "subject": plan.subject,
                               "demographics": subject_demographics(plan, spec.demographics),
                               "base": review["bases"].get(slug(plan.condition))}
        entries.append(entry)
    manifest = {"name": spec.name, "conditions": entries}
    uri = storage.join(out, tables.MANIFEST)
    storage.write_text(uri, yaml.safe_dump(manifest, sort_keys=False, width=110))
    return {"manifest": uri, "conditions": len(entries), "incomplete": incomplete}
