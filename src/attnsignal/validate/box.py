"""The box of configurations a user may pick, and the seeded draw of the accuracy map.

A configuration of the map (:class:`MapConfig`) is a model, a minibatch size, an update rule and
a Robbins–Monro schedule ``η_k = η0 (1 + k/k0)^(−p)``. The model and the run are drawn from the
box :data:`BOX` (the range of the documentation's examples and of the paper, and beyond):

* ``d`` log-uniform on [20, 5000]; ``R`` log-uniform on [5, 500] and ``N/R`` log-uniform on
  [1, 40] (sizes are scale parameters: each decade gets the same share), rounded to integers;
* ``θ`` uniform on [0.1, 1.5], ``β`` uniform on [0.3, 2.5];
* the signal sign (``"fixed"`` or ``"random"``), the batch (1 or 8) and the update
  (``"projected"`` or ``"riemannian"``) each with probability 1/2;
* the schedule's power ``p`` uniform on [0.6, 1].

The schedule's scale is drawn *relative to the theory*, because the useful steps span twelve
decades across the box: ``η0 = f_η · η_max`` with ``f_η`` log-uniform on [0.3, 1], where
``η_max`` is the largest constant step whose plateau stays above ``|ρ| = 0.5``
(:func:`~attnsignal.theory.finite_step.largest_plateau_step`) — so every run can pass mean
``|ρ| = 0.5`` — and ``k0 = f_k · t_{0.5}/η0`` with ``f_k`` log-uniform on [0.5, 5], where
``t_{0.5}`` is the limiting ODE's time from the uniform start's mean ``|ρ0|`` to ``0.5``
(``t_{0.5}/η0`` is the escape's length in steps at the constant step ``η0``), so the step
decays during the escape by a factor the draw sets rather than before it or long after.
:mod:`.plan` turns ``f_η, f_k`` into ``η0, k0`` (it needs the theory, so it runs in a pool
worker); this module draws the numbers only.

Configuration ``i`` of seed ``s`` draws from ``SeedSequence(s, spawn_key=(i,))``: the first
``n`` configurations of a seed are the same whatever ``n``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import SIGNAL_SIGNS, UPDATES, ModelConfig
from ..validation import Config, Integer, OneOf, Real

__all__ = ["MapBox", "BOX", "MapConfig", "draw_configs"]


@dataclass(frozen=True)
class MapBox:
    """The ranges configurations are drawn from (module docstring); ``(lo, hi)`` pairs."""

    d: tuple[int, int] = (20, 5000)
    n_informative: tuple[int, int] = (5, 500)
    nuisance_ratio: tuple[float, float] = (1.0, 40.0)
    theta: tuple[float, float] = (0.1, 1.5)
    beta: tuple[float, float] = (0.3, 2.5)
    power: tuple[float, float] = (0.6, 1.0)
    eta_fraction: tuple[float, float] = (0.3, 1.0)
    k0_factor: tuple[float, float] = (0.5, 5.0)
    batches: tuple[int, ...] = (1, 8)

    def describe(self) -> str:
        """One line: the ranges, as the map's report states them."""
        return (f"d ∈ [{self.d[0]}, {self.d[1]}] log-uniform, R ∈ [{self.n_informative[0]}, "
                f"{self.n_informative[1]}] log-uniform, N/R ∈ [{self.nuisance_ratio[0]:g}, "
                f"{self.nuisance_ratio[1]:g}] log-uniform, θ ∈ [{self.theta[0]:g}, "
                f"{self.theta[1]:g}], β ∈ [{self.beta[0]:g}, {self.beta[1]:g}], both signal "
                f"signs, batch {' or '.join(map(str, self.batches))}, both updates, "
                f"p ∈ [{self.power[0]:g}, {self.power[1]:g}], η0/η_max ∈ "
                f"[{self.eta_fraction[0]:g}, {self.eta_fraction[1]:g}] and k0·η0/t_0.5 ∈ "
                f"[{self.k0_factor[0]:g}, {self.k0_factor[1]:g}] log-uniform")


#: The box of the accuracy map (module docstring).
BOX = MapBox()


@dataclass(frozen=True)
class MapConfig(Config):
    """One configuration of the map (module docstring): the model, the run (``batch``,
    ``update``) and the schedule's shape (``power``) and scale relative to the theory
    (``eta_fraction = η0/η_max``, ``k0_factor = k0 η0/t_{0.5}``). ``index`` is its position in
    the draw (part of its seeds)."""

    index: int
    d: int
    n_informative: int
    n_nuisance: int
    theta: float
    beta: float
    signal_sign: str
    batch: int
    update: str
    power: float
    eta_fraction: float
    k0_factor: float

    _section = "config"
    _table = {
        "index": Integer(ge=0, doc="position in the draw"),
        "d": ModelConfig._table["d"],
        "n_informative": ModelConfig._table["n_informative"],
        "n_nuisance": ModelConfig._table["n_nuisance"],
        "theta": ModelConfig._table["theta"],
        "beta": ModelConfig._table["beta"],
        "signal_sign": OneOf(*SIGNAL_SIGNS, doc="sign of the signal"),
        "batch": Integer(ge=1, doc="minibatch size B"),
        "update": OneOf(*UPDATES, doc="update rule"),
        "power": Real(gt=0.5, le=1.0, doc="the schedule's power p (Robbins–Monro)"),
        "eta_fraction": Real(gt=0.0, le=1.0, doc="η0 as a fraction of the plateau's cap"),
        "k0_factor": Real(gt=0.0, doc="k0 in units of the constant-step escape length"),
    }

    @property
    def model(self) -> ModelConfig:
        return ModelConfig(d=self.d, n_informative=self.n_informative,
                           n_nuisance=self.n_nuisance, theta=self.theta, beta=self.beta,
                           signal_sign=self.signal_sign)

    @property
    def n_tokens(self) -> int:
        return self.n_informative + self.n_nuisance

    def label(self) -> str:
        """``c007 (d=420, L=1560, θ=0.70, β=1.10, random, B=8, riemannian)``."""
        return (f"c{self.index:03d} (d={self.d}, L={self.n_tokens}, θ={self.theta:.2f}, "
                f"β={self.beta:.2f}, {self.signal_sign}, B={self.batch}, {self.update})")


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def draw_config(index: int, seed: int, box: MapBox = BOX) -> MapConfig:
    """Configuration ``index`` of the draw with ``seed`` (module docstring)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))
    d = int(round(_log_uniform(rng, *box.d)))
    r = int(round(_log_uniform(rng, *box.n_informative)))
    n = max(1, int(round(r * _log_uniform(rng, *box.nuisance_ratio))))
    return MapConfig(
        index=index, d=d, n_informative=r, n_nuisance=n,
        theta=float(rng.uniform(*box.theta)), beta=float(rng.uniform(*box.beta)),
        signal_sign=str(rng.choice(SIGNAL_SIGNS)), batch=int(rng.choice(box.batches)),
        update=str(rng.choice(UPDATES)), power=float(rng.uniform(*box.power)),
        eta_fraction=_log_uniform(rng, *box.eta_fraction),
        k0_factor=_log_uniform(rng, *box.k0_factor),
    )


def draw_configs(n: int, seed: int, box: MapBox = BOX) -> list[MapConfig]:
    """The first ``n`` configurations of the draw with ``seed`` (module docstring). Raises
    ``ConfigError`` for ``n < 1`` or a negative seed."""
    n = Integer(ge=1).check("configs", n)
    seed = Integer(ge=0).check("seed", seed)
    return [draw_config(i, seed, box) for i in range(n)]


def config_from_dict(data: dict[str, Any]) -> MapConfig:
    """A :class:`MapConfig` from its ``to_dict`` (a stored plan or row)."""
    return MapConfig.from_dict(data, prefix="config.")
