"""Fixtures of the hostile-input suite (the helpers are in :mod:`hostile_helpers`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def hostile_paths(tmp_path_factory) -> dict[str, str]:
    """Output paths no command can use: a regular file F, F/sub, /dev/null, a 300-character
    name, an unwritable directory RO and RO/x (as root, whom permissions do not stop, a
    directory of /sys, where nobody may create files)."""
    base = tmp_path_factory.mktemp("hostile")
    f = base / "F"
    f.write_text("a regular file\n")
    if os.geteuid() == 0:
        ro = Path("/sys/fs")
    else:
        ro = base / "RO"
        ro.mkdir()
        ro.chmod(0o555)
    return {
        "F": str(f), "F/sub": str(f / "sub"), "/dev/null": "/dev/null",
        "300-char name": str(base / ("x" * 300)), "RO": str(ro), "RO/x": str(ro / "x"),
        "''": "",
    }
