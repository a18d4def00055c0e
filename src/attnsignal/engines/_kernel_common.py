"""Python glue shared by the chain and projected engines (no mathematics here): σ
standardisation, the :class:`._kernel.KernelParams` of a call, launching the compiled drivers,
and turning their outputs into the next state.

Threading layer
---------------
numba would pick GNU OpenMP when TBB is absent, and a process that has run an OpenMP region
cannot ``fork()`` (multiprocessing's default on Linux: the children abort). So before the first
parallel launch :func:`launch` calls :func:`use_forksafe_threading`, which — unless the user
chose a layer (``NUMBA_THREADING_LAYER``) — asks numba for a fork-safe one (TBB, or numba's
workqueue). It is done there, explicitly, not as a side effect of importing the kernels: the
setting only matters before the first launch and has no effect afterwards. Concurrent launches
from several Python threads, which workqueue does not support, are serialised by
:data:`kernel_lock` (no cost for the usual single-threaded caller: a kernel uses every numba
thread anyway).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..config import ModelConfig, RunConfig
from . import _kernel as K
from ._rng import ziggurat_tables, ziggurat_tables32, ziggurat_tables_signed
from .base import MAX_STEPS, EngineState, StepStats, mark_diverged

__all__ = ["K", "Prepared", "prepare", "launch", "finish", "kernel_lock", "ZT",
           "use_forksafe_threading"]

#: (6, 512): the ziggurat tables of the 64-bit draws (rows 0–2) and of the 32-bit draws of the
#: ``chain32`` engine (rows 3–5), each row a 256-entry table and its mirror for a negative
#: draw (:func:`._rng.ziggurat_tables_signed`), see :mod:`._rng`
ZT = np.concatenate([ziggurat_tables_signed(ziggurat_tables(K.ZIGGURAT_R)),
                     ziggurat_tables_signed(ziggurat_tables32(K.ZIGGURAT_R))])

kernel_lock = threading.Lock()
_threading_chosen = False


def use_forksafe_threading() -> None:
    """Unless ``NUMBA_THREADING_LAYER`` is set, ask numba for a fork-safe threading layer
    (module docstring). Call before the first parallel launch of the process."""
    global _threading_chosen
    if _threading_chosen:
        return
    import numba

    if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
        numba.config.THREADING_LAYER = "forksafe"
    _threading_chosen = True


@dataclass(frozen=True)
class Prepared:
    """The arguments of one driver call: parameters, keys, step sizes (σ² η), active runs."""

    params: K.KernelParams
    keys: np.ndarray
    etas: np.ndarray
    active: np.ndarray
    #: an empty array of the chain's per-sample dtype (float64; float32 for ``chain32``): the
    #: chain driver's ``precision`` argument, which selects the compiled driver
    precision: np.ndarray


def prepare(
    model: ModelConfig, run: RunConfig, state: EngineState, etas: np.ndarray, variant: int = 0,
    single: bool = False,
) -> Prepared:
    """Standardise ``σ`` away — ``(θ, σ, β, η) → (θ/σ, 1, βσ, σ²η)``, exact — and pack the
    arguments of the compiled drivers. ``variant``: :data:`._kernel.EXACT` for the engines;
    ``single``: the chain's per-sample arithmetic in float32 (the ``chain32`` engine)."""
    sigma = model.noise_std
    etas = np.ascontiguousarray(np.asarray(etas, dtype=np.float64).reshape(-1)) * (sigma * sigma)
    if state.k + etas.size > MAX_STEPS:
        raise ValueError(f"steps: at most {MAX_STEPS} updates per run; got {state.k + etas.size}")
    params = K.KernelParams(
        theta=float(model.theta / sigma),
        beta=float(model.beta * sigma),
        n_informative=int(model.n_informative),
        n_tokens=int(model.n_tokens),
        dim=int(model.d),
        batch=int(run.batch),
        riemannian=bool(run.update == "riemannian"),
        random_sign=bool(model.signal_sign == "random"),
        first_step=int(state.k),
        variant=int(variant),
    )
    return Prepared(
        params=params,
        keys=np.ascontiguousarray(state.streams, dtype=np.uint64),
        etas=etas,
        active=np.ascontiguousarray(~state.diverged),
        precision=np.empty(0, dtype=np.float32 if single else np.float64),
    )


def launch(driver: Callable, values: np.ndarray, p: Prepared, *extra: Any) -> K.KernelOutputs:
    """Run ``driver`` (``K.chain_advance`` on ``rho`` with ``extra = (p.precision,)``,
    ``K.projected_advance`` on ``q``, in place) and return its outputs. Raises
    ``MemoryError`` (one line) when an active run did not complete — the parallel loop lost
    an allocation — instead of returning its stale state."""
    n = values.shape[0]
    out = K.KernelOutputs(
        informative_mass=np.full(n, np.nan),
        max_nuisance_weight=np.full(n, np.nan),
        diverged_at=np.full(n, -1, dtype=np.int64),
        done=np.zeros(n, dtype=np.uint8),
    )
    if p.etas.size == 0:
        return out
    with kernel_lock:
        use_forksafe_threading()
        driver(p.params, values, p.keys, p.etas, p.active, ZT, out, *extra)
    lost = np.flatnonzero(p.active & (out.done == 0))
    if lost.size:
        raise MemoryError(
            f"the compiled engine did not complete {lost.size} of {n} runs (an allocation of "
            f"its per-run scratch, 5 × L = 5 × {p.params.n_tokens} float64, failed); reduce "
            "n_nuisance / n_informative or NUMBA_NUM_THREADS"
        )
    return out


def finish(
    state: EngineState, rho: np.ndarray, q: np.ndarray | None, out: K.KernelOutputs,
    p: Prepared,
) -> tuple[EngineState, StepStats]:
    """Flag the runs that became non-finite (via :func:`.base.mark_diverged`, at the update
    where it happened), freeze them (NaN), and build the new state."""
    mass, maxw, kdiv = out.informative_mass, out.max_nuisance_weight, out.diverged_at
    diverged = state.diverged.copy()
    dstep = state.diverged_step.copy()
    newly = (kdiv >= 0) & ~diverged
    if q is not None:
        rho = q[:, 0].copy()
        rho[diverged] = np.nan
    for kk in np.unique(kdiv[newly]):
        flag = np.where(newly & (kdiv == kk), np.nan, 0.0)
        mark_diverged(flag, diverged, dstep, int(kk))
    rho[diverged] = np.nan
    if q is not None:
        q[diverged] = np.nan
    mass[diverged] = np.nan
    maxw[diverged] = np.nan
    k = p.params.first_step + int(p.etas.size)
    new = state.replace(rho=rho, q=q, k=k, diverged=diverged, diverged_step=dstep)
    return new, StepStats(mass, maxw)
