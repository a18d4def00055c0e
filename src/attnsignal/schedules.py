"""Step-size schedules and the ODE time axis.

``η_k = η0 (1 + k/k0)^(−power)`` for updates ``k = 0, 1, ...`` (update ``k`` takes ``q_k`` to
``q_{k+1}``). The ODE time after ``k`` updates is ``t_k = Σ_{j<k} η_j`` (``t_0 = 0``), so that
``ρ_k ≈ ρ(t_k)`` for the limiting ODE ``dρ/dt = (1 − ρ²) Φ'(ρ)``.
"""

from __future__ import annotations

import numpy as np

from .config import StepSize

__all__ = ["step_sizes", "ode_time", "step_at_time", "is_robbins_monro"]


def step_sizes(step: StepSize, k: np.ndarray | int | slice) -> np.ndarray:
    """``η_k`` for an integer array (or range) of update indices ``k >= 0``. float64."""
    if isinstance(k, slice):
        k = np.arange(k.start or 0, k.stop)
    k = np.asarray(k, dtype=np.float64)
    return step.eta0 * (1.0 + k / step.k0) ** (-step.power)


def ode_time(step: StepSize, ks: np.ndarray | list[int]) -> np.ndarray:
    """``t_k = Σ_{j<k} η_j`` at each step index in ``ks`` (non-decreasing, non-negative ints)."""
    ks = np.asarray(ks, dtype=np.int64)
    if ks.size == 0:
        return np.zeros(0)
    kmax = int(ks.max())
    with np.errstate(over="ignore"):
        cum = np.concatenate([[0.0], np.cumsum(step_sizes(step, np.arange(kmax)))])
    return cum[ks]


def step_at_time(step: StepSize, t: np.ndarray | float, k_max: int = 10**12) -> np.ndarray:
    """Smallest step index ``k`` with ``t_k >= t`` (inverse of :func:`ode_time`), comparing
    with a relative tolerance of 1e-12 so that ``step_at_time(ode_time(k)) == k``.

    Exact partial sums up to ``k = 200 000``, beyond that the Euler–Maclaurin form of
    ``Σ_{j<k} η_j`` (error far below the tolerance) and bisection. Returns ``k_max + 1`` where
    ``t`` is not reached by ``k_max`` (e.g. a summable schedule, ``power > 1``).
    """
    t_arr = np.atleast_1d(np.asarray(t, dtype=np.float64))
    target = t_arr * (1 - 1e-12)
    cum = ode_time(step, np.arange(_EXACT + 1))
    out = np.searchsorted(cum, target, side="left").astype(np.int64)
    for i in np.flatnonzero(out > _EXACT):
        ti = target[i]
        lo, hi = _EXACT, 2 * _EXACT
        while _partial_sum(step, hi) < ti:
            lo, hi = hi, hi * 2
            if hi > k_max:
                break
        if hi > k_max and _partial_sum(step, k_max) < ti:
            out[i] = k_max + 1
            continue
        hi = min(hi, k_max)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _partial_sum(step, mid) >= ti:
                hi = mid
            else:
                lo = mid
        out[i] = hi
    return out if np.ndim(t) else out[0]


_EXACT = 200_000


def _partial_sum(step: StepSize, k: int) -> float:
    """``t_k = Σ_{j<k} η_j``: exact for small k, Euler–Maclaurin for large k."""
    if k <= _EXACT:
        return float(ode_time(step, [k])[0])
    head = float(np.sum(step_sizes(step, np.arange(1000))))
    a, b = 1000.0, float(k)
    f = lambda x: step.eta0 * (1 + x / step.k0) ** (-step.power)  # noqa: E731
    if step.power == 1.0:
        integral = step.eta0 * step.k0 * np.log((1 + b / step.k0) / (1 + a / step.k0))
    else:
        c = step.eta0 * step.k0 / (1 - step.power)
        integral = c * ((1 + b / step.k0) ** (1 - step.power) - (1 + a / step.k0) ** (1 - step.power))
    # Σ_{j=a}^{b-1} f(j) ≈ ∫_a^b f + (f(a) − f(b))/2 + (f'(a) − f'(b))/12
    fp = lambda x: -step.power / step.k0 * f(x) / (1 + x / step.k0)  # noqa: E731
    return head + integral + (f(a) - f(b)) / 2 + (fp(a) - fp(b)) / 12


def is_robbins_monro(step: StepSize) -> bool:
    """True iff ``Σ η_k = ∞`` and ``Σ η_k² < ∞``, i.e. ``1/2 < power ≤ 1``."""
    return step.robbins_monro
