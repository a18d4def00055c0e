"""One reproduction per output directory: a second one is refused at once with one line
naming the directory; a new run first deletes what a killed one left (its temporary files)
and nothing else."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from attnsignal.config import ConfigError
from attnsignal.persistence import file_lock
from attnsignal.reproduce import Plan, reproduce
from attnsignal.reproduce.pipeline import LOCK_NAME, PROFILE_DIR, claim_output


def _busy_line(out) -> str:
    return (f"attnsignal: error: out: another attnsignal reproduce is running in this "
            f"directory; wait for it to end or use another --out; got '{out}'")


@pytest.mark.timeout(180)
def test_a_second_reproduction_on_a_busy_directory_is_refused_at_once(tmp_path):
    """This process holds the directory as a running reproduction does; `attnsignal
    reproduce --quick` started on it ends with one line naming it and exit status 2, and
    writes nothing."""
    out = tmp_path / "busy"
    out.mkdir()
    with file_lock(out / LOCK_NAME, wait=False):
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "attnsignal", "reproduce", "--quick",
                              "--out", str(out)], capture_output=True, text=True, timeout=170)
        seconds = time.monotonic() - t0
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [_busy_line(out)]
    assert res.stdout == ""
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]  # no data/, figures/, report
    # before any work: the quick reproduction itself takes ~30 s on two idle cores
    assert seconds < 150, seconds


def test_reproduce_from_python_refuses_a_busy_directory_with_a_config_error(tmp_path):
    out = tmp_path / "busy"
    out.mkdir()
    with file_lock(out / LOCK_NAME, wait=False):
        with pytest.raises(ConfigError) as info:
            reproduce(out, plan=Plan.quick(), progress=False, log=lambda s: None)
    assert f"attnsignal: error: {info.value}" == _busy_line(out)
    assert sorted(p.name for p in out.iterdir()) == [LOCK_NAME]


def test_claiming_a_directory_removes_a_killed_runs_temporaries_and_nothing_else(tmp_path):
    out = tmp_path / "r"
    left = [".report.html.k1ll3d00.tmp", "figures/.e1_headline.pdf.a1b2c3d4.tmp",
            "figures/.e6_baselines.png.zzzz_999.tmp", "data/.E2.parquet.q9q9q9q9.tmp",
            f"{PROFILE_DIR}/worker-123.json"]
    kept = ["report.md", "figures/e1_headline.pdf", "figures/draft.tmp", "figures/.mine.tmp",
            "figures/.e1.pdf.toolong123.tmp", "notes/.x.pdf.abcdefgh.tmp", "data/E2.parquet"]
    for rel in left + kept:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text("x")
    with claim_output(out):
        for rel in left:
            assert not (out / rel).exists(), rel
        assert not (out / PROFILE_DIR).exists()
        for rel in kept:
            assert (out / rel).read_text() == "x", rel
        with pytest.raises(ConfigError, match="another attnsignal reproduce is running"):
            with claim_output(out):
                pass
    with claim_output(out):  # released with the block
        pass
