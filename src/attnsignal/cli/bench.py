"""``attnsignal bench``: engine speed ratios measured in one process."""

from __future__ import annotations

import typer

from ._app import app
from ._common import out


@app.command("bench")
def bench_cmd(
    quick: bool = typer.Option(False, "--quick", help="a smaller measurement (seconds, not a minute)"),
    check: bool = typer.Option(False, "--check", help="exit with status 1 if a target is missed"),
) -> None:
    """Time the engines at d = 1000, R = 50, N = 1000, 30 runs, B = 1 and print the ratios:
    chain vs literal (target ≥ 250×), projected vs literal (≥ 20×), and the chain's step time
    against numpy's time to draw the 3·L normals per run that step consumes (≤ 0.5)."""
    from ..bench import format_bench, run_bench

    rows = run_bench(quick=quick)
    out.print(format_bench(rows), highlight=False)
    if check and any(r.get("ok") is False for r in rows):
        raise typer.Exit(1)
