"""Which steps a run records: linear, log-spaced or listed.

A record is the state after ``k`` updates; ``k = 0`` (the start) and ``k = steps`` (the end)
are always recorded. :func:`record_steps` is the one place that turns a choice into the
recorded step indices — ``simulate``, the effective dynamics, the baselines, the command line
(``--record linear|log|LIST``) and sweeps all call it.

``record=None`` or ``"linear"``  ``0, e, 2e, ..., steps`` with ``e = record_every`` (default
                                  ``max(1, steps // 200)``: about 200 records)
``record="log"``                  ``min(LOG_RECORDS, steps + 1)`` indices: 0 and integers
                                  nearly evenly spaced in ``log k`` from 1 to ``steps`` (the
                                  first ones, which rounding would merge, are consecutive) —
                                  for ``1 − |ρ|`` on a log axis
``record=[k1, k2, ...]``          those indices (strictly increasing, in ``[0, steps]``) plus
                                  0 and ``steps``
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .limits import check_memory
from .validation import ConfigError, Constraint, Integer, OneOf, Optional, Sequence

__all__ = ["record_steps", "check_records", "n_records", "RECORD", "RECORD_KINDS",
           "LOG_RECORDS", "DEFAULT_RECORDS", "RecordChoice"]

#: Largest step index a record can hold (int64, with room for k + 1): the engines' limit too.
MAX_RECORD_STEP = 2 ** 62
#: Records of the default linear choice (``record_every = max(1, steps // 200)``).
DEFAULT_RECORDS = 200
#: Target number of log-spaced records.
LOG_RECORDS = 200
RECORD_KINDS = ("linear", "log")


class RecordChoice(Constraint):
    """``None``, ``"linear"``, ``"log"`` or a strictly increasing list of step indices
    ``>= 0`` (coerced to a tuple of ints; ``"linear"`` to None, its canonical form)."""

    _kinds = OneOf(*RECORD_KINDS)
    _list = Sequence(Integer(ge=0), min_len=1, increasing=True)

    def __init__(self, *, doc: str = ""):
        self.doc = doc

    def check(self, field: str, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str):
            v = self._kinds.check(field, value) if value in RECORD_KINDS else None
            if v is None:
                raise ConfigError(field, self.describe(), value)
            return None if v == "linear" else v
        try:
            return self._list.check(field, value)
        except ConfigError:
            raise ConfigError(field, self.describe(), value) from None

    def describe(self) -> str:
        return ("must be 'linear', 'log' or a strictly increasing list of step indices >= 0 "
                "(or None)")

    def summary(self) -> str:
        return "'linear', 'log' or a comma-separated list of steps; 0 and the last step " \
               "are always recorded"

    def examples(self) -> tuple[Any, ...]:
        return (None, "log", (1,))

    def counterexamples(self) -> tuple[Any, ...]:
        return ("sometimes", (3, 1), (-1,), 5)

    def parse(self, text: str | None) -> Any:
        if text is None:
            return None
        t = text.strip()
        if t.lower() in ("none", "null", ""):
            return None
        if t in RECORD_KINDS:
            return t
        parts = [p.strip() for p in t.split(",") if p.strip()]
        out: list[Any] = []
        for p in parts:
            try:
                out.append(int(p))
            except ValueError:
                return t  # rejected by check with the whole text
        return out

    def metavar(self) -> str:
        return "linear|log|LIST"


#: The constraint of ``RunConfig.record``.
RECORD = RecordChoice(doc="which steps to record")


def check_records(steps: int, record_every: int | None = None, record: Any = None) -> Any:
    """Validate a record choice without building it (cheap for any ``steps``); returns the
    canonical ``record`` (None for linear). Raises ConfigError as :func:`record_steps`."""
    Integer(ge=1).check("steps", steps)
    record = RECORD.check("record", record)
    if record is None:
        Optional(Integer(ge=1)).check("record_every", record_every)
        return None
    if record_every is not None:
        raise ConfigError("record_every", "only with linear records (record = None or "
                          "'linear')", record_every)
    if record != "log" and record[-1] > steps:
        raise ConfigError("record", f"must list step indices <= steps = {steps}",
                          list(record))
    return record


def record_steps(steps: int, record_every: int | None = None, record: Any = None
                 ) -> np.ndarray:
    """Recorded step indices: strictly increasing unique int64, first 0, last ``steps``.

    steps : int >= 1;  record_every : int >= 1 or None (linear records only);
    record : None | "linear" | "log" | strictly increasing step indices in ``[0, steps]``.

    Raises ConfigError for a bad value, ``record_every`` with non-linear records, or a listed
    index beyond ``steps``.
    """
    record = check_records(steps, record_every, record)
    steps = Integer(ge=1, le=MAX_RECORD_STEP).check("steps", steps)  # int64 indices
    if record is None:
        every = max(1, steps // DEFAULT_RECORDS) if record_every is None else int(record_every)
        n = steps // every + 2
        # the indices alone; the records' own arrays are checked by whoever allocates them
        check_memory("record_every", 8.0 * n, f"the indices of {n} records", every)
        ks = np.arange(0, steps + 1, every, dtype=np.int64)
        if ks[-1] != steps:
            ks = np.append(ks, np.int64(steps))
        return ks
    if record == "log":
        want = min(LOG_RECORDS, steps + 1)
        for n in range(want - 1, 8 * LOG_RECORDS):  # rounding merges small k: add points
            inner = np.rint(np.geomspace(1.0, float(steps), n)).astype(np.int64)
            ks = np.unique(np.concatenate([[0, steps], inner]))
            if ks.size >= want:
                break
        return ks.astype(np.int64)
    listed = np.asarray(record, dtype=np.int64)
    return np.unique(np.concatenate([[0], listed, [steps]])).astype(np.int64)


def n_records(steps: int, record_every: int | None = None, record: Any = None) -> int:
    """How many steps :func:`record_steps` gives, without building them."""
    record = check_records(steps, record_every, record)
    if record is None:
        every = max(1, steps // DEFAULT_RECORDS) if record_every is None else int(record_every)
        return -(-int(steps) // every) + 1
    if record == "log":  # at most a few hundred: build them
        return int(record_steps(steps, None, "log").size)
    return len(set(record) | {0, int(steps)})
