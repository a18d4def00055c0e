"""The on-disk sweep store: content-addressed Parquet shards and a JSON manifest.

Layout of a sweep directory ``OUT``::

    OUT/sweep.json                      manifest: the spec, the grid points with their full
                                        configs, every shard with its sha256, last failures
    OUT/shards/p00003-r0000008-<hash>.parquet    one task's rows (Result.to_frame())
    OUT/shards/p00003-r0000008-<hash>.parquet.sha256   its checksum, written after it
    OUT/.sweep.lock                     held (flock) while a sweep runs here

Every file is written atomically (temporary file, fsync, rename). Workers write shards and
sidecars; only the coordinating process writes the manifest. A shard is *done* iff its file
and its sidecar exist, the file's sha256 equals the sidecar (and the manifest's checksum, when
the manifest has one) and the identity stored inside the shard (point, run range, key) is the
one it is filed under: a shard the manifest lost (the coordinator was killed before writing
it down) is recovered from its sidecar, and a truncated, altered or misfiled shard (another
point's shard copied over it with its sidecar) is *corrupt* and is recomputed by the next run.
"""

from __future__ import annotations

import io
import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from .._version import __version__
from ..paths import file_lock
from ..persistence import atomic_write, remove_temporaries
from ..results import FRAME_COLUMNS
from .spec import SweepSpec
from .tasks import SHARD_DIR, Task, TaskOutcome, sha256_bytes, shard_identity_problem

__all__ = [
    "SweepStoreError", "ShardStatus", "SweepStatus", "sweep_status", "load_sweep",
    "MANIFEST", "MANIFEST_FORMAT", "check_shard", "read_manifest",
]

MANIFEST = "sweep.json"
MANIFEST_FORMAT = "attnsignal.sweep/1"
LOCK = ".sweep.lock"


class SweepStoreError(ValueError):
    """The sweep directory cannot be used: not a sweep, a different sweep, locked by a
    running sweep, or incomplete when a complete one is needed. One-line message. A
    ``ValueError``, like every other input error."""


# ---------------------------------------------------------------------- manifest


def read_manifest(out: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of sweep directory ``out``.

    Raises SweepStoreError when there is none or it cannot be parsed."""
    path = Path(out) / MANIFEST
    try:
        man = json.loads(path.read_text())
    except FileNotFoundError:
        raise SweepStoreError(f"out: not a sweep directory (no {MANIFEST}); got {str(out)!r}") from None
    except (OSError, ValueError) as exc:
        raise SweepStoreError(f"out: {MANIFEST} is unreadable ({exc}); got {str(out)!r}") from None
    if not isinstance(man, dict) or man.get("format") != MANIFEST_FORMAT:
        raise SweepStoreError(f"out: {MANIFEST} is not an attnsignal sweep manifest; got {str(out)!r}")
    return man


def write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    text = json.dumps(manifest, indent=1, sort_keys=False)
    atomic_write(out / MANIFEST, lambda p: Path(p).write_text(text + "\n"))


def new_manifest(spec: SweepSpec, tasks: list[Task], chunk_runs: int | None,
                 known: dict[str, str] | None = None) -> dict[str, Any]:
    """The manifest of a planned sweep; ``known`` maps shard files to checksums already
    recorded (kept, still verified before use)."""
    known = known or {}
    return {
        "format": MANIFEST_FORMAT,
        "version": __version__,
        "identity": spec.identity(),
        "spec": spec.to_dict(),
        "chunk_runs": chunk_runs,
        "axes": list(spec.axes),
        "points": [p.describe() for p in spec.points()],
        "shards": [
            {"point": t.point, "first_run": t.first_run, "runs": t.runs, "key": t.key,
             "file": t.file, "sha256": known.get(t.file)}
            for t in tasks
        ],
        "failed": [],
        "complete": False,
    }


class ManifestWriter:
    """The coordinator's copy of the manifest; records outcomes and writes it atomically at
    most every ``interval`` seconds (and on :meth:`flush`)."""

    def __init__(self, out: Path, manifest: dict[str, Any], interval: float = 1.0):
        self.out = out
        self.manifest = manifest
        self.interval = interval
        self._by_file = {s["file"]: s for s in manifest["shards"]}
        self._last = 0.0
        self._dirty = True

    def set_checksum(self, file: str, sha256: str | None) -> None:
        if self._by_file[file].get("sha256") != sha256:
            self._by_file[file]["sha256"] = sha256
            self._dirty = True

    def record(self, outcome: TaskOutcome) -> None:
        self.set_checksum(outcome.file, outcome.sha256)
        self.maybe_flush()

    def set_failed(self, failed: list[dict[str, Any]]) -> None:
        self.manifest["failed"] = failed
        self._dirty = True

    def maybe_flush(self) -> None:
        if time.monotonic() - self._last >= self.interval:
            self.flush()

    def flush(self, complete: bool | None = None) -> None:
        if complete is not None and self.manifest.get("complete") != complete:
            self.manifest["complete"] = complete
            self._dirty = True
        if self._dirty:
            write_manifest(self.out, self.manifest)
            self._dirty = False
        self._last = time.monotonic()


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold ``OUT/.sweep.lock`` (advisory, released by the kernel if the process dies).

    Raises SweepStoreError when another sweep holds it."""
    busy = SweepStoreError(f"out: another sweep is running in this directory; got {str(out)!r}")
    with file_lock(out / LOCK, wait=False, busy=lambda: busy):
        yield


def remove_stale_temporaries(out: Path) -> None:
    """Delete temporary files left by writers that were killed (``.NAME.XXXXXXXX.tmp``, the
    ones :func:`~attnsignal.persistence.atomic_write` makes) in ``out`` and its shards."""
    for d in (out, out / SHARD_DIR):
        remove_temporaries(d)


# ---------------------------------------------------------------------- shards


def check_shard(out: Path, entry: dict[str, Any], *, data: bytes | None = None) -> tuple[str, str]:
    """``("done", sha256)``, ``("missing", why)`` or ``("corrupt", why)`` for a manifest entry."""
    path = out / entry["file"]
    if data is None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return "missing", "no shard file"
        except OSError as exc:
            return "corrupt", f"unreadable ({exc.strerror})"
    digest = sha256_bytes(data)
    try:
        side = Path(str(path) + ".sha256").read_text().strip()
    except FileNotFoundError:
        return "corrupt", "no checksum sidecar (the write was interrupted)"
    except OSError as exc:
        return "corrupt", f"checksum sidecar unreadable ({exc.strerror})"
    if side != digest:
        return "corrupt", "sha256 differs from its sidecar (truncated or altered)"
    recorded = entry.get("sha256")
    if recorded and recorded != digest:
        return "corrupt", "sha256 differs from the manifest (altered)"
    problem = shard_identity_problem(data, entry)
    if problem is not None:
        return "corrupt", f"misfiled: {problem}"
    return "done", digest


def discard_shard(out: Path, entry: dict[str, Any]) -> None:
    """Remove a shard and its sidecar (before recomputing it)."""
    path = out / entry["file"]
    for p in (Path(str(path) + ".sha256"), path):
        try:
            p.unlink()
        except OSError:  # gone already, or not a file: the task's write will say why
            pass


@dataclass(frozen=True)
class ShardStatus:
    """State of one shard: ``state`` is ``"done"``, ``"missing"`` or ``"corrupt"``."""

    point: int
    first_run: int
    runs: int
    file: str
    state: str
    detail: str


@dataclass(frozen=True)
class SweepStatus:
    """What :func:`sweep_status` finds in a sweep directory."""

    out: Path
    axes: tuple[str, ...]
    points: list[dict[str, Any]]
    shards: list[ShardStatus]
    failed: list[dict[str, Any]] = field(default_factory=list)

    def _of(self, state: str) -> list[ShardStatus]:
        return [s for s in self.shards if s.state == state]

    @property
    def done(self) -> list[ShardStatus]:
        return self._of("done")

    @property
    def missing(self) -> list[ShardStatus]:
        return self._of("missing")

    @property
    def corrupt(self) -> list[ShardStatus]:
        return self._of("corrupt")

    @property
    def complete(self) -> bool:
        return all(s.state == "done" for s in self.shards)

    def counts(self) -> dict[str, int]:
        return {"shards": len(self.shards), "done": len(self.done),
                "missing": len(self.missing), "corrupt": len(self.corrupt)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": str(self.out), "complete": self.complete, "points": len(self.points),
            "axes": list(self.axes), **self.counts(),
            "shards_not_done": [s.__dict__ for s in self.shards if s.state != "done"],
            "failed_last_run": self.failed,
        }


def sweep_status(out: str | os.PathLike[str]) -> SweepStatus:
    """Verify every shard of the sweep in ``out`` (reads and checksums each file).

    Raises SweepStoreError when ``out`` is not a readable sweep directory."""
    root = Path(out)
    man = read_manifest(root)
    shards = []
    for e in man["shards"]:
        state, detail = check_shard(root, e)
        shards.append(ShardStatus(point=e["point"], first_run=e["first_run"], runs=e["runs"],
                                  file=e["file"], state=state,
                                  detail="" if state == "done" else detail))
    return SweepStatus(out=root, axes=tuple(man["axes"]), points=man["points"], shards=shards,
                       failed=list(man.get("failed", [])))


def load_sweep(out: str | os.PathLike[str], *, partial: bool = False) -> pd.DataFrame:
    """The sweep in ``out`` as one tidy frame.

    Columns: ``point`` (grid point index), one column per grid axis named as in the spec
    (``"model.theta"``, ...), then :data:`attnsignal.results.FRAME_COLUMNS` (``run``, ``step``,
    ``ode_time``, ``alignment``, ...). Rows are sorted by point, run, step; index 0..n−1.
    Every shard is verified against its checksum first.

    partial : load only the shards that are done (default: refuse an incomplete sweep).

    Raises SweepStoreError when ``out`` is not a sweep, or (unless ``partial``) when some
    shard is missing or corrupt.
    """
    root = Path(out)
    man = read_manifest(root)
    axes = list(man["axes"])
    values = {p["index"]: p["values"] for p in man["points"]}
    frames, bad = [], []
    for e in man["shards"]:
        try:
            data = (root / e["file"]).read_bytes()
        except OSError:
            data = None
        state, _ = ("missing", "") if data is None else check_shard(root, e, data=data)
        if state != "done":
            bad.append((e, state))
            continue
        f = pd.read_parquet(io.BytesIO(data))
        if "method" not in f.columns:  # shards written before the baselines: attention
            f.insert(0, "method", "sga")
        missing_cols = [c for c in FRAME_COLUMNS if c not in f.columns]
        if missing_cols:
            raise SweepStoreError(f"shard {e['file']}: lacks columns {missing_cols}")
        f = f[FRAME_COLUMNS]
        f.insert(0, "point", pd.Series([e["point"]] * len(f), dtype="int64"))
        for i, ax in enumerate(axes):
            f.insert(1 + i, ax, values[e["point"]][ax])
        frames.append(f)
    if bad and not partial:
        n_miss = sum(1 for _, s in bad if s == "missing")
        raise SweepStoreError(
            f"out: sweep incomplete — {n_miss} missing and {len(bad) - n_miss} corrupt of "
            f"{len(man['shards'])} shards; re-run the sweep to finish it; got {str(out)!r}"
        )
    if not frames:
        cols = ["point", *axes, *FRAME_COLUMNS]
        return pd.DataFrame({c: [] for c in cols})
    frame = pd.concat(frames, ignore_index=True)
    frame = frame.sort_values(["point", "run", "step"], kind="stable", ignore_index=True)
    return frame
