"""What the reproduction runs: the parameters of every experiment, full and quick.

Full mode follows the paper (30 runs, θ = 0.25, R = 500, N = 10 000, d = 100); quick mode keeps
every experiment and every figure with fewer runs and steps, and checks the claims with the
looser tolerances of :meth:`attnsignal.claims.Tolerances.quick`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import ModelConfig, StepSize

__all__ = ["Plan"]


@dataclass(frozen=True)
class Plan:
    quick: bool
    seed: int = 2606
    # E1 — headline
    e1_model: ModelConfig = ModelConfig(d=100, n_informative=500, n_nuisance=10_000, theta=0.25)
    e1_big_d: int = 1000
    e1_runs: int = 30
    e1_steps: int = 100_000
    e1_step: StepSize = StepSize(eta0=0.03, k0=1000.0, power=1.0)
    e1_records: int = 150
    # common draws for the finite-step coefficient κ_B in the samples-to-reach prediction
    theory_samples: int = 4000
    # literal spot check of the headline
    literal_runs: int = 3
    literal_steps: int = 300
    # E2 — robustness grid θ × N/R
    e2_thetas: tuple[float, ...] = (0.25, 0.5, 1.0)
    e2_ratios: tuple[int, ...] = (1, 5, 10, 20)
    e2_R: int = 500
    e2_d: int = 100
    e2_runs: int = 30
    e2_steps: int = 30_000
    e2_step: StepSize = StepSize(eta0=0.05, k0=1000.0, power=1.0)
    # E3 — attention filtering phase diagram over (θ, R/N)
    e3_thetas: tuple[float, ...] = (0.25, 1.0, 2.0, 3.0)
    e3_densities: tuple[float, ...] = (0.05, 0.25, 1.0, 4.0)  # R/N
    e3_N: int = 200
    e3_d: int = 20
    e3_runs: int = 8
    e3_steps: int = 4000
    e3_step: StepSize = StepSize(eta0=0.05, k0=500.0, power=0.75)
    # E4 — two attracting signs: fraction of runs at +ξ vs the ODE basins
    # d/L large makes Φ non-monotone. DESIGN's example (d=1000, R=10, N=200, θ=0.25) has
    # ρ* = −0.34, so uniform starts all go to +ξ, and its gradient noise (V ≈ 6·10^4 against a
    # field of 10^-2) would need steps below 10^-8 for the basins to show; this configuration
    # has a basin of −ξ that a uniform start hits with probability 0.135 and V/field² ≈ 1600.
    e4_model: ModelConfig = ModelConfig(d=50, n_informative=2, n_nuisance=4, theta=2.0)
    e4_design_model: ModelConfig = ModelConfig(d=1000, n_informative=10, n_nuisance=200, theta=0.25)
    e4_runs: int = 400
    e4_boundary_runs: int = 100
    e4_steps: int = 200_000  # every sign is settled by 120 000 steps (measured, 100 runs)
    e4_step: StepSize = StepSize(eta0=4e-6, k0=1e6, power=0.75)
    # E5 — ODE tracking for decreasing eta0 (a small model where the O(η0) bias is visible and
    # the gap halves with η0: tests/theory/test_tracking.py measures the same configuration)
    e5_model: ModelConfig = ModelConfig(d=4, n_informative=20, n_nuisance=20, theta=1.5)
    e5_eta0s: tuple[float, ...] = (0.04, 0.02, 0.01, 0.005)
    e5_rho0: float = 0.1
    e5_runs: int = 400
    e5_T: float = 3.0
    e5_sa_T: float = 30.0  # the largest η0 runs this far in ODE time for the SA diagnostics
    e5_k0: float = 100.0
    e5_power: float = 0.75

    @classmethod
    def full(cls, seed: int = 2606) -> "Plan":
        return cls(quick=False, seed=seed)

    @classmethod
    def quick_plan(cls, seed: int = 2606) -> "Plan":
        return cls(
            quick=True,
            seed=seed,
            e1_runs=8,
            e1_steps=20_000,
            e1_step=StepSize(eta0=0.05, k0=1000.0, power=1.0),
            e1_records=80,
            theory_samples=1000,
            literal_runs=2,
            literal_steps=100,
            e2_runs=6,
            e2_steps=8000,
            e3_runs=4,
            e3_steps=2000,
            e4_runs=100,
            e4_boundary_runs=30,
            e4_steps=150_000,
            e5_eta0s=(0.04, 0.02, 0.01),
            e5_runs=200,
        )
