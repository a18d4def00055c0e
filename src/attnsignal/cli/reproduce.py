"""``attnsignal reproduce``: every experiment of the paper, with the claims checked."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..config import ConfigError
from . import app
from ._common import console, out


@app.command("reproduce")
def reproduce_cmd(
    quick: bool = typer.Option(False, "--quick", help="fewer runs and steps (≤ 90 s on 2 cores); every section, looser stated tolerances"),
    out_dir: Path = typer.Option(Path("reproduction"), "--out", help="output directory (report.md, report.html, figures/, data/)"),
    executor: str = typer.Option("local", "--executor", help="'local' (process pool) or 'dask'"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="address of a running Dask scheduler (with --executor dask)"),
    workers: Optional[int] = typer.Option(None, "--workers", help="worker processes (default: the number of CPU cores)"),
    seed: int = typer.Option(2606, "--seed", help="root seed of every experiment"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bars"),
    profile: bool = typer.Option(False, "--profile", help="print where the wall time went (kernel compilation, each experiment's simulation, theory, figures, I/O); also written to OUT/profile.json"),
) -> None:
    """Reproduce the paper: E1 headline, E2 robustness grid, E3 attention filtering,
    E4 landscape, E5 ODE tracking, and a claims table (PASS / FAIL / "holds only when …").

    Resumes after an interruption (every simulation is a sweep stored under OUT/data).
    Exits with status 1 when a claim that should hold fails.
    """
    from ..claims import CLAIMS_HEADER, claims_table_rows
    from ..reproduce import Plan, reproduce
    from ..reproduce.pipeline import profile_table

    if executor not in ("local", "dask"):
        raise ConfigError("executor", "must be one of 'local', 'dask'", executor)
    if seed < 0:
        raise ConfigError("seed", "must be an integer >= 0", seed)
    plan = Plan.quick(seed) if quick else Plan.full(seed)
    res = reproduce(out_dir, plan=plan, executor=executor, scheduler=scheduler, workers=workers,
                    progress=not quiet, log=(lambda s: None) if quiet else console.print)
    table = Table(title=f"claims ({'quick' if quick else 'full'} mode)", show_lines=True)
    for col in CLAIMS_HEADER:
        table.add_column(col, overflow="fold")
    for c, cells in zip(res.claims, claims_table_rows(res.claims)):
        style = "red" if c.verdict == "FAIL" else ("green" if c.verdict == "PASS" else "yellow")
        table.add_row(*cells[:-1], f"[{style}]{c.verdict}[/]")
    out.print(table)
    out.print(f"report: {out_dir / 'report.html'} (and report.md); wall time {res.timings['total']:.0f} s")
    if profile:
        pt = Table(title="where the wall time went (seconds)")
        for col in ("phase", "wall", "CPU", "note"):
            pt.add_column(col, overflow="fold")
        for row in profile_table(res.profile):
            pt.add_row(*row)
        out.print(pt)
    if res.failed:
        console.print(f"[red]{len(res.failed)} claim(s) that should hold failed[/]")
        raise typer.Exit(1)
