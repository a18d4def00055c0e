"""A full disk (or any fault of the file system while a result is written) ends every writing
command in one line naming the file and the cause, exit status 2, and leaves nothing that a
later run or ``Result.load`` could take for a result: either the complete result or none."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

import attnsignal as asg
from attnsignal.persistence import TEMPORARY_NAME

from hostile_helpers import run_cli

SMALL = ["--d", "4", "--n-informative", "1", "--n-nuisance", "2", "--theta", "1"]
WRITERS = {
    "run": ["run", *SMALL, "--eta0", "0.1", "--steps", "2", "--runs", "2", "--engine", "chain",
            "--quiet"],
    "baseline": ["baseline", *SMALL, "--steps", "2", "--runs", "2"],
    "landscape": ["landscape", "--d", "4", "--n-informative", "5", "--n-nuisance", "50",
                  "--points", "5", "--methods", "asymptotic", "--quiet"],
    "ode": ["ode", *SMALL, "--quiet"],
}
RESULT_WRITERS = ("run", "baseline")


def _full_after(monkeypatch, n: int) -> list[int]:
    """Make the file system full after ``n`` files: the (n+1)-th ``fsync`` of a written file
    raises ENOSPC, as a full disk reports it on a file system that allocates late."""
    calls = [0]
    real = os.fsync

    def fsync(fd):
        calls[0] += 1
        if calls[0] > n:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def _no_temporaries(d: Path) -> None:
    left = [p.name for p in d.rglob("*") if TEMPORARY_NAME.match(p.name)]
    assert not left, left


@pytest.mark.parametrize("cmd", list(WRITERS))
def test_a_full_disk_is_one_line_naming_the_file(cmd, tmp_path, monkeypatch, capsys):
    out = tmp_path / "o"
    _full_after(monkeypatch, 0)
    end = run_cli(WRITERS[cmd] + ["--out", str(out)], capsys)
    assert end.how == "refused", end
    assert end.message.endswith(": No space left on device"), end
    assert str(out) in end.message, end  # the file being written, not a temporary
    _no_temporaries(tmp_path)
    if cmd in RESULT_WRITERS:
        with pytest.raises(ValueError):  # no result: nothing to mistake for one
            asg.Result.load(out)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("cmd", RESULT_WRITERS)
def test_a_disk_full_midway_leaves_the_whole_result_or_none(cmd, n, tmp_path, monkeypatch,
                                                             capsys):
    out = tmp_path / "o"
    calls = _full_after(monkeypatch, n)
    end = run_cli(WRITERS[cmd] + ["--out", str(out)], capsys)
    assert calls[0] > n, "the command wrote fewer files than the case assumes"
    assert end.how == "refused" and "No space left on device" in end.message, end
    _no_temporaries(tmp_path)
    try:
        res = asg.Result.load(out)
    except ValueError:
        return  # no result
    assert res.alignment.shape == (2, 3) and res.run.runs == 2  # the whole result


def _mount_tiny_tmpfs(where: Path) -> bool:
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return False
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                       capture_output=True)
    return r.returncode == 0


@pytest.mark.timeout(120)
def test_a_tiny_file_system_is_one_line(tmp_path):
    """A real 64 KiB tmpfs (root and a kernel that allows the mount: else skipped; the ENOSPC
    tests above cover the same path without it). One subprocess: the console script as a
    user runs it."""
    fs = tmp_path / "tiny"
    if not _mount_tiny_tmpfs(fs):
        pytest.skip("cannot mount a tmpfs here (not root, or mounts not allowed)")
    try:
        out = fs / "o"
        r = subprocess.run([sys.executable, "-m", "attnsignal", *WRITERS["run"], "--out",
                            str(out)], capture_output=True, text=True, timeout=110)
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("attnsignal: error:")]
        assert r.returncode == 2 and len(lines) == 1, r.stderr[-2000:]
        assert "No space left on device" in lines[0] and str(out) in lines[0], lines
        assert "Traceback" not in r.stderr
        _no_temporaries(fs)
        try:  # the figures did not fit; the result either loads whole or not at all
            res = asg.Result.load(out)
            assert res.alignment.shape == (2, 3)
        except ValueError:
            pass
    finally:
        subprocess.run(["umount", str(fs)], capture_output=True)
