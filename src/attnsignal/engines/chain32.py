"""The alignment Markov chain with its per-sample arithmetic in single precision (opt-in).

The same chain as :mod:`.chain` — the same update of ``ρ`` (float64), the same random stream
per update, the same draws in the same order — with the work over the ``L`` tokens of each
sample (:func:`._kernel.reduced_sample32`: the three ``N(0, I_L)`` draws, the shifted
softmax, the α-moments and the gradient sums) in float32: two 32-bit ziggurat normals per
64-bit word instead of one, and 4-lane float32 sums. The projections ``v_a``, ``ζ·v_⊥``,
``||v_⊥||²``, the χ² draws, the complement norm and the update stay in float64.

Why opt-in, and what is measured (``benchmarks/bench_float32.py``, docs/performance.md): its
speed is 0.87× that of ``chain`` at d = 20, L = 210 and 1.12× at E1's size (one run of the
script) — ``chain``'s float64 kernel shares this engine's sampler, so float32 buys little.
No difference in law of the final ``|ρ|`` from the float64 chain in two-sample tests that
detect the DROP_COMPLEMENT variant (d = 20, and d = 10⁶ where ``γ² ≈ d`` makes float32
cancellation in ``c_i − F`` most likely), and the engine law tests against the literal
algorithm pass (``tests/engines/test_engine_law.py``). The draws differ from the ``chain`` engine's (a
run is not bit-identical to its float64 twin, only equal in law), and each per-sample
quantity carries float32 rounding (relative ~1e-7 instead of ~1e-16), so ``chain`` stays
the default and the reproduction uses it. Same seed, same bits, whatever the number of runs,
threads, or how the steps are split, as for ``chain``.
"""

from __future__ import annotations

from .base import Capabilities
from .chain import ChainEngine

__all__ = ["Chain32Engine"]


class Chain32Engine(ChainEngine):
    """:class:`~.chain.ChainEngine` with the per-sample arithmetic in float32 (module
    docstring). Its memory estimate is the float64 chain's (an upper bound)."""

    name = "chain32"
    single = True
    capabilities = Capabilities(
        supports=ChainEngine.capabilities.supports,
        has_query=False, exact_in_law=True, cost="O(B L)",
        summary="the alignment chain with float32 per-sample arithmetic (opt-in, 0.9-1.1x the "
                "speed of 'chain'; equal in law, not bit-identical to 'chain')",
    )
