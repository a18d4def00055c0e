"""Python glue shared by the chain and projected engines (no mathematics here)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..config import ModelConfig, RunConfig
from . import _kernel as K
from ._rng import init_generator, run_keys, ziggurat_tables
from .base import EngineState, StepStats, mark_diverged

__all__ = ["K", "init_generator", "run_keys", "prepare", "finish", "stat_buffers",
           "kernel_lock", "ZT"]

ZT = ziggurat_tables(K.ZIGGURAT_R)

# numba's "workqueue" layer aborts when two Python threads launch parallel kernels at once;
# serialise launches (no cost for the usual single-threaded caller: a kernel uses every
# numba thread anyway).
kernel_lock = threading.Lock()

_MAX_STEP = 2**62


@dataclass(frozen=True)
class Prepared:
    keys: np.ndarray
    k_start: int
    etas: np.ndarray
    active: np.ndarray
    theta: float
    beta: float
    R: int
    L: int
    B: int
    riem: bool
    rsign: bool
    zt: np.ndarray


def prepare(
    model: ModelConfig, run: RunConfig, state: EngineState, etas: np.ndarray
) -> Prepared:
    """Standardise ``σ`` away — ``(θ, σ, β, η) → (θ/σ, 1, βσ, σ²η)``, exact — and pack the
    arguments of the compiled drivers."""
    sigma = model.noise_std
    etas = np.ascontiguousarray(np.asarray(etas, dtype=np.float64).reshape(-1)) * (sigma * sigma)
    if state.k + etas.size > _MAX_STEP:  # pragma: no cover
        raise ValueError(f"steps: at most {_MAX_STEP} updates per run; got {state.k + etas.size}")
    keys = np.ascontiguousarray(state.streams, dtype=np.uint64)
    return Prepared(
        keys=keys,
        k_start=int(state.k),
        etas=etas,
        active=np.ascontiguousarray(~state.diverged),
        theta=float(model.theta / sigma),
        beta=float(model.beta * sigma),
        R=int(model.n_informative),
        L=int(model.n_tokens),
        B=int(run.batch),
        riem=run.update == "riemannian",
        rsign=model.signal_sign == "random",
        zt=ZT,
    )


def stat_buffers(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.full(n, np.nan), np.full(n, np.nan), np.full(n, -1, dtype=np.int64)


def finish(
    state: EngineState,
    rho: np.ndarray,
    q: np.ndarray | None,
    mass: np.ndarray,
    maxw: np.ndarray,
    kdiv: np.ndarray,
    p: Prepared,
) -> tuple[EngineState, StepStats]:
    """Flag the runs that became non-finite (via :func:`.base.mark_diverged`, at the update
    where it happened), freeze them (NaN), and build the new state."""
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
    k = p.k_start + int(p.etas.size)
    new = state.replace(rho=rho, q=q, k=k, diverged=diverged, diverged_step=dstep)
    return new, StepStats(mass, maxw)
