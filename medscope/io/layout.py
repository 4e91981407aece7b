"""Every output folder's layout, and the one answer to "is this a folder or a table?".

Each verb writes one kind of folder (a cohort, a views build, a probe build, an eval run, a
scored run, a training run, an arms sweep, a report). The file names inside them are written
here and nowhere else; verbs and jobs ask a layout object for a path::

    run = layout.ScoredRun(out)
    records.write_table("metrics", table, run.metrics)

and every verb that reads a table accepts either the folder a previous verb wrote or the table
inside it (:func:`table_uri`; ``records.read_table`` calls it, so ``--cases cohorts/kv``,
``--views runs/v1`` and ``--volumes cohorts/btcv`` all work).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from medscope.io import storage
from medscope.errors import MedScopeError


@dataclass(frozen=True)
class _Folder:
    root: str

    def _at(self, *parts: str) -> str:
        return storage.join(self.root, *parts)


@dataclass(frozen=True)
class Cohort(_Folder):
    """``medscope cohort import | phantom``: a cases or volumes table with its rejects, and the
    import's manifest (which of them this import wrote; absent for the phantom)."""

    FILES: ClassVar[dict[str, str]] = {"cases": "cases.parquet", "volumes": "volumes.parquet",
                                       "vqa_items": "vqa_items.parquet", "rejects": "rejects.parquet"}

    def table(self, name: str) -> str:
        return self._at(self.FILES[name])

    @property
    def manifest(self) -> str:
        return self._at("import.json")

    @property
    def cases(self) -> str:
        return self._at("cases.parquet")

    @property
    def volumes(self) -> str:
        return self._at("volumes.parquet")

    @property
    def rejects(self) -> str:
        return self._at("rejects.parquet")

    @property
    def near_copies(self) -> str:
        return self._at("near_copies.json")

    @property
    def nifti(self) -> str:
        """Where the phantom writes its generated NIfTI volumes (imagesTr/, labelsTr/)."""
        return self._at("volumes")


@dataclass(frozen=True)
class ViewsBuild(_Folder):
    """``medscope views build``: views, rejects, the QC report, the recipe and per-case parts."""

    @property
    def views(self) -> str:
        return self._at("views.parquet")

    @property
    def rejects(self) -> str:
        return self._at("rejects.parquet")

    @property
    def qc_report(self) -> str:
        return self._at("qc_report.json")

    @property
    def near_copy_pairs(self) -> str:
        """The crosswalk's hash-close pairs of cases with their tiers (``qc_report.json``
        counts them by tier)."""
        return self._at("near_copy_pairs.parquet")

    @property
    def near_copy_groups(self) -> str:
        """The crosswalk's hash-close groups too large to pair, member by member
        (``qc_report.json`` summarises each)."""
        return self._at("near_copy_groups.parquet")

    @property
    def recipe(self) -> str:
        return self._at("recipe.json")

    @property
    def splits(self) -> str:
        """case_id -> {split, group_id} of every case planned so far: a grown cohort keeps them."""
        return self._at("splits.json")

    @property
    def staging(self) -> str:
        """Scratch of a build in progress, removed when its map stage has finished."""
        return self._at("staging")

    @property
    def staged_cases(self) -> str:
        """The cases being built, copied once from the cases table in row groups of one block
        each, so a worker reads its own block (and a borrowed image) by range and the driver
        never holds the cohort's pixels. The stem of its files: ``cases-00000.parquet``, ... of
        ``medscope.views.stream.ROW_GROUPS_PER_FILE`` blocks each."""
        return self._at("staging", "cases.parquet")

    def parts(self, table: str) -> str:
        """Write-once per-case part files of ``views``, ``rejects`` or ``features``."""
        return self._at("parts", table)


# ``medscope cohort remove`` appends one JSON line per removal to this file in every folder it
# changed (which cases, which files, how many rows), so the record lives beside the data.
REMOVALS = "removals.jsonl"

# ``medscope compact`` folds a part folder's write-once parts into a few large files and records
# in this manifest, inside the part folder, which part keys each absorbed (medscope.io.parts).
COMPACTION = "compaction.json"


@dataclass(frozen=True)
class ProbeBuild(_Folder):
    """``medscope probe build``: probe items (part files), slices, cohort statistics, montages."""

    @property
    def probe_items(self) -> str:
        return self._at("probe_items")

    @property
    def slices(self) -> str:
        return self._at("slices.parquet")

    @property
    def cohort_stats(self) -> str:
        return self._at("cohort_stats.json")

    @property
    def montages(self) -> str:
        return self._at("montages")

    @property
    def rejects(self) -> str:
        return self._at("rejects.parquet")

    @property
    def recipe(self) -> str:
        return self._at("recipe.json")

    @property
    def cooccurrence(self) -> str:
        return self._at("cooccurrence.png")


@dataclass(frozen=True)
class EvalRun(_Folder):
    """``medscope eval``: episodes and rejects as write-once part files, and the sweep summary."""

    @property
    def episodes(self) -> str:
        return self._at("episodes")

    @property
    def rejects(self) -> str:
        return self._at("rejects")

    @property
    def summary(self) -> str:
        return self._at("sweep.json")

    @property
    def answers_audit(self) -> str:
        """Where ``medscope answers audit`` writes by default, and where the report looks for the
        reading check of this run's replies (:class:`AnswersAudit`)."""
        return self._at(AnswersAudit.DEFAULT_DIR)


@dataclass(frozen=True)
class ScoredRun(_Folder):
    """``medscope score``: per-item scores, metrics with intervals, paired comparisons, manifest."""

    @property
    def scores(self) -> str:
        return self._at("scores.parquet")

    @property
    def metrics(self) -> str:
        return self._at("metrics.parquet")

    @property
    def comparisons(self) -> str:
        return self._at("comparisons.parquet")

    @property
    def rejects(self) -> str:
        return self._at("rejects.parquet")

    @property
    def manifest(self) -> str:
        """``run.json``: what was scored and how; it names the protocol."""
        return self._at("run.json")

    @property
    def plan_lock(self) -> str:
        """``plan.lock.json``: the pre-registered plan's hash, recorded when scoring began."""
        return self._at("plan.lock.json")

    def table(self, name: str) -> str:
        """A protocol's own table (e.g. ``probe_scores``) inside the run: the file its
        registration names (``records.register_table(files=...)``), else ``<name>.parquet``."""
        files = [f for f in TABLE_MEMBERS.get(name, ()) if f.endswith(".parquet")]
        return self._at(files[0] if files else f"{name}.parquet")


@dataclass(frozen=True)
class TrainRun(_Folder):
    """``medscope train``: Ray Train state, progress, the adapter and the run summary."""

    @property
    def adapter(self) -> str:
        return self._at("adapter")

    @property
    def summary(self) -> str:
        return self._at("train_summary.json")

    @property
    def progress(self) -> str:
        return self._at("progress.json")

    @property
    def log(self) -> str:
        """``train_log.jsonl``: loss, learning rate and examples per optimiser step, and
        ``resumed_from`` (0, or the checkpoint step of the attempt that ran the step)."""
        return self._at("train_log.jsonl")

    @property
    def scores(self) -> str:
        return self._at("scores.parquet")

    @property
    def rejects(self) -> str:
        """``rejects.parquet``: what the run left out of its data and why (stage 3: each replay
        question whose image is a near-copy of an evaluation image, with the image it copies)."""
        return self._at("rejects.parquet")

    @property
    def ray(self) -> str:
        return self._at("ray")


@dataclass(frozen=True)
class ArmsSweep(_Folder):
    """``medscope sweep``: one training run per arm and seed, the arms table and seed pairs."""

    def run(self, arm: str, seed: int) -> TrainRun:
        return TrainRun(self._at(arm, f"seed{seed}"))

    @property
    def tune(self) -> str:
        return self._at("tune")

    @property
    def arms_table(self) -> str:
        return self._at("arms_table.parquet")

    @property
    def arms_markdown(self) -> str:
        return self._at("arms_table.md")

    @property
    def seed_pairs(self) -> str:
        return self._at("seed_pairs.parquet")

    @property
    def pooled(self) -> str:
        """Each arm's seeds pooled as one model (``<arm>``) minus the reference arm's, paired by case."""
        return self._at("pooled.parquet")

    @property
    def scores(self) -> str:
        """Every trial's validation scores, pooled (with arm and seed)."""
        return self._at("scores.parquet")

    @property
    def checks(self) -> str:
        """The plan's rules (C1-C4) applied to the seed pairs and pooled comparisons: verdicts."""
        return self._at("checks.json")

    @property
    def checks_text(self) -> str:
        return self._at("checks.txt")


@dataclass(frozen=True)
class Report(_Folder):
    """``medscope report``: Markdown and self-contained HTML, images and transcripts."""

    @property
    def markdown(self) -> str:
        return self._at("report.md")

    @property
    def html(self) -> str:
        return self._at("report.html")

    @property
    def transcripts_index(self) -> str:
        return self._at("transcripts.md")

    def file(self, rel: str) -> str:
        return self._at(*rel.split("/"))


@dataclass(frozen=True)
class BenchgenBuild(_Folder):
    """``medscope benchgen build``: questions and montages (part files), rejects, the generation
    calls' cache and the build manifest."""

    @property
    def items(self) -> str:
        return self._at("items")

    @property
    def montages(self) -> str:
        return self._at("montages")

    @property
    def rejects(self) -> str:
        return self._at("rejects")

    @property
    def generation(self) -> str:
        return self._at("generation")

    @property
    def studies(self) -> str:
        return self._at("generation", "studies.jsonl")

    @property
    def verification(self) -> str:
        """The verification calls' sweep (``verify: llm``): episodes, rejects, sweep.json."""
        return self._at("verification")

    @property
    def verification_items(self) -> str:
        return self._at("verification", "questions.jsonl")

    @property
    def manifest(self) -> str:
        return self._at("build.json")


@dataclass(frozen=True)
class PairSet(_Folder):
    """``medscope pairs generate | review | build``: candidates, the review file a person edits,
    and the built manifest of approved pairs with its rejects."""

    MANIFEST: ClassVar[str] = "manifest.yaml"
    MANIFEST_REJECTS: ClassVar[str] = "manifest_rejects.parquet"
    CANDIDATES: ClassVar[str] = "candidates"
    REVIEW: ClassVar[str] = "review.yaml"


@dataclass(frozen=True)
class ReaderPack(_Folder):
    """``medscope reader pack``: the readers' folder (page + images, no key) and the key beside it."""

    READING: ClassVar[str] = "reading"
    PAGE: ClassVar[str] = "index.html"
    IMAGES: ClassVar[str] = "images"
    KEY: ClassVar[str] = "key.json"

    @property
    def reading(self) -> str:
        return self._at(self.READING)

    @property
    def page(self) -> str:
        return self._at(self.READING, self.PAGE)

    def image(self, name: str) -> str:
        return self._at(self.READING, self.IMAGES, f"{name}.png")

    @property
    def key(self) -> str:
        return self._at(self.KEY)


@dataclass(frozen=True)
class AnswersAudit(_Folder):
    """``medscope answers audit`` / ``agreement``: a blinded sample of a run's replies, its
    labelling page, the labels saved from it and the reader's agreement with them."""

    DEFAULT_DIR: ClassVar[str] = "answers_audit"  # inside the eval run folder
    SAMPLE: ClassVar[str] = "audit_sample.jsonl"
    MANIFEST: ClassVar[str] = "audit.json"
    PAGE: ClassVar[str] = "label.html"
    LABELS: ClassVar[str] = "labels.json"
    AGREEMENT: ClassVar[str] = "agreement.json"

    @property
    def sample(self) -> str:
        return self._at(self.SAMPLE)

    @property
    def manifest(self) -> str:
        return self._at(self.MANIFEST)

    @property
    def page(self) -> str:
        return self._at(self.PAGE)

    @property
    def labels(self) -> str:
        return self._at(self.LABELS)

    @property
    def agreement(self) -> str:
        return self._at(self.AGREEMENT)


@dataclass(frozen=True)
class ReaderAnalysis(_Folder):
    """``medscope reader analyse``: the analysis, rejected answer files and its report."""

    ANALYSIS: ClassVar[str] = "analysis.json"
    REJECTS: ClassVar[str] = "rejects.parquet"
    MARKDOWN: ClassVar[str] = "report.md"
    HTML: ClassVar[str] = "report.html"


# Where each shared table sits inside the folders that hold it: a name here is looked up under a
# folder given in place of the table. Part-file tables (episodes, rejects) are folders. A
# protocol's own tables add theirs when they are registered (``records.register_table``).
TABLE_MEMBERS: dict[str, tuple[str, ...]] = {
    "cases": ("cases.parquet",),
    "volumes": ("volumes.parquet",),
    "views": ("views.parquet",),
    "vqa_items": ("vqa_items.parquet",),
    "rejects": ("rejects.parquet", "rejects"),
    "near_copy_pairs": ("near_copy_pairs.parquet",),
    "near_copy_groups": ("near_copy_groups.parquet",),
    "episodes": ("episodes",),
    "metrics": ("metrics.parquet",),
    "comparisons": ("comparisons.parquet",),
}


# Tables written as folders of write-once part files: an empty folder is an empty table (a
# sweep with nothing finished yet); any other table must be a file or sit in its folder.
PART_TABLES: set[str] = {"episodes", "rejects"}


def register_table_files(name: str, files: tuple[str, ...], part_files: bool = False) -> None:
    """Where a protocol's own table ``name`` sits in the folders that hold it (``files``, e.g.
    ``("probe_scores.parquet",)`` in a scored run, ``("items",)`` for a part folder in a build),
    and whether it is written as write-once part files. Called by ``records.register_table``.

    Parameters
    ----------
    name : str
        The table's name.
    files : tuple of str
        Its names inside the folders that hold it, in lookup order.
    part_files : bool, optional
        Whether it is a folder of write-once parts. Default False.
    """
    TABLE_MEMBERS[name] = tuple(files)
    if part_files:
        PART_TABLES.add(name)
    else:
        PART_TABLES.discard(name)


def table_uri(name: str, uri: str) -> str:
    """The URI of table ``name`` given ``uri``: the table itself (a Parquet file or a folder of
    part files), or a folder a verb wrote that holds it under its layout name.

    Parameters
    ----------
    name : str
        The table's name.
    uri : str
        The table, or a folder holding it.

    Returns
    -------
    str
        The first of the table's layout names (:data:`TABLE_MEMBERS`) that exists under the folder
        ``uri``; else ``uri`` without trailing ``/``. Existence of the result is not checked.
    """
    uri = uri.rstrip("/") or uri
    if storage.is_dir(uri):
        for member in TABLE_MEMBERS.get(name, ()):
            inner = storage.join(uri, member)
            if storage.exists(inner):
                return inner
    return uri


def folder_of(name: str, uri: str) -> str:
    """The output folder that holds table ``name``, given that folder or the table's URI (a
    Parquet file, or a folder of part files: its parent is the output folder).

    Parameters
    ----------
    name : str
        The table's name.
    uri : str
        The output folder, or the table's file or part folder.

    Returns
    -------
    str
        ``uri`` (trailing ``/`` removed) when it holds the table under a layout name; else its parent
        (``"."`` for a bare name).
    """
    uri = uri.rstrip("/") or uri
    if table_uri(name, uri) != uri:
        return uri
    return uri.rsplit("/", 1)[0] if "/" in uri else "."


def require(name: str, uri: str) -> str:
    """Like :func:`table_uri`, with a clear error when nothing is there: no such path, or a
    folder that neither holds the table nor is a folder of its part files.

    Parameters
    ----------
    name : str
        The table's name.
    uri : str
        The table, or a folder holding it.

    Returns
    -------
    str
        The table's URI (:func:`table_uri`).

    Raises
    ------
    MedScopeError
        When nothing is there, or the folder found holds Parquet files other than ``part-*`` (or none,
        for a table that is not a part table).
    """
    found = table_uri(name, uri)
    missing = not storage.exists(found)
    if not missing and storage.is_dir(found):
        files = [f.rsplit("/", 1)[-1] for f in storage.list_files(found, suffix=".parquet")]
        # a folder of part files holds only part-*.parquet; a folder with other tables in it
        # (a cohort folder asked for the wrong table) is not this table
        missing = (not files and name not in PART_TABLES) or not all(f.startswith("part-") for f in files)
    if missing:
        looked = " or ".join(TABLE_MEMBERS.get(name, ())) or f"{name}.parquet"
        raise MedScopeError(f"no {name} table at {uri} (a {name} table, or a folder holding {looked})")
    return found
