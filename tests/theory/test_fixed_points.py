"""Fixed points, stability, basins and verdicts (docs/model.md, "What the landscape looks like")."""

from __future__ import annotations

import numpy as np
import pytest

from attnsignal.config import ConfigError, ModelConfig
from attnsignal.theory import fixed_points, landscape, landscape_verdict


@pytest.mark.parametrize("method", ["exact", "asymptotic"])
def test_large_d_over_L_has_an_interior_minimum_and_two_attractors(method):
    model = ModelConfig(1000, 10, 200, 0.25)
    pts = fixed_points(model, method)
    assert [p.rho for p in pts][0] == -1.0 and pts[-1].rho == 1.0
    assert [p.kind for p in pts] == ["endpoint-max", "interior-min", "endpoint-max"]
    assert [p.stable for p in pts] == [True, False, True]
    rho_star = pts[1].rho
    assert -0.4 < rho_star < -0.25  # exact −0.3406, asymptotic −0.3112
    assert abs(float(landscape(model, rho_star, method).dphi)) < 1e-12
    assert pts[1].slope > 0 and pts[0].slope < 0 and pts[2].slope < 0
    b = landscape_verdict(model, method)
    assert b.verdict.startswith(f"interior minimum at ρ* = {rho_star:.4g}: both ±ξ attract")
    assert b.attractor_of(rho_star + 1e-3) == 1.0 and b.attractor_of(rho_star - 1e-3) == -1.0
    assert b.attractor_of(rho_star) is None
    assert sum(x.probability_uniform_start for x in b.basins) == pytest.approx(1.0)
    # the basins are the intervals either side of ρ*
    assert [(x.attractor, x.lo, x.hi) for x in b.basins] == [(-1.0, -1.0, rho_star),
                                                             (1.0, rho_star, 1.0)]


def test_monte_carlo_fixed_points_find_the_same_structure():
    # the mc Φ' is noisy: ρ* within 0.06 of the exact −0.3406; and β = 13 (beyond the exact
    # method's range) still works with mc alone
    pts = fixed_points(ModelConfig(1000, 10, 200, 0.25), "mc")
    assert [(p.kind, p.stable) for p in pts] == [
        ("endpoint-max", True), ("interior-min", False), ("endpoint-max", True)]
    assert abs(pts[1].rho - (-0.3406)) < 0.06
    hot = fixed_points(ModelConfig(10, 2, 3, 0.5, beta=13.0), "mc")
    assert hot[0].rho == -1.0 and hot[-1].rho == 1.0


@pytest.mark.parametrize("method", ["exact", "asymptotic"])
def test_small_d_over_L_is_monotone(method):
    model = ModelConfig(100, 500, 10_000, 0.25)
    pts = fixed_points(model, method)
    assert [(p.rho, p.stable, p.kind) for p in pts] == [
        (-1.0, False, "endpoint-min"), (1.0, True, "endpoint-max")]
    b = landscape_verdict(model, method)
    assert b.monotone
    assert b.verdict == "Φ strictly increasing on [−1, 1]: every start but ρ = −1 goes to +ξ"
    assert len(b.basins) == 1 and b.basins[0].probability_uniform_start == pytest.approx(1.0)
    # Φ' ~ 1e-2 here (docs/model.md)
    d = landscape(model, np.linspace(-1, 1, 21)).dphi
    assert np.all(d > 0) and 0.005 < d.min() < d.max() < 0.05


def test_random_sign_symmetric_fixed_points():
    model = ModelConfig(50, 5, 20, 0.8, signal_sign="random")
    pts = fixed_points(model)
    assert [p.rho for p in pts] == [-1.0, 0.0, 1.0]
    assert [p.stable for p in pts] == [True, False, True]
    b = landscape_verdict(model)
    assert [x.probability_uniform_start for x in b.basins] == pytest.approx([0.5, 0.5])


def test_flat_landscape():
    # θ = 0: no signal, Φ is constant and every ρ is stationary
    flat = landscape_verdict(ModelConfig(50, 5, 20, 0.0))
    assert flat.basins == [] and "constant" in flat.verdict
    assert all(p.kind == "endpoint-degenerate" for p in flat.fixed_points)


def test_bad_method():
    with pytest.raises(ConfigError, match="^method:"):
        fixed_points(ModelConfig(50, 5, 20, 0.8), method="newton")
