"""Helpers shared by the sub-commands: value parsing, TOML configs, progress, tables."""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..config import ConfigError, ModelConfig, RunConfig
from ..engines import engine_names
from ..schedules import SCHEDULES, Schedule, StepSize, schedule_from_dict
from ..validation import TABLE, Constraint, Instance, OneOf, Optional as Opt, check_keys

console = Console(stderr=True)
out = Console()

#: The default schedule family (a ``[step]`` table without ``kind``).
DEFAULT_SCHEDULE = StepSize.kind


def _settable(c: Constraint) -> bool:
    """Whether a field can be written on the command line (not an object, e.g. a schedule's
    ``tail``, which a ``--config`` file gives)."""
    inner = c.c if isinstance(c, Opt) else c
    return not isinstance(inner, Instance)


def _step_table() -> dict[str, Constraint]:
    """``--schedule KIND`` and the fields of every schedule family (:data:`~attnsignal.
    schedules.SCHEDULES`), each flag once: a field several families share (``eta0``) keeps the
    first family's constraint and says which families read it."""
    table: dict[str, Constraint] = {"schedule": OneOf(
        lambda: tuple(SCHEDULES), doc="step-size schedule family (the step flags below set "
        f"its fields; default {DEFAULT_SCHEDULE!r})")}
    users: dict[str, list[str]] = {}
    for kind, cls in SCHEDULES.items():
        for name, c in cls._table.items():
            if _settable(c):
                table.setdefault(name, c)
                users.setdefault(name, []).append(kind)
    for name, kinds in users.items():
        table[name] = _Described(table[name], f"{table[name].doc}; schedule "
                                 + " or ".join(map(repr, kinds)))
    return table


class _Described(Constraint):
    """A constraint with another ``doc`` (a flag's help), checking as the original does."""

    def __init__(self, c: Constraint, doc: str):
        self.c, self.doc = c, doc

    def check(self, field: str, value: Any) -> Any:
        return self.c.check(field, value)

    def describe(self) -> str:
        return self.c.describe()

    def summary(self) -> str:
        return self.c.summary()

    def parse(self, text: str | None) -> Any:
        return self.c.parse(text)

    def metavar(self) -> str:
        return self.c.metavar()

    def examples(self) -> tuple[Any, ...]:
        return self.c.examples()

    def counterexamples(self) -> tuple[Any, ...]:
        return self.c.counterexamples()


#: Every config field that can be a flag, with its constraint (help text, metavar and parsing
#: come from the constraint: nothing is typed twice). ``[step]`` is ``--schedule`` (the
#: family's ``kind``) and the fields of every family.
STEP_TABLE: dict[str, Constraint] = _step_table()
FIELD_TABLE: dict[str, Constraint] = {
    **ModelConfig._table, **STEP_TABLE, **RunConfig._table,
    # the help lists the registered engines (the config checks a name, the registry resolves it)
    "engine": OneOf(engine_names, doc=RunConfig._table["engine"].doc),
}
#: Field groups, in flag order.
MODEL_FIELDS = tuple(ModelConfig.field_names())
STEP_FIELDS = tuple(STEP_TABLE)
RUN_FIELDS = tuple(n for n in RunConfig.field_names() if n != "method")


def field_help(name: str) -> str:
    """A flag's help: its field's meaning and allowed values (``ambient dimension d (integer
    >= 2)``)."""
    return FIELD_TABLE[name].help()


def field_option(name: str, default: Any, help_: str | None = None) -> Any:
    """The ``--name`` option of a config field: text (so that the configs' validator, not click,
    words every rejection) with the constraint's metavar, and ``default`` in the help unless it
    is None. ``help_`` replaces the field's own help where a command gives it another meaning."""
    import typer

    c = FIELD_TABLE.get(name)
    help_ = help_ or field_help(name)
    metavar = c.metavar() if c is not None else "VALUE"
    text = help_ if default is None else f"{help_} (default: {default})"
    return typer.Option(None, f"--{name.replace('_', '-')}", help=text, metavar=metavar,
                        show_default=False)


def option(flag: str, constraint: Constraint, default: Any, help_: str | None = None) -> Any:
    """A command-only option (not a config field) checked by ``constraint``: read it with
    :func:`option_value`."""
    import typer

    text = help_ or constraint.help()
    return typer.Option(None, flag, help=f"{text} (default: {default})", show_default=False,
                        metavar=constraint.metavar())


def check_not_empty(field: str, text: str | None) -> None:
    """Refuse a flag given an empty (or blank) value, ``--record ''``: it would otherwise
    read as "not given" and the default would run without a word."""
    if isinstance(text, str) and not text.strip():
        c = FIELD_TABLE.get(field)
        allowed = c.summary() if c is not None else "a value"
        raise ConfigError(field, f"must be given a value ({allowed}), not an empty one", text)


def option_value(text: str | None, field: str, constraint: Constraint, default: Any) -> Any:
    """The value of a command-only option: ``default`` when not given, else the text parsed and
    checked by ``constraint`` (ConfigError naming ``field``); an empty text is refused."""
    if text is None:
        return default
    check_not_empty(field, text)
    return constraint.check(field, constraint.parse(text))


def config_options(names: Sequence[str], defaults: Mapping[str, Any],
                   helps: Mapping[str, str] | None = None) -> Callable[[Callable], Callable]:
    """Decorator of a command ``fn(flags, **own_options)``: adds one ``--field`` option per name
    in ``names`` (help, metavar and parsing from the field's constraint, default from
    ``defaults``, help replaced by ``helps[name]``) before the command's own options, and
    passes the given values as the dict ``flags`` (None where a flag is not given)."""
    helps = dict(helps or {})

    def wrap(fn: Callable) -> Callable:
        own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
               for p in inspect.signature(fn, eval_str=True).parameters.values()
               if p.name != "flags"]
        gen = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],
                                 default=field_option(n, defaults.get(n), helps.get(n)))
               for n in names]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            flags = {n: kwargs.pop(n) for n in names}
            for n, v in flags.items():
                check_not_empty(n, v)
            return fn(flags, **kwargs)

        params = gen + own
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        del command.__wrapped__  # typer must see the generated signature
        return command

    return wrap


def load_toml(path: Path) -> dict[str, Any]:
    """The ``--config`` file: ConfigError (exit 2) when it is missing, a directory, a
    symbolic-link loop, unreadable, not UTF-8 or not TOML (:func:`attnsignal.paths.read_toml`)."""
    from ..paths import read_toml

    return read_toml(path, "config")


def build_configs(
    flags: Mapping[str, Any], config_file: Path | None, defaults: Mapping[str, Any],
    tables: Sequence[str] = ("model", "step", "run"),
) -> tuple[ModelConfig, Schedule, dict[str, Any]]:
    """Merge defaults < config file (``[model]``, ``[step]``, ``[run]`` tables) < flags given on
    the command line; validate through the config classes. Returns (model, step, run kwargs).

    Every value in the file is checked on its own first (``model.theta: must be …``), so a bad
    value is rejected even when a flag overrides it. The schedule family is ``--schedule``,
    else the file's ``[step] kind``, else the power family; a ``--schedule`` other than the
    file's replaces its ``[step]`` table. ``defaults`` of a field apply to the families that
    have it. ``tables`` lists the tables the command reads (others are rejected)."""
    data = load_toml(config_file) if config_file is not None else {}
    check_keys(data, tables, what="table")
    for name, table in data.items():
        TABLE.check(str(name), table)
    file_step = data.get("step", {})
    kinds = STEP_TABLE["schedule"]
    file_kind = kinds.check("step.kind", file_step.get("kind", DEFAULT_SCHEDULE))
    kind = file_kind
    if flags.get("schedule") is not None:
        kind = kinds.check("schedule", kinds.parse(flags["schedule"]))
    classes = {"model": ModelConfig, "step": SCHEDULES[kind], "run": RunConfig}
    sections: dict[str, dict[str, Any]] = {}
    for name, cls in classes.items():
        table = data.get(name, {})
        if name == "step":
            file_cls = SCHEDULES[file_kind]
            check_keys(table, ["kind", *file_cls.field_names()], prefix="step.")
            for k, v in table.items():
                if k in file_cls._table:
                    file_cls._table[k].check(f"step.{k}", v)
            table = {k: v for k, v in table.items() if k != "kind"} if kind == file_kind else {}
        else:
            check_keys(table, cls.field_names(), prefix=f"{name}.")
            for k, v in table.items():  # each file value valid on its own, overridden or not
                if k in cls._table:
                    cls._table[k].check(f"{name}.{k}", v)
        fill = {k: defaults[k] for k in cls.field_names() if k in defaults}
        sections[name] = {**fill, **table}
        for k in cls.field_names():
            if flags.get(k) is not None:
                v = flags[k]
                sections[name][k] = cls._table[k].parse(v) if isinstance(v, str) else v
    for k in STEP_FIELDS:
        if k != "schedule" and flags.get(k) is not None and k not in classes["step"].field_names():
            raise ConfigError(f"step.{k}", f"not a field of the {kind!r} schedule (its fields: "
                              + ", ".join(classes["step"].field_names()) + ")", flags[k])
    model = ModelConfig.from_dict(sections["model"], prefix="")
    step = schedule_from_dict({"kind": kind, **sections["step"]}, prefix="")
    RunConfig(**{"steps": 1, **sections["run"]})  # validate now, before any work
    return model, step, sections["run"]


@contextmanager
def reported_warnings(*extra: type[Warning]) -> Iterator[None]:
    """Run the block recording the warnings a user must see — a schedule that is not
    Robbins–Monro, runs that diverged, and the command's ``extra`` categories — and print
    each, once, as one ``warning:`` line on stderr after it (not when it raises: the error's
    one line is all that is said then)."""
    from rich.markup import escape

    from ..schedules import NotRobbinsMonroWarning
    from ..simulate import DivergenceWarning

    shown = (NotRobbinsMonroWarning, DivergenceWarning, *extra)
    with warnings.catch_warnings(record=True) as caught:
        for category in shown:
            warnings.simplefilter("always", category)
        yield
    seen = set()
    for w in caught:
        if issubclass(w.category, shown) and str(w.message) not in seen:
            seen.add(str(w.message))
            console.print(f"[yellow]warning:[/] {escape(str(w.message))}", soft_wrap=True,
                          highlight=False)


@contextmanager
def progress_bar(total: int, description: str, enabled: bool = True) -> Iterator[Any]:
    """A rich progress bar on stderr; yields ``advance(n)``."""
    if not enabled:
        yield lambda n=1: None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as prog:
        task = prog.add_task(description, total=total)
        yield lambda n=1: prog.advance(task, n)


def fmt(x: float, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if x != 0 and not 1e-3 <= abs(x) < 1e6:  # fixed point would be unreadable
        return f"{x:.{digits}e}"
    return f"{x:.{digits}f}"


# --------------------------------------------------------------------------- presets

def preset_values(name: str | None) -> dict[str, Any]:
    """The flag values of preset ``name`` (:data:`attnsignal.presets.DEFAULT_PRESET` when
    None): the model, the schedule's fields, ``steps`` and ``runs``. ConfigError naming
    ``preset`` for an unknown name."""
    from ..presets import DEFAULT_PRESET, preset

    values = preset(DEFAULT_PRESET if name is None else name).to_dict()
    values.pop("kind", None)  # the family is --schedule's (the presets use 'power')
    return values


def preset_option() -> Any:
    """``--preset NAME``: the model (and schedule and budget) the other flags start from."""
    import typer

    from ..presets import DEFAULT_PRESET, PRESETS

    names = " or ".join(f"'{n}' ({p.description})" for n, p in PRESETS.items())
    return typer.Option(None, "--preset", metavar="NAME", show_default=False,
                        help=f"model preset the other flags start from: {names} "
                             f"(default: {DEFAULT_PRESET})")


def preset_defaults(names: Sequence[str], own: Mapping[str, Any] | None = None
                    ) -> dict[str, Any]:
    """The defaults a command's help shows for ``names``: the default preset's value, with the
    other presets' where they differ (``20 (paper: 100)``); ``own`` gives a command's own
    defaults (shown as they are)."""
    from ..presets import DEFAULT_PRESET, PRESETS

    own = dict(own or {})
    base = preset_values(DEFAULT_PRESET)
    shown: dict[str, Any] = {}
    for n in names:
        if n in own:
            shown[n] = own[n]
        elif n in base:
            others = [f"{p}: {preset_values(p)[n]}" for p in PRESETS
                      if p != DEFAULT_PRESET and preset_values(p).get(n) != base[n]]
            shown[n] = f"{base[n]}" + (f" ({', '.join(others)})" if others else "")
    return shown


# --------------------------------------------------------------------------- output

def out_option(prefix: str, files: str) -> Any:
    """``--out DIR``: where a command writes ``files``; by default a new directory."""
    import typer

    return typer.Option(None, "--out", metavar="DIR", show_default=False,
                        help=f"output directory ({files}); default: a new "
                             f"results/{prefix}-YYYYMMDD-HHMMSS; a directory that holds "
                             "files is refused unless --overwrite")


def overwrite_option() -> Any:
    import typer

    return typer.Option(False, "--overwrite",
                        help="write into an --out directory that holds earlier results")


def quiet_option() -> Any:
    import typer

    return typer.Option(False, "--quiet", "-q", help="no progress bars on stderr")


def output_dir(out: Path | None, overwrite: bool, prefix: str) -> Path:
    """The directory a command writes to, created now (:func:`attnsignal.outdirs.
    new_output_dir`): ``out`` if given (new, empty, or with ``overwrite``), else a new
    ``results/<prefix>-<timestamp>``. Call it once the input is validated, before the work."""
    from ..outdirs import new_output_dir
    from ..paths import check_output_dir

    if out is not None:
        check_output_dir(out, "out", create=False)  # a file, too long, read-only...
    return new_output_dir(out, base="results", prefix=prefix, overwrite=overwrite)
