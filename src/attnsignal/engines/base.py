"""The engine interface: explicit state, capabilities, pre-flight checks, per-run seeding.

An engine is an :class:`Engine` object (one class per module, registered in
:mod:`attnsignal.engines.registry`) with pure functions of (config, state, random stream):

``check(model, run) -> None``
    raises :class:`~attnsignal.config.ConfigError` (field, allowed range, value) before any work
    for a model variant, update rule or size the engine cannot handle — including sizes whose
    memory (estimated by ``memory_bytes``) cannot fit.
``init(model, run, seeds) -> EngineState``
    the initial state of ``len(seeds)`` runs; ``seeds[r]`` is run ``r``'s
    ``numpy.random.SeedSequence`` and is the only source of randomness for that run.
``advance(model, run, state, etas) -> (EngineState, StepStats)``
    applies ``len(etas)`` updates with step sizes ``etas`` (update ``k`` uses ``η_k``) and
    returns the new state and the attention statistics of the sample(s) drawn at the last
    update. Pure: the input state is never modified and calling it twice on one state gives
    the same result.

Random streams: ``state.streams`` is the ``(runs, 2)`` uint64 array of per-run 128-bit keys
derived from the run's seed alone (:func:`._rng.run_keys`); update ``k`` (0-based) of run ``r``
draws from a counter-based stream that is a function of ``(key_r, k)`` only. So a run is
bit-identical whatever the number of runs beside it and however the updates are split into
``advance`` calls.

Divergence: a run whose state becomes non-finite is flagged (``diverged``, with the 1-based
update count in ``diverged_step``), its alignment set to NaN, and it is no longer updated; the
other runs go on.
"""

from __future__ import annotations

import abc
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from ..config import ConfigError, ModelConfig, RunConfig, check_supported, check_supports
from ..limits import check_work, format_bytes, memory_limit

__all__ = [
    "Engine",
    "Capabilities",
    "EngineState",
    "StepStats",
    "MemoryTerm",
    "MAX_STEPS",
    "run_seeds",
    "initial_query",
    "initial_rho",
    "initial_query_state",
    "mark_diverged",
    "compute_threads",
]

#: Most updates per run: step indices are int64 and the update index is a Philox counter word.
MAX_STEPS = 2**62


@dataclass(frozen=True)
class EngineState:
    """Explicit simulation state of a block of runs.

    rho : (runs,) signed alignment ``<q, ξ>``
    q : (runs, d) unit queries, or None for engines that never form ``q`` (the chain)
    k : number of updates applied so far
    diverged : (runs,) bool; diverged_step : (runs,) int, −1 where not diverged
    streams : per-run random-stream keys, (runs, 2) uint64
    """

    rho: np.ndarray
    q: np.ndarray | None
    k: int
    diverged: np.ndarray
    diverged_step: np.ndarray
    streams: Any = field(default=None, repr=False)

    def replace(self, **changes: Any) -> "EngineState":
        return replace(self, **changes)

    @classmethod
    def start(cls, rho: np.ndarray, q: np.ndarray | None, streams: Any) -> "EngineState":
        """The state before the first update: no update applied, no run diverged."""
        n = rho.shape[0]
        return cls(rho=rho, q=q, k=0, diverged=np.zeros(n, dtype=bool),
                   diverged_step=np.full(n, -1, dtype=np.int64), streams=streams)


@dataclass(frozen=True)
class StepStats:
    """Attention statistics of the samples drawn at one update, averaged over the minibatch.

    informative_mass : (runs,) ``Σ_{i∈I} α_i``;  max_nuisance_weight : (runs,) ``max_{i∉I} α_i``.
    NaN for diverged runs.
    """

    informative_mass: np.ndarray
    max_nuisance_weight: np.ndarray


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do; everything that must know it (config validation, the CLI,
    ``Result.q``, ``simulate(record_q=True)``, benchmarks, tests) asks the registry.

    has_query : the state carries the unit queries ``q`` (runs, d) (else ``state.q is None``)
    exact_in_law : ``ρ`` (and ``q`` when ``has_query``) has exactly the law of the literal
        algorithm (the literal engine is the algorithm itself); the law tests run every
        engine that says so against it
    supports : ``{field: values}`` over the variant fields of the model and the run
        (:func:`attnsignal.config.variant_fields`: ``signal_sign``, ``update``, ...) — the
        values the engine implements; a field not listed accepts only its default, so a
        variant added to the configs later is refused until the engine lists it
        (:meth:`Engine.check`)
    cost : time per update in the minibatch ``B``, tokens ``L`` and dimension ``d``, e.g.
        ``"O(B L d)"`` or ``"O(B (L + d))"`` (sums and products of the three): the help texts
        print it and :meth:`cost_of` evaluates it, so that the command line picks the cheapest
        engine (:func:`~attnsignal.engines.registry.fastest_engine`)
    summary : one line for help texts
    opt_in : never picked by default, only by name (e.g. ``chain32``: equal in law but not
        bit-identical to ``chain``)
    """

    has_query: bool
    exact_in_law: bool = True
    supports: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cost: str = ""
    summary: str = ""
    opt_in: bool = False

    def cost_of(self, batch: int, tokens: int, d: int) -> float:
        """``cost`` at ``B = batch``, ``L = tokens``, ``d = d`` (the constant dropped; inf
        when no cost is declared). ``ValueError`` for a cost that is not a sum or product of
        ``B``, ``L``, ``d`` and numbers inside ``O(…)``."""
        return _evaluate_cost(self.cost, {"B": batch, "L": tokens, "d": d})

    def __post_init__(self) -> None:
        object.__setattr__(self, "supports", check_supports(self.supports))


def _evaluate_cost(cost: str, values: Mapping[str, float]) -> float:
    """The value of ``O(expr)`` where ``expr`` is a sum of products (juxtaposition) of the
    names in ``values``, numbers and parenthesised sums."""
    text = cost.strip()
    if not text:
        return float("inf")
    if not (text.startswith("O(") and text.endswith(")")):
        raise ValueError(f"cost: must read O(...); got {cost!r}")
    tokens = re.findall(r"\d+(?:\.\d+)?|[A-Za-z]+|[()+]|\S", text[2:-1])
    pos = 0

    def term() -> float:
        nonlocal pos
        value = 1.0
        while pos < len(tokens) and tokens[pos] not in ("+", ")"):
            tok = tokens[pos]
            pos += 1
            if tok == "(":
                value *= expr()
                if pos >= len(tokens) or tokens[pos] != ")":
                    raise ValueError(f"cost: unbalanced parentheses in {cost!r}")
                pos += 1
            elif tok in values:
                value *= float(values[tok])
            elif re.fullmatch(r"\d+(?:\.\d+)?", tok):
                value *= float(tok)
            else:
                raise ValueError(f"cost: unknown term {tok!r} in {cost!r} (allowed: "
                                 f"{', '.join(values)}, numbers, +, parentheses)")
        return value

    def expr() -> float:
        nonlocal pos
        total = term()
        while pos < len(tokens) and tokens[pos] == "+":
            pos += 1
            total += term()
        return total

    result = expr()
    if pos != len(tokens):
        raise ValueError(f"cost: unbalanced parentheses in {cost!r}")
    return result


@dataclass(frozen=True)
class MemoryTerm:
    """One part of an engine's memory estimate: ``nbytes`` bytes, driven by config ``field``
    (whose value is ``value``), described by ``what``."""

    field: str
    value: Any
    nbytes: int
    what: str


class Engine(abc.ABC):
    """Base class of the engines (see the module docstring for the contract).

    Subclasses set ``name`` and ``capabilities`` and implement ``init``, ``advance`` and
    ``memory_terms``; they extend ``check`` for anything else they refuse.
    """

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]

    def check(self, model: ModelConfig, run: RunConfig) -> None:
        """Raise ``ConfigError`` for what this engine cannot do, before any work starts:
        a variant it does not support (``capabilities.supports``), more than
        :data:`MAX_STEPS` updates, or a size whose memory estimate exceeds
        :func:`attnsignal.limits.memory_limit`."""
        check_supported(f"the {self.name!r} engine", self.capabilities.supports, model=model,
                        run=run)
        if run.steps > MAX_STEPS:
            raise ConfigError("steps", "must be an integer in [1, 2^62] (update counters are "
                              "64-bit)", run.steps)
        terms = self.memory_terms(model, run)
        total = sum(t.nbytes for t in terms)
        limit = memory_limit()
        if terms and total > limit:
            big = max(terms, key=lambda t: t.nbytes)
            rest = "" if total < 1.01 * big.nbytes else f" ({format_bytes(total)} in all)"
            raise ConfigError(
                big.field,
                f"must be small enough for the {self.name!r} engine to fit in memory: {big.what} "
                f"need ≈ {format_bytes(big.nbytes)}{rest}, this machine allows "
                f"{format_bytes(limit)}",
                big.value,
            )

    def memory_terms(self, model: ModelConfig, run: RunConfig) -> list[MemoryTerm]:
        """The engine's memory estimate as a list of terms (none by default)."""
        return []

    def sample_ops(self, model: ModelConfig) -> float:
        """Elementary operations one sample of one update costs (the ``O(·)`` of
        ``capabilities.cost`` per sample): ``L d`` by default."""
        return float(model.n_tokens) * float(model.d)

    def check_work(self, model: ModelConfig, run: RunConfig) -> None:
        """Raise ``ConfigError`` when one run's ``steps × B`` samples cost more than
        :data:`attnsignal.limits.MAX_WORK` operations (:meth:`sample_ops` each): a run is
        sequential, so no number of workers finishes it sooner. Names the largest of
        ``steps``, ``batch`` and the token count."""
        ops = float(run.steps) * float(run.batch) * self.sample_ops(model)
        fld, val = max([("steps", run.steps), ("batch", run.batch), token_field(model)],
                       key=lambda fv: fv[1])
        check_work(fld, ops, f"one run of the {self.name!r} engine ({run.steps} steps × B = "
                   f"{run.batch} samples × {self.sample_ops(model):.3g} operations)", val)

    @abc.abstractmethod
    def init(
        self, model: ModelConfig, run: RunConfig, seeds: Sequence[np.random.SeedSequence]
    ) -> EngineState:
        """The initial state of ``len(seeds)`` runs."""

    @abc.abstractmethod
    def advance(
        self, model: ModelConfig, run: RunConfig, state: EngineState, etas: np.ndarray
    ) -> tuple[EngineState, StepStats]:
        """``len(etas)`` updates of every non-diverged run; pure."""

    def __repr__(self) -> str:
        return f"<engine {self.name!r}>"


# --------------------------------------------------------------------------- sizes


#: the compute threads of this process when a worker set them (:func:`limit_compute_threads`)
_THREADS_LIMIT: int | None = None


def limit_compute_threads(n: int) -> None:
    """Say that this process computes on ``n`` threads (a pool worker: one), whatever
    ``NUMBA_NUM_THREADS`` says (numba's launched threads fix that variable's value)."""
    global _THREADS_LIMIT
    _THREADS_LIMIT = int(n)


def compute_threads() -> int:
    """Threads a compiled engine may run at once (a worker's limit, else numba's default:
    ``NUMBA_NUM_THREADS`` or the CPU count); each holds its own scratch."""
    if _THREADS_LIMIT is not None:
        return _THREADS_LIMIT
    env = os.environ.get("NUMBA_NUM_THREADS", "")
    return int(env) if env.isdigit() and int(env) > 0 else (os.cpu_count() or 1)


def token_field(model: ModelConfig) -> tuple[str, int]:
    """The field that makes ``L = R + N`` large (for messages): the larger of the two."""
    if model.n_nuisance >= model.n_informative:
        return "n_nuisance", model.n_nuisance
    return "n_informative", model.n_informative


# --------------------------------------------------------------------------- seeding


def run_seeds(
    seed: int, runs: int, first_run: int = 0, spawn_prefix: Sequence[int] = ()
) -> list[np.random.SeedSequence]:
    """Per-run seed sequences ``SeedSequence(seed, spawn_key=(*spawn_prefix, r))`` for
    ``r = first_run, ..., first_run + runs − 1``. With an empty prefix these are exactly
    ``SeedSequence(seed).spawn(n)[r]``."""
    prefix = tuple(int(p) for p in spawn_prefix)
    return [
        np.random.SeedSequence(seed, spawn_key=prefix + (r,))
        for r in range(first_run, first_run + runs)
    ]


def initial_rho(
    rng: np.random.Generator, d: int, initial_alignment: float | None
) -> float:
    """``ρ0``: the given value, or the alignment of a uniform point on ``S^{d−1}``:
    ``ρ0² ~ Beta(1/2, (d−1)/2)`` with a fair sign (exact in law, ``O(1)`` for any ``d``)."""
    if initial_alignment is not None:
        return float(initial_alignment)
    r2 = rng.beta(0.5, (d - 1) / 2.0)
    sign = 1.0 if rng.random() < 0.5 else -1.0
    return sign * float(np.sqrt(r2))


def initial_query(
    rng: np.random.Generator, d: int, xi: np.ndarray, initial_alignment: float | None
) -> np.ndarray:
    """``q0`` uniform on ``S^{d−1}`` (None), or ``ρ0 ξ + √(1−ρ0²) u`` with ``u`` uniform on the
    unit sphere of ``ξ^⊥``."""
    z = rng.standard_normal(d)
    if initial_alignment is None:
        return z / np.linalg.norm(z)
    rho0 = float(initial_alignment)
    u = z - (z @ xi) * xi
    nu = np.linalg.norm(u)
    u = u / nu if nu > 0 else u
    q = rho0 * xi + np.sqrt(max(0.0, 1.0 - rho0 * rho0)) * u
    return q / np.linalg.norm(q)


def initial_query_state(
    model: ModelConfig, run: RunConfig, seeds: Sequence[np.random.SeedSequence]
) -> EngineState:
    """The start of a vector engine: ``q0`` per run from the run's initial-condition generator
    (:func:`initial_query`), ``ρ0 = q0·ξ`` and the per-run stream keys (:mod:`._rng`)."""
    from ..model import latent_direction
    from . import _rng

    xi = latent_direction(model.d)
    q = np.empty((len(seeds), model.d))
    for r, s in enumerate(seeds):
        q[r] = initial_query(_rng.init_generator(s), model.d, xi, run.initial_alignment)
    return EngineState.start(q @ xi, q, _rng.run_keys(seeds))


def mark_diverged(
    rho: np.ndarray, diverged: np.ndarray, diverged_step: np.ndarray, k: int
) -> None:
    """In place: flag runs whose ``rho`` is not finite at update ``k`` (1-based count)."""
    bad = ~np.isfinite(rho) & ~diverged
    if bad.any():
        diverged[bad] = True
        diverged_step[bad] = k
        rho[bad] = np.nan
