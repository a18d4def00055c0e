"""The hostile suite generated from the command line's definitions (:mod:`hostile_cases`):
every option of every command, given a value of the classes that no option may accept
(empty, text where a number goes, ``nan``, ``inf``, shell characters in a name, a value to a
switch, a file as the output directory, a missing input), ends in exit status 2 and one line
naming the option's field — before any work. A command with no cases fails the suite, so a
command added later is covered or noticed.

The classes whose answer depends on the option (``±10^30``, ``2^63 − 1``: refused by most,
a correct result for some) end either way, fast: a rotating selection of them runs too
(:data:`HUGE_CASES`, one per command)."""

from __future__ import annotations

import time

import pytest

import hostile_cases as hc
from hostile_helpers import run_cli

#: The classes run here: no option of any command may accept them.
ALWAYS_REFUSED = ("empty", "text", "nan", "inf", "shell", "given a value", "a file",
                  "below a file", "missing", "a directory")

def _selected() -> list[hc.Case]:
    """Per option: the empty value, and one more class in turn (over the options of a kind,
    every class comes up), which keeps the suite within its time budget."""
    by_option: dict[tuple[str, str], list[hc.Case]] = {}
    for c in hc.generate():
        if c.klass.split(": ", 1)[1] in ALWAYS_REFUSED:
            by_option.setdefault((c.command, c.option), []).append(c)
    chosen, turn = [], {}
    for cases in by_option.values():
        kind = cases[0].klass.split(": ", 1)[0]
        empty = [c for c in cases if c.klass.endswith(": empty")]
        rest = [c for c in cases if c not in empty]
        chosen += empty
        if rest:
            k = turn.get(kind, 0)
            chosen.append(rest[k % len(rest)])
            turn[kind] = k + 1
    return chosen


CASES = _selected()


def test_every_command_has_hostile_cases():
    """A command with no case (one added without a base argument list in
    hostile_cases.BASES, or with no options) fails here."""
    covered = {c.command for c in CASES}
    missing = sorted(set(hc.commands()) - covered - set())
    assert not missing, f"commands without hostile cases: {missing}"
    assert set(hc.commands()) <= set(hc.BASES), sorted(set(hc.commands()) - set(hc.BASES))


def test_every_option_has_hostile_cases():
    for name, cmd in hc.commands().items():
        opts = {p.opts[0] for p in cmd.params if p.param_type_name == "option"} - {"--help"}
        assert opts <= {c.option for c in CASES if c.command == name}, name


@pytest.mark.timeout(30)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_generated_hostile_value_is_refused_in_one_line(case, tmp_path, capsys):
    t0 = time.perf_counter()
    end = run_cli(hc.argv(case, tmp_path), capsys)
    assert end.how == "refused", (case, end)
    assert time.perf_counter() - t0 < 30, case  # before any work (a loaded machine: 10x)
    assert not (tmp_path / "o" / "manifest.json").exists()


#: The classes whose answer depends on the option: a refusal or a result, within seconds.
HUGE = ("-10^30", "10^30", "2^63-1")
#: commands whose valid base run alone takes more than 2 s, so that a huge value they accept
#: cannot end fast: ``scaling`` (its law, before any simulation)
SLOW_BASE = ("scaling",)


def _huge_selected() -> list[hc.Case]:
    """One case per command: its number options and the three huge classes taken in turn
    (the command's place in the list picks the option, so every run checks the same cases and
    a new option shifts the selection)."""
    by_command: dict[str, list[hc.Case]] = {}
    for c in hc.generate():
        if c.klass.split(": ", 1)[1] in HUGE and c.command not in SLOW_BASE:
            by_command.setdefault(c.command, []).append(c)
    return [cases[(7 * i + 1) % len(cases)] for i, cases in enumerate(by_command.values())]


HUGE_CASES = _huge_selected()
#: commands whose accepted huge value runs a (tiny) job: a process pool starts
_SLOW_RESULT = ("sweep",)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow)
                                  if c.command in _SLOW_RESULT else c for c in HUGE_CASES],
                         ids=lambda c: c.id)
def test_huge_value_is_refused_or_answered_fast(case, tmp_path, capsys):
    """Exit 2 with one line, or a result (exit 0) — within 2 s on an idle machine (a loaded
    one: 10x)."""
    t0 = time.perf_counter()
    end = run_cli(hc.argv(case, tmp_path), capsys)
    assert end.how in ("refused", "ok"), (case, end)
    assert time.perf_counter() - t0 < 20, case
