"""The vector field against the independent reduced sampler and the literal gradient, and the
second-order expansion of one step."""

from __future__ import annotations

import numpy as np
import pytest

from attnsignal.config import ConfigError, ModelConfig
from attnsignal.model import latent_direction, sample_tokens, sq_norm_and_gradient
from attnsignal.theory import (
    dphi_interpolant,
    drift_mc,
    drift_variance,
    gradient_variance,
    landscape,
    phi_interpolant,
    second_order_coefficient,
    vector_field,
)
from attnsignal.theory.reduced import GradientParts, one_step, reduced_chunks


@pytest.mark.parametrize("model", [
    ModelConfig(20, 3, 6, 1.0),
    ModelConfig(30, 4, 10, 0.8, 1.5, noise_std=1.2),
    ModelConfig(20, 3, 6, 1.0, 0.7, signal_sign="random"),
])
def test_vector_field_equals_monte_carlo_drift(model):
    rho = np.array([-0.6, 0.2, 0.8, 0.97])
    mc = drift_mc(model, rho, n_samples=200_000, seed=4)
    field = vector_field(model, rho)
    assert np.all(np.abs(mc.value - field) <= 3 * mc.stderr), (mc.value - field) / mc.stderr


def test_interpolant_reproduces_direct_evaluation():
    for model in (ModelConfig(100, 500, 10_000, 0.25), ModelConfig(20, 3, 5, 5.0, 3.0)):
        r = np.linspace(-1, 1, 41)
        direct = landscape(model, r).dphi
        np.testing.assert_allclose(dphi_interpolant(model)(r), direct,
                                   atol=1e-12 * np.max(np.abs(direct)))



@pytest.mark.parametrize("model", [
    ModelConfig(100, 500, 10_000, 0.25),
    ModelConfig(20, 3, 5, 5.0, 3.0),
    ModelConfig(20, 3, 6, 1.0, 0.7, signal_sign="random"),
])
def test_phi_interpolant_matches_direct_quadrature(model):
    # Φ by the exact quadrature at each point, against Φ(−1) + ∫ of the Φ' series: a wrong
    # constant, a wrong lower bound or a sign error moves every interior point by O(max |Φ'|)
    r = np.linspace(-1, 1, 41)
    direct = landscape(model, r)
    scale = np.max(np.abs(direct.dphi))
    np.testing.assert_allclose(phi_interpolant(model)(r), direct.phi, rtol=0, atol=1e-11 * scale)
    np.testing.assert_allclose(phi_interpolant(model, "asymptotic")(r),
                               landscape(model, r, "asymptotic").phi, rtol=1e-15)

def _literal_parts(model, rho, n, B, seed):
    """Riemannian minibatch gradients of the literal model at a concrete q: returns the mean
    of ||ḡ_R||² samples and of (ξ·ḡ_R)."""
    rng = np.random.default_rng(seed)
    xi = latent_direction(model.d)
    q = np.zeros(model.d)
    q[0], q[1] = rho, np.sqrt(1 - rho ** 2)
    X = sample_tokens(model, rng, (n, B), xi)
    _, g, _ = sq_norm_and_gradient(X, np.broadcast_to(q, (n, B, model.d)), model.beta)
    gbar = g.mean(axis=1)
    gR = gbar - (gbar @ q)[:, None] * q[None, :]
    return np.einsum("nd,nd->n", gR, gR), gR @ xi


@pytest.mark.parametrize("B", [1, 3])
def test_gradient_variance_matches_literal_minibatch(B):
    # the reduced sampler's complement norm ||u||² and the minibatch formula
    # V_B = |E g|² + (V − |E g|²)/B, against literal gradients (attnsignal.model)
    model = ModelConfig(6, 3, 5, 1.0, 1.3)
    rho = 0.6
    sq, proj = _literal_parts(model, rho, 40_000, B, seed=8)
    est = gradient_variance(model, rho, batch=B, n_samples=100_000, seed=2)
    se = np.hypot(float(est.stderr), sq.std(ddof=1) / np.sqrt(sq.size))
    assert abs(float(est.value) - sq.mean()) <= 3 * se
    dv = drift_variance(model, rho, batch=B, n_samples=100_000, seed=2)
    assert float(dv.value) == pytest.approx(proj.var(), rel=0.05)


@pytest.mark.parametrize("update", ["riemannian", "projected"])
@pytest.mark.parametrize("rho", [0.3, 0.9])
def test_one_step_expansion_to_second_order(update, rho):
    # same draws: E[ρ' − ρ] − [η(1−ρ²)Φ'(ρ) − η² κ(ρ)] is O(η³), so the relative error of the
    # η² term must fall like η
    model = ModelConfig(20, 3, 6, 1.0)
    ch = list(reduced_chunks(model, 50_000, 3))
    parts = [c.gradient(rho) for c in ch]
    P = GradientParts(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("g_q", "g_e", "u2")))
    s = np.sqrt(1 - rho ** 2)
    kappa = rho * np.mean(P.g_e ** 2 + P.u2) / 2
    if update == "projected":
        kappa += s * np.mean(P.g_q * P.g_e)
    for eta in (1e-3, 5e-4, 2.5e-4):
        mean_step = (one_step(P, rho, eta, update) - rho).mean()
        rel = abs(mean_step - (eta * s * P.g_e.mean() - eta ** 2 * kappa)) / (eta ** 2 * abs(kappa))
        assert rel <= 30 * eta  # measured: at most 26 η
    # and the public κ uses the same formula (same seed → same draws)
    pub = second_order_coefficient(model, rho, 1, update, n_samples=50_000, seed=3)
    assert float(pub.value) == pytest.approx(kappa, rel=1e-10)


def test_variance_scales_with_sigma():
    m = ModelConfig(10, 2, 4, 1.0, noise_std=1.7)
    std = m.standardized()
    a = gradient_variance(m, 0.5, n_samples=2000, seed=1)
    b = gradient_variance(std, 0.5, n_samples=2000, seed=1)
    assert float(a.value) == pytest.approx(1.7 ** 4 * float(b.value), rel=1e-12)
    assert float(drift_mc(m, 0.5, 2000, 1).value) == pytest.approx(
        1.7 ** 2 * float(drift_mc(std, 0.5, 2000, 1).value), rel=1e-12)


@pytest.mark.parametrize("call,field", [
    (lambda m: drift_mc(m, 2.0), "rho"),
    (lambda m: drift_mc(m, 0.0, n_samples=0), "n_samples"),
    (lambda m: gradient_variance(m, 0.0, batch=0), "batch"),
    (lambda m: gradient_variance(m, 0.0, update="sgd"), "update"),
    (lambda m: vector_field(m, -1.01), "rho"),
    (lambda m: vector_field(m, 0.0, method="euler"), "method"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ConfigError) as info:
        call(ModelConfig(10, 2, 3, 1.0))
    assert str(info.value).startswith(field + ":")
