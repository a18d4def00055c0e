"""Paths given by the user, checked before any work: output directories and files, input
TOML files.

Every check raises :class:`~attnsignal.config.ConfigError` (one line ``field: allowed; got
value``; exit status 2 on the command line): an empty path, a file where a directory is
needed (``--out F``, ``--out F/sub``, ``--out /dev/null``), a name too long for the file
system, a directory that cannot be written (read-only, no permission), a symbolic-link loop,
an input that is a directory, unreadable, not UTF-8 or not TOML.
"""

from __future__ import annotations

import errno
import os
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from .validation import ConfigError

__all__ = ["check_output_dir", "read_toml"]


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
