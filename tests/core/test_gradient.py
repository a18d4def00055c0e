"""The analytic per-sample gradient, pooling and the objective."""

import numpy as np
import pytest

import attnsignal as asg
from attnsignal.model import (
    attention_weights,
    latent_direction,
    objective_mc,
    pool,
    sample_tokens,
    sq_norm_and_gradient,
)


def _sq_norm(X, q, beta):
    f = pool(X, attention_weights(X, q, beta))
    return float(f @ f)


@pytest.mark.parametrize(
    "d,R,N,theta,beta,seed",
    [(3, 1, 2, 0.5, 1.0, 0), (7, 3, 5, 1.0, 2.0, 1), (12, 4, 20, 0.25, 0.5, 2), (5, 2, 0, 2.0, 3.0, 3)],
)
def test_gradient_matches_central_finite_differences(d, R, N, theta, beta, seed):
    rng = np.random.default_rng(seed)
    model = asg.ModelConfig(d=d, n_informative=R, n_nuisance=N, theta=theta, beta=beta)
    X = sample_tokens(model, rng)
    q = rng.standard_normal(d)
    q /= np.linalg.norm(q)
    F, g, alpha = sq_norm_and_gradient(X, q, beta)
    assert F == pytest.approx(_sq_norm(X, q, beta), rel=1e-14)
    h = 1e-5
    fd = np.array([
        (_sq_norm(X, q + h * e, beta) - _sq_norm(X, q - h * e, beta)) / (2 * h) for e in np.eye(d)
    ])
    rel = np.linalg.norm(g - fd) / np.linalg.norm(fd)
    assert rel < 1e-6, rel


def test_gradient_is_batched_consistently():
    rng = np.random.default_rng(5)
    model = asg.ModelConfig(d=6, n_informative=2, n_nuisance=4, theta=1.0, beta=1.5)
    X = sample_tokens(model, rng, (3, 2))
    q = rng.standard_normal((3, 1, 6))
    F, g, _ = sq_norm_and_gradient(X, q, model.beta)
    for i in range(3):
        for j in range(2):
            Fij, gij, _ = sq_norm_and_gradient(X[i, j], q[i, 0], model.beta)
            assert F[i, j] == pytest.approx(Fij, rel=1e-13)
            np.testing.assert_allclose(g[i, j], gij, rtol=1e-12, atol=1e-13)


def test_pooling_is_invariant_under_token_permutation():
    rng = np.random.default_rng(7)
    model = asg.ModelConfig(d=8, n_informative=3, n_nuisance=9, theta=1.0, beta=1.3)
    X = sample_tokens(model, rng)
    q = rng.standard_normal(8)
    perm = rng.permutation(X.shape[0])
    a, ap = attention_weights(X, q, 1.3), attention_weights(X[perm], q, 1.3)
    np.testing.assert_allclose(ap, a[perm], rtol=1e-13)
    np.testing.assert_allclose(pool(X[perm], ap), pool(X, a), rtol=1e-12)
    F1, g1, _ = sq_norm_and_gradient(X, q, 1.3)
    F2, g2, _ = sq_norm_and_gradient(X[perm], q, 1.3)
    assert F1 == pytest.approx(F2, rel=1e-12)
    np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("scale", [1e2, 1e3, 1e4])
def test_pooling_is_finite_for_huge_scores(scale):
    rng = np.random.default_rng(11)
    X = rng.standard_normal((50, 4)) * scale
    q = np.array([1.0, 0, 0, 0])
    a = attention_weights(X, q, 1.0)
    assert np.all(np.isfinite(a)) and a.sum() == pytest.approx(1.0)
    # the token with the largest score takes all the mass
    assert a[np.argmax(X[:, 0])] == pytest.approx(1.0)
    F, g, _ = sq_norm_and_gradient(X, q, 1.0)
    assert np.isfinite(F) and np.all(np.isfinite(g))


def test_objective_depends_on_q_only_through_alignment():
    model = asg.ModelConfig(d=10, n_informative=4, n_nuisance=12, theta=1.5, beta=1.0)
    xi = latent_direction(10)
    rho = 0.6
    rng = np.random.default_rng(3)

    def query(rho):
        u = rng.standard_normal(10)
        u -= (u @ xi) * xi
        u /= np.linalg.norm(u)
        return rho * xi + np.sqrt(1 - rho**2) * u

    q1, q2, q3 = query(rho), query(rho), query(-0.2)
    n = 40_000
    X = sample_tokens(model, np.random.default_rng(99), (n,))

    def sqn(q):
        f = pool(X, attention_weights(X, q, model.beta))
        return np.einsum("nd,nd->n", f, f)

    f1, f2, f3 = sqn(q1), sqn(q2), sqn(q3)
    diff = f1 - f2
    se = diff.std(ddof=1) / np.sqrt(n)
    assert abs(diff.mean()) < 3 * se
    # ...and the same test does detect a different alignment
    diff3 = f1 - f3
    assert abs(diff3.mean()) > 10 * diff3.std(ddof=1) / np.sqrt(n)
    # the public estimator agrees with the sample mean and reports a standard error
    J, Jse = objective_mc(model, q1, 4000, np.random.default_rng(1))
    assert abs(J - f1.mean()) < 4 * np.hypot(Jse, f1.std() / np.sqrt(n))


def test_random_sign_flips_signal_per_sample():
    model = asg.ModelConfig(d=3, n_informative=50, n_nuisance=0, theta=5.0, signal_sign="random")
    X = sample_tokens(model, np.random.default_rng(0), (400,))
    means = X[:, :, 0].mean(axis=1)
    assert set(np.sign(means).astype(int)) == {-1, 1}
    np.testing.assert_allclose(np.abs(means), 5.0, atol=0.6)
