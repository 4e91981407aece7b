"""URI-addressed storage over fsspec: plain paths, ``file://``, ``s3://`` and ``memory://``.

- ``s3://`` goes through s3fs. The endpoint comes from ``AWS_ENDPOINT_URL`` (or
  ``configure(s3_endpoint=...)``), credentials from the usual AWS variables. Listing caches
  are off, because other writers (Ray workers, a resumed job) add files under our feet.
- Writes are atomic: a local file is written beside its target and renamed into place; an
  S3 object appears whole on a single PUT. A reader never sees half a file.
- ``write_once`` never replaces an existing object, so part files of a resumable job are
  write-once.
- ``memory://`` lives in one process: fine for tests and one-process tools, not for data
  that Ray workers must share.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat
import tempfile
import uuid
from functools import lru_cache

import fsspec

from medscope.errors import MedScopeError

_SETTINGS: dict[str, str | None] = {"s3_endpoint": None}


def configure(*, s3_endpoint: str | None = None) -> None:
    """Set the S3 endpoint for this process (overrides ``AWS_ENDPOINT_URL``).

    Parameters
    ----------
    s3_endpoint : str or None, optional
        Endpoint URL of the S3 service; None falls back to the environment. Clears the cached
        filesystems so the next access uses it.
    """
    _SETTINGS["s3_endpoint"] = s3_endpoint
    _filesystem.cache_clear()


def protocol(uri: str) -> str:
    """The scheme of a URI: the part before ``://``, or ``"file"`` for a plain path.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.

    Returns
    -------
    str
        ``"file"``, ``"s3"``, ``"memory"``, or whatever scheme the URI names (not checked here).
    """
    if "://" not in uri:
        return "file"
    return uri.split("://", 1)[0]


@lru_cache(maxsize=16)
def _filesystem(proto: str, endpoint: str | None) -> fsspec.AbstractFileSystem:
    if proto == "s3":
        try:
            import s3fs  # noqa: F401
        except ImportError:  # pragma: no cover - s3fs is a core dependency
            raise MedScopeError("s3:// needs the s3fs package: pip install s3fs") from None
        kwargs = {"use_listings_cache": False, "skip_instance_cache": True}
        if endpoint:
            kwargs["endpoint_url"] = endpoint
        return fsspec.filesystem("s3", **kwargs)
    if proto in ("file", "memory"):
        return fsspec.filesystem(proto)
    raise MedScopeError(f"unsupported storage scheme {proto}://; use a path, file://, s3:// or memory://")


def s3_endpoint() -> str | None:
    """The S3 endpoint this process uses (configured, or from the environment), if any.

    Returns
    -------
    str or None
        The configured endpoint, else ``AWS_ENDPOINT_URL``, else ``AWS_ENDPOINT_URL_S3``, else None.
    """
    return _SETTINGS["s3_endpoint"] or os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL_S3")


def filesystem(uri: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """(filesystem, path inside it) for a URI.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.

    Returns
    -------
    fs : fsspec.AbstractFileSystem
        The (cached) filesystem of the URI's scheme; S3 with listing caches off.
    path : str
        The absolute local path (``~`` expanded) for a plain path or ``file://``; the URI without
        ``s3://`` for S3; the URI itself for ``memory://``.

    Raises
    ------
    MedScopeError
        For an unsupported scheme.
    """
    proto = protocol(uri)
    endpoint = s3_endpoint()
    fs = _filesystem(proto, endpoint if proto == "s3" else None)
    if proto == "file":
        path = uri[len("file://") :] if uri.startswith("file://") else uri
        return fs, os.path.abspath(os.path.expanduser(path))
    return fs, uri.split("://", 1)[1] if proto == "s3" else uri


def absolute(uri: str) -> str:
    """The URI with a relative local path made absolute; other schemes unchanged.

    Workers do not share the driver's working directory (Ray Train and Tune change into
    their trial folder), so a URI handed to them must not depend on it.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.

    Returns
    -------
    str
        The absolute local path for a plain path or ``file://`` URI (``~`` expanded); the URI itself for
        other schemes.
    """
    if protocol(uri) != "file":
        return uri
    return filesystem(uri)[1]


def join(uri: str, *parts: str) -> str:
    """Join path parts onto a URI with '/' (or the OS separator for plain paths).

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.
    *parts : str
        Path components to append.

    Returns
    -------
    str
        ``os.path.join`` for a plain path; for a URI (``file://`` included), a ``/`` join after trailing
        slashes are removed.
    """
    if protocol(uri) == "file" and "://" not in uri:
        return os.path.join(uri, *parts)
    return posixpath.join(uri.rstrip("/"), *parts)


def exists(uri: str) -> bool:
    """Whether a file or folder exists at ``uri`` (the listing cache is dropped first).

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.

    Returns
    -------
    bool
        True when something exists there.
    """
    fs, path = filesystem(uri)
    _invalidate(fs, path)
    return fs.exists(path)


def is_dir(uri: str) -> bool:
    """Whether ``uri`` is a folder (the listing cache is dropped first).

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.

    Returns
    -------
    bool
        True for a folder (or an S3 / memory prefix holding objects).
    """
    fs, path = filesystem(uri)
    _invalidate(fs, path)
    return fs.isdir(path)


def read_bytes(uri: str) -> bytes:
    """A file's whole content.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.

    Returns
    -------
    bytes
        The file's bytes.

    Raises
    ------
    MedScopeError
        ``not found: <uri>`` when there is no file.
    """
    fs, path = filesystem(uri)
    try:
        return fs.cat_file(path)
    except FileNotFoundError:
        raise MedScopeError(f"not found: {uri}") from None


def read_utf8(uri: str) -> str:
    """A file's whole content decoded as strict UTF-8 (no size guard: for files MedScope wrote).

    Input files a user hands in go through :func:`medscope.io.safe_text.read_text` instead.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.

    Returns
    -------
    str
        The decoded text.

    Raises
    ------
    MedScopeError
        When there is no file.
    UnicodeDecodeError
        When the bytes are not UTF-8.
    """
    return read_bytes(uri).decode("utf-8")


def write_bytes(uri: str, data: bytes) -> None:
    """Write ``data`` to ``uri`` atomically, replacing what was there.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI. Missing local folders are made.
    data : bytes
        The file's content.
    """
    if protocol(uri) == "file":
        with _local_atomic(filesystem(uri)[1]) as fh:
            fh.write(data)
        return
    fs, path = _remote_target(uri)
    fs.pipe_file(path, data)  # one PUT, atomic on S3
    _invalidate(fs, path)


def _process_umask() -> int:
    """This process's umask, read without changing it where Linux shows it (``os.umask`` sets it
    while reading, which another thread's file creation could see)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _local_atomic(path: str):
    """A file object on a temporary file beside ``path``, renamed onto it when the block exits
    without error (readers never see half a file) and removed otherwise.

    A ``path`` that is a device, FIFO or socket is refused before anything is written: renamed
    onto, ``--out /dev/full`` replaced the device node with a regular file (issue 51, the eighth
    campaign), and a FIFO's reader would never see the data."""
    _refuse_special(path)
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".part")
    try:
        # mkstemp makes 0600 files; a table should get the mode any other new file gets here
        os.fchmod(fd, 0o666 & ~_process_umask())
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


_SPECIAL = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
            (stat.S_ISSOCK, "a socket"))


def _refuse_special(path: str) -> None:
    """MedScopeError naming ``path`` when it exists as a device, FIFO or socket (a symlink is left
    alone: the rename replaces the link, never what it points to)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    for test, kind in _SPECIAL:
        if test(mode):
            raise MedScopeError(f"{path}: {kind}, not a file MedScope can write; give the path of a regular file")


def _remote_target(uri: str):
    """(fs, path) of a non-local ``uri``, its parent made where the store needs one (memory)."""
    fs, path = filesystem(uri)
    parent = posixpath.dirname(path)
    if parent and protocol(uri) == "memory":
        fs.makedirs(parent, exist_ok=True)
    return fs, path


@contextlib.contextmanager
def open_write(uri: str):
    """A binary file object to stream a large file to ``uri`` (one piece at a time, e.g. a
    Parquet writer's row groups), which appears only when the block exits without error: a
    temporary file renamed into place locally; on S3 the multipart upload completes on close.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.

    Yields
    ------
    file object
        A writable binary file; the file appears at ``uri`` only when the block exits without error.
    """
    if protocol(uri) == "file":
        with _local_atomic(filesystem(uri)[1]) as fh:
            yield fh
        return
    fs, path = _remote_target(uri)
    with fs.open(path, "wb") as fh:
        yield fh
    _invalidate(fs, path)


def open_read(uri: str):
    """A seekable binary file object on ``uri`` that reads ranges on demand (a Parquet reader
    then fetches only the row groups it is asked for).

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.

    Returns
    -------
    file object
        A seekable binary file, opened for reading; the caller closes it.

    Raises
    ------
    MedScopeError
        ``not found: <uri>`` when there is no file.
    """
    fs, path = filesystem(uri)
    try:
        return fs.open(path, "rb")
    except FileNotFoundError:
        raise MedScopeError(f"not found: {uri}") from None


def write_text(uri: str, text: str) -> None:
    """Write ``text`` as UTF-8 to ``uri`` atomically (:func:`write_bytes`).

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.
    text : str
        The file's content.
    """
    write_bytes(uri, text.encode("utf-8"))


def write_once(uri: str, data: bytes) -> bool:
    """Create ``uri`` with ``data`` unless it exists. Returns whether it wrote.

    Local files use a hard link from a finished temporary file, which fails if the target
    exists, so two racing writers cannot both win. On S3 and memory a check precedes the
    PUT; keys are deterministic, so a lost race writes identical bytes.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.
    data : bytes
        The file's content.

    Returns
    -------
    bool
        True when this call created the file, False when it existed already.
    """
    fs, path = filesystem(uri)
    if protocol(uri) == "file":
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".tmp-{uuid.uuid4().hex}.part")
        with open(tmp, "wb") as fh:
            fh.write(data)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        finally:
            _unlink_quietly(tmp)
    if exists(uri):
        return False
    write_bytes(uri, data)
    return True


def list_files(uri: str, suffix: str = "") -> list[str]:
    """URIs of the files directly under folder ``uri`` ending with ``suffix`` (sorted).

    Parameters
    ----------
    uri : str
        A folder, as a plain path or URI.
    suffix : str, optional
        Wanted ending of the file names; ``""`` for every file. Default ``""``.

    Returns
    -------
    list of str
        Sorted URIs (``join(uri, name)``); sub-folders and ``.tmp-`` files left out. Empty when the
        folder does not exist.
    """
    fs, path = filesystem(uri)
    _invalidate(fs, path)
    if not fs.exists(path):
        return []
    out = []
    for info in fs.ls(path, detail=True):
        name = info["name"]
        base = name.rstrip("/").rsplit("/", 1)[-1]
        if info.get("type") == "directory" or base.startswith(".tmp-"):
            continue
        if base.endswith(suffix):
            out.append(join(uri, base))
    return sorted(out)


def delete(uri: str) -> None:
    """Remove a file or a folder tree if it exists.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.
    """
    fs, path = filesystem(uri)
    _invalidate(fs, path)
    if fs.exists(path):
        fs.rm(path, recursive=True)


def local_path(uri: str) -> str | None:
    """The local filesystem path behind a plain path or ``file://`` URI, else None.

    Parameters
    ----------
    uri : str
        A plain path, ``file://``, ``s3://`` or ``memory://`` URI.

    Returns
    -------
    str or None
        The absolute local path, or None for ``s3://`` and ``memory://``.
    """
    if protocol(uri) != "file":
        return None
    return filesystem(uri)[1]


def _invalidate(fs: fsspec.AbstractFileSystem, path: str) -> None:
    invalidate = getattr(fs, "invalidate_cache", None)
    if invalidate is not None:
        invalidate(path)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
