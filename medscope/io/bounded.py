"""Reading one file's bytes within a byte budget, from any URI: a regular file (never a FIFO,
socket or device, which could block or never end) of at most ``max_bytes``, or a ``InputRejected``
saying why not. The lowest of the guarded readers (docs/cohorts-bad-input.md): the cohort
loaders, the text guards (``medscope.io.safe_text``) and configs all read through it."""

from __future__ import annotations

import errno
import os
import stat

from medscope.io import storage
from medscope.errors import MedScopeError

_CHUNK = 1 << 20


class InputRejected(Exception):
    """One file cannot become a case: ``reason`` is short and countable, ``detail`` specific."""

    def __init__(self, reason: str, detail: str = "", error_class: str | None = None):
        super().__init__(reason)
        self.reason, self.detail, self.error_class = reason, detail, error_class


def error_class(err: BaseException) -> str:
    """The cause a rejects row is grouped by (its ``error_class`` column): the class of the
    exception a reader raised (``UnidentifiedImageError``, ``JSONDecodeError``,
    ``RecursionError`` ...), or ``InputRejected`` when a MedScope check refused the file itself.
    An InputRejected raised while handling a library's exception names that exception's class.

    Parameters
    ----------
    err : BaseException
        The exception met while reading one file.

    Returns
    -------
    str
        The ``error_class`` the exception names, else the class name of its cause (for an InputRejected or
        ``BadText`` raised while handling another exception), else its own class name.
    """
    named = getattr(err, "error_class", None)
    if named:
        return named
    if isinstance(err, InputRejected) or type(err).__name__ == "BadText":
        ctx = err.__context__
        if ctx is not None and not isinstance(ctx, InputRejected):
            return error_class(ctx)
        return type(err).__name__
    return type(err).__name__


def read_bounded(uri: str, max_bytes: int) -> bytes:
    """The bytes of a regular file, at most ``max_bytes`` of them; InputRejected otherwise.

    Local files: ``stat`` first (follows symlinks), then a non-blocking open and ``fstat``
    again, so a FIFO, socket or device -- named like an image or behind a symlink -- is
    refused without ever blocking or reading without bound.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.
    max_bytes : int
        Most bytes allowed (``limits.max_file_bytes``).

    Returns
    -------
    bytes
        The whole file.

    Raises
    ------
    InputRejected
        ``not a regular file``, ``over max_file_bytes`` (also when the file grows while read),
        ``path too long`` (over the system's PATH_MAX) or ``unreadable file``.
    """
    local = storage.local_path(uri)
    if local is None:
        return _read_remote(uri, max_bytes)
    try:
        st = os.stat(local)
        _require_regular(st.st_mode, max_bytes, st.st_size)
        fd = os.open(local, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        if err.errno == errno.ENAMETOOLONG:
            raise InputRejected("path too long", f"{len(os.fsencode(local))} bytes, over the system's limit on a path "
                                "(PATH_MAX); move the file higher up the folder tree") from None
        raise InputRejected("unreadable file", err.strerror or str(err)) from None
    try:
        st = os.fstat(fd)
        _require_regular(st.st_mode, max_bytes, st.st_size)
        # One read of the size fstat gave, into one buffer: reading in pieces and joining them
        # held every byte twice (a 1 GB sparse file peaked at 2.1 GB, issue 51). The pieces
        # below only serve a file that grows while it is read.
        first = os.read(fd, min(st.st_size, max_bytes) + 1) if st.st_size else b""
        chunks, total = [first], len(first)
        while total <= max_bytes:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:  # grew while we read it
            raise InputRejected("over max_file_bytes", f"more than {max_bytes} bytes (limits.max_file_bytes)")
        return first if len(chunks) == 1 else b"".join(chunks)
    except OSError as err:
        raise InputRejected("unreadable file", err.strerror or str(err)) from None
    finally:
        os.close(fd)


def _require_regular(mode: int, max_bytes: int, size: int) -> None:
    if not stat.S_ISREG(mode):
        kind = {stat.S_IFIFO: "FIFO", stat.S_IFCHR: "character device", stat.S_IFBLK: "block device",
                stat.S_IFSOCK: "socket"}.get(stat.S_IFMT(mode), "special file")
        raise InputRejected("not a regular file", kind)
    if size > max_bytes:
        raise InputRejected("over max_file_bytes", f"{size} bytes > {max_bytes} (limits.max_file_bytes)")


def _read_remote(uri: str, max_bytes: int) -> bytes:
    fs, path = storage.filesystem(uri)
    try:
        size = fs.info(path).get("size")
        if size is not None and size > max_bytes:
            raise InputRejected("over max_file_bytes", f"{size} bytes > {max_bytes} (limits.max_file_bytes)")
        with fs.open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except InputRejected:
        raise
    except (MedScopeError, OSError) as err:
        raise InputRejected("unreadable file", str(err)) from None
    if len(data) > max_bytes:
        raise InputRejected("over max_file_bytes", f"more than {max_bytes} bytes (limits.max_file_bytes)")
    return data


def __getattr__(name: str):
    # 0.1's name, for a cohort loader or protocol written outside the package against it
    if name == "Reject":
        import warnings

        warnings.warn("medscope.io.bounded.Reject is now InputRejected; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return InputRejected
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
