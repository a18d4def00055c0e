"""The literal algorithm: materialise the tokens, compute the exact gradient, update ``q``.

Per update and run (``B`` samples ``X_b ∈ R^{L×d}``, ``O(B L d)``):

    g = (1/B) Σ_b 2β (X_b^T (α_b ∘ c_b) − F_b f_b)          (model.sq_norm_and_gradient)
    riemannian:  g ← g − (q·g) q
    q ← (q + η g) / ||q + η g||

Vectorised over runs and the minibatch (runs are processed in chunks that keep the token
array under ~128 MiB). Each run draws its tokens from its own ``numpy.random.Generator``
(``PCG64`` seeded by the run's ``SeedSequence``) in a fixed order — ``q0``, then per update
``z`` of shape ``(B, L, d)`` (and the ``B`` signs for the random-sign variant) — so a run's
trajectory does not depend on the chunking or on the other runs.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..config import ModelConfig, RunConfig
from ..metrics import informative_mass, max_nuisance_weight
from ..model import latent_direction, sample_tokens, sq_norm_and_gradient
from .base import EngineState, StepStats, initial_query, mark_diverged

__all__ = ["init", "advance"]

_CHUNK_ELEMENTS = 1 << 24


def init(
    model: ModelConfig, run: RunConfig, seeds: Sequence[np.random.SeedSequence]
) -> EngineState:
    xi = latent_direction(model.d)
    rngs = [np.random.Generator(np.random.PCG64(s)) for s in seeds]
    q = np.stack([initial_query(g, model.d, xi, run.initial_alignment) for g in rngs])
    n = len(seeds)
    return EngineState(
        rho=q @ xi,
        q=q,
        k=0,
        diverged=np.zeros(n, dtype=bool),
        diverged_step=np.full(n, -1, dtype=np.int64),
        streams=rngs,
    )


def advance(
    model: ModelConfig, run: RunConfig, state: EngineState, etas: np.ndarray
) -> tuple[EngineState, StepStats]:
    R, B, L, d = model.n_informative, run.batch, model.n_tokens, model.d
    xi = latent_direction(d)
    q = state.q.copy()
    rho = state.rho.copy()
    diverged = state.diverged.copy()
    dstep = state.diverged_step.copy()
    mass = np.full(q.shape[0], np.nan)
    maxw = np.full(q.shape[0], np.nan)
    chunk = max(1, _CHUNK_ELEMENTS // (B * L * d))
    buf = np.empty((min(chunk, q.shape[0]), B, L, d))
    k = state.k
    for eta in np.asarray(etas, dtype=np.float64):
        k += 1
        active = np.flatnonzero(~diverged)
        for start in range(0, active.size, chunk):
            idx = active[start : start + chunk]
            X = buf[: idx.size]
            for j, r in enumerate(idx):
                sample_tokens(model, state.streams[r], (B,), xi, out=X[j])
            _, g, alpha = sq_norm_and_gradient(X, q[idx, None, :], model.beta)
            g = g.mean(axis=1)
            if run.update == "riemannian":
                g -= np.einsum("rd,rd->r", g, q[idx])[:, None] * q[idx]
            with np.errstate(over="ignore", invalid="ignore"):
                qn = q[idx] + eta * g
                nrm = np.linalg.norm(qn, axis=1, keepdims=True)
                big = ~(np.isfinite(nrm[:, 0]) & (nrm[:, 0] > 0))
                if big.any():
                    # ‖q + ηg‖² overflowed: rescale by the largest entry before normalising,
                    # as the exact engines do; an infinite or NaN entry makes the run NaN
                    sub = qn[big]
                    mx = np.max(np.abs(sub), axis=1, keepdims=True)
                    ok = np.isfinite(mx) & (mx > 0)
                    sub = np.where(ok, sub / np.where(ok, mx, 1.0), np.nan)
                    qn[big] = sub
                    nrm[big] = np.linalg.norm(sub, axis=1, keepdims=True)
                qn /= nrm
            q[idx] = qn
            rho[idx] = qn @ xi
            mass[idx] = informative_mass(alpha, R).mean(axis=1)
            maxw[idx] = max_nuisance_weight(alpha, R).mean(axis=1)
        bad_before = diverged.copy()
        rho[~np.all(np.isfinite(q), axis=1)] = np.nan
        mark_diverged(rho, diverged, dstep, k)
        newly = diverged & ~bad_before
        q[newly] = np.nan
    mass[diverged] = np.nan
    maxw[diverged] = np.nan
    new = state.replace(rho=rho, q=q, k=k, diverged=diverged, diverged_step=dstep)
    return new, StepStats(mass, maxw)
