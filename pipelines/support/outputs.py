"""Where a job's results go, and refusing places where they would vanish.

Under ``ray job submit`` the driver runs inside Ray's temporary copy of the submitted working
dir (``<session>/runtime_resources/working_dir_files/_ray_pkg_<hash>/``): a relative output
such as the demo's ``demo-out`` lands there, Ray deletes it with the session, and on a cluster
it sits on whichever node ran the driver. So under a Ray job a relative (or working-dir
local) output is refused with a message that names what to pass instead; every verb and job
states where its results went. ``pipelines.cli`` and ``pipelines.support.jobs`` call these for
every ``--out`` / ``out:``, so no verb has to remember.
"""

from __future__ import annotations

import os
import sys

from medscope.io import storage
from medscope.errors import MedScopeError

# Set by Ray's JobSupervisor in the environment of every submitted job's driver (Ray 2.x).
JOB_ENV_VAR = "RAY_JOB_CONFIG_JSON_ENV_VAR"
# The part of a path that marks Ray's temporary copy of a submitted working dir.
WORKING_DIR_MARK = os.path.join("runtime_resources", "working_dir_files")


def ray_job_context(environ=None, cwd: str | None = None) -> str | None:
    """Why this process counts as a submitted Ray job's driver, or None when it is not one.

    Parameters
    ----------
    environ : mapping, optional
        The environment to read ``JOB_ENV_VAR`` from (default: ``os.environ``).
    cwd : str, optional
        The working directory (default: ``os.getcwd()``).

    Returns
    -------
    str or None
        Why: the working directory is inside Ray's working-dir copy, or ``JOB_ENV_VAR`` is set.
    """
    environ = os.environ if environ is None else environ
    cwd = os.getcwd() if cwd is None else cwd
    if WORKING_DIR_MARK in cwd:
        return f"the working directory {cwd} is Ray's temporary copy of the submitted working_dir"
    if environ.get(JOB_ENV_VAR):
        return "this process is the driver of a `ray job submit` job"
    return None


def check_out(uri: str, flag: str = "--out", environ=None, cwd: str | None = None) -> str:
    """The output location as the user should read it (absolute path or URI); raises when a
    Ray job would write it where it vanishes (relative, or inside Ray's working-dir copy).

    Parameters
    ----------
    uri : str
        The output path or URI; an empty one, or one on a non-local store (``s3://``...), is
        returned as is.
    flag : str, optional
        The option's name in the error message (``--out`` or ``out:``).
    environ : mapping, optional
        The environment (default: ``os.environ``), for ``ray_job_context``.
    cwd : str, optional
        The working directory relative paths are read against (default: ``os.getcwd()``).

    Returns
    -------
    str
        ``uri`` itself for a non-local store, else the normalised absolute path.

    Raises
    ------
    MedScopeError
        Under a Ray job, when the path is relative or inside Ray's working-dir copy.
    """
    cwd = os.getcwd() if cwd is None else cwd
    if not uri or storage.protocol(uri) not in ("file", ""):
        return uri  # s3://, memory://, gs://: a store every node shares (or the caller's choice)
    path = uri[len("file://"):] if uri.startswith("file://") else uri
    absolute = os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))
    why = ray_job_context(environ, cwd)
    if why and (not os.path.isabs(path) or WORKING_DIR_MARK in absolute):
        raise MedScopeError(
            f"{flag} {uri!r} would be written to {absolute}, inside Ray's temporary copy of the "
            f"working dir ({why}); Ray deletes it, and on a cluster it sits on whichever node ran "
            f"the driver. Pass an absolute path on storage every node sees (e.g. {flag} "
            f"/shared/medscope/{os.path.basename(absolute) or 'out'}) or an object store URI "
            f"(e.g. {flag} s3://bucket/medscope/{os.path.basename(absolute) or 'out'})")
    return absolute


def announce(where: str, label: str = "results") -> None:
    """One line on stderr saying where the results went (stdout stays the JSON summary).

    Parameters
    ----------
    where : str
        The output location (``check_out``'s answer).
    label : str, optional
        What went there.
    """
    print(f"medscope: {label} in {where}", file=sys.stderr, flush=True)
