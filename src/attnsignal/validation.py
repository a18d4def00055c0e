"""One validator for every entry point: constraint objects and one message template.

Every bad value — in a config object, a theory function's argument, a sweep spec, the
reproduction plan or a command-line flag — raises :class:`ConfigError`, a ``ValueError`` whose
message is one line::

    theta: must be a finite number >= 0; got -1.0

``field: <allowed>; got <value>``, the value's ``repr`` cut to :data:`MAX_REPR` characters.

Pieces
------
Constraints  ``Integer(ge=, le=)``, ``Real(gt=, ge=, lt=, le=, finite=True)``, ``OneOf(*choices)``,
             ``Boolean()``, ``Optional(c)``, ``Instance(cls)``, ``Sequence(of, ...)``,
             ``RealArray(...)``, ``Callable()``, ``AnyOf(*cs)``, ``Predicate(pred, allowed)``,
             ``Name()`` (an identifier, for values a registry resolves). Each has
             ``check(field, value)``
             → the value coerced to its canonical type (``int`` for counts, ``float`` for reals,
             ``tuple`` for sequences), ``describe()`` → the ``allowed`` text, ``summary()`` → the
             short form used in command-line help, and ``parse(text)`` → a command-line string as
             the constraint should see it. ``doc=`` attaches the one-line meaning of a field
             (the help of its command-line flag). ``valid_examples()`` and
             ``invalid_examples()`` give values it accepts and values it must refuse: the test
             suite feeds the latter to every field of every table.
Tables       ``{field: constraint}``; :func:`validate_fields` checks a frozen dataclass against
             its table in ``__post_init__``; :class:`Config` is the base of the config objects
             (``to_dict``, ``from_dict`` rejecting unknown keys and naming missing ones,
             ``replace``).
Functions    :func:`validated` — a decorator checking a function's named arguments.
Keys         :func:`check_keys` — the one "unknown key" / "required" check.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from dataclasses import MISSING, fields, replace
from typing import Any, Iterable, Mapping

import numpy as np

__all__ = [
    "ConfigError",
    "MAX_REPR",
    "NOTHING",
    "Constraint",
    "Integer",
    "Real",
    "OneOf",
    "Boolean",
    "Optional",
    "Instance",
    "Sequence",
    "RealArray",
    "Callable",
    "AnyOf",
    "Predicate",
    "Name",
    "validate_fields",
    "check_keys",
    "required_fields",
    "validated",
    "Config",
    "parse_text",
]

#: Longest value representation in a message (longer ones lose their middle to "…").
MAX_REPR = 160


def short_repr(value: Any, limit: int = MAX_REPR) -> str:
    """``repr(value)`` on one line, at most ``limit`` characters (arrays: shape and dtype)."""
    if isinstance(value, np.ndarray) and value.size > 8:
        return f"array of shape {value.shape} ({value.dtype})"
    try:
        text = repr(value)
    except Exception:  # pragma: no cover - a broken __repr__
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    if len(text) > limit:  # keep both ends (a path's file name is at its end)
        head = (limit - 1) // 2
        text = text[:head] + "…" + text[len(text) - (limit - 1 - head):]
    return text


class ConfigError(ValueError):
    """A value is outside its allowed range. The message is one line:
    ``field: allowed; got value`` (the value's repr, truncated)."""

    def __init__(self, field: str, allowed: str, value: Any):
        self.field = field
        self.allowed = allowed
        self.value = value
        super().__init__(f"{field}: {' '.join(str(allowed).split())}; got {short_repr(value)}")

    def __reduce__(self):  # picklable across process pools
        return (type(self), (self.field, self.allowed, self.value))

    def renamed(self, field: str) -> "ConfigError":
        """The same error under another field name (e.g. with a table prefix)."""
        return type(self)(field, self.allowed, self.value)


class _Nothing:
    """The value of a field that was not given (``got nothing``)."""

    def __repr__(self) -> str:
        return "nothing"


NOTHING = _Nothing()


class _Foreign:
    """A value of no type a constraint expects (the generated tests' wrong instance)."""

    def __repr__(self) -> str:
        return "<foreign object>"


def _num(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def parse_text(text: str | None) -> Any:
    """A command-line value as a validator should see it: None for ``none``/``null``, an int if
    it reads as one, else a float if it reads as a number, else the string — so that
    ``--d 2.5`` is rejected by ``d``'s constraint with its allowed range, not by the parser."""
    if text is None:
        return None
    t = text.strip()
    if t.lower() in ("none", "null"):
        return None
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


# --------------------------------------------------------------------------- constraints


class Constraint:
    """A rule for one value: ``check(field, value) -> coerced`` or :class:`ConfigError`."""

    doc: str = ""

    def _accepts(self, value: Any) -> bool:  # pragma: no cover - abstract
        """The predicate of constraints that do not override :meth:`check`."""
        raise NotImplementedError

    def accepts(self, value: Any) -> bool:
        """Whether :meth:`check` would accept ``value``."""
        try:
            self.check("", value)
            return True
        except ConfigError:
            return False

    def coerce(self, value: Any) -> Any:
        return value

    def describe(self) -> str:
        """The ``allowed`` part of the message, e.g. ``must be an integer >= 2``."""
        raise NotImplementedError  # pragma: no cover

    def summary(self) -> str:
        """Short form for help texts: ``integer >= 2``."""
        d = self.describe()
        d = d[len("must be "):] if d.startswith("must be ") else d
        for article in ("a ", "an "):
            if d.startswith(article):
                return d[len(article):]
        return d

    def metavar(self) -> str:
        return "VALUE"

    def parse(self, text: str | None) -> Any:
        """A command-line string as this constraint should see it."""
        return parse_text(text)

    def check(self, field: str, value: Any) -> Any:
        try:
            ok = self._accepts(value)
        except Exception:
            ok = False
        if not ok:
            raise ConfigError(field, self.describe(), value)
        return self.coerce(value)

    def help(self) -> str:
        """``doc (summary)`` — a command-line flag's help."""
        return f"{self.doc} ({self.summary()})" if self.doc else self.summary()

    # the values a generated test feeds every field (tests/core/test_constraint_tables.py)
    def examples(self) -> tuple[Any, ...]:
        """Values of this constraint's kind that it accepts (may be empty: unknown)."""
        return ()

    def counterexamples(self) -> tuple[Any, ...]:
        """Values it may be given and must refuse: each bound crossed, the wrong type."""
        return ()

    def valid_examples(self) -> tuple[Any, ...]:
        """:meth:`examples`, each checked to be accepted."""
        return tuple(v for v in self.examples() if self.accepts(v))

    def invalid_examples(self) -> tuple[Any, ...]:
        """:meth:`counterexamples`, each checked to be refused."""
        return tuple(v for v in self.counterexamples() if not self.accepts(v))


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


class Integer(Constraint):
    """An integer (Python or numpy, not bool) with optional bounds; coerced to ``int``."""

    def __init__(self, ge: int | None = None, le: int | None = None, *, doc: str = ""):
        self.ge, self.le, self.doc = ge, le, doc

    def _accepts(self, v: Any) -> bool:
        return (_is_int(v) and (self.ge is None or v >= self.ge)
                and (self.le is None or v <= self.le))

    def coerce(self, v: Any) -> int:
        return int(v)

    def describe(self) -> str:
        if self.ge is not None and self.le is not None:
            return f"must be an integer in [{self.ge}, {self.le}]"
        if self.ge is not None:
            return f"must be an integer >= {self.ge}"
        if self.le is not None:
            return f"must be an integer <= {self.le}"
        return "must be an integer"

    def metavar(self) -> str:
        return "INT"

    def examples(self) -> tuple[Any, ...]:
        return (self.ge if self.ge is not None else (self.le if self.le is not None else 0),)

    def counterexamples(self) -> tuple[Any, ...]:
        out: list[Any] = []
        if self.ge is not None:
            out.append(self.ge - 1)
        if self.le is not None:
            out.append(self.le + 1)
        base = self.examples()[0]
        return (*out, base + 0.5, True, str(base), None)


class Real(Constraint):
    """A real number (int or float, Python or numpy, not bool) with optional bounds; coerced to
    ``float``. ``finite=True`` (default) rejects ``nan`` and ``±inf``."""

    def __init__(self, *, gt: float | None = None, ge: float | None = None,
                 lt: float | None = None, le: float | None = None, finite: bool = True,
                 doc: str = ""):
        self.gt, self.ge, self.lt, self.le, self.finite, self.doc = gt, ge, lt, le, finite, doc

    def _in_range(self, v: float) -> bool:
        if self.finite and not math.isfinite(v):
            return False
        if math.isnan(v):
            return False
        return ((self.gt is None or v > self.gt) and (self.ge is None or v >= self.ge)
                and (self.lt is None or v < self.lt) and (self.le is None or v <= self.le))

    def _accepts(self, v: Any) -> bool:
        return _is_real(v) and self._in_range(float(v))

    def coerce(self, v: Any) -> float:
        return float(v)

    def range_text(self) -> str:
        lo = self.gt if self.gt is not None else self.ge
        hi = self.lt if self.lt is not None else self.le
        if lo is not None and hi is not None:
            return (("(" if self.gt is not None else "[") + f"{_num(float(lo))}, "
                    f"{_num(float(hi))}" + (")" if self.lt is not None else "]"))
        if lo is not None:
            return (">" if self.gt is not None else ">=") + f" {_num(float(lo))}"
        if hi is not None:
            return ("<" if self.lt is not None else "<=") + f" {_num(float(hi))}"
        return ""

    def describe(self) -> str:
        lo = self.gt if self.gt is not None else self.ge
        hi = self.lt if self.lt is not None else self.le
        if lo is not None and hi is not None:
            return f"must be a number in {self.range_text()}"
        r = self.range_text()
        base = "must be a finite number" if self.finite else "must be a number"
        return f"{base} {r}" if r else base

    def metavar(self) -> str:
        return "NUMBER"

    def examples(self) -> tuple[Any, ...]:
        lo = self.gt if self.gt is not None else self.ge
        hi = self.lt if self.lt is not None else self.le
        if lo is not None and hi is not None:
            return ((lo + hi) / 2,)
        if lo is not None:
            return (float(lo) + 1.0,)
        if hi is not None:
            return (float(hi) - 1.0,)
        return (0.5,)

    def counterexamples(self) -> tuple[Any, ...]:
        out: list[Any] = []
        if self.gt is not None:
            out.append(float(self.gt))
        if self.ge is not None:
            out.append(float(self.ge) - 1.0)
        if self.lt is not None:
            out.append(float(self.lt))
        if self.le is not None:
            out.append(float(self.le) + 1.0)
        out += [math.nan, True, "0.5", None]
        if self.finite:
            out.append(math.inf)
        return tuple(out)


class OneOf(Constraint):
    """One of a fixed set of strings. ``OneOf(fn)`` with a single callable takes the choices
    from ``fn()`` at each check (e.g. a registry that grows)."""

    def __init__(self, *choices: Any, doc: str = ""):
        if len(choices) == 1 and callable(choices[0]):
            self._source = choices[0]
            self._fixed: tuple = ()
        else:
            self._source = None
            self._fixed = tuple(choices)
        self.doc = doc

    @property
    def choices(self) -> tuple:
        return tuple(self._source()) if self._source is not None else self._fixed

    @property
    def fixed(self) -> bool:
        """Whether the choices are a fixed set (not read from a registry at each check)."""
        return self._source is None

    def _accepts(self, v: Any) -> bool:
        return isinstance(v, str) and v in self.choices

    def coerce(self, v: Any) -> str:
        return str(v)

    def describe(self) -> str:
        return "must be one of " + ", ".join(repr(c) for c in self.choices)

    def summary(self) -> str:
        c = [repr(x) for x in self.choices]
        return " or ".join(c) if len(c) <= 2 else ", ".join(c[:-1]) + " or " + c[-1]

    def parse(self, text: str | None) -> Any:
        return None if text is None else text.strip()

    def metavar(self) -> str:
        return "NAME"

    def examples(self) -> tuple[Any, ...]:
        return self.choices[:1]

    def counterexamples(self) -> tuple[Any, ...]:
        # a string that is none of the choices, however many there are
        return ("not_" + "_".join(map(str, self.choices)), 1, None)


class Name(Constraint):
    """A name: a non-empty string that is a Python identifier (``"chain"``, ``"E1"``). For
    values resolved by a registry that grows (engines, baseline methods): the config checks
    the form, the registry names the registered values when it resolves one."""

    def __init__(self, what: str = "a name", *, doc: str = ""):
        self.what, self.doc = what, doc

    def _accepts(self, v: Any) -> bool:
        return isinstance(v, str) and v.isidentifier()

    def coerce(self, v: Any) -> str:
        return str(v)

    def describe(self) -> str:
        return f"must be {self.what} (letters, digits and underscores, not starting with a digit)"

    def summary(self) -> str:
        return self.what.removeprefix("a ").removeprefix("an ")

    def parse(self, text: str | None) -> Any:
        return None if text is None else text.strip()

    def metavar(self) -> str:
        return "NAME"

    def examples(self) -> tuple[Any, ...]:
        return ("name",)

    def counterexamples(self) -> tuple[Any, ...]:
        return ("", "2x", "a-b", 3, None)


class Boolean(Constraint):
    """``True`` or ``False`` (Python or numpy bool; not 0/1 or a string)."""

    def __init__(self, *, doc: str = ""):
        self.doc = doc

    def _accepts(self, v: Any) -> bool:
        return isinstance(v, (bool, np.bool_))

    def coerce(self, v: Any) -> bool:
        return bool(v)

    def describe(self) -> str:
        return "must be True or False"

    def parse(self, text: str | None) -> Any:
        if text is None:
            return None
        t = text.strip().lower()
        return {"true": True, "yes": True, "1": True, "false": False, "no": False,
                "0": False}.get(t, text)

    def examples(self) -> tuple[Any, ...]:
        return (True, False)

    def counterexamples(self) -> tuple[Any, ...]:
        return (1, "yes", None)


class Optional(Constraint):
    """``None`` or a value accepted by ``c``."""

    def __init__(self, c: Constraint, *, doc: str = ""):
        self.c, self.doc = c, doc or c.doc

    def coerce(self, v: Any) -> Any:
        return None if v is None else self.c.coerce(v)

    def check(self, field: str, value: Any) -> Any:
        if value is None:
            return None
        try:
            return self.c.check(field, value)
        except ConfigError as exc:
            if exc.field != field:  # about a part of the value (a model's variant field)
                raise
            raise ConfigError(field, self.describe(), value) from None

    def describe(self) -> str:
        return self.c.describe() + " (or None)"

    def summary(self) -> str:
        return self.c.summary()

    def parse(self, text: str | None) -> Any:
        if text is not None and text.strip().lower() in ("none", "null"):
            return None
        return self.c.parse(text)

    def metavar(self) -> str:
        return self.c.metavar()

    def examples(self) -> tuple[Any, ...]:
        return (None, *self.c.examples())

    def counterexamples(self) -> tuple[Any, ...]:
        return tuple(v for v in self.c.counterexamples() if v is not None)


class Instance(Constraint):
    """An instance of ``cls`` (or of one of a tuple of classes); ``name`` words the message."""

    def __init__(self, cls: type | tuple[type, ...], name: str | None = None, *, doc: str = ""):
        self.cls = cls
        self.name = name or (cls.__name__ if isinstance(cls, type)
                             else " or ".join(c.__name__ for c in cls))
        self.doc = doc

    def _accepts(self, v: Any) -> bool:
        return isinstance(v, self.cls)

    def describe(self) -> str:
        article = "an" if self.name[:1].lower() in "aeiou" else "a"
        return f"must be {article} {self.name}"

    def counterexamples(self) -> tuple[Any, ...]:
        return (_Foreign(), None, 1)


class Callable(Constraint):
    """A callable (a function, a bound method, an object with ``__call__``)."""

    def __init__(self, what: str = "a callable", *, doc: str = ""):
        self.what, self.doc = what, doc

    def _accepts(self, v: Any) -> bool:
        return callable(v)

    def describe(self) -> str:
        return f"must be {self.what}"

    def examples(self) -> tuple[Any, ...]:
        return (print,)

    def counterexamples(self) -> tuple[Any, ...]:
        return (1, "f")


class Sequence(Constraint):
    """A list, tuple or 1-d array whose items each pass ``of``; coerced to a tuple of the
    items' canonical values. ``min_len``/``max_len`` bound the length, ``increasing`` asks for
    strictly increasing items, ``unique`` for no repeats."""

    def __init__(self, of: Constraint, *, min_len: int = 0, max_len: int | None = None,
                 increasing: bool = False, unique: bool = False, what: str | None = None,
                 doc: str = ""):
        self.of, self.min_len, self.max_len = of, min_len, max_len
        self.increasing, self.unique, self.what, self.doc = increasing, unique, what, doc

    def _items(self, v: Any) -> list | None:
        if isinstance(v, np.ndarray):
            return list(v.tolist()) if v.ndim == 1 else None
        if isinstance(v, (list, tuple)):
            return list(v)
        return None

    def check(self, field: str, value: Any) -> Any:
        items = self._items(value)
        if items is None or len(items) < self.min_len or (
                self.max_len is not None and len(items) > self.max_len):
            raise ConfigError(field, self.describe(), value)
        out = []
        for i, x in enumerate(items):
            try:
                out.append(self.of.check(field, x))
            except ConfigError:
                raise ConfigError(field, self.describe(), value) from None
        if self.increasing and any(b <= a for a, b in zip(out, out[1:])):
            raise ConfigError(field, self.describe(), value)
        if self.unique and len(set(out)) != len(out):
            raise ConfigError(field, self.describe(), value)
        return tuple(out)

    def describe(self) -> str:
        if self.what:
            return f"must be {self.what}"
        quals = []
        if self.min_len == 1 and self.max_len is None:
            quals.append("non-empty")
        if self.increasing:
            quals.append("strictly increasing")
        text = "must be a " + " ".join(quals + ["list of"])
        text += " distinct " if self.unique else " "
        text += self.of.summary()
        if self.min_len > 1 or self.max_len is not None:
            hi = "" if self.max_len is None else f", at most {self.max_len}"
            text += f" (at least {self.min_len}{hi})"
        return text.replace("must be a strictly", "must be a strictly")

    def parse(self, text: str | None) -> Any:
        if text is None:
            return None
        parts = [p for p in text.replace(" ", "").split(",") if p]
        return [self.of.parse(p) for p in parts]

    def metavar(self) -> str:
        return "LIST"

    def examples(self) -> tuple[Any, ...]:
        item = self.of.examples()[:1]
        n = max(self.min_len, 1 if item else 0)
        if self.unique or self.increasing:
            n = min(n, 1)
        return (tuple(item * n), *(((),) if self.min_len == 0 and n else ()))

    def counterexamples(self) -> tuple[Any, ...]:
        out: list[Any] = [5, "a"]
        bad = self.of.counterexamples()[:1]
        out.append(tuple(bad))
        if self.min_len > 0:
            out.append(())
        return tuple(out)


class RealArray(Constraint):
    """A real number or an array-like of real numbers (not bools, not strings), each finite and
    within the bounds; coerced to a float64 ``ndarray`` (a scalar gives a 0-d array)."""

    def __init__(self, *, ge: float | None = None, le: float | None = None,
                 gt: float | None = None, lt: float | None = None, min_size: int = 1,
                 doc: str = ""):
        self.item = Real(ge=ge, le=le, gt=gt, lt=lt)
        self.min_size, self.doc = min_size, doc

    def check(self, field: str, value: Any) -> np.ndarray:
        try:
            raw = np.asarray(value)
        except Exception:
            raise ConfigError(field, self.describe(), value) from None
        if raw.dtype.kind not in "iuf" or raw.size < self.min_size:
            raise ConfigError(field, self.describe(), value)
        arr = raw.astype(np.float64)
        it = self.item
        bad = ~np.isfinite(arr)
        if it.gt is not None:
            bad |= ~(arr > it.gt)
        if it.ge is not None:
            bad |= ~(arr >= it.ge)
        if it.lt is not None:
            bad |= ~(arr < it.lt)
        if it.le is not None:
            bad |= ~(arr <= it.le)
        if bad.any():
            raise ConfigError(field, self.describe(), float(arr[bad].flat[0])
                              if arr.ndim else value)
        return arr

    def describe(self) -> str:
        r = self.item.range_text()
        if r.startswith(("[", "(")):
            r = "in " + r
        return "must be a finite number or an array of finite numbers" + (f" {r}" if r else "")

    def examples(self) -> tuple[Any, ...]:
        return self.item.examples()

    def counterexamples(self) -> tuple[Any, ...]:
        bad = [v for v in self.item.counterexamples() if isinstance(v, float)]
        return (*bad, [self.item.examples()[0], math.nan], "x", True)


class Predicate(Constraint):
    """A constraint from a predicate: ``Predicate(pred, "must be …", coerce)`` accepts ``v``
    when ``pred(v)`` is true and stores ``coerce(v)`` (default: ``v``) — for rules that none of
    the classes above words well (a Slurm time, a partition name)."""

    def __init__(self, pred: Any, allowed: str, coerce: Any = None, *, doc: str = "",
                 examples: tuple[Any, ...] = (), counterexamples: tuple[Any, ...] = ()):
        self.pred, self.allowed, self._coerce, self.doc = pred, allowed, coerce, doc
        self._examples, self._counterexamples = tuple(examples), tuple(counterexamples)

    def _accepts(self, v: Any) -> bool:
        return bool(self.pred(v))

    def coerce(self, v: Any) -> Any:
        return v if self._coerce is None else self._coerce(v)

    def describe(self) -> str:
        return self.allowed

    def examples(self) -> tuple[Any, ...]:
        return self._examples

    def counterexamples(self) -> tuple[Any, ...]:
        return self._counterexamples


class AnyOf(Constraint):
    """A value accepted by the first of ``constraints`` that accepts it."""

    def __init__(self, *constraints: Constraint, what: str | None = None, doc: str = ""):
        self.cs, self.what, self.doc = constraints, what, doc

    def check(self, field: str, value: Any) -> Any:
        for c in self.cs:
            if c.accepts(value):
                return c.check(field, value)
        raise ConfigError(field, self.describe(), value)

    def describe(self) -> str:
        if self.what:
            return f"must be {self.what}"
        return "must be " + " or ".join(c.summary() for c in self.cs)

    def examples(self) -> tuple[Any, ...]:
        return tuple(v for c in self.cs for v in c.examples())

    def counterexamples(self) -> tuple[Any, ...]:
        return tuple(v for c in self.cs for v in c.counterexamples())


# --------------------------------------------------------------------------- tables


def validate_fields(obj: Any, table: Mapping[str, Constraint], prefix: str = "") -> None:
    """Check every field of the (frozen) dataclass ``obj`` that has a row in ``table``, and
    store the coerced value. Raises :class:`ConfigError` naming ``prefix + field``."""
    for f in fields(obj):
        c = table.get(f.name)
        if c is None:
            continue
        value = c.check(prefix + f.name, getattr(obj, f.name))
        object.__setattr__(obj, f.name, value)


def check_keys(data: Mapping[str, Any], known: Iterable[str], prefix: str = "",
               required: Iterable[str] = (), what: str = "key") -> None:
    """The one check of a table's keys: every key of ``data`` must be in ``known``
    (``model.bogus: unknown key; allowed keys are …; got 1``) and every ``required`` key
    present (``model.theta: required; got nothing``)."""
    known = list(known)
    for key in data:
        if key not in known:
            raise ConfigError(f"{prefix}{key}", f"unknown {what}; allowed {what}s are "
                              + ", ".join(known), data[key])
    for key in required:
        if key not in data:
            raise ConfigError(f"{prefix}{key}", "required", NOTHING)


def required_fields(cls: type) -> list[str]:
    """The fields of dataclass ``cls`` without a default."""
    return [f.name for f in fields(cls)  # type: ignore[arg-type]
            if f.init and f.default is MISSING and f.default_factory is MISSING]  # type: ignore[misc]


class Config:
    """Base of the frozen, validated config objects: ``_table`` holds one constraint per field,
    ``_section`` the name of its TOML table. Subclasses call :func:`validate_fields` in
    ``__post_init__``.

    Fields whose dataclass metadata has ``omit_if_none=True`` are left out of ``to_dict`` while
    None, so that adding such a field does not change the description (and the content hashes
    of sweeps) of configs that do not use it."""

    _table: dict = {}
    _section: str = ""

    def __post_init__(self) -> None:
        validate_fields(self, self._table)

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for f in fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if v is None and f.metadata.get("omit_if_none"):
                continue
            out[f.name] = _plain(v)
        return out

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.init]  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], prefix: str | None = None):
        """Build from a mapping (a TOML table, a manifest): unknown keys and missing required
        fields raise :class:`ConfigError` naming them (``prefix`` defaults to ``section.``)."""
        if not isinstance(data, Mapping):
            raise ConfigError(cls._section or cls.__name__, "must be a table", data)
        prefix = cls._section + "." if prefix is None and cls._section else (prefix or "")
        check_keys(data, cls.field_names(), prefix, required_fields(cls))
        try:
            return cls(**dict(data))
        except ConfigError as exc:
            if prefix and not exc.field.startswith(prefix):
                raise exc.renamed(prefix + exc.field) from None
            raise

    def replace(self, **changes: Any):
        return replace(self, **changes)  # type: ignore[type-var]


def _plain(v: Any) -> Any:
    """JSON/TOML-ready: tuples to lists, nested configs to dicts."""
    if isinstance(v, Config):
        return v.to_dict()
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


# --------------------------------------------------------------------------- functions


def validated(**constraints: Constraint):
    """Decorator: check the named arguments of a function against constraints before it runs,
    passing the coerced values on. A bad argument raises :class:`ConfigError` naming it::

        @validated(model=Instance(ModelConfig), rho=RealArray(ge=-1, le=1))
        def landscape(model, rho, method="exact"): ...

    Defaults are checked too (so a bad default is found by the first call). The constraint
    table is kept as ``fn.__constraints__``."""

    def wrap(fn):
        sig = inspect.signature(fn)
        unknown = set(constraints) - set(sig.parameters)
        if unknown:
            raise TypeError(f"validated: {fn.__name__} has no parameter(s) {sorted(unknown)}")

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any):
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as exc:
                raise ConfigError(fn.__name__, "arguments " + str(exc).replace("'", ""),
                                  NOTHING) from None
            bound.apply_defaults()
            for name, c in constraints.items():
                bound.arguments[name] = c.check(name, bound.arguments[name])
            return fn(*bound.args, **bound.kwargs)

        inner.__constraints__ = dict(constraints)  # type: ignore[attr-defined]
        return inner

    return wrap
