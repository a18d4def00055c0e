"""Baselines: simple estimators of ``ξ`` on the same token stream as attention.

``baseline(model, method, *, samples, ...)`` returns a :class:`~attnsignal.Result` (its
``method`` says which estimator). The estimators, one module each, are pure functions of
(config, state, random stream) behind a small registry (:data:`METHODS`,
:func:`get_estimator`), and simulate sufficient statistics exactly in law:

- ``mean``   running average of the per-sample token means, ``O(1)`` per record;
- ``oracle`` running average of the informative tokens (sign-corrected), ``O(1)`` per record;
- ``pca``    top eigenvector of the running second moment, ``O(d² min(Δ, d))`` per block of
  ``Δ`` samples plus one eigenvector per record;
- ``oja``    Oja's rule (normalised), the reduced chain ``(ρ, s)``, ``O(1)`` per sample.

:func:`baseline_theory` predicts ``E|ρ|``; :func:`efficiency` tabulates the samples each needs
to reach a target ``|ρ|`` beside attention's.
"""

from __future__ import annotations

from .base import METHODS, RUNNING_AVERAGE, BaselineConfig, BaselineState, get_estimator
from .base import method_names, register
from .efficiency import efficiency
from .runner import baseline
from .theory import baseline_theory

__all__ = [
    "baseline", "baseline_theory", "efficiency", "METHODS", "RUNNING_AVERAGE", "BaselineConfig", "BaselineState",
    "get_estimator", "method_names", "register",
]
