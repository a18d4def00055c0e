"""Persistence: atomic file writes and the on-disk form of a :class:`~attnsignal.results.Result`.

Atomic file
-----------
:func:`atomic_write` calls ``writer(tmp)`` on a temporary file ``.NAME.XXXXXXXX.tmp`` beside
the target, fsyncs it and renames it onto the target (``rename`` is atomic on POSIX), then
fsyncs the directory. A reader sees the old file or the new one, never a part. Every file the
package writes goes through it, so every file follows the user's umask like any other tool's
output: the temporary file is created with mode ``0o666 & ~umask`` (by ``open(2)``, which
applies the umask; ``mkstemp`` would make it ``0o600`` and the rename would keep that), and
directories are made with ``0o777 & ~umask``. A writer killed part-way leaves its temporary
file; :func:`remove_temporaries` deletes those of one directory (callers do it while they hold
the directory's lock, :func:`~attnsignal.paths.file_lock`, so that no live writer's file is taken).

A result directory (format ``attnsignal.result/2``)
----------------------------------------------------
::

    OUT/manifest.json               configs, seed, engine, ..., and "files": the name and
                                    sha256 of each data file below; written LAST — the commit
    OUT/result.<h>.parquet          tidy frame (one row per run × record)
    OUT/q_final.<h>.npy             (optional) final unit queries, runs × d
    OUT/q_records.<h>.npy           (optional) queries at the records, runs × records × d
    OUT/.result.lock                held (flock) while a save runs

``<h>`` is the first 16 hex digits of the file's sha256, so the data files of two saves never
share a name unless their bytes are equal. A save writes the new data files beside the old
ones, then replaces ``manifest.json`` in one rename, then deletes what the new manifest does
not name (the previous data files and temporaries left by a killed save). Killed at any point,
the directory holds either the old result or the new one, complete: the manifest names its
own data files by content hash, and :func:`read_result_files` checks every checksum.

What a load checks: every data file's sha256 against the manifest, and that ``has_q_final``
and ``has_q_records`` agree with the files the manifest names (here);
:meth:`~attnsignal.results.Result.load` then checks that the frame holds the manifest's
``run_ids`` in their order, each at the same records (so an edited ``run_ids`` cannot
relabel the rows), and the queries' shapes. A directory of format ``attnsignal.result/1``
(fixed names ``result.parquet``, ``q_final.npy``, ``q_records.npy``, no checksums) still
loads, with the row, id and shape checks only: a damaged or altered data file is found only
where it breaks them.

Every load failure is a :class:`ResultFileError` (a ``ValueError``) with a
one-line message that names the file: ``path: <what is wrong>; got '<file>'``.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from .validation import short_repr
from .paths import check_output_dir, file_lock

__all__ = [
    "atomic_write",
    "source_digest",
    "file_system_error",
    "remove_temporaries",
    "ResultFileError",
    "ResultMissingError",
    "RESULT_FORMAT",
    "READABLE_RESULT_FORMATS",
    "MANIFEST_NAME",
    "write_result_files",
    "read_result_files",
    "read_parquet_bytes",
    "fsync_dir",
]

RESULT_FORMAT = "attnsignal.result/2"
#: Formats :func:`read_result_files` reads: 1 = fixed file names, no checksums.
READABLE_RESULT_FORMATS = ("attnsignal.result/1", RESULT_FORMAT)
MANIFEST_NAME = "manifest.json"
_LOCK_NAME = ".result.lock"
#: data files of a result: key in ``manifest["files"]`` -> (stem, suffix)
_DATA_FILES = {"frame": ("result", ".parquet"), "q_final": ("q_final", ".npy"),
               "q_records": ("q_records", ".npy")}
_LEGACY_NAMES = {"frame": "result.parquet", "q_final": "q_final.npy",
                 "q_records": "q_records.npy"}
_OWN_FILE = re.compile(r"^(result\.[0-9a-f]{16}\.parquet|q_(final|records)\.[0-9a-f]{16}\.npy"
                       r"|result\.parquet|q_(final|records)\.npy)$")
_OWN_TEMP = re.compile(r"^\.(manifest\.json|result\.[^/]*parquet|q_(final|records)[^/]*npy)"
                       r"\..*\.tmp$")
_MAX_DETAIL = 160


class ResultFileError(ValueError):
    """A file of a saved result is missing, unreadable, damaged or of an unknown format: bad
    data on disk, not a bad argument (so not a ``ConfigError``); a ``ValueError``, like a
    malformed JSON document.

    One line, naming the file: ``path: <problem>; got '<file>'`` (``.file``, ``.problem``)."""

    def __init__(self, file: str | os.PathLike[str], problem: str):
        self.file = str(file)
        self.problem = _one_line(problem)
        super().__init__(f"path: {self.problem}; got {short_repr(self.file)}")

    def __reduce__(self):  # picklable across process pools
        return (type(self), (self.file, self.problem))


class ResultMissingError(ResultFileError, FileNotFoundError):
    """The directory holds no ``manifest.json``: not a (complete) result directory."""


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


# ---------------------------------------------------------------------- atomic file



@functools.lru_cache(maxsize=8)
def source_digest(patterns: tuple[str, ...] = ("**/*.py",), exclude: tuple[str, ...] = ()
                  ) -> str:
    """SHA-256 of the package's source files matching ``patterns`` (globs relative to the
    package, e.g. ``"theory/*.py"``) less those in ``exclude`` (relative paths), each by its
    relative path and bytes: the key of a stored value computed by this code (a reproduction's
    stored call, the accuracy map's recomputed rows), so that a value another version of the
    code computed is never read back as this one's. Cached per process: the source does not
    change under a running interpreter."""
    root = Path(__file__).resolve().parent
    files = {f for pat in patterns for f in root.glob(pat)}
    h = hashlib.sha256()
    for f in sorted(files):
        rel = f.relative_to(root).as_posix()
        if rel in exclude:
            continue
        h.update(rel.encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make renames in ``directory`` durable (best effort: some file systems refuse)."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


#: characters of a temporary file's random part (those of ``tempfile.mkstemp``, so that the
#: temporaries of every version of this package match :data:`TEMPORARY_NAME`)
_TEMP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"
#: the name of a temporary file of :func:`atomic_write`: ``.NAME.XXXXXXXX.tmp``
TEMPORARY_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def _new_temporary(path: Path) -> tuple[Path, int]:
    """Create an empty ``.NAME.XXXXXXXX.tmp`` beside ``path`` (``O_EXCL``: never another's)
    with mode ``0o666 & ~umask``; return it and that mode. While it is written the owner can
    read and write it whatever the umask (the final mode is set by :func:`atomic_write`)."""
    for _ in range(100):
        rand = "".join(_TEMP_CHARS[b % len(_TEMP_CHARS)] for b in os.urandom(8))
        tmp = path.parent / f".{path.name}.{rand}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                         0o666)
        except FileExistsError:
            continue
        try:
            mode = os.fstat(fd).st_mode & 0o7777  # 0o666 & ~umask (or a default ACL's mode)
            if mode & 0o600 != 0o600:
                os.fchmod(fd, mode | 0o600)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        return tmp, mode
    raise FileExistsError(f"no free temporary name beside {path}")  # pragma: no cover


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)``, fsync ``tmp_path`` and rename it onto ``path``.

    ``tmp_path`` is ``.NAME.XXXXXXXX.tmp`` in ``path``'s directory (created if needed, mode
    ``0o777 & ~umask``), an empty file of mode ``0o666 & ~umask`` that ``write`` opens and
    fills; ``path`` ends with that mode (set again before the rename, should ``write`` have
    replaced the file). It is removed if ``write`` raises. Raises whatever ``write`` raises;
    a fault of the file system (a full disk, a read-only mount, an I/O error) while the
    temporary is created, written or renamed raises ``OSError(errno, cause, path)``, naming
    ``path`` (not the temporary) and the cause, e.g. ``[Errno 28] No space left on device:
    'OUT/manifest.json'``; ``path`` is then as it was before the call.
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp, mode = _new_temporary(path)
        write(str(tmp))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
            if os.fstat(fh.fileno()).st_mode & 0o7777 != mode:
                os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise file_system_error(exc, path) from exc
        raise
    fsync_dir(path.parent)


def file_system_error(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """``exc`` (an ``OSError`` of any origin: the OS, pyarrow, matplotlib) as an ``OSError``
    of the same class naming ``path`` and the cause in one line: ``errno``/``strerror`` when
    it has them, else its text (an ``errno`` is read back from that text where it names one,
    as pyarrow's ``"Error writing bytes to file. Detail: [errno 28] ..."`` does)."""
    code, cause = exc.errno, exc.strerror
    if cause is None:
        cause = " ".join(str(exc).split()) or type(exc).__name__
        named = re.search(r"errno (\d+)", cause, re.IGNORECASE)
        if code is None and named:
            code = int(named.group(1))
            cause = os.strerror(code)
    # OSError(errno, ...) is the errno's own class (FileNotFoundError, PermissionError...)
    return OSError(code, cause, str(path)) if code is not None else OSError(f"{path}: {cause}")


def remove_temporaries(directory: str | os.PathLike[str]) -> list[str]:
    """Delete the temporary files of :func:`atomic_write` (:data:`TEMPORARY_NAME`) that a
    killed writer left in ``directory`` (not below it); nothing else. Call it only while no
    other writer can be writing there (holding the directory's
    :func:`~attnsignal.paths.file_lock`). Returns the
    names removed; a missing directory has none."""
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for e in entries:
        if TEMPORARY_NAME.match(e.name) and e.is_file(follow_symlinks=False):
            try:
                os.unlink(e.path)
                removed.append(e.name)
            except OSError:
                pass
    return removed


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Hold ``directory/.result.lock``, so that two saves into one directory do not delete
    each other's files."""
    with file_lock(directory / _LOCK_NAME):
        yield


# ---------------------------------------------------------------------- write


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def write_result_files(directory: str | os.PathLike[str], manifest: dict[str, Any],
                       frame: pd.DataFrame, arrays: dict[str, np.ndarray | None]) -> Path:
    """Save a result into ``directory`` as one atomic unit (see the module docstring).

    manifest : the result's metadata (JSON-serialisable); ``format`` and ``files`` are set here
    frame : the tidy frame;  arrays : ``{"q_final": ..., "q_records": ...}`` (None: absent)

    Returns the directory. Raises ``ConfigError`` when ``directory`` cannot be a writable
    directory (checked before anything is written), ``OSError`` when a write fails later.
    """
    out = check_output_dir(directory, "path")
    blobs = {"frame": _parquet_bytes(frame)}
    for key, arr in arrays.items():
        if arr is not None:
            blobs[key] = _npy_bytes(np.asarray(arr))
    files = {}
    with _locked(out):
        for key, data in blobs.items():
            digest = hashlib.sha256(data).hexdigest()
            stem, suffix = _DATA_FILES[key]
            name = f"{stem}.{digest[:16]}{suffix}"
            files[key] = {"name": name, "sha256": digest}
            atomic_write(out / name, lambda p, b=data: Path(p).write_bytes(b))
        man = {**manifest, "format": RESULT_FORMAT, "files": files}
        text = json.dumps(man, indent=2, sort_keys=True)
        atomic_write(out / MANIFEST_NAME, lambda p: Path(p).write_text(text + "\n", encoding="utf-8"))
        keep = {f["name"] for f in files.values()}
        _remove_unreferenced(out, keep)
    return out


def _remove_unreferenced(out: Path, keep: set[str]) -> None:
    """Delete this module's data files that ``keep`` does not name, and its temporaries."""
    for p in out.iterdir():
        name = p.name
        if name in keep:
            continue
        if _OWN_FILE.match(name) or _OWN_TEMP.match(name):
            try:
                p.unlink()
            except OSError:
                pass
    fsync_dir(out)


# ---------------------------------------------------------------------- read


def read_manifest_file(mpath: Path) -> dict[str, Any]:
    """The parsed manifest at ``mpath``; raises ResultFileError / ResultMissingError."""
    try:
        raw = mpath.read_bytes()
    except FileNotFoundError:
        raise ResultMissingError(
            mpath, f"no {MANIFEST_NAME} — not a complete result directory") from None
    except IsADirectoryError:
        raise ResultFileError(mpath, f"{MANIFEST_NAME} must be a file, not a directory") from None
    except OSError as exc:
        raise ResultFileError(mpath, f"{MANIFEST_NAME} is unreadable ({exc.strerror})") from None
    try:
        man = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ResultFileError(mpath, f"{MANIFEST_NAME} is not UTF-8 text") from None
    except ValueError as exc:
        raise ResultFileError(mpath, f"{MANIFEST_NAME} is not valid JSON ({exc})") from None
    if not isinstance(man, dict):
        raise ResultFileError(mpath, f"{MANIFEST_NAME} must hold a JSON object")
    fmt = man.get("format")
    if fmt not in READABLE_RESULT_FORMATS:
        readable = ", ".join(repr(f) for f in READABLE_RESULT_FORMATS)
        raise ResultFileError(
            mpath, f"format must be one of {readable} (a newer attnsignal, or not a result); "
                   f"found {fmt!r}")
    return man


def read_parquet_bytes(data: bytes, file: str | os.PathLike[str]) -> pd.DataFrame:
    """A frame from Parquet bytes; a damaged file is a one-line ResultFileError naming it."""
    try:
        return pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # pyarrow raises several types, with multi-line messages
        raise ResultFileError(file, f"not a readable Parquet file ({type(exc).__name__}: "
                                    f"{exc})") from None


def _read_npy_bytes(data: bytes, file: Path) -> np.ndarray:
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as exc:
        raise ResultFileError(file, f"not a readable .npy file ({type(exc).__name__}: {exc})") from None


def _read_bytes(file: Path, sha256: str | None) -> bytes:
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise ResultFileError(file, f"missing (named by {MANIFEST_NAME})") from None
    except OSError as exc:
        raise ResultFileError(file, f"unreadable ({exc.strerror})") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ResultFileError(file, f"sha256 differs from {MANIFEST_NAME} (damaged or altered)")
    return data


def read_result_files(directory: str | os.PathLike[str]
                      ) -> tuple[dict[str, Any], Path, pd.DataFrame, dict[str, np.ndarray | None]]:
    """Read what :func:`write_result_files` wrote: ``(manifest, manifest_path, frame, arrays)``.

    Checks the format and, for format 2, every file's sha256 and that ``has_q_final`` and
    ``has_q_records`` say which query files the manifest names (format 1 has no checksums:
    its files are found by name, and the caller's row and id checks are all there is).
    Raises ResultMissingError (no manifest; also a ``FileNotFoundError``) or ResultFileError,
    naming the file.
    """
    out = Path(directory)
    mpath = out / MANIFEST_NAME
    man = read_manifest_file(mpath)
    if man["format"] == RESULT_FORMAT:
        files = man.get("files")
        if not isinstance(files, dict) or "frame" not in files:
            raise ResultFileError(mpath, "manifest must name its data files ('files.frame')")
        entries = {}
        for key, f in files.items():
            ok = (key in _DATA_FILES and isinstance(f, dict) and isinstance(f.get("name"), str)
                  and _OWN_FILE.match(f["name"]) and isinstance(f.get("sha256"), str))
            if not ok:
                raise ResultFileError(mpath, f"files.{key}: must be one of this result's data "
                                             "files with its sha256")
            entries[key] = (out / f["name"], f["sha256"])
        for key in ("q_final", "q_records"):
            flag = man.get(f"has_{key}")
            if flag is not None and flag is not (key in entries):
                raise ResultFileError(
                    mpath, f"has_{key} is {json.dumps(flag)}, but the manifest names "
                           f"{'a' if key in entries else 'no'} {key} file")
    else:  # format 1: fixed names, no checksums
        entries = {"frame": (out / _LEGACY_NAMES["frame"], None)}
        for key in ("q_final", "q_records"):
            if man.get(f"has_{key}"):
                entries[key] = (out / _LEGACY_NAMES[key], None)
    fpath, digest = entries["frame"]
    frame = read_parquet_bytes(_read_bytes(fpath, digest), fpath)
    arrays: dict[str, np.ndarray | None] = {"q_final": None, "q_records": None}
    for key in ("q_final", "q_records"):
        if key in entries:
            p, digest = entries[key]
            arrays[key] = _read_npy_bytes(_read_bytes(p, digest), p)
    return man, mpath, frame, arrays
