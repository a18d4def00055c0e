"""Paths given by the user, checked before any work: output directories and files, input
TOML files; the locks that keep two writers out of one output directory.

Every check raises :class:`~attnsignal.config.ConfigError` (one line ``field: allowed; got
value``; exit status 2 on the command line): an empty path, a file where a directory is
needed (``--out F``, ``--out F/sub``, ``--out /dev/null``), a name too long for the file
system, a directory that cannot be written (read-only, no permission), a symbolic-link loop,
an input that is a directory, unreadable, not UTF-8 or not TOML, and an output directory that
another process is writing to (:func:`check_output_free`; the writer holds
:func:`file_lock` on a lock file in it while it runs).
"""

from __future__ import annotations

import errno
import os
import tempfile
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from .validation import ConfigError

__all__ = ["check_output_dir", "check_output_file", "read_toml", "file_lock", "output_in_use",
           "check_output_free", "REPRODUCTION_LOCK"]

#: held (``flock``) in its output directory while ``attnsignal reproduce`` writes into it
REPRODUCTION_LOCK = ".reproduce.lock"


def _describe_os_error(exc: OSError) -> str:
    if exc.errno == errno.ENAMETOOLONG:
        return "a name too long for the file system"
    if exc.errno == errno.ELOOP:
        return "a symbolic-link loop"
    return exc.strerror or type(exc).__name__


def _probe_writable(d: Path, field: str, text: str) -> None:
    if not os.access(d, os.W_OK | os.X_OK):
        raise ConfigError(field, "must be in a writable directory (permission denied)", text)
    # access() trusts mode bits; a read-only mount or an ACL can still refuse: try a file.
    # Its name is unique (mkstemp, O_EXCL), not per process: threads of one process (the
    # reproduction's sweeps) probe the same directory at once, and with one name per process
    # they removed each other's probe and reported "No such file or directory"
    try:
        fd, probe = tempfile.mkstemp(prefix=".attnsignal-write-test-", dir=d)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(field, f"must be in a writable directory ({_describe_os_error(exc)})",
                          text) from None


def _name_max(d: Path) -> int:
    try:
        return int(os.pathconf(d, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255


def check_output_dir(path: Any, field: str = "out", create: bool = True) -> Path:
    """``path`` as a directory that results can be written into.

    With ``create`` it is created (with parents) now; without, nothing is written and the
    nearest existing ancestor must be a writable directory (the caller creates it later).
    Refuses, with one line naming ``field``: an empty path, an existing file or device
    (``/dev/null``), a path under a file, a name too long, a symbolic-link loop, a
    read-only or otherwise unwritable directory. Returns the path."""
    if path is None or str(path) == "":
        raise ConfigError(field, "must name a directory to write into",
                          "" if path is None else str(path))
    p = Path(path)
    text = str(path)
    try:
        if p.exists() and not p.is_dir():
            raise ConfigError(field, "must be a directory (or not exist yet), not a file", text)
        if p.is_symlink() and not p.exists():
            p.stat()  # a dangling link or a loop: let stat say which
        if create:
            p.mkdir(parents=True, exist_ok=True)
            _probe_writable(p, field, text)
            return p
        anc = p
        while not anc.exists():
            if os.path.lexists(anc):
                anc.stat()  # a dangling link or a loop: let stat say which
            if len(os.fsencode(anc.name)) > 255:
                raise OSError(errno.ENAMETOOLONG, "File name too long")
            if anc.parent == anc:
                break
            anc = anc.parent
        if not anc.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory")
        _probe_writable(anc, field, text)
        return p
    except ConfigError:
        raise
    except FileExistsError:
        raise ConfigError(field, "must be a directory (or not exist yet); a file is in the way",
                          text) from None
    except NotADirectoryError:
        raise ConfigError(field, "must be a directory; a part of the path is a file", text) from None
    except OSError as exc:
        raise ConfigError(field, f"must be a directory that can be created "
                                 f"({_describe_os_error(exc)})", text) from None


def check_output_file(path: Any, field: str = "out") -> Path:
    """``path`` as a file that can be (re)written: its directory passes
    :func:`check_output_dir` and the path itself is not a directory or device; its name is
    not too long. Returns the path."""
    if path is None or str(path) == "":
        raise ConfigError(field, "must name a file to write", "" if path is None else str(path))
    p = Path(path)
    text = str(path)
    if p.exists() and not p.is_file():
        raise ConfigError(field, "must be a regular file (or not exist yet)", text)
    check_output_dir(p.parent if str(p.parent) else Path("."), field)
    max_name = _name_max(p.parent if str(p.parent) else Path("."))
    if len(os.fsencode(p.name)) + 16 > max_name:  # room for the temporary's prefix/suffix
        raise ConfigError(field, f"must have a file name of at most {max_name - 16} bytes", text)
    return p


def read_toml(path: Any, field: str = "config") -> dict[str, Any]:
    """The TOML document at ``path`` as a dict; ConfigError naming ``field`` when it is
    missing, a directory, unreadable (permission, symbolic-link loop, name too long), not
    UTF-8 or not valid TOML."""
    text = str(path)
    if text == "":
        raise ConfigError(field, "must name a TOML file", text)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(field, "file not found", text) from None
    except IsADirectoryError:
        raise ConfigError(field, "must be a TOML file, not a directory", text) from None
    except OSError as exc:
        raise ConfigError(field, f"cannot be read ({_describe_os_error(exc)})", text) from None
    try:
        doc = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(field, f"must be UTF-8 text (byte {exc.start} is not)", text) from None
    try:
        return tomllib.loads(doc)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(field, f"must be valid TOML ({exc})", text) from None


@contextmanager
def file_lock(path: str | os.PathLike[str], *, wait: bool = True,
              busy: Callable[[], BaseException] | None = None) -> Iterator[None]:
    """Hold an exclusive advisory ``flock`` on the file ``path`` while the block runs.

    The file is created empty (mode ``0o666 & ~umask``, so that a collaborator whose umask
    lets them write the directory can take it too) and kept. The kernel releases the lock
    when the process dies, however it dies. Two holders conflict whether they are two
    processes or two opens in one process. ``wait`` True: wait for the lock; False: when
    someone else holds it, raise ``busy()`` at once (default ``BlockingIOError``) — before
    the block runs, so an error of the block is never mistaken for it. Where there is no
    ``fcntl`` (not POSIX) nothing is locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:  # another user's lock file that we may not write: flock reads
        fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if busy is None:
                raise
            raise busy() from None
        yield
    finally:
        os.close(fd)  # releases the lock


def output_in_use(path: Any, what: str, field: str = "out") -> ConfigError:
    """The error for an output directory that another ``what`` (a command) is writing to:
    ``out: another WHAT is running in this directory; wait for it to end or use another
    --out; got 'DIR'``."""
    return ConfigError(field, f"another {what} is running in this directory; wait for it to "
                              f"end or use another --{field}", str(path))


def check_output_free(path: Any, lock_name: str, what: str, field: str = "out") -> None:
    """Refuse at once (:func:`output_in_use`) when another process holds ``path/lock_name``;
    creates nothing (a directory or lock file that does not exist is free, and so is one
    this process cannot open: the writer's own :func:`file_lock` then decides). A probe
    that answers before a command's slow start-up; the writer takes the lock for its whole
    run."""
    lock = Path(path) / lock_name
    try:
        if not lock.is_file():
            return
        with file_lock(lock, wait=False, busy=lambda: output_in_use(path, what, field)):
            pass
    except OSError:
        return
