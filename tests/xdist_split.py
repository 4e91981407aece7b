"""How the suite is split between its two pytest-xdist workers (``-n 2`` in pyproject.toml).

One worker takes every file that uses the session's Ray (``ray_cluster``), so the machine runs one
such cluster, started once; the other takes the rest, a file at a time (module fixtures built
once), the files with end-to-end tests (marked ``slow``) first so that the small ones fill in at
the end. Measured: docs/testing.md, "Two workers".

xdist's own ``--dist loadgroup`` would do the grouping from ``xdist_group`` marks, but pytest-xdist
3.8 renames items through ``item._nodeid``, which pytest 9.2 no longer reads, so the marks never
reach its scheduler; here the controller's scheduler reads the groups from the test files instead,
and each worker checks that reading against the fixtures its tests really use.
"""

from __future__ import annotations

import os
import re

import pytest

SESSION_RAY_GROUP = "session-ray"
_TESTS = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(_TESTS)


def file_of(nodeid: str) -> str:
    return nodeid.split("::")[0]


def session_ray_files(tests_dir: str = _TESTS) -> set[str]:
    """Test files (as nodeid paths, ``tests/io/test_x.py``), in ``tests_dir`` and every folder under
    it, whose source names the ``ray_cluster`` fixture: what the controller, which collects nothing,
    can know of who uses the session's Ray."""
    found = set()
    for folder, dirs, names in os.walk(tests_dir):
        dirs[:] = sorted(d for d in dirs if d not in ("data", "__pycache__") and not d.startswith("."))
        for name in sorted(names):
            if name.startswith("test_") and name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    if re.search(r"\bray_cluster\b", f.read()):
                        found.add(os.path.relpath(path, _REPO))
    return found


def files_using_the_sessions_ray(items) -> set[str]:
    """The files with any test whose fixture closure holds ``ray_cluster`` (what really runs)."""
    return {file_of(item.nodeid) for item in items if "ray_cluster" in getattr(item, "fixturenames", ())}


def group_of(path: str, ray_files: set[str]) -> str:
    return SESSION_RAY_GROUP if path in ray_files else path


def file_order(items, ray_files: set[str]) -> list[str]:
    """Files in the order the workers take them: the session's-Ray files (one unit, the longest),
    then files holding a test marked ``slow``, then the rest, each kept in collection order."""
    slow = {file_of(item.nodeid) for item in items if item.get_closest_marker("slow")}
    files = list(dict.fromkeys(file_of(item.nodeid) for item in items))
    return sorted(files, key=lambda f: 0 if f in ray_files else 1 if f in slow else 2)


def pytest_collection_modifyitems(config, items):
    if not hasattr(config, "workerinput"):  # not an xdist worker: the order stays as collected
        return
    used = files_using_the_sessions_ray(items)
    scanned = session_ray_files()
    missed = sorted(used - scanned)
    if missed:  # a file reaching ray_cluster only through another file's fixture
        raise pytest.UsageError(f"{', '.join(missed)} use the session's Ray without naming `ray_cluster` in the "
                                "file: name it there (a fixture argument) so tests/xdist_split.py groups the file")
    rank = {f: i for i, f in enumerate(file_order(items, scanned))}
    items.sort(key=lambda item: rank[file_of(item.nodeid)])  # stable: a file keeps its own order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    ray_files = session_ray_files()

    class ByGroup(LoadScopeScheduling):
        """xdist's scope scheduling (a unit runs whole on one worker, units handed out as workers
        free up), with a unit per file and one for all the session's-Ray files, in collection order."""

        def _split_scope(self, nodeid: str) -> str:
            return group_of(file_of(nodeid), ray_files)

    config.option.loadscopereorder = False  # keep the workers' order (file_order), not by test count
    return ByGroup(config, log)
