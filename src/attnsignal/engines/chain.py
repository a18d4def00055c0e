"""The alignment Markov chain: exact in law for ``ρ``, ``O(B L)`` per update (derived in
docs/engines.md#the-update-of-rho).

By the rotation symmetry about ``ξ`` the law of ``ρ_{k+1}`` given ``q_k`` depends on ``ρ_k``
only, so the chain simulates ``ρ`` directly. Per sample it draws ``a, b, ζ ~ N(0, I_L)``,
``γ² ~ χ²_D`` and ``χ' ~ χ²_{D−1}`` (``D = d − 2``), and evaluates the shared reduced kernel
(:func:`._kernel.reduced_sample`), which returns ``g_q``, ``g_e`` and the scalars giving the
complement norm ``||u||² = 4β² [(v_a γ + ζ·v_⊥)² + ||v_⊥||² χ']``. With ``B`` samples the
complement directions are independent and uniform, and ``||Σ u_b / B||²`` is obtained from a
Bartlett draw of Wishart(``D``, ``I_B``) (direct draws of the ``B`` directions when
``D < B``). Then

    ρ' = [ρ (1 + η ḡ_q) + s η ḡ_e] / √((1 + η ḡ_q)² + (η ḡ_e)² + η² ||ū||²),   s = √(1 − ρ²)

(``ḡ_q = 0`` for the riemannian update). ``d`` enters only as a number of degrees of freedom:
``d = 10^9`` costs what ``d = 10`` does. ``d = 2`` (no complement) and ``d = 3`` (``χ' = 0``)
are exact; ``|ρ| = 1`` is exact (``s = 0``, ``e`` any unit vector orthogonal to ``q``).

Per update, the stream of run ``r`` is seeded by ``(key_r, k)``; per sample it gives, in this
order, the sign (random-sign variant), ``γ²``, ``a``, ``b``, ``ζ``, ``χ'``, and after the ``B``
samples the Bartlett factor (or the directions).

``noise_std`` is absorbed exactly: ``(θ, σ, β)`` with steps ``η`` is ``(θ/σ, 1, βσ)`` with
steps ``σ² η``. The state has no query vector (``state.q is None``); ``state.streams`` is the
``(runs, 2)`` array of per-run Philox keys (see :mod:`._kernel` for the random streams), and
update ``k`` of run ``r`` uses the stream ``(key_r, k)`` — so a run is bit-identical whatever
the number of runs beside it and however the steps are split into :func:`advance` calls.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..config import ConfigError, ModelConfig, RunConfig
from .base import (Capabilities, Engine, EngineState, MemoryTerm, StepStats, compute_threads,
                   initial_rho, token_field)

__all__ = ["ChainEngine"]


_INT64_MAX = 2**63 - 1


class ChainEngine(Engine):
    """The alignment Markov chain (module docstring)."""

    name = "chain"
    #: the per-sample arithmetic in float32 (:class:`~.chain32.Chain32Engine`)
    single = False
    # the variants the reduced kernel implements: a new variant is refused (Engine.check)
    # until the kernel learns it
    capabilities = Capabilities(
        supports={"signal_sign": ("fixed", "random"), "update": ("projected", "riemannian")},
        has_query=False, exact_in_law=True, cost="O(B L)",
        summary="the alignment Markov chain: exact in law for ρ, O(B L) per update, no q",
    )

    def check(self, model: ModelConfig, run: RunConfig) -> None:
        """Also: ``d − 2`` is a 64-bit integer in the compiled kernel."""
        if model.d > _INT64_MAX:
            raise ConfigError("d", "must be an integer in [2, 2^63 − 1] for the 'chain' engine "
                              "(d − 2 is a 64-bit degree of freedom)", model.d)
        super().check(model, run)

    def sample_ops(self, model: ModelConfig) -> float:
        """``O(L)`` a sample."""
        return float(model.n_tokens)

    def memory_terms(self, model: ModelConfig, run: RunConfig) -> list[MemoryTerm]:
        """Per compute thread: 5 float64 vectors of length ``L`` and one of length ``B``;
        per run: ``ρ``, the flags, the key and the statistics (a few copies)."""
        threads = min(compute_threads(), run.runs)
        L = model.n_tokens
        fld, val = token_field(model)
        return [
            MemoryTerm(fld, val, 40 * L * threads,
                       f"5 float64 vectors of L = {L} tokens per thread on {threads} threads"),
            MemoryTerm("batch", run.batch, 8 * run.batch * threads,
                       f"one float64 per sample of the minibatch per thread on {threads} threads"),
            MemoryTerm("runs", run.runs, 200 * run.runs, f"the state of {run.runs} runs"),
        ]

    def init(
        self, model: ModelConfig, run: RunConfig, seeds: Sequence[np.random.SeedSequence]
    ) -> EngineState:
        """``ρ0`` per run (the given ``initial_alignment``, or the alignment of a uniform point:
        ``ρ0² ~ Beta(1/2, (d−1)/2)`` with a fair sign) and the per-run keys."""
        from . import _rng

        rho = np.array(
            [initial_rho(_rng.init_generator(s), model.d, run.initial_alignment) for s in seeds],
            dtype=np.float64,
        )
        return EngineState.start(rho, None, _rng.run_keys(seeds))

    def advance(
        self, model: ModelConfig, run: RunConfig, state: EngineState, etas: np.ndarray
    ) -> tuple[EngineState, StepStats]:
        """``len(etas)`` updates of every non-diverged run (one compiled, parallel call)."""
        from . import _kernel_common as _common

        p = _common.prepare(model, run, state, etas, single=self.single)
        rho = state.rho.copy()
        out = _common.launch(_common.K.chain_advance, rho, p, p.precision)
        return _common.finish(state, rho, None, out, p)
