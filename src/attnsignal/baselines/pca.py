"""``"pca"``: the leading eigenvector of the running second moment of the token means.

After ``k`` samples the estimate is the top eigenvector of ``M_k = Σ_t m_t m_tᵀ`` (uncentred;
dividing by ``k`` changes nothing), oriented towards the run's initial guess ``q0``
(``u·q0 >= 0``: an eigenvector has no sign of its own, so the signed ``ρ`` of PCA carries a
fair random sign like attention's from a uniform start; ``|ρ|`` is the measure).

Sufficient statistic, exact in law. In coordinates ``(ξ, ξ^⊥)`` write ``m_t = (a_t, v_t)`` with
``a_t = ε_t c + N(0, 1/L)`` and ``v_t ~ N(0, I_{d−1}/L)``. For a block of ``Δ`` samples let
``a ∈ R^Δ`` and ``V = [v_1 … v_Δ] ∈ R^{(d−1)×Δ}``. Splitting the columns of ``V`` along
``â = a/‖a‖`` and its orthogonal complement (``V`` has i.i.d. isotropic columns, independent
of ``a``):

    Σ a_t²      = ‖a‖²,            L‖a‖² ~ χ'²_Δ(noncentrality Δ c² L)   (either sign variant:
                                                                          (εc + g)² ~ (c + g)²)
    Σ a_t v_t   = ‖a‖ b,           b = V â ~ N(0, I/L)
    Σ v_t v_tᵀ  = b bᵀ + W,        W = V P_â^⊥ Vᵀ ~ Wishart_{d−1}(Δ − 1, I/L), independent of b

so a block costs ``O(d² min(Δ, d))`` (Bartlett's factor when ``Δ − 1 >= d − 1``, a Gaussian
``(d−1)×(Δ−1)`` matrix otherwise) whatever ``L`` and ``Δ`` are, and a record one
eigenvector: ``O(d³)`` (LAPACK ``syevr``, top pair only) for ``d <= 256``, Lanczos
(``scipy.sparse.linalg.eigsh`` started from the previous eigenvector) above. Memory: ``d²``
floats per run (the runner processes runs in chunks). The law of ``M`` is the same in both
sign variants (it is even in ``ε``).

Large ``d, k`` with ``γ = d/k`` (spiked model, BBP): ``ρ² → (1 − γ/ℓ²)/(1 + γ/ℓ)`` for
``γ < ℓ²`` (else 0), ``ℓ = c²L``; for ``k ≫ d``: ``1 − |ρ| ≈ (d−1)(1 + ℓ)/(2kℓ²)``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..config import ModelConfig
from .._blas import single_blas_thread
from .base import BaselineConfig, BaselineState, generators, new_streams, signal_scale
from .mean import pooling_weights

__all__ = ["init", "advance", "pooling_weights", "bytes_per_run", "wishart", "leading"]

#: Above this dimension the leading eigenvector comes from Lanczos instead of a full eigh.
LANCZOS_D = 256


def bytes_per_run(model: ModelConfig) -> int:
    """Memory held per run (the second-moment matrix and three vectors)."""
    return 8 * (model.d * model.d + 3 * model.d)


def wishart(g: np.random.Generator, p: int, n: int) -> np.ndarray:
    """A draw of ``Wishart_p(n, I)``: ``Σ_{j<n} z_j z_jᵀ`` with ``z_j ~ N(0, I_p)`` — Bartlett's
    lower-triangular factor (``T_ii² ~ χ²_{n−i}``, ``T_ij ~ N(0,1)`` below the diagonal) when
    ``n >= p``, the Gaussian ``p × n`` matrix itself when ``n < p``."""
    if n <= 0 or p <= 0:
        return np.zeros((p, p))
    if n < p:
        G = g.standard_normal((p, n))
        return G @ G.T
    T = np.tril(g.standard_normal((p, p)), -1)
    T[np.diag_indices(p)] = np.sqrt(g.chisquare(n - np.arange(p)))
    return T @ T.T


def init(model: ModelConfig, config: BaselineConfig,
         seeds: Sequence[np.random.SeedSequence]) -> BaselineState:
    n, d = len(seeds), model.d
    q0 = np.empty((n, d))

    def draw(r: int, g: np.random.Generator) -> None:
        z = g.standard_normal(d)
        q0[r] = z / np.linalg.norm(z)

    streams = generators(new_streams(seeds), draw)
    return BaselineState(
        k=0, rho=q0[:, 0].copy(),
        stats={"moment": np.zeros((n, d, d)), "q0": q0, "u": q0.copy()},
        streams=streams,
    )


def advance(model: ModelConfig, config: BaselineConfig, state: BaselineState,
            samples: int) -> BaselineState:
    if samples <= 0:
        return state
    c, var = signal_scale(model)
    d = model.d
    M = state.stats["moment"].copy()
    sd = np.sqrt(var)

    def draw(r: int, g: np.random.Generator) -> None:
        nonc = samples * c * c / var
        la2 = g.noncentral_chisquare(samples, nonc) if nonc > 0 else g.chisquare(samples)
        na = np.sqrt(var * la2)
        b = sd * g.standard_normal(d - 1)
        M[r, 0, 0] += na * na
        M[r, 0, 1:] += na * b
        M[r, 1:, 0] += na * b
        M[r, 1:, 1:] += np.outer(b, b) + var * wishart(g, d - 1, samples - 1)

    with single_blas_thread():
        streams = generators(state.streams, draw)
        u = leading(M, state.stats["u"])
    q0 = state.stats["q0"]
    sign = np.where(np.einsum("rd,rd->r", u, q0) < 0, -1.0, 1.0)
    u = u * sign[:, None]
    return BaselineState(k=state.k + samples, rho=u[:, 0].copy(),
                         stats={"moment": M, "q0": q0, "u": u}, streams=streams)


def leading(M: np.ndarray, start: np.ndarray) -> np.ndarray:
    """(runs, d) unit leading eigenvectors of the symmetric ``M`` (runs, d, d)."""
    d = M.shape[-1]
    out = np.empty(M.shape[:2])
    if d <= LANCZOS_D:
        from scipy.linalg import eigh

        for r in range(M.shape[0]):
            out[r] = eigh(M[r], subset_by_index=[d - 1, d - 1], driver="evr")[1][:, 0]
        return out
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh

    for r in range(M.shape[0]):
        try:
            _, v = eigsh(M[r], k=1, which="LA", v0=start[r], tol=1e-12, maxiter=20 * d)
            out[r] = v[:, 0]
        except ArpackNoConvergence:  # pragma: no cover - fall back to the full solver
            out[r] = np.linalg.eigh(M[r])[1][:, -1]
    return out
