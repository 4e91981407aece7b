"""The unit of work of a views build: a callable class that turns a batch of cases into
write-once part files (views, rejects, QC features) keyed by case, so that a killed build,
rerun, only completes the missing cases. Ray maps it with an actor pool
(``pipelines/views.py``); a plain loop calls it the same way.
"""

from __future__ import annotations

import io
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq

from medscope.io import records, storage
from medscope.qc.detector import case_feature_rows
from medscope.seeding import stable_hash
from medscope.views.build import CaseContext, build_case_views
from medscope.views.recipe import Recipe
from medscope.views.stream import StagedImages
from medscope.views.tools import make_eraser

FEATURE_SCHEMA = pa.schema([
    ("view_id", pa.string()), ("case_id", pa.string()), ("kind", pa.string()), ("tool", pa.string()),
    ("role", pa.string()), ("x", pa.list_(pa.float64())),
])
# one row per built case; the wall-clock stamps (epoch seconds) and worker pid let a caller
# separate the pool's start-up from its steady throughput (``medscope bench views``)
DONE = pa.schema([("case_id", pa.string()), ("views", pa.int64()), ("rejects", pa.int64()),
                  ("t_start", pa.float64()), ("t_end", pa.float64()), ("pid", pa.int64())])


def case_key(case_id: str) -> str:
    """The part-file key of a case: ``stable_hash(case_id)``.

    Parameters
    ----------
    case_id : str
        The case's id.

    Returns
    -------
    str
        16 hex characters.
    """
    return stable_hash(case_id)


def parts(out: str) -> dict[str, str]:
    """The part folders of a build under ``out``.

    Parameters
    ----------
    out : str
        URI of the build's output folder.

    Returns
    -------
    dict of str to str
        "views", "rejects", "features" -> ``<out>/parts/<name>``.
    """
    return {k: storage.join(out, "parts", k) for k in ("views", "rejects", "features")}


def write_features(rows: list[dict], folder: str, key: str) -> bool:
    """Write one case's QC feature rows as the write-once file ``part-<key>.parquet`` under ``folder``.

    Parameters
    ----------
    rows : list of dict
        Feature rows of ``FEATURE_SCHEMA``; may be empty.
    folder : str
        URI of the features part folder.
    key : str
        The case's key (`case_key`).

    Returns
    -------
    bool
        Whether the file was written (False: it existed already).
    """
    table = pa.Table.from_pylist(rows, schema=FEATURE_SCHEMA) if rows else FEATURE_SCHEMA.empty_table()
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return storage.write_once(storage.join(folder, f"part-{key}.parquet"), sink.getvalue())


def read_features(folder: str) -> list[dict]:
    """Every QC feature row of a build as Python dicts, one part at a time (the views build
    reads them as columns: medscope.views.features).

    Parameters
    ----------
    folder : str
        URI of the features part folder.

    Returns
    -------
    list of dict
        Rows of ``FEATURE_SCHEMA``, file by file in sorted order.
    """
    out = []
    for uri in storage.list_files(folder, suffix=".parquet"):
        out.extend(records.read_parquet(uri).to_pylist())
    return out


class CaseViewWriter:
    """Build every view of each case of a block and write its parts; returns one row per case.

    Tools (and so model weights) are created once per instance: once per Ray actor.
    ``plan`` maps case_id -> CaseContext fields. The cases come from the build's staging
    table (``staged``, see medscope.views.stream): a block is one of its row groups, and the
    images other cases borrow (insertion recipients, other-type donors) are read from it by
    ``where`` (case_id -> row group, row), so nothing holds the cohort's pixels.
    """

    def __init__(self, recipe: dict, rhash: str, out: str, plan: dict[str, dict], staged: str | None,
                 where: dict[str, tuple[int, int]], s3_endpoint: str | None = None):
        if s3_endpoint:
            # the driver's S3 endpoint (e.g. set after the cluster started); never credentials
            storage.configure(s3_endpoint=s3_endpoint)
        self.recipe = Recipe.model_validate(recipe)
        self.rhash, self.plan = rhash, plan
        self.staged = StagedImages(staged, where) if staged else None
        self.folders = parts(out)
        r = self.recipe
        self.erasers = {t: make_eraser(t, lama_model=r.lama_model, sd_model_dir=r.sd_model_dir,
                                       sd_steps=r.sd_steps, sd_size=r.sd_size) for t in r.all_tools()}

    def context(self, case_id: str) -> CaseContext:
        p = self.plan.get(case_id, {})
        return CaseContext(
            split=p.get("split"), group_id=p.get("group_id"), recipient_id=p.get("recipient"),
            recipient_image=self.staged.image(p.get("recipient")) if self.staged else None,
            donor_image=self.staged.image(p.get("donor")) if self.staged else None,
        )

    def build_one(self, case: dict) -> tuple[int, int]:
        key = case_key(case["case_id"])
        views, rejects = build_case_views(case, self.recipe, self.erasers, self.context(case["case_id"]), self.rhash)
        # order matters: the views part is the "done" marker, so it is written last
        write_features(case_feature_rows(views), self.folders["features"], key)
        records.write_part("rejects", rejects, self.folders["rejects"], key)
        records.write_part("views", views, self.folders["views"], key)
        return len(views), len(rejects)

    def build_block(self, row_group: int, case_ids: list[str]) -> list[dict]:
        """Build the cases ``case_ids`` of staging row group ``row_group``; one DONE row each."""
        done = []
        for case in self.staged.block(row_group, case_ids):
            t_start = time.time()
            n_views, n_rejects = self.build_one(case)
            done.append({"case_id": case["case_id"], "views": n_views, "rejects": n_rejects,
                         "t_start": t_start, "t_end": time.time(), "pid": os.getpid()})
        return done

    def __call__(self, batch: pa.Table) -> pa.Table:
        """A batch of blocks (columns ``row_group``, ``case_ids``) -> one DONE row per case."""
        done = []
        for rg, ids in zip(batch.column("row_group").to_pylist(), batch.column("case_ids").to_pylist()):
            done += self.build_block(rg, ids)
        return pa.Table.from_pylist(done, schema=DONE)
