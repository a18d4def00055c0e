"""Theory layer: the population landscape ``Φ(ρ)``, the limiting ODE, fixed points, the
finite-step correction and simulation-vs-ODE tracking (derived in docs/model.md and
docs/theory.md).

Modules (one concept each):

``landscape``      ``Φ(ρ)``, ``Φ'(ρ)`` by three methods (dispatching to ``exact``, ``landscape_mc``,
                   ``asymptotic``), with the ``σ`` and random-sign reductions
``field``          the vector field ``(1 − ρ²)Φ'(ρ)`` and fast ``Φ'``, ``Φ`` interpolants
``ode``            :func:`solve_ode` (in ``z = artanh ρ``) with hitting times; :func:`flow`
``fixed_points``   fixed points, stability, basins, verdict
``reduced``        a vectorised reduced-coordinate gradient sampler (docs/engines.md)
``finite_step``    Monte-Carlo drift and variance, the ``O(η²)`` correction, constant-step
                   plateau, samples needed to reach a target alignment
``effective``      the law of ``ρ_k`` at finite step and dimension (:func:`effective_dynamics`)
``advisor``        step sizes that reach a target fastest (:func:`advise_schedule`)
``dimension_moments`` the one-step moments as exact polynomials in ``d``
``escape``         the law of a slow one-dimensional chain: hitting times, the escape law
``scaling``        sample-complexity laws along ``d`` (:func:`scaling_law`, ``docs/scaling.md``)
``settled``        where constant-step runs settle, from the exact one-step moments (the
                   critical step where the expansion in ``η`` fails)
``tracking``       simulation vs ODE, stochastic-approximation diagnostics
``ode_study``      the limiting ODE from one start beside a simulation and the effective
                   dynamics (what ``attnsignal ode`` prints)
``plots``          figures (PNG + PDF)
"""

from .advisor import Advice, advise_schedule
from .effective import EffectiveDynamics, effective_dynamics, one_step_moments
from .field import dphi_interpolant, phi_interpolant, vector_field
from .finite_step import (
    MonteCarloEstimate,
    SamplesToReach,
    constant_step_plateau,
    corrected_drift,
    drift_mc,
    drift_variance,
    gradient_variance,
    largest_plateau_step,
    samples_to_reach,
    second_order_coefficient,
)
from .fixed_points import (
    Basin,
    Basins,
    FixedPoint,
    LandscapeVerdict,
    fixed_points,
    landscape_verdict,
)
from .landscape import METHODS, Landscape, landscape
from .ode import OdeSolution, flow, solve_ode
from .plots import plot_landscape, plot_ode, plot_sa_diagnostics
from .scaling import ScalingLaw, ScalingLimit, scaling_law
from .tracking import SADiagnostics, Tracking, sa_diagnostics, tracking

__all__ = [
    "METHODS",
    "Landscape",
    "landscape",
    "vector_field",
    "dphi_interpolant",
    "phi_interpolant",
    "drift_mc",
    "drift_variance",
    "MonteCarloEstimate",
    "FixedPoint",
    "fixed_points",
    "Basin",
    "Basins",
    "LandscapeVerdict",
    "landscape_verdict",
    "OdeSolution",
    "solve_ode",
    "flow",
    "gradient_variance",
    "second_order_coefficient",
    "corrected_drift",
    "constant_step_plateau",
    "largest_plateau_step",
    "SamplesToReach",
    "samples_to_reach",
    "Tracking",
    "EffectiveDynamics",
    "Advice",
    "advise_schedule",
    "effective_dynamics",
    "one_step_moments",
    "tracking",
    "SADiagnostics",
    "sa_diagnostics",
    "plot_landscape",
    "plot_ode",
    "plot_sa_diagnostics",
    "scaling_law",
    "ScalingLaw",
    "ScalingLimit",
]
