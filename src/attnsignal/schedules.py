"""Step-size schedules: one class per family behind the :class:`Schedule` interface.

Update ``k = 0, 1, ...`` (taking ``q_k`` to ``q_{k+1}``) uses the step ``η_k``. The ODE time
after ``k`` updates is ``t_k = Σ_{j<k} η_j`` (``t_0 = 0``), so that ``ρ_k ≈ ρ(t_k)`` for the
limiting ODE ``dρ/dt = (1 − ρ²) Φ'(ρ)``. A schedule is Robbins–Monro when ``Σ η_k = ∞`` and
``Σ η_k² < ∞``.

Families (``kind`` in TOML and manifests)
--------------------------------------
``StepSize(eta0, k0=1000, power=0.75)``   ``"power"``: ``η_k = η0 (1 + k/k0)^(−power)``;
                                          Robbins–Monro iff ``1/2 < power ≤ 1``
``ConstantStep(eta0)``                    ``"constant"``: ``η_k = η0``; never Robbins–Monro
``PiecewiseStep(boundaries, etas)``       ``"piecewise"``: ``η_k = etas[i]`` for
                                          ``boundaries[i−1] ≤ k < boundaries[i]``
                                          (``boundaries[−1] = 0``, ``boundaries[n] = ∞``);
                                          never Robbins–Monro (constant in the end)
``TabulatedStep(etas, tail=None)``        ``"tabulated"``: ``η_k = etas[k]`` for
                                          ``k < n = len(etas)``, then ``tail.η(k − n)``, or
                                          ``etas[−1]`` without a tail; Robbins–Monro iff the
                                          tail is (an advised schedule is one)

A new family is one class here: subclass :class:`Schedule`, give it a ``kind``, a constraint
``_table``, :meth:`~Schedule.eta`, :attr:`~Schedule.robbins_monro` and
:meth:`~Schedule.describe`. The generic :meth:`~Schedule.partial_sum`,
:meth:`~Schedule.tail_sq_sum` and :meth:`~Schedule.first_step_at_most` work for any schedule
whose ``η`` extends smoothly to real ``k`` and does not increase in the end; families override
them with closed forms where they have one. ``simulate``, the theory, sweeps and the command
line take any family.

Dictionaries and TOML tables carry a ``kind`` key; :func:`schedule_from_dict` reads them (a
table without ``kind`` is the power family, as written before schedules had kinds).
"""

from __future__ import annotations

import abc
import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import numpy as np

from .validation import (
    Config, ConfigError, Instance, Integer, OneOf, Optional, Real, Sequence,
)

__all__ = [
    "Schedule",
    "StepSize",
    "ConstantStep",
    "PiecewiseStep",
    "TabulatedStep",
    "SCHEDULES",
    "KINDS",
    "schedule_from_dict",
    "NotRobbinsMonroWarning",
]

#: Sums up to this many terms are exact (float64 cumulative sums); beyond, closed forms or
#: the Euler–Maclaurin formula.
_EXACT = 200_000
#: Largest step index the inverse of the ODE time searches by default.
K_MAX = 10 ** 12


class NotRobbinsMonroWarning(UserWarning):
    """The step-size schedule does not satisfy ``Σ η = ∞``, ``Σ η² < ∞``."""


def _as_k(k: Any) -> np.ndarray:
    if isinstance(k, slice):
        k = np.arange(k.start or 0, k.stop)
    return np.asarray(k, dtype=np.float64)


def tabulated_eta(etas: np.ndarray, tail: "Schedule | None", k: Any) -> np.ndarray:
    """:meth:`TabulatedStep.eta` of the table ``etas`` (``(n,)``, float64) and ``tail``, without
    building (and validating) a :class:`TabulatedStep`: ``etas[k]`` for ``k < n``, then
    ``tail`` shifted to start at ``n`` (or the last entry held, with no tail). For callers that
    compare many candidate tables and keep one (the schedule advisor's search)."""
    kk = _as_k(k)
    n = etas.size
    out = etas[np.minimum(kk, n - 1).astype(np.int64)]
    after = kk >= n
    if tail is not None and np.any(after):
        out = np.where(after, tail.eta(np.where(after, kk - n, 0)), out)
    return np.asarray(out, dtype=np.float64)


def _partial_sums(schedule: "Schedule") -> np.ndarray:
    """``t_0, ..., t_{_EXACT}`` of ``schedule``, read-only (one sequential cumulative sum)."""
    with np.errstate(over="ignore"):
        cum = np.concatenate([[0.0], np.cumsum(schedule.eta(np.arange(_EXACT)))])
    cum.setflags(write=False)
    return cum


@functools.lru_cache(maxsize=8)
def _shared_partial_sums(schedule: "Schedule") -> np.ndarray:
    """:func:`_partial_sums` per schedule value (frozen, compared by value): 8 schedules of
    1.6 MB at most."""
    return _partial_sums(schedule)


class Schedule(Config, abc.ABC):
    """A step-size schedule ``k ↦ η_k > 0`` for ``k = 0, 1, 2, ...``.

    Subclasses are frozen dataclasses with a class attribute ``kind`` and a constraint
    ``_table``; they are validated on construction (bad values raise ``ConfigError``).
    """

    kind: ClassVar[str] = ""
    _section = "step"

    # ------------------------------------------------------------------ the family's own
    @abc.abstractmethod
    def eta(self, k: Any) -> np.ndarray:
        """``η_k`` (float64) for an integer array (or range, or slice) ``k >= 0``."""

    @property
    @abc.abstractmethod
    def robbins_monro(self) -> bool:
        """True iff ``Σ η_k = ∞`` and ``Σ η_k² < ∞``."""

    @abc.abstractmethod
    def describe(self) -> str:
        """One line: the formula and whether it is Robbins–Monro."""

    # ------------------------------------------------------------------ generic
    def ode_time(self, ks: Any) -> np.ndarray:
        """``t_k = Σ_{j<k} η_j`` at each step index in ``ks`` (non-negative ints): a float64
        cumulative sum up to ``max(ks)``."""
        ks = np.asarray(ks, dtype=np.int64)
        if ks.size == 0:
            return np.zeros(0)
        kmax = int(ks.max())
        if kmax <= _EXACT:
            # the first _EXACT + 1 partial sums are computed once per schedule object: a
            # sequential cumulative sum, so its prefix is bit-identical to a shorter one's
            return self._exact_partial_sums()[ks]
        with np.errstate(over="ignore"):
            cum = np.concatenate([[0.0], np.cumsum(self.eta(np.arange(kmax)))])
        return cum[ks]

    def _exact_partial_sums(self) -> np.ndarray:
        """``t_0, ..., t_{_EXACT}`` (read-only), cached on the instance (not a field: equality,
        hashing, ``to_dict`` and pickling ignore it) and per value in this process
        (:func:`_shared_partial_sums`): a pool worker unpickles a fresh copy of the schedule
        with every task, and recomputing the 200 000 sums took a few milliseconds a task."""
        cum = self.__dict__.get("_partial_sums_cache")
        if cum is None:
            try:
                cum = _shared_partial_sums(self)
            except TypeError:  # a schedule whose fields do not hash: this instance only
                cum = _partial_sums(self)
            object.__setattr__(self, "_partial_sums_cache", cum)
        return cum

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_partial_sums_cache", None)
        return state

    def partial_sum(self, k: int) -> float:
        """``t_k = Σ_{j<k} η_j`` for one (possibly huge) ``k``: exact up to ``k = 200 000``,
        beyond that the exact head plus the Euler–Maclaurin form of the rest, with the
        integral by adaptive quadrature (needs ``η`` smooth in real ``k``)."""
        k = int(k)
        if k <= _EXACT:
            return float(self.ode_time([k])[0])
        from scipy.integrate import quad

        a, b = float(_EXACT), float(k)
        f = lambda x: float(self.eta(np.array(x)))  # noqa: E731
        integral = _quad_log(quad, f, a, b)
        h = 1e-3 * a
        fp = lambda x: (f(x + h) - f(x - h)) / (2 * h)  # noqa: E731
        head = float(self.ode_time([_EXACT])[0])
        return head + integral + (f(a) - f(b)) / 2 + (fp(a) - fp(b)) / 12

    def tail_sq_sum(self, k: int) -> float:
        """``Σ_{j>=k} η_j²`` (inf when it diverges): the integral of ``η²`` from ``k`` on doubling
        panels plus the Euler–Maclaurin end term (needs ``η`` smooth in real ``k``). At most 120
        panels: a tail still growing after them is reported as inf."""
        from scipy.integrate import quad

        f = lambda x: float(self.eta(np.array(x))) ** 2  # noqa: E731
        total, lo, width = 0.0, float(k), max(1.0, float(k))
        for _ in range(120):
            part = quad(f, lo, lo + width, limit=100)[0]
            total += part
            if part <= 1e-16 * total:
                return float(total + 0.5 * f(float(k)))
            lo, width = lo + width, 2.0 * width
        return math.inf

    def first_step_at_most(self, eta_max: float, k_max: int = K_MAX) -> int:
        """Smallest ``k`` with ``η_j <= eta_max`` for all ``j >= k``; ``-1`` if there is none
        up to ``k_max``. Generic: doubling and bisection on ``η_k``, valid for schedules that
        do not increase (families that may increase override it)."""
        if float(self.eta(0)) <= eta_max:
            return 0
        lo, hi = 0, 1
        while float(self.eta(hi)) > eta_max:
            lo, hi = hi, hi * 2
            if hi > k_max:
                return -1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if float(self.eta(mid)) <= eta_max:
                hi = mid
            else:
                lo = mid
        return hi

    def step_at_time(self, t: Any, k_max: int = K_MAX) -> np.ndarray:
        """Smallest step index ``k`` with ``t_k >= t`` (inverse of :meth:`ode_time`), comparing
        with a relative tolerance of 1e-12 so that ``step_at_time(ode_time(k)) == k``.

        Exact partial sums up to ``k = 200 000``, beyond that :meth:`partial_sum` and
        bisection. Returns ``k_max + 1`` where ``t`` is not reached by ``k_max`` (e.g. a
        summable schedule)."""
        t_arr = np.atleast_1d(np.asarray(t, dtype=np.float64))
        target = t_arr * (1 - 1e-12)
        cum = self.ode_time(np.arange(_EXACT + 1))
        out = np.searchsorted(cum, target, side="left").astype(np.int64)
        for i in np.flatnonzero(out > _EXACT):
            ti = target[i]
            lo, hi = _EXACT, 2 * _EXACT
            while self.partial_sum(hi) < ti:
                lo, hi = hi, hi * 2
                if hi > k_max:
                    break
            if hi > k_max and self.partial_sum(k_max) < ti:
                out[i] = k_max + 1
                continue
            hi = min(hi, k_max)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if self.partial_sum(mid) >= ti:
                    hi = mid
                else:
                    lo = mid
            out[i] = hi
        return out if np.ndim(t) else out[0]

    def not_robbins_monro_reason(self) -> str:
        return f"{self.describe()}: Σ η = ∞ and Σ η² < ∞ do not both hold"

    def warn_if_not_robbins_monro(self) -> None:
        """Issue a :class:`NotRobbinsMonroWarning` for a schedule that is not Robbins–Monro."""
        if not self.robbins_monro:
            warnings.warn(f"the schedule is not Robbins–Monro ({self.not_robbins_monro_reason()})",
                          NotRobbinsMonroWarning, stacklevel=3)

    def to_dict(self) -> dict[str, Any]:
        """The schedule as a table: ``{"kind": ..., <fields>}`` (read by
        :func:`schedule_from_dict`)."""
        return {"kind": self.kind, **super().to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], prefix: str | None = None):
        """This family from a table; a ``kind`` key, if present, must name it."""
        if isinstance(data, Mapping) and "kind" in data:
            data = dict(data)
            kind = data.pop("kind")
            if kind != cls.kind:
                p = cls._section + "." if prefix is None else prefix
                raise ConfigError(p + "kind", f"must be {cls.kind!r} for {cls.__name__}", kind)
        return super().from_dict(data, prefix)


def _quad_log(quad, f, a: float, b: float) -> float:
    """``∫_a^b f`` by quadrature on the panels ``[a·2^i, a·2^(i+1)]`` (a smooth, slowly
    varying integrand over many decades)."""
    total, lo = 0.0, a
    while lo < b:
        hi = min(2 * lo, b)
        total += quad(f, lo, hi, limit=100)[0]
        lo = hi
    return total


_POS = Real(gt=0.0)


# --------------------------------------------------------------------------- power law


@dataclass(frozen=True)
class StepSize(Schedule):
    """Step sizes ``η_k = η0 (1 + k/k0)^(−power)``, ``k = 0, 1, 2, ...`` (kind ``"power"``).

    Robbins–Monro (``Σ η_k = ∞``, ``Σ η_k² < ∞``) holds iff ``1/2 < power ≤ 1``.
    ``power = 0`` is a constant step: allowed, but not Robbins–Monro. A schedule that is not
    Robbins–Monro issues a :class:`NotRobbinsMonroWarning` when used by ``simulate``.

    Examples
    --------
    >>> step = StepSize(eta0=0.03, k0=1000, power=1.0)
    >>> step.describe()
    'η_k = 0.03·(1 + k/1000)^(−1) — Robbins–Monro'
    >>> step.eta([0, 1000, 3000]).tolist()   # η0, η0/2, η0/4
    [0.03, 0.015, 0.0075]
    >>> float(step.ode_time([2])[0]) == 0.03 + 0.03 / 1.001   # t_2 = η_0 + η_1
    True
    >>> StepSize(eta0=0.1, power=0.5).robbins_monro   # Σ η² diverges
    False
    """

    eta0: float
    k0: float = 1000.0
    power: float = 0.75

    kind: ClassVar[str] = "power"
    _table = {
        "eta0": Real(gt=0.0, doc="step size η0 in η_k = η0 (1 + k/k0)^(−power)"),
        "k0": Real(gt=0.0, doc="k0 of the schedule"),
        "power": Real(ge=0.0, doc="decay power (Robbins–Monro iff in (1/2, 1])"),
    }

    def eta(self, k: Any) -> np.ndarray:
        return self.eta0 * (1.0 + _as_k(k) / self.k0) ** (-self.power)

    def shifted(self, n: int) -> "StepSize":
        """The same sequence started ``n`` steps in: ``η'_j = η_{n+j}`` — again a power law,
        ``η_n (1 + j/(k0 + n))^(−power)`` (e.g. the tail of a :class:`TabulatedStep` that
        tabulates the first ``n`` steps)."""
        return StepSize(eta0=float(self.eta(n)), k0=self.k0 + n, power=self.power)

    @property
    def robbins_monro(self) -> bool:
        return 0.5 < self.power <= 1.0

    def describe(self) -> str:
        kind = "Robbins–Monro" if self.robbins_monro else (
            "constant step (not Robbins–Monro)" if self.power == 0 else "not Robbins–Monro"
        )
        return f"η_k = {self.eta0:g}·(1 + k/{self.k0:g})^(−{self.power:g}) — {kind}"

    def not_robbins_monro_reason(self) -> str:
        return (f"step.power = {self.power:g} is outside (1/2, 1]: Σ η = ∞ and Σ η² < ∞ do not "
                "both hold")

    def warn_if_not_robbins_monro(self) -> None:
        if not self.robbins_monro:
            warnings.warn(
                f"step.power = {self.power:g} is outside (1/2, 1]: the schedule is not "
                "Robbins–Monro (Σ η = ∞ and Σ η² < ∞ do not both hold)",
                NotRobbinsMonroWarning, stacklevel=3,
            )

    def partial_sum(self, k: int) -> float:
        """Exact up to ``a = 200 000``; beyond, ``Σ_{j<a} η_j`` plus the closed-form integral of
        ``η`` over ``[a, k]`` and the Euler–Maclaurin terms ``(f(a) − f(k))/2 + (f'(a) −
        f'(k))/12``. The remainder is of order ``|f'''(a)|/720``, a relative error below 1e-12
        for any ``k0 >= 1`` (a tail from ``a = 1000`` would leave relative errors of 1e-8 at
        ``k0 = 50``)."""
        if k <= _EXACT:
            return float(self.ode_time([k])[0])
        head = float(self.ode_time([_EXACT])[0])
        a, b = float(_EXACT), float(k)
        f = lambda x: self.eta0 * (1 + x / self.k0) ** (-self.power)  # noqa: E731
        if self.power == 1.0:
            integral = self.eta0 * self.k0 * np.log((1 + b / self.k0) / (1 + a / self.k0))
        else:
            c = self.eta0 * self.k0 / (1 - self.power)
            integral = c * ((1 + b / self.k0) ** (1 - self.power)
                            - (1 + a / self.k0) ** (1 - self.power))
        fp = lambda x: -self.power / self.k0 * f(x) / (1 + x / self.k0)  # noqa: E731
        return float(head + integral + (f(a) - f(b)) / 2 + (fp(a) - fp(b)) / 12)

    def tail_sq_sum(self, k: int) -> float:
        """``Σ_{j>=k} η_j²``: the closed-form integral plus the Euler–Maclaurin end term."""
        p2 = 2.0 * self.power
        if p2 <= 1.0:
            return math.inf
        f = self.eta0 ** 2 * (1.0 + k / self.k0) ** (-p2)
        integral = self.eta0 ** 2 * self.k0 / (p2 - 1.0) * (1.0 + k / self.k0) ** (1.0 - p2)
        return float(integral + 0.5 * f)

    def first_step_at_most(self, eta_max: float, k_max: int = K_MAX) -> int:
        """``⌈k0 ((η0/η_max)^(1/power) − 1)⌉`` (0 when ``η0 <= η_max``; −1 for a constant
        step above ``η_max``, ``η_max <= 0`` or an index beyond float range; not capped at
        ``k_max``)."""
        if self.eta0 <= eta_max:
            return 0
        if self.power == 0 or eta_max <= 0:
            return -1
        k = self.k0 * ((self.eta0 / eta_max) ** (1.0 / self.power) - 1.0)
        return int(math.ceil(k)) if math.isfinite(k) else -1


# --------------------------------------------------------------------------- constant


@dataclass(frozen=True)
class ConstantStep(Schedule):
    """``η_k = η0`` for every ``k`` (kind ``"constant"``; the field is ``eta0`` as in the power
    family, because ``eta`` is the method ``η(k)``). Not Robbins–Monro: ``Σ η² = ∞``;
    ``ρ_k`` settles into a stationary law around the attractor (the plateau of
    ``attnsignal.theory.constant_step_plateau``)."""

    eta0: float

    kind: ClassVar[str] = "constant"
    _table = {"eta0": Real(gt=0.0, doc="the constant step size η0")}

    def eta(self, k: Any) -> np.ndarray:
        return np.full(np.shape(_as_k(k)), self.eta0, dtype=np.float64)

    @property
    def robbins_monro(self) -> bool:
        return False

    def describe(self) -> str:
        return f"η_k = {self.eta0:g} (constant step, not Robbins–Monro)"

    def partial_sum(self, k: int) -> float:
        return float(k) * self.eta0

    def tail_sq_sum(self, k: int) -> float:
        return math.inf

    def first_step_at_most(self, eta_max: float, k_max: int = K_MAX) -> int:
        return 0 if self.eta0 <= eta_max else -1


# --------------------------------------------------------------------------- piecewise


@dataclass(frozen=True)
class PiecewiseStep(Schedule):
    """Piecewise-constant steps (kind ``"piecewise"``): ``η_k = etas[i]`` for
    ``boundaries[i−1] <= k < boundaries[i]``, with ``boundaries`` strictly increasing integers
    ``>= 1`` and ``len(etas) = len(boundaries) + 1`` (the last value holds for ever). Not
    Robbins–Monro."""

    boundaries: tuple[int, ...]
    etas: tuple[float, ...]

    kind: ClassVar[str] = "piecewise"
    _table = {
        "boundaries": Sequence(Integer(ge=1), increasing=True,
                               doc="step indices where the step size changes"),
        "etas": Sequence(_POS, min_len=1, doc="step sizes, one more than boundaries"),
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.etas) != len(self.boundaries) + 1:
            raise ConfigError("etas", f"must have len(boundaries) + 1 = "
                              f"{len(self.boundaries) + 1} values", list(self.etas))

    def eta(self, k: Any) -> np.ndarray:
        kk = _as_k(k)
        idx = np.searchsorted(np.asarray(self.boundaries, dtype=np.float64), kk, side="right")
        return np.asarray(self.etas, dtype=np.float64)[idx]

    @property
    def robbins_monro(self) -> bool:
        return False

    def describe(self) -> str:
        parts = [f"{e:g}" + (f" until k = {b}" if b is not None else " after")
                 for e, b in zip(self.etas, (*self.boundaries, None))]
        return "η_k piecewise constant: " + ", ".join(parts) + " (not Robbins–Monro)"

    def partial_sum(self, k: int) -> float:
        edges = [0, *self.boundaries]
        total = 0.0
        for i, e in enumerate(self.etas):
            lo = edges[i]
            hi = edges[i + 1] if i + 1 < len(edges) else k
            if k <= lo:
                break
            total += (min(hi, k) - lo) * e
        return float(total)

    def tail_sq_sum(self, k: int) -> float:
        return math.inf

    def first_step_at_most(self, eta_max: float, k_max: int = K_MAX) -> int:
        edges = [0, *self.boundaries]
        first = -1
        for i in range(len(self.etas) - 1, -1, -1):
            if self.etas[i] > eta_max:
                break
            first = edges[i]
        return first if first <= k_max else -1


# --------------------------------------------------------------------------- tabulated


@dataclass(frozen=True)
class TabulatedStep(Schedule):
    """Tabulated steps (kind ``"tabulated"``): ``η_k = etas[k]`` for ``k < n = len(etas)``,
    then ``tail.η(k − n)`` (``tail`` is any schedule, shifted to start at ``n``), or
    ``etas[−1]`` for ever without a tail. Robbins–Monro iff the tail is. An advised (optimal)
    schedule is one of these."""

    etas: tuple[float, ...]
    tail: Schedule | None = None

    kind: ClassVar[str] = "tabulated"
    _table = {
        "etas": Sequence(_POS, min_len=1, doc="the step sizes η_0, η_1, ..."),
        "tail": Optional(Instance(Schedule, "step-size schedule"),
                         doc="the schedule after the table (default: the last value)"),
    }

    def __post_init__(self) -> None:
        if isinstance(self.tail, Mapping):
            object.__setattr__(self, "tail", schedule_from_dict(self.tail, prefix="tail."))
        super().__post_init__()  # a float array is checked in one vectorised pass
        object.__setattr__(self, "_array", np.asarray(self.etas, dtype=np.float64))

    _array: np.ndarray = field(default=None, init=False, repr=False, compare=False)  # type: ignore[assignment]

    def __hash__(self) -> int:
        return hash((self.etas, self.tail))

    def eta(self, k: Any) -> np.ndarray:
        return tabulated_eta(self._array, self.tail, k)

    @property
    def robbins_monro(self) -> bool:
        return self.tail is not None and self.tail.robbins_monro

    def describe(self) -> str:
        a = self._array
        head = (f"η_k tabulated for k < {a.size} (from {a[0]:g} to {a[-1]:g})")
        if self.tail is None:
            return head + f", then {a[-1]:g} (not Robbins–Monro)"
        return head + f", then shifted {self.tail.describe()}"

    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "etas": list(self.etas)}
        if self.tail is not None:
            d["tail"] = self.tail.to_dict()
        return d

    def partial_sum(self, k: int) -> float:
        n = self._array.size
        if k <= n:
            return float(np.sum(self._array[:k]))
        head = float(np.sum(self._array))
        if self.tail is None:
            return head + (k - n) * float(self._array[-1])
        return head + self.tail.partial_sum(k - n)

    def tail_sq_sum(self, k: int) -> float:
        n = self._array.size
        if self.tail is None:
            return math.inf
        if k >= n:
            return self.tail.tail_sq_sum(k - n)
        return float(np.sum(self._array[k:] ** 2)) + self.tail.tail_sq_sum(0)

    def first_step_at_most(self, eta_max: float, k_max: int = K_MAX) -> int:
        n = self._array.size
        if self.tail is None:
            after = 0 if self._array[-1] <= eta_max else -1
        else:
            after = self.tail.first_step_at_most(eta_max, k_max)
        if after < 0:
            return -1
        if after > 0:
            return n + after
        above = np.flatnonzero(self._array > eta_max)
        return 0 if above.size == 0 else int(above[-1]) + 1


# --------------------------------------------------------------------------- registry

#: Every family by its ``kind``.
SCHEDULES: dict[str, type[Schedule]] = {
    c.kind: c for c in (StepSize, ConstantStep, PiecewiseStep, TabulatedStep)
}


#: A registered family's ``kind`` (read from :data:`SCHEDULES` at each check).
KINDS = OneOf(lambda: tuple(SCHEDULES))


def schedule_from_dict(data: Mapping[str, Any], prefix: str = "step.") -> Schedule:
    """A schedule from its table: ``kind`` picks the family (none: ``"power"``), the other keys
    are its fields. Raises ``ConfigError`` for an unknown kind or key or a bad value."""
    if isinstance(data, Schedule):
        return data
    Instance(Mapping, "table with a 'kind' and the fields of that family").check(
        prefix.rstrip(".") or "step", data)
    cls = SCHEDULES[KINDS.check(prefix + "kind", data.get("kind", StepSize.kind))]
    return cls.from_dict({k: v for k, v in data.items() if k != "kind"}, prefix=prefix)


# --------------------------------------------------------------------------- old names


def __getattr__(name: str) -> Any:
    """``step_sizes``, ``ode_time`` and ``step_at_time``: deprecated (:mod:`attnsignal.deprecations`)."""
    from .deprecations import module_attribute

    return module_attribute(__name__, name)
