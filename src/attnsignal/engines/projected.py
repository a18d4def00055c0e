"""The full-vector exact engine: ``q ∈ R^d`` at ``O(B (L + d))`` per update (derived in
docs/engines.md#the-projected-engine).

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
from .base import (Capabilities, Engine, EngineState, MemoryTerm, StepStats, compute_threads,
                   initial_query_state, token_field)

__all__ = ["ProjectedEngine"]



class ProjectedEngine(Engine):
    """The full-vector exact engine (module docstring)."""

    name = "projected"
    # the variants the reduced kernel implements: a new variant is refused (Engine.check)
    # until the kernel learns it
    capabilities = Capabilities(
        supports={"signal_sign": ("fixed", "random"), "update": ("projected", "riemannian")},
        has_query=True, exact_in_law=True, cost="O(B (L + d))",
        summary="the full query vector, exact in law, O(B (L + d)) per update",
    )

    def sample_ops(self, model: ModelConfig) -> float:
        """``O(L + d)`` a sample."""
        return float(model.n_tokens) + float(model.d)

    def memory_terms(self, model: ModelConfig, run: RunConfig) -> list[MemoryTerm]:
        """Per compute thread: 5 float64 vectors of length ``L`` and 4 of length ``d``; the
        ``(runs, d)`` queries (state, the advanced copy, records of ``init``)."""
        threads = min(compute_threads(), run.runs)
        L, d = model.n_tokens, model.d
        fld, val = token_field(model)
        return [
            MemoryTerm(fld, val, 40 * L * threads,
                       f"5 float64 vectors of L = {L} tokens per thread on {threads} threads"),
            MemoryTerm("d", d, 8 * d * (4 * threads + 3 * run.runs),
                       f"the (runs, d) = ({run.runs}, {d}) float64 queries (3 copies) and 4 "
                       f"d-vectors per thread"),
            MemoryTerm("runs", run.runs, 200 * run.runs, f"the state of {run.runs} runs"),
        ]

    def init(
        self, model: ModelConfig, run: RunConfig, seeds: Sequence[np.random.SeedSequence]
    ) -> EngineState:
        """``q0`` per run: uniform on the sphere, or ``ρ0 ξ + √(1−ρ0²) u`` with ``u`` uniform on
        the sphere of ``ξ^⊥`` (:func:`.base.initial_query`)."""
        return initial_query_state(model, run, seeds)

    def advance(
        self, model: ModelConfig, run: RunConfig, state: EngineState, etas: np.ndarray
    ) -> tuple[EngineState, StepStats]:
        """``len(etas)`` updates of every non-diverged run (one compiled, parallel call)."""
        from . import _kernel_common as _common

        p = _common.prepare(model, run, state, etas)
        q = np.array(state.q, dtype=np.float64, order="C", copy=True)
        rho = state.rho.copy()
        out = _common.launch(_common.K.projected_advance, q, p)
        return _common.finish(state, rho, q, out, p)
