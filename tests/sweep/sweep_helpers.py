"""Shared constants of the sweep tests (a module, so that test files can import it)."""

from __future__ import annotations

import copy

#: 4 grid points × 4 runs of 30 literal steps: the whole sweep takes ~0.1 s in process.
TINY = {
    "sweep": {"seed": 7, "runs": 4, "steps": 30, "engine": "literal", "record_every": 10},
    "model": {"d": 6, "n_informative": 2, "n_nuisance": 4, "theta": 1.0},
    "step": {"eta0": 0.1, "k0": 50, "power": 0.7},
    "grid": {"model.theta": [0.5, 1.0], "model.n_nuisance": [4, 8]},
}

TINY_TOML = """\
[sweep]
seed = 7
runs = 4
steps = 30
engine = "literal"
record_every = 10

[model]
d = 6
n_informative = 2
n_nuisance = 4
theta = 1.0

[step]
eta0 = 0.1
k0 = 50
power = 0.7

[grid]
"model.theta" = [0.5, 1.0]
"model.n_nuisance" = [4, 8]
"""


def spec_dict(**sweep_changes) -> dict:
    d = copy.deepcopy(TINY)
    d["sweep"].update(sweep_changes)
    return d


def loaded(names: tuple[str, ...]) -> dict[str, bool]:
    """Which of ``names`` this process has imported (run in a pool worker; importing this
    module imports none of them)."""
    import sys

    return {n: n in sys.modules for n in names}


def threads_in_a_worker() -> tuple[int, int]:
    """``compute_threads()`` and numba's thread count after a worker's one-thread set-up."""
    import numba

    from attnsignal.engines.base import compute_threads
    from attnsignal.sweep.tasks import _single_thread

    _single_thread()
    return compute_threads(), numba.get_num_threads()
