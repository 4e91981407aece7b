"""One writer per output folder: a lock file created exclusively, naming its writer.

Two ``cohort import`` runs into one ``--out`` used to interleave: B's cases, A's rejects and
an ``import.json`` that claimed completion. :func:`writer_lock` makes the second run refuse
at its start with one line naming the folder, the holder and the fix. A lock left by a
process that is gone (same host, pid no longer running: a SIGKILL) is taken over, so a
killed import never blocks the next one.

Local folders use ``O_CREAT | O_EXCL`` (atomic on POSIX file systems). Object stores have no
exclusive create; there the writer's token is recorded in the manifest and checked again
just before the manifest says ``complete`` (:func:`still_ours`), so a folder another writer
took over is never marked complete by the first.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid

from medscope.io import safe_text, storage
from medscope.errors import MedScopeError

LOCK_NAME = ".medscope-writer.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _holder(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.loads(fh.read() or "{}")
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def writer_lock(out: str, verb: str):
    """Hold ``out``'s writer lock for the block; yields this writer's token (a string).

    Parameters
    ----------
    out : str
        The output folder (path or URI); a local folder is made if missing, and removed again on exit
        if this call made it and it is empty.
    verb : str
        What the writer does (e.g. ``"cohort import"``), recorded in the lock and named in the error.

    Yields
    ------
    str
        This writer's token, ``"<host>:<pid>:<12 hex>"``. On an object store no lock file is made; the
        caller records the token in its manifest (:func:`still_ours`).

    Raises
    ------
    MedScopeError
        When another live writer holds the lock (or a stale lock cannot be taken over after a retry).
    """
    token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
    local = storage.local_path(out)
    if local is None:  # object store: the token travels in the manifest instead
        yield token
        return
    created = not os.path.isdir(local)
    os.makedirs(local, exist_ok=True)
    path = os.path.join(local, LOCK_NAME)
    me = {"token": token, "host": socket.gethostname(), "pid": os.getpid(), "verb": verb, "started": time.time()}
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:
            held = _holder(path)
            stale = held.get("host") == socket.gethostname() and isinstance(held.get("pid"), int) and not _alive(held["pid"])
            if not stale:
                who = f"{held.get('verb', 'a writer')} (pid {held.get('pid', '?')} on {held.get('host', '?')})"
                raise MedScopeError(
                    f"{out}: another {who} is writing into this folder; wait for it to finish or use another "
                    f"--out (if that process is gone, delete {path})") from None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # its writer was killed; the folder's manifest says it did not finish
    else:
        raise MedScopeError(f"{out}: could not take the writer lock {path}; another writer raced this one")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(me, fh)
        yield token
    finally:
        if _holder(path).get("token") == token:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        if created:  # a failed run leaves no empty folder behind
            with contextlib.suppress(OSError):
                os.rmdir(local)


def still_ours(manifest_uri: str, token: str) -> bool:
    """True when the manifest at ``manifest_uri`` still names ``token`` as its writer.

    Parameters
    ----------
    manifest_uri : str
        The manifest file (JSON with a ``writer`` field).
    token : str
        This writer's token from :func:`writer_lock`.

    Returns
    -------
    bool
        True when the manifest's ``writer`` equals ``token``; False when it differs or the manifest
        cannot be read or parsed.
    """
    try:
        return safe_text.read_json_object(manifest_uri).get("writer") == token
    except (OSError, ValueError, MedScopeError):
        return False
