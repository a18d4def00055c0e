"""Sweep specifications: a base configuration and a grid of axes, validated up front.

A spec is a TOML file (or the same shape as a dict)::

    [sweep]                 # RunConfig fields: steps, runs, batch, engine, update, seed,
    seed = 1                #   record_every, initial_alignment
    runs = 8
    steps = 200
    engine = "chain"
    [model]                 # ModelConfig fields
    d = 50
    n_informative = 5
    n_nuisance = 20
    theta = 1.0
    [step]                  # a schedule: kind = "power" (default; eta0, k0, power),
    eta0 = 0.05             #   "constant" (eta0), "piecewise" (boundaries, etas), "tabulated"
    [grid]                  # axes: "section.field" = [values]; the product is swept
    "model.theta" = [0.5, 1.0]
    "model.n_nuisance" = [20, 40]
    [slurm]                 # optional: how --executor slurm requests its jobs
    partition = "short"     #   (SlurmOptions fields; not part of what the sweep computes)
    walltime = "02:00:00"

Grid points are the Cartesian product of the axes in the order they are written, the last
axis varying fastest (``itertools.product``); a point's index is its position in that product
and is part of its runs' seeds, so it must not change: reordering or editing the axes makes a
different sweep. A grid axis overrides the value of the same field in its table (the table's
value must still be valid). Without a ``[grid]`` (or with an empty one) the sweep has one
point.

Grid values may be numpy scalars or a 1-d numpy array; they are stored as Python numbers.
A ``[run]``-like ``record = "log"`` (or a list of steps) in ``[sweep]`` gives log-spaced
records (:mod:`attnsignal.records`).

Every grid point is validated by building its :class:`ModelConfig`, its schedule and
:class:`RunConfig` before any work starts; the first problem raises one
:class:`~attnsignal.config.ConfigError` naming the key, e.g.
``grid.model.theta: must be a finite number >= 0; got -1``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import numbers
from dataclasses import dataclass, field
from os import PathLike
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ..config import ConfigError, ModelConfig, RunConfig
from ..engines import get_engine
from ..paths import read_toml
from ..schedules import SCHEDULES, Schedule, StepSize, schedule_from_dict
from ..validation import NOTHING, check_keys, required_fields

if TYPE_CHECKING:
    from .slurm import SlurmOptions

__all__ = ["SweepSpec", "GridPoint", "SECTIONS", "TABLES"]

#: The configuration tables of a spec and the class that validates each (``[step]`` is any
#: schedule family, chosen by its ``kind``; :class:`StepSize` without one).
SECTIONS: dict[str, type] = {"sweep": RunConfig, "model": ModelConfig, "step": StepSize}
#: Every table a spec may have (``slurm``: :class:`~attnsignal.sweep.slurm.SlurmOptions`,
#: where the sweep runs, not what it computes: it is not part of :meth:`SweepSpec.identity`).
TABLES = ("sweep", "model", "step", "grid", "slurm")


def _step_class(table: Mapping[str, Any]) -> type:
    kind = table.get("kind", "power")
    if not isinstance(kind, str) or kind not in SCHEDULES:
        raise ConfigError("step.kind", "must be one of " + ", ".join(map(repr, SCHEDULES)),
                          kind)
    return SCHEDULES[kind]


def _field_names(sec: str, step_table: Mapping[str, Any] | None = None) -> list[str]:
    """Keys of table ``sec`` (for ``[step]``: ``kind`` and the fields of its family)."""
    if sec == "step":
        return ["kind", *_step_class(step_table or {}).field_names()]
    return SECTIONS[sec].field_names()


def _all_grid_fields(step_table: Mapping[str, Any]) -> list[str]:
    return [f"{s}.{n}" for s in SECTIONS for n in _field_names(s, step_table) if n != "kind"]


def _plain_scalar(v: Any) -> Any:
    """numpy scalars as Python numbers (``np.int64(5)`` → ``5``), everything else as is."""
    if isinstance(v, np.generic):
        return v.item()
    return v


def _plain_values(values: Any) -> Any:
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return tuple(values.tolist())
    if isinstance(values, (list, tuple)):
        return tuple(_plain_scalar(v) for v in values)
    return values


@dataclass(frozen=True)
class GridPoint:
    """One point of a sweep's grid.

    index : position in the product of the axes (part of the runs' seeds)
    values : ``{axis: value}`` for every grid axis, in axis order (validated, coerced values)
    model, step, run : the validated configurations of this point
    """

    index: int
    values: Mapping[str, Any]
    model: ModelConfig
    step: Schedule
    run: RunConfig

    @property
    def run_kwargs(self) -> dict[str, Any]:
        """``RunConfig`` fields as keyword arguments of :func:`attnsignal.simulate` (the
        ``method`` field says whether to call it or :func:`attnsignal.baseline`)."""
        kwargs = self.run.to_dict()
        kwargs.pop("method", None)
        return kwargs

    def label(self) -> str:
        """``point 3 (model.theta=0.5, model.n_nuisance=40)``."""
        vals = ", ".join(f"{k}={v!r}" for k, v in self.values.items())
        return f"point {self.index}" + (f" ({vals})" if vals else "")

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (index, grid values, full configs)."""
        return {
            "index": self.index,
            "values": dict(self.values),
            "model": self.model.to_dict(),
            "step": self.step.to_dict(),
            "run": self.run.to_dict(),
        }


Pairs = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: base tables and grid axes (immutable).

    Build it with :meth:`from_toml` or :meth:`from_dict`; constructing it validates every
    grid point. ``sweep``, ``model`` and ``step`` are the base tables as ``(key, value)``
    pairs; ``grid`` is ``((axis, (value, ...)), ...)``.

    Raises
    ------
    ConfigError : an unknown table or key, a bad value (in a table or on a grid axis), an
        empty or repeating grid axis, a grid key that names no field, a required field given
        nowhere.
    """

    sweep: Pairs = ()
    model: Pairs = ()
    step: Pairs = ()
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    slurm: Pairs = field(default=(), compare=False)
    _points: tuple[GridPoint, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("sweep", "model", "step"):  # accept mappings; store (key, value) pairs
            v = getattr(self, name)
            if isinstance(v, Mapping):
                object.__setattr__(self, name, tuple((str(k), x) for k, x in v.items()))
        if isinstance(self.slurm, Mapping):
            object.__setattr__(self, "slurm", tuple((str(k), x) for k, x in self.slurm.items()))
        self.slurm_options()  # validated now, like every table
        grid = self.grid.items() if isinstance(self.grid, Mapping) else self.grid
        object.__setattr__(self, "grid", tuple((str(k), _plain_values(v)) for k, v in grid))
        object.__setattr__(self, "_points", tuple(_build_points(self)))

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SweepSpec":
        """A spec from the TOML shape: ``{"sweep": {...}, "model": {...}, "step": {...},
        "grid": {"model.theta": [...], ...}}``. ``grid`` may also be nested
        (``{"model": {"theta": [...]}}``, what TOML makes of an unquoted dotted key).

        Raises ConfigError (see the class)."""
        if not isinstance(data, Mapping):
            raise ConfigError("spec", "must be a table with [sweep], [model], [step], [grid]", data)
        check_keys(data, TABLES, what="table")
        for name, table in data.items():
            if not isinstance(table, Mapping):
                raise ConfigError(str(name), "must be a table", table)
        tables = {sec: tuple((str(k), v) for k, v in data.get(sec, {}).items())
                  for sec in SECTIONS}
        return cls(sweep=tables["sweep"], model=tables["model"], step=tables["step"],
                   grid=tuple(_flatten(data.get("grid", {}))),
                   slurm=tuple(data.get("slurm", {}).items()))

    @classmethod
    def from_toml(cls, path: str | PathLike[str]) -> "SweepSpec":
        """Read and validate a TOML spec.

        Raises ConfigError (``spec: file not found`` / ``spec: must be valid TOML`` / not UTF-8,
        unreadable, a directory — :func:`attnsignal.paths.read_toml` — or any problem of
        :meth:`from_dict`)."""
        data = read_toml(path, "spec")
        return cls.from_dict(data)

    # ------------------------------------------------------------------ queries
    @property
    def axes(self) -> tuple[str, ...]:
        """Grid axis names (``"model.theta"``, ...) in spec order."""
        return tuple(k for k, _ in self.grid)

    @property
    def n_points(self) -> int:
        return len(self._points)

    def points(self) -> list[GridPoint]:
        """Every grid point, in index order."""
        return list(self._points)

    def slurm_options(self) -> "SlurmOptions":
        """The ``[slurm]`` table as :class:`~attnsignal.sweep.slurm.SlurmOptions` (defaults
        when the spec has none). Raises ConfigError (``slurm.<key>: ...``)."""
        from .slurm import SlurmOptions

        return SlurmOptions.from_dict(dict(self.slurm))

    def to_dict(self) -> dict[str, Any]:
        """The spec in its TOML shape (base values and grid values as given)."""
        d = {
            "sweep": dict(self.sweep),
            "model": dict(self.model),
            "step": dict(self.step),
            "grid": {k: list(v) for k, v in self.grid},
        }
        if self.slurm:
            d["slurm"] = dict(self.slurm)
        return d

    def identity(self) -> str:
        """sha256 of what the sweep computes: the axes and every point's full configs. Two
        specs with the same identity describe the same sweep (``theta = 1`` and ``1.0``,
        or a default written out, do not change it)."""
        body = {"axes": list(self.axes), "points": [p.describe() for p in self._points]}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------------- helpers


def _flatten(grid: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in grid.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.extend(_flatten(value, name + "."))
        else:
            out.append((name, value))
    return out


def _check_axis(key: str, values: Any, step_table: Mapping[str, Any]) -> tuple[Any, ...]:
    sec, _, name = key.partition(".")
    if sec not in SECTIONS or name == "kind" or name not in _field_names(sec, step_table):
        raise ConfigError(
            f"grid.{key}", "unknown field; a grid axis is 'section.field' with a field of "
            "[sweep], [model] or [step]: " + ", ".join(_all_grid_fields(step_table)), values,
        )
    values = _plain_values(values)
    if not isinstance(values, tuple) or len(values) == 0:
        raise ConfigError(f"grid.{key}", "must be a non-empty array of values", values)
    for v in values:
        if not isinstance(v, (numbers.Real, str)):
            raise ConfigError(f"grid.{key}", "must be an array of numbers or strings", values)
    for i, v in enumerate(values):
        if any(v == w for w in values[:i]):
            raise ConfigError(f"grid.{key}", "must not repeat a value", list(values))
    return tuple(values)


def _make(sec: str, data: Mapping[str, Any], gridded: Sequence[str]) -> Any:
    klass = _step_class(data) if sec == "step" else SECTIONS[sec]
    for name in required_fields(klass):
        if name not in data:
            raise ConfigError(
                f"{sec}.{name}", f"required; set it in [{sec}] or as a grid axis "
                f"'{sec}.{name}'", NOTHING,
            )
    try:
        if sec == "step":
            return schedule_from_dict(data, prefix="")
        return klass(**dict(data))
    except ConfigError as exc:
        where = f"grid.{sec}." if exc.field in gridded else f"{sec}."
        raise exc.renamed(where + exc.field) from None


def _check_registered(run: RunConfig, gridded: Sequence[str]) -> None:
    """The run's ``engine`` (attention) or ``method`` (a baseline) must name a registered one:
    the registries refuse an unknown name with the list (``sweep.engine: must be one of …``)."""
    try:
        if run.method == "sga":
            get_engine(run.engine)
        else:
            from ..baselines.base import method_names

            if run.method not in method_names():
                raise ConfigError("method", "must be 'sga' or a baseline method: " + ", ".join(
                    map(repr, method_names())), run.method)
    except ConfigError as exc:
        where = "grid.sweep." if exc.field in gridded else "sweep."
        raise exc.renamed(where + exc.field) from None


def _build_points(spec: SweepSpec) -> list[GridPoint]:
    """Validate the spec and build its points (raises ConfigError)."""
    base = {"sweep": dict(spec.sweep), "model": dict(spec.model), "step": dict(spec.step)}
    for sec, table in base.items():
        check_keys(table, _field_names(sec, base["step"]), prefix=f"{sec}.")
    seen = set()
    for key, values in spec.grid:
        if key in seen:
            raise ConfigError(f"grid.{key}", "must be given once", list(values))
        seen.add(key)
        _check_axis(key, values, base["step"])
    split = [(k.partition(".")[0], k.partition(".")[2], vals) for k, vals in spec.grid]
    gridded = {sec: [n for s, n, _ in split if s == sec] for sec in SECTIONS}
    # Base values, even those a grid axis overrides, must be valid on their own: check them
    # against the first value of each axis that the table does not set.
    for sec in SECTIONS:
        fill = {n: vals[0] for s, n, vals in split if s == sec and n not in base[sec]}
        _make(sec, {**fill, **base[sec]}, [])
    points = []
    for index, combo in enumerate(itertools.product(*(vals for _, _, vals in split))):
        tables = {sec: dict(t) for sec, t in base.items()}
        for (sec, name, _), v in zip(split, combo):
            tables[sec][name] = v
        run = _make("sweep", tables["sweep"], gridded["sweep"])
        _check_registered(run, gridded["sweep"])
        model = _make("model", tables["model"], gridded["model"])
        step = _make("step", tables["step"], gridded["step"])
        cfg = {"sweep": run, "model": model, "step": step}
        values = {f"{s}.{n}": getattr(cfg[s], n) for s, n, _ in split}
        points.append(GridPoint(index=index, values=values, model=model, step=step, run=run))
    return points
