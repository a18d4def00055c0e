"""Sweeps at scale: a grid of configurations × runs, on a process pool or a Dask cluster,
stored as checksummed Parquet shards that a re-run resumes.

Python::

    from attnsignal.sweep import SweepSpec, run_sweep, sweep_status, load_sweep

    spec = SweepSpec.from_toml("spec.toml")        # validates every grid point (ConfigError)
    report = run_sweep(spec, "out/", executor="local", workers=4)
    frame = load_sweep("out/")                      # point, <axes>, run, step, alignment, ...

Command line: ``attnsignal sweep SPEC --out DIR [--executor local|dask] [--scheduler ADDR]
[--workers N] [--chunk-runs K]`` and ``attnsignal sweep status DIR``.

Determinism: run ``r`` of grid point ``p`` uses ``SeedSequence(seed, spawn_key=(*key, p, r))``
(``key``: the ``[sweep]`` table's ``spawn_key``, empty by default), so
the frame is bit-identical for any executor, number of workers and chunk size. A point's
index is its position in the product of the grid axes in the order the spec writes them.

Modules: :mod:`.spec` (the spec and its validation), :mod:`.tasks` (planning and the worker
function), :mod:`.store` (manifest, shards, status, loading), :mod:`.executors` (serial,
local pool, Dask), :mod:`.runner` (``run_sweep``).
"""

from .runner import SweepReport, TaskFailure, run_sweep
from .spec import GridPoint, SweepSpec
from .store import ShardStatus, SweepStatus, SweepStoreError, load_sweep, sweep_status

__all__ = [
    "SweepSpec",
    "GridPoint",
    "run_sweep",
    "SweepReport",
    "TaskFailure",
    "sweep_status",
    "SweepStatus",
    "ShardStatus",
    "load_sweep",
    "SweepStoreError",
]
