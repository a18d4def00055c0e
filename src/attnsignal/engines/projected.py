"""The full-vector exact engine (DESIGN §2.2): ``q ∈ R^d`` at ``O(B (L + d))`` per update.

It evaluates the same reduced kernel as the chain (:func:`._kernel.reduced_sample`) and
realises the complement part of each per-sample gradient explicitly (``ξ = e_1``,
``e = (ξ − ρ q)/s``, any unit vector orthogonal to ``q`` when ``s = 0``)::

    γ⃗ = P_{span(q, e)^⊥} z,              z ~ N(0, I_d)      (||γ⃗||² plays χ²_D)
    ν = ||v_⊥|| P_{span(q, e, γ⃗)^⊥} z',  z' ~ N(0, I_d)      (||ν||²/||v_⊥||² plays χ²_{D−1})
    W^T v = (v_a + ζ·v_⊥/γ) γ⃗ + ν,       u = 2β W^T v
    q ← normalize(q + (η/B) Σ_b (g_q q + g_e e + u)_b)        (riemannian: no g_q q)

The trajectory ``(q_k)`` has exactly the law of the literal algorithm. Draw order per sample:
the sign (random-sign variant), ``z`` (d), the ``3L`` token variates, ``z'`` (d); ``z`` is
skipped when ``d = 2`` and ``z'`` when ``d <= 3`` (the complement is then empty, or spanned by
``γ⃗``). ``noise_std``, seeding and streams as in :mod:`.chain`; ``state.q`` holds the unit
queries (runs, d) and ``state.rho = q[:, 0]``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..config import ModelConfig, RunConfig
from ..model import latent_direction
from . import _kernel_common as _common
from .base import EngineState, StepStats, initial_query

__all__ = ["init", "advance"]

# Tests only (see chain._VARIANT).
_VARIANT = 0


def init(
    model: ModelConfig, run: RunConfig, seeds: Sequence[np.random.SeedSequence]
) -> EngineState:
    """``q0`` per run: uniform on the sphere, or ``ρ0 ξ + √(1−ρ0²) u`` with ``u`` uniform on
    the sphere of ``ξ^⊥`` (:func:`.base.initial_query`)."""
    xi = latent_direction(model.d)
    n = len(seeds)
    q = np.empty((n, model.d))
    for r, s in enumerate(seeds):
        q[r] = initial_query(_common.init_generator(s), model.d, xi, run.initial_alignment)
    return EngineState(
        rho=q[:, 0].copy(),
        q=q,
        k=0,
        diverged=np.zeros(n, dtype=bool),
        diverged_step=np.full(n, -1, dtype=np.int64),
        streams=_common.run_keys(seeds),
    )


def advance(
    model: ModelConfig, run: RunConfig, state: EngineState, etas: np.ndarray
) -> tuple[EngineState, StepStats]:
    """``len(etas)`` updates of every non-diverged run (one compiled, parallel call)."""
    p = _common.prepare(model, run, state, etas)
    q = np.array(state.q, dtype=np.float64, order="C", copy=True)
    rho = state.rho.copy()
    mass, maxw, kdiv = _common.stat_buffers(q.shape[0])
    if p.etas.size:
        with _common.kernel_lock:
            _common.K.projected_advance(
                q, p.keys, p.k_start, p.etas, p.active, p.theta, p.beta, p.R, p.L, p.B,
                p.riem, p.rsign, int(_VARIANT), p.zt, mass, maxw, kdiv,
            )
    return _common.finish(state, rho, q, mass, maxw, kdiv, p)
