"""Hostile cases generated from the command line's own definitions (the click tree typer
builds): every command, every option, values chosen by the option's kind — so that a command
or option added later is covered without a line written for it.

Kinds (read from the option itself):

* a switch (``--plot/--no-plot``, ``--quiet``): given a value, ``--quiet=bogus``;
* an output directory (``--out``): a regular file, a path below a regular file, ``''``;
* an input file (``--config``, ``--slurm-config``, a ``TOML`` metavar): a missing file, a
  directory, ``''``;
* a number (metavar ``INT``/``NUMBER``, or an option read as one): ``''``, text, ``nan``,
  ``inf``, ``-10^30``, ``10^30``, ``2^63 − 1``;
* any other value (names, lists, Slurm values, addresses): ``''``, ``a;b $(id)``.

Each case is ``(command, option, class, argv)``: the command's cheap base argument list
(:data:`BASES`) with the option set to the hostile value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from attnsignal.cli import _register, app

SMALL = ["--d", "4", "--n-informative", "1", "--n-nuisance", "2", "--theta", "1"]
#: The cheapest argument list of each command (SPEC: a tiny sweep spec). A command missing
#: here has no cases, and the suite fails on it.
BASES: dict[str, list[str]] = {
    "run": ["run", *SMALL, "--eta0", "0.1", "--steps", "2", "--runs", "1", "--engine", "chain",
            "--no-plot", "--quiet"],
    "baseline": ["baseline", *SMALL, "--steps", "2", "--runs", "1", "--no-plot"],
    "advise": ["advise", *SMALL, "--no-plot"],
    "landscape": ["landscape", *SMALL, "--points", "5", "--methods", "asymptotic", "--no-plot",
                  "--quiet"],
    "ode": ["ode", *SMALL, "--no-plot", "--quiet"],
    "sweep": ["sweep", "SPEC", "--quiet"],
    "reproduce": ["reproduce", "--quick", "--quiet"],
    "bench": ["bench", "--quick"],
    "scaling": ["scaling", *SMALL, "--dims", "10", "--runs", "0", "--no-plot"],
    "validate": ["validate", "--configs", "1", "--runs", "2", "--quiet"],
    "compare": ["compare", "RESULT", "--no-theory", "--quiet"],
}
NUMBER_METAVARS = {"INT", "NUMBER"}
#: numbers read from plain text options (their metavar is not a constraint's)
NUMBER_OPTIONS = {"--target", "--rho0", "--compare-eta0", "--compare-k0", "--compare-power",
                  "--workers", "--seed", "--t-max", "--points", "--mc-samples", "--chunk-runs"}
E30 = str(10 ** 30)


@dataclass(frozen=True)
class Case:
    command: str
    option: str
    klass: str
    value: str

    @property
    def id(self) -> str:
        return f"{self.command} {self.option} {self.klass}"


def commands() -> dict[str, object]:
    """The click commands of ``attnsignal``, by name."""
    _register()
    return dict(typer.main.get_command(app).commands)


def option_kind(p) -> str:
    if p.is_flag:
        return "switch"
    name = p.opts[0]
    if name == "--out":
        return "out"
    if name in ("--config", "--slurm-config") or p.metavar == "TOML":
        return "input"
    if p.metavar in NUMBER_METAVARS or name in NUMBER_OPTIONS:
        return "number"
    return "text"


VALUES = {
    "switch": {"given a value": "bogus"},
    "out": {"a file": "FILE", "below a file": "FILE/sub", "empty": ""},
    "input": {"missing": "MISSING", "a directory": "DIR", "empty": ""},
    "number": {"empty": "", "text": "abc", "nan": "nan", "inf": "inf", "-10^30": "-" + E30,
               "10^30": E30, "2^63-1": str(2 ** 63 - 1)},
    "text": {"empty": "", "shell": "a;b $(id)"},
}


def generate() -> list[Case]:
    cases = []
    for name, cmd in commands().items():
        for p in cmd.params:
            if p.param_type_name != "option" or p.opts[0] in ("--help",):
                continue
            kind = option_kind(p)
            for klass, value in VALUES[kind].items():
                cases.append(Case(name, p.opts[0], f"{kind}: {klass}", value))
    return cases


def _saved_result(tmp: Path) -> Path:
    """A tiny saved run (2 chain steps) for the commands that read results."""
    from attnsignal import ModelConfig, StepSize, simulate

    where = tmp / "result"
    simulate(ModelConfig(d=4, n_informative=1, n_nuisance=2, theta=1.0), StepSize(eta0=0.1),
             steps=2, runs=1, engine="chain", seed=0).save(where)
    return where


def argv(case: Case, tmp: Path) -> list[str]:
    """The base argument list of the case's command with its option set to the value (paths
    placed under ``tmp``)."""
    files = {"FILE": tmp / "file", "FILE/sub": tmp / "file" / "sub", "MISSING": tmp / "missing.toml",
             "DIR": tmp}
    (tmp / "file").write_text("a regular file\n")
    spec = tmp / "spec.toml"
    spec.write_text(TINY_SPEC)
    base = [str(spec) if a == "SPEC" else str(_saved_result(tmp)) if a == "RESULT" else a
            for a in BASES[case.command]]
    value = str(files.get(case.value, case.value))
    out, i = [], 0
    while i < len(base):  # drop the base's own setting of the option
        a = base[i]
        if a == case.option:
            i += 1 if (i + 1 == len(base) or base[i + 1].startswith("--")) else 2
            continue
        out.append(a)
        i += 1
    if case.klass.startswith("switch"):
        return out + [f"{case.option}={value}"]
    if case.option != "--out":
        out += ["--out", str(tmp / "o")] if case.command not in ("bench",) else []
    return out + [case.option, value]


TINY_SPEC = """\
[sweep]
seed = 1
runs = 2
steps = 3
engine = "chain"
[model]
d = 4
n_informative = 1
n_nuisance = 2
theta = 1.0
[step]
eta0 = 0.1
[grid]
"model.theta" = [0.5, 1.0]
"""
