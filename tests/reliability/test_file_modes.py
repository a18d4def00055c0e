"""Files the package writes follow the user's umask, as any tool's output does (0o666 & ~umask
for files, 0o777 & ~umask for directories) — the temporary files of the atomic writes
included: collaborators in one group can read each other's results and reports."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from attnsignal.persistence import TEMPORARY_NAME, atomic_write

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sweep"))
from sweep_helpers import TINY_TOML  # noqa: E402  (the sweep tests' tiny spec)

#: what one process under the umask writes: `attnsignal run`, `attnsignal sweep` (a local pool
#: of one worker writes the shards) and the reproduction's writers (its claim on the
#: directory, a figure, the report, JSON, a sweep's frame)
WRITERS = r'''
import sys
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

from attnsignal.cli import main
from attnsignal.persistence import atomic_write
from attnsignal.plots import save_figure
from attnsignal.report import Report
from attnsignal.reproduce.pipeline import claim_output
from attnsignal.sweep import load_sweep

base = Path(sys.argv[1])
assert main(["run", "--d", "6", "--n-informative", "2", "--n-nuisance", "4", "--steps", "40",
             "--runs", "2", "--out", str(base / "run"), "--quiet", "--no-theory"]) == 0
assert main(["sweep", str(base / "spec.toml"), "--out", str(base / "sweep"), "--workers", "1",
             "--quiet"]) == 0
out = base / "repro"
out.mkdir()
with claim_output(out):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    save_figure(fig, out / "figures" / "e0")
    rep = Report(title="modes")
    rep.section("a section").para("text").figure(out / "figures" / "e0.png", "a figure")
    rep.write(out)
    atomic_write(out / "claims.json", lambda p: Path(p).write_text("[]"))
    frame = load_sweep(base / "sweep")
    atomic_write(out / "data" / "E0.parquet", lambda p: frame.to_parquet(p, index=False))
'''

def _modes(root: Path) -> dict[str, int]:
    """Permission bits of ``root`` and of everything below it, by relative path."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for p in root.rglob("*"):
        found[str(p.relative_to(root))] = stat.S_IMODE(p.lstat().st_mode)
    return found


@pytest.mark.timeout(300)
def test_every_file_and_directory_written_follows_the_umask(tmp_path):
    """One umask, 0o027, that tells every failure apart from the default's modes: a private
    0o600 file (a temporary file renamed as it is), a hard-coded 0o644 or 0o755, and a mode
    that ignores the umask all differ from 0o640 / 0o750. The umask arithmetic of the atomic
    write itself is checked at four umasks below, in process."""
    umask = 0o027
    (tmp_path / "spec.toml").write_text(TINY_TOML)
    res = subprocess.run([sys.executable, "-c", WRITERS, str(tmp_path)], umask=umask,
                         capture_output=True, text=True, timeout=280)
    assert res.returncode == 0, res.stderr
    want_file, want_dir = 0o666 & ~umask, 0o777 & ~umask
    seen = set()
    for sub in ("run", "sweep", "repro"):
        root = tmp_path / sub
        for rel, mode in _modes(root).items():
            path = root / rel
            want = want_dir if path.is_dir() else want_file
            assert mode == want, f"{sub}/{rel}: {oct(mode)}, not {oct(want)} (umask {umask:03o})"
            seen.add(path.name)
            assert not TEMPORARY_NAME.match(path.name), f"{sub}/{rel} left behind"
    # what the writers are known to write is among what was checked
    for name in ("manifest.json", ".result.lock", "sweep.json", ".sweep.lock", "shards",
                 ".reproduce.lock", "e0.png", "e0.pdf", "report.md", "report.html",
                 "claims.json", "E0.parquet"):
        assert name in seen, name
    assert any(n.endswith(".parquet.sha256") for n in seen)
    assert any(n.startswith("result.") and n.endswith(".parquet") for n in seen)


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077, 0o277])
def test_the_atomic_writes_temporary_file_already_has_the_final_mode(umask, tmp_path):
    """While ``write`` fills it, the temporary file has the mode the target will have (no
    private 0o600 window) — unless the umask denies the owner writing (0o277), where the
    owner may write it until the rename, and the target then ends read-only."""
    seen = {}

    def write(tmp: str) -> None:
        seen["name"] = Path(tmp).name
        seen["mode"] = stat.S_IMODE(os.stat(tmp).st_mode)
        Path(tmp).write_text("data")

    old = os.umask(umask)
    try:
        atomic_write(tmp_path / "f.txt", write)
    finally:
        os.umask(old)
    final = 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == final
    assert seen["mode"] == (final if final & 0o600 == 0o600 else final | 0o600)
    assert TEMPORARY_NAME.match(seen["name"]) and seen["name"].startswith(".f.txt.")
    assert (tmp_path / "f.txt").read_text() == "data"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_a_writer_that_replaces_the_temporary_file_still_gets_the_umask_mode(tmp_path):
    """A writer that swaps in its own private file (as some libraries do) does not pass its
    0o600 on to the target."""
    def write(tmp: str) -> None:
        fd = os.open(tmp + ".x", os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"data")
        os.close(fd)
        os.replace(tmp + ".x", tmp)

    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "f.bin", write)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f.bin").stat().st_mode) == 0o644
