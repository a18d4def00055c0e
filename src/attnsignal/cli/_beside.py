"""Theory beside simulation: the curves every figure of a simulated run carries.

:func:`theory_lines` gives, on a result's records, the limiting ODE ``dρ/dt = (1 − ρ²)Φ'(ρ)``
in ODE time (docs/theory.md) from the runs' start, and the effective dynamics (the law of
``ρ_k`` at finite step and dimension, docs/effective-dynamics.md): its mean ``|ρ_k|`` and
10–90 % band. The effective dynamics is bounded in work (:data:`MAX_BLOCKS` evolution blocks);
where a configuration needs more (large steps against a narrow law), it is left out with a
note saying so, never approximated silently.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = ["TheoryLines", "theory_lines", "MAX_BLOCKS"]

#: evolution blocks the effective dynamics may take beside a run (~1 ms per block and
#: thousand grid nodes: a few seconds at most)
MAX_BLOCKS = 400


@dataclass
class TheoryLines:
    """Theory on a result's records: ``ode`` (|ρ(t_k)| of the limiting ODE), ``mean``/``q10``/
    ``q90`` (the effective dynamics' mean |ρ_k| and band), None where not computed, and
    ``notes`` saying why."""

    ode: np.ndarray | None = None
    rho0: float = math.nan
    mean: np.ndarray | None = None
    q10: np.ndarray | None = None
    q90: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)


def theory_lines(result, *, effective: bool = True) -> TheoryLines:
    """The limiting ODE and (with ``effective``) the effective dynamics on ``result``'s records.

    The ODE starts from the run's ``initial_alignment`` or, for a uniform start, from the mean
    ``|ρ_0|`` of the runs; it is drawn as ``|ρ(t)|``. The effective dynamics starts from the
    same law as the runs (a point mass, or the uniform start's law) with the run's batch,
    update rule and seed."""
    from ..config import ConfigError

    lines = TheoryLines()
    if getattr(result, "method", "sga") not in (None, "sga"):
        return lines  # a baseline estimator: its own theory
    model, step, run = result.model, result.schedule, result.run
    start = run.initial_alignment
    r0 = float(start) if start is not None else float(np.mean(np.abs(result.alignment[:, 0])))
    lines.rho0 = r0
    try:
        from ..theory import solve_ode
        from ..theory.landscape import default_method

        t = np.asarray(result.ode_time, dtype=np.float64)
        sol = solve_ode(model, r0, max(float(t[-1]), 1e-12), step=step,
                        method=default_method(model))
        lines.ode = np.abs(sol(t))
    except (ConfigError, ValueError, FloatingPointError) as exc:
        lines.notes.append(f"limiting ODE left out: {exc}")
    if not effective:
        return lines
    try:
        from ..theory.effective import BlockBudgetExceeded, effective_dynamics

        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            ed = effective_dynamics(model, step, steps=int(run.steps), initial_alignment=start,
                                    batch=run.batch, update=run.update,
                                    record=[int(k) for k in result.steps], seed=run.seed,
                                    max_blocks=MAX_BLOCKS)
        if np.array_equal(np.asarray(ed.steps), np.asarray(result.steps)):
            lines.mean = np.asarray(ed.mean_abs)
            lines.q10, lines.q90 = (np.asarray(q) for q in ed.quantile([0.1, 0.9]))
    except (ConfigError, BlockBudgetExceeded) as exc:
        lines.notes.append(f"effective dynamics left out ({exc}); `attnsignal ode "
                           "--effective` computes it without a work bound")
    return lines
