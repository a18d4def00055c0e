"""The literal algorithm: materialise the tokens, compute the exact gradient, update ``q``.

Per update and run (``B`` samples ``X_b ∈ R^{L×d}``, ``O(B L d)``):

    g = (1/B) Σ_b 2β (X_b^T (α_b ∘ c_b) − F_b f_b)          (model.sq_norm_and_gradient)
    riemannian:  g ← g − (q·g) q
    q ← (q + η g) / ||q + η g||

Vectorised over runs and the minibatch (runs are processed in chunks that keep the token
array under ~128 MiB).

Random streams (:mod:`._rng`): ``q0`` comes from the run's initial-condition generator (as for
the projected engine); update ``k`` (0-based) of run ``r`` draws its tokens from
``Generator(Philox(key_r, counter=(0, k, 2, 0)))`` — ``z`` of shape ``(B, L, d)``, then the
``B`` signs for the random-sign variant (:func:`..model.sample_tokens`). The stream is a pure
function of ``(key_r, k)``: ``advance`` is pure, and a run's trajectory does not depend on the
chunking, on the other runs, or on how the updates are split into ``advance`` calls.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..config import ModelConfig, RunConfig
from ..metrics import informative_mass, max_nuisance_weight
from ..model import latent_direction, sample_tokens, sq_norm_and_gradient
from . import _rng
from .base import (Capabilities, Engine, EngineState, MemoryTerm, StepStats, initial_query_state,
                   mark_diverged, token_field)

__all__ = ["LiteralEngine"]

_CHUNK_ELEMENTS = 1 << 24


class LiteralEngine(Engine):
    """The literal algorithm (module docstring): the reference the exact engines are tested
    against."""

    name = "literal"
    capabilities = Capabilities(
        supports={"signal_sign": ("fixed", "random"), "update": ("projected", "riemannian")},
        has_query=True, exact_in_law=True, cost="O(B L d)",
        summary="materialised tokens, the algorithm itself, O(B L d) per update",
    )

    def memory_terms(self, model: ModelConfig, run: RunConfig) -> list[MemoryTerm]:
        """The token array of one chunk of runs (at least one run's ``B × L × d`` float64, at
        most ~128 MiB otherwise) and the ``(runs, d)`` queries (a few copies)."""
        L, d, B = model.n_tokens, model.d, run.batch
        per_run = 8 * B * L * d
        chunk = max(1, _CHUNK_ELEMENTS // (B * L * d))
        fld, val = max([token_field(model), ("d", d), ("batch", B)], key=lambda fv: fv[1])
        return [
            MemoryTerm(fld, val, per_run * min(chunk, run.runs),
                       f"the B × L × d = {B} × {L} × {d} float64 tokens of a run's minibatch"),
            MemoryTerm("d", d, 8 * d * 4 * run.runs,
                       f"the (runs, d) = ({run.runs}, {d}) float64 queries (4 copies)"),
            MemoryTerm("runs", run.runs, 200 * run.runs, f"the state of {run.runs} runs"),
        ]

    def init(
        self, model: ModelConfig, run: RunConfig, seeds: Sequence[np.random.SeedSequence]
    ) -> EngineState:
        """``q0`` per run (:func:`.base.initial_query`) and the per-run stream keys."""
        return initial_query_state(model, run, seeds)

    def advance(
        self, model: ModelConfig, run: RunConfig, state: EngineState, etas: np.ndarray
    ) -> tuple[EngineState, StepStats]:
        """``len(etas)`` updates of every non-diverged run; runs that become non-finite are
        flagged at the update where it happened."""
        R, B, L, d = model.n_informative, run.batch, model.n_tokens, model.d
        xi = latent_direction(d)
        keys = np.asarray(state.streams, dtype=np.uint64)
        q = state.q.copy()
        rho = state.rho.copy()
        diverged = state.diverged.copy()
        dstep = state.diverged_step.copy()
        mass = np.full(q.shape[0], np.nan)
        maxw = np.full(q.shape[0], np.nan)
        chunk = max(1, _CHUNK_ELEMENTS // (B * L * d))
        buf = np.empty((min(chunk, q.shape[0]), B, L, d))
        k = state.k
        for eta in np.asarray(etas, dtype=np.float64).reshape(-1):
            active = np.flatnonzero(~diverged)
            for start in range(0, active.size, chunk):
                idx = active[start : start + chunk]
                X = buf[: idx.size]
                for j, r in enumerate(idx):
                    sample_tokens(model, _rng.update_generator(keys[r], k), (B,), xi, out=X[j])
                _, g, alpha = sq_norm_and_gradient(X, q[idx, None, :], model.beta)
                g = g.mean(axis=1)
                if run.update == "riemannian":
                    g -= np.einsum("rd,rd->r", g, q[idx])[:, None] * q[idx]
                with np.errstate(over="ignore", invalid="ignore"):
                    qn = q[idx] + eta * g
                    nrm = np.linalg.norm(qn, axis=1, keepdims=True)
                    big = ~(np.isfinite(nrm[:, 0]) & (nrm[:, 0] > 0))
                    if big.any():
                        # ‖q + ηg‖² overflowed: rescale by the largest entry before
                        # normalising, as the exact engines do; an infinite or NaN entry makes
                        # the run NaN
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
            k += 1
            bad_before = diverged.copy()
            rho[~np.all(np.isfinite(q), axis=1)] = np.nan
            mark_diverged(rho, diverged, dstep, k)
            newly = diverged & ~bad_before
            q[newly] = np.nan
        mass[diverged] = np.nan
        maxw[diverged] = np.nan
        new = state.replace(rho=rho, q=q, k=k, diverged=diverged, diverged_step=dstep)
        return new, StepStats(mass, maxw)
