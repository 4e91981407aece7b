"""Named test sets and training pools of the counterfactual paper (§3.2, §3.6, §3.7, §4.1, Tables 3-4).

Which views a sweep evaluates is a property of the *test set*, never "every passed view":

- Evaluation views are the five kinds of §3.8 only: original (O), target removal (T), random
  removal (R), natural negative (N) and degraded (D).
- ``unmatched_control`` views exist for C1's training arm only (§3.7: "the same stage-1 training
  as the matched-control arm, with every control view replaced by an unmatched edit") and
  ``insertion`` views for training only (§3.2: "Training additionally uses lesion-insertion
  views"). Both are *training pools*: they are built on the train split alone and no test set
  can select them.
- A test set names the split(s) of its views table it reads. The main test, the held-out tools
  (the main test's cases remade with unseen tools, §5.4), the fresh internal / external and
  external-centre cohorts all read the ``test`` split of their own build; ``validation`` reads
  the validation split (stage selection, §3.6).
- ``heldout_tools`` reads the target and random removals of the unseen tools only (Telea and
  Stable Diffusion; ``TEST_SET_TOOLS``); a held-out recipe names the training recipe it is held
  out from and a build refuses one that shares a tool with it (``medscope.views.recipe.check_heldout``).
"""

from __future__ import annotations

from medscope.errors import MedScopeError

EVAL_KINDS = ("original", "target_removal", "random_removal", "natural_negative", "degraded")
TRAINING_ONLY_KINDS = ("unmatched_control", "insertion")

# test set -> the splits of its views table it reads (Tables 3-4, §3.6)
TEST_SETS: dict[str, tuple[str, ...]] = {
    "main": ("test",),
    "heldout_tools": ("test",),
    "heldout_wordings": ("test",),
    "external_centres": ("test",),
    "fresh_internal": ("test",),
    "fresh_external": ("test",),
    "validation": ("validation",),
}
# training pools: kinds built on the train split only, never evaluated
TRAINING_POOLS: dict[str, tuple[str, ...]] = {
    "c1_unmatched_pool": ("unmatched_control",),
    "insertion_pool": ("insertion",),
}
DEFAULT_TEST_SET = "main"
# §5.4 / Table 10: "Held-out tools: Telea and diffusion edits of the main test, pooled" -- tools
# used neither in training nor in selection. Only their T and R views belong to the test set; a
# transplant (training tool) edit of the same cases is Table 12's column, never pooled here.
HELDOUT_TOOLS = ("telea", "sd")
# test set -> the erasure tools whose target / random removals it reads (others: every tool)
TEST_SET_TOOLS: dict[str, tuple[str, ...]] = {"heldout_tools": HELDOUT_TOOLS}
EDITED_KINDS = ("target_removal", "random_removal")


def splits_of(test_set: str, splits: list[str] | tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The splits a sweep on ``test_set`` reads: ``splits`` when given, else the test set's own.

    An unknown test-set name is allowed only with explicit ``splits`` (a user's own cohort); a
    training pool's name is refused: those views are never evaluated.

    Parameters
    ----------
    test_set : str
        A ``TEST_SETS`` name, or a user's own cohort name when ``splits`` is given.
    splits : list or tuple of str, optional
        'validation' and/or 'test' (never 'train'); default the test set's own splits.

    Returns
    -------
    tuple of str
        The splits read.

    Raises
    ------
    MedScopeError
        For a training pool's name, an unknown or 'train' split, or an unknown test set without
        ``splits``.

    References
    ----------
    .. [1] counterfactual paper, §3.2, §3.6, §3.7, Tables 3-4.
    """
    if test_set in TRAINING_POOLS:
        raise MedScopeError(f"{test_set!r} is a training pool (counterfactual paper §3.2, §3.7), not a test set; "
                            f"test sets: {', '.join(TEST_SETS)}")
    if splits:
        bad = sorted(set(splits) - {"train", "validation", "test"})
        if bad:
            raise MedScopeError(f"unknown split(s) {bad}; splits are train, validation, test")
        if "train" in splits:
            raise MedScopeError("the train split is never evaluated (its views are the training pools)")
        return tuple(splits)
    if test_set not in TEST_SETS:
        raise MedScopeError(f"unknown test set {test_set!r}: name its split(s) too (--splits test), "
                            f"or use one of {', '.join(TEST_SETS)}")
    return TEST_SETS[test_set]


def tools_of(test_set: str, tools: list[str] | tuple[str, ...] | None = None) -> tuple[str, ...] | None:
    """The erasure tools whose edited views (T, R) ``test_set`` reads; None: every tool.

    ``tools`` overrides the test set's own list; for ``heldout_tools`` it may only narrow it.

    Parameters
    ----------
    test_set : str
        A test set name.
    tools : list or tuple of str, optional
        Erasure tools to read instead (e.g. 'telea', 'sd'); default the test set's own list.

    Returns
    -------
    tuple of str or None
        The tools; None: every tool.

    Raises
    ------
    MedScopeError
        When ``tools`` adds a tool to ``heldout_tools``'s unseen tools.

    References
    ----------
    .. [1] counterfactual paper, §5.4, Table 10.
    """
    own = TEST_SET_TOOLS.get(test_set)
    if tools:
        if own is not None and set(tools) - set(own):
            raise MedScopeError(f"test set {test_set!r} pools the unseen tools {', '.join(own)} only (counterfactual paper "
                                f"§5.4, Table 10); {', '.join(sorted(set(tools) - set(own)))} cannot be added")
        return tuple(tools)
    return own


def is_evaluation_view(kind: str, split: str | None, splits: tuple[str, ...], tool: str | None = None,
                       tools: tuple[str, ...] | None = None) -> bool:
    """Whether a (passed) view of ``kind`` in ``split`` belongs to a test set reading ``splits``
    (and, for its edited views, made with one of ``tools`` when the test set names tools).

    A view without a split (a table built before splits existed) counts as in every split.

    Parameters
    ----------
    kind : str
        The view kind (only the five ``EVAL_KINDS`` are ever evaluated).
    split : str or None
        The view's split; None: in every split.
    splits : tuple of str
        The splits the test set reads (``splits_of``).
    tool : str, optional
        The erasure tool that made the view.
    tools : tuple of str, optional
        The tools the test set reads (``tools_of``); None: every tool. Applies to target and random
        removals only.

    Returns
    -------
    bool
    """
    if kind not in EVAL_KINDS or not (split is None or split in splits):
        return False
    return tools is None or kind not in EDITED_KINDS or tool in tools


# why a view is not in a test set: the rule's code (a rejects reason) -> what it says
OUTSIDE_RULES = {
    "not_an_evaluation_view": "a training-pool kind (C1's unmatched edits, insertions; §3.2, §3.7)",
    "failed_qc": "the view failed QC (§3.3; a failed random-removal control drops its whole case, rule (ii))",
    "outside_split": "the view's split is not one the test set reads (Tables 3-4, §3.6)",
    "outside_tools": "an edit by a tool the test set does not read (§5.4, Table 10)",
}


def outside_reason(row: dict, test_set: str, splits: tuple[str, ...],
                   tools: tuple[str, ...] | None = None) -> tuple[str, str] | None:
    """Why a views row is not in the test set (the rule and the row's own values), or None when it is.

    The one definition of a test set's membership: ``eval run`` selects its items with it
    (``CounterfactualProtocol.load_items``) and ``score`` recomputes it from the views table
    every time, whatever the episodes hold.

    Parameters
    ----------
    row : dict
        A views row: ``kind``, ``passed``, and ``split``, ``tool``, ``reject_reason`` when present.
    test_set : str
        The test set's name (for the text).
    splits : tuple of str
        The splits it reads (``splits_of``).
    tools : tuple of str, optional
        The tools whose edited views it reads (``tools_of``); None: every tool.

    Returns
    -------
    tuple of (str, str) or None
        (rule code, one line naming the rule and the row's value); the codes are
        ``OUTSIDE_RULES``' keys. None when the view belongs to the test set.

    References
    ----------
    .. [1] counterfactual paper, §3.2, §3.3, §3.7, §5.4, Tables 3-4.
    """
    kind, split, tool = row["kind"], row.get("split"), row.get("tool")
    if kind not in EVAL_KINDS:
        return "not_an_evaluation_view", (f"a {kind} view is a training-pool view (counterfactual paper §3.2, §3.7), "
                                          f"never in test set {test_set}")
    if not row["passed"]:
        why = row.get("reject_reason") or "no reason recorded"
        return "failed_qc", f"the view failed QC: {why}{KEEP_RULE_NOTES.get(why, '')}; test set {test_set} holds passed views only"
    if not (split is None or split in splits):
        return "outside_split", f"split {split!r}; test set {test_set} reads {', '.join(splits)}"
    if tools is not None and kind in EDITED_KINDS and tool not in tools:
        return "outside_tools", f"made with {tool!r}; test set {test_set} reads edits by {', '.join(tools)} only"
    return None


# QC reasons (medscope.views.finalize) that drop a view with its case or its pair (§3.3's keep rules)
KEEP_RULE_NOTES = {
    "paired_control_failed": " (rule (ii): its random-removal control failed)",
    "paired_target_failed": " (its target removal failed: the pair stands or falls together)",
    "case_failed_qc": " (its case failed keep rule (i) or (ii): the whole case is dropped)",
}
