"""``reproduce``: every registered experiment, the theory beside it, and the claims check.

Writes, under ``out``::

    report.md, report.html     the report (HTML self-contained: figures embedded)
    figures/*.png, *.pdf        every figure
    data/<E>/                   the sweep stores (resumable), data/<E>.parquet their frames
    claims.json                 the claims table, machine-readable
    measurements.json           every experiment's typed measurements (numbers only)
    profile.json                where the wall time went (``attnsignal reproduce --profile``)
    .reproduce.lock             held (flock) while a reproduction writes here

One reproduction writes into a directory at a time: a second one started on it is refused at
once (``ConfigError`` naming the directory; exit status 2 on the command line). A reproduction
killed at any point (even with SIGKILL) resumes where it stopped when run again — its sweeps
are stored as they finish — and the new run first deletes the temporary files the killed one
left (:func:`claim_output`), so that a finished directory holds only its results.

The experiments (:data:`~attnsignal.reproduce.registry.EXPERIMENTS`) run side by side, one
thread each, as one task graph: their sweeps' tasks share one process pool
(:class:`~attnsignal.reproduce.scheduler.SharedPool`, costliest task first), an experiment
that ``needs`` another waits for that one's typed measurements, and theory, analysis and
figures run in this process while the pool simulates. The numbers do not depend on the
schedule: every random stream is ``SeedSequence(plan.seed, spawn_key=(experiment, purpose,
…))`` (:mod:`attnsignal.seeds`), whatever runs when or where.

Returns the claims; the command exits non-zero when a claim that should hold fails. When an
experiment fails, the shared pool is shut down (the others stop) and :func:`reproduce` raises
:class:`ExperimentError` naming the first experiment that failed, from its own exception.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import threading
import time
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterator

from .._blas import single_blas_thread
from .._version import __version__
from ..claims import CLAIMS_HEADER, ClaimResult, claims_failed, claims_table_rows
from ..paths import REPRODUCTION_LOCK, file_lock, output_in_use
from ..persistence import remove_temporaries
from ..report import Report, Section
from ..results import atomic_write
from ..seeds import KeyNames
from .claims import check_claims
from .context import ExperimentContext, Shared
from .experiment import Experiment, Measurements
from .plan import Plan
from .registry import EXPERIMENTS, select

__all__ = ["reproduce", "ReproductionResult", "ExperimentError", "claim_output"]

#: held (flock) by the reproduction writing into the directory
LOCK_NAME = REPRODUCTION_LOCK
#: the pool workers' kernel warm-up records during a run (``--profile``), removed at its end
PROFILE_DIR = ".profile"


class ExperimentError(RuntimeError):
    """An experiment of the reproduction failed. Raised by :func:`reproduce` for the *first*
    experiment that failed, from (``__cause__``) that experiment's own exception.

    The experiments share one process pool, which is shut down at the first failure so that
    the others stop instead of finishing for nothing; their failures ("the reproduction's
    pool was shut down", or the first failure again through ``ctx.needed``) are consequences,
    listed in ``secondary`` and named in the message after the cause.

    Attributes: ``experiment`` (its name), ``error`` (its exception), ``secondary`` (names of
    the experiments that stopped after it, in the order they did).
    """

    def __init__(self, experiment: str, error: BaseException, secondary: list[str]):
        self.experiment, self.error, self.secondary = experiment, error, list(secondary)
        msg = f"experiment {experiment} failed: {type(error).__name__}: {error}"
        if secondary:
            msg += (f" (then {', '.join(secondary)} stopped after it: the shared pool is shut "
                    "down at the first failure)")
        super().__init__(msg)

    def __reduce__(self):  # picklable (the reproduction may run in another process)
        return (type(self), (self.experiment, self.error, self.secondary))


class ReproductionResult:
    """What :func:`reproduce` returns: the claims, each experiment's typed measurements
    (``measurements["E1"]``), the output directory, wall times and the profile."""

    def __init__(self, claims: list[ClaimResult], measurements: dict[str, Measurements],
                 out: Path, timings: dict[str, float], profile: dict[str, Any]):
        self.claims = claims
        self.measurements = measurements
        self.out = out
        self.timings = timings
        self.profile = profile

    @property
    def failed(self) -> list[ClaimResult]:
        return claims_failed(self.claims)


def _check_registry() -> None:
    seen: set[str] = set()
    codes = KeyNames()
    for exp in EXPERIMENTS:
        codes.code(exp.name)  # the first part of every stream's key: no two may share a code
        for dep in exp.needs:
            if dep.name not in seen:
                raise RuntimeError(f"{exp.name} needs {dep.name}, which must come earlier in "
                                   "the registry")
        if exp.name in seen:
            raise RuntimeError(f"two experiments are called {exp.name}")
        seen.add(exp.name)


def reproduce(
    out: str | Path = "reproduction",
    *,
    quick: bool = False,
    plan: Plan | None = None,
    only: Any = None,
    executor: str = "local",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> ReproductionResult:
    """Run the experiments, check their claims and write the report. See the module
    docstring. ``plan`` defaults to ``Plan.quick()`` with ``quick``, else ``Plan.full()``.
    ``only``: names of the experiments to run (``["E1", "E3"]``; default: every registered
    one) — the experiments they ``need`` run too; the report, the claims and
    ``measurements.json`` hold those that ran. Raises ConfigError for an unknown name, and
    ConfigError naming ``out`` when another reproduction is writing into it
    (:func:`claim_output`), before any work."""
    from ..sweep.runner import check_executor_options

    # the sweep layer's own validator, before anything is written
    check_executor_options(executor, scheduler, workers)
    _check_registry()
    experiments = select(only)
    t_start, cpu_start = time.perf_counter(), time.process_time()
    plan = plan or (Plan.quick() if quick else Plan.full())
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with claim_output(out):
        return _reproduce(out, plan, experiments, executor, scheduler, workers, progress, log,
                          t_start, cpu_start)


@contextmanager
def claim_output(out: Path) -> Iterator[None]:
    """Hold ``out/.reproduce.lock`` while the block runs (one reproduction per directory)
    and, once it is held, delete what a killed reproduction left there: the temporary files
    of its atomic writes in ``out``, ``out/figures`` and ``out/data`` (each sweep store
    cleans its own) and its profile directory ``out/.profile``.

    Raises ``ConfigError`` (``out: another attnsignal reproduce is running in this
    directory; …; got 'DIR'``) at once when another reproduction holds the lock."""
    with file_lock(out / LOCK_NAME, wait=False,
                   busy=lambda: output_in_use(out, "attnsignal reproduce")):
        for d in (out, out / "figures", out / "data"):
            remove_temporaries(d)
        shutil.rmtree(out / PROFILE_DIR, ignore_errors=True)
        try:
            yield
        finally:
            shutil.rmtree(out / PROFILE_DIR, ignore_errors=True)


def _reproduce(out: Path, plan: Plan, experiments: "list[Experiment[Any, Any]]",
               executor: str, scheduler: str | None,
               workers: int | None, progress: bool, log: Callable[[str], None],
               t_start: float, cpu_start: float) -> ReproductionResult:
    """:func:`reproduce` once ``out`` is claimed."""
    from .scheduler import SharedPool

    profile_dir = out / PROFILE_DIR  # where the pool's workers record their kernel warm-up
    profile_dir.mkdir()
    pool = SharedPool(workers, profile_dir=profile_dir) if executor == "local" else None
    shared = Shared(out=out, executor=executor, scheduler=scheduler, workers=workers, pool=pool,
                    t0=t_start)
    bar = _Progress(progress)
    shared.on_tasks, shared.on_task = bar.add_total, bar.advance
    sections: dict[str, Section] = {}
    threads = []
    # one BLAS thread in this process for the run: the cores are the pool's, and OpenBLAS's
    # threads spin on this process's small products (attnsignal._blas)
    with single_blas_thread():
        try:
            for exp in experiments:
                shared.results[exp.name] = Future()
            for exp in experiments:
                th = threading.Thread(target=_run_one, name=f"experiment-{exp.name}",
                                      args=(exp, plan, shared, sections, log), daemon=True)
                th.start()
                threads.append(th)
            for th in threads:
                th.join()
            if shared.failures:
                (name, exc), rest = shared.failures[0], shared.failures[1:]
                raise ExperimentError(name, exc, [n for n, _ in rest]) from exc
            measurements = {e.name: shared.results[e.name].result() for e in experiments}
            worker_cpu = pool.worker_cpu_seconds() if pool is not None else None
        finally:
            bar.close()
            if pool is not None:
                pool.shutdown()
    t_io = time.perf_counter()
    claims = check_claims(plan, measurements, experiments)
    total = time.perf_counter() - t_start

    ran = ("" if len(experiments) == len(EXPERIMENTS) else
           "Experiments run: " + ", ".join(e.name for e in experiments) + " (--only). ")
    rep = Report(
        title="attnsignal — reproduction of “Asymptotic Signal Subspace Recovery in Softmax "
              "Attention Models” (arXiv 2606.22406)",
        intro=(ran + f"Mode: **{plan.mode}** · attnsignal {__version__} · "
               f"seed {plan.seed} (every random stream is SeedSequence(seed, spawn_key="
               f"(experiment, purpose, …))) · Python {platform.python_version()} · wall time "
               f"{total:.0f} s."),
        note=("**Quick mode: a smoke test, not the paper reproduced.** Every experiment runs at "
              "reduced size (fewer runs, fewer samples), so each claim row checks a proxy at "
              "its own, looser tolerance (\"proxy PASS\"), and the numbers are not the "
              "paper's: `attnsignal reproduce` without `--quick` checks the claims themselves."
              if plan.is_quick else ""),
    )
    cs = rep.section("Claims of the paper, checked", anchor="claims")
    cs.table(claims_table_rows(claims, quick=plan.is_quick, links=True), header=CLAIMS_HEADER,
             collapse=False)
    cs.para("Each claim links to the section that holds its evidence (figures and tables).")
    for exp in experiments:
        # the claims table links to the experiments by name
        rep.sections.append(sections[exp.name].set_anchor(exp.name.lower()))
    timings = {e.name: shared.timings[e.name].wall for e in experiments} | {"total": total}
    _timings_section(rep.section("Timings", anchor="timings"), shared, total)
    rep.write(out)
    atomic_write(out / "claims.json", lambda p: Path(p).write_text(
        json.dumps([asdict(c) | {"failed": c.failed} for c in claims], indent=2, ensure_ascii=False)))
    meas_json = {"mode": plan.mode, "quick": plan.is_quick, "seed": plan.seed,
                 **{name: m.to_json() for name, m in measurements.items()}, "timings": timings}
    atomic_write(out / "measurements.json", lambda p: Path(p).write_text(
        json.dumps(meas_json, indent=2)))
    prof = _profile(shared, profile_dir, t_start, cpu_start, worker_cpu,
                    io=time.perf_counter() - t_io, total=time.perf_counter() - t_start)
    atomic_write(out / "profile.json", lambda p: Path(p).write_text(json.dumps(prof, indent=2)))
    return ReproductionResult(claims, measurements, out, timings, prof)


def _timings_section(sec: Section, shared: Shared, total: float) -> None:
    """Per experiment: when it ran, its tasks' time on the pool's workers and its thread's
    CPU time in this process; the shares of the wall time add up to the total."""
    rows, spent = [], {}
    for name, t in shared.timings.items():
        spent[name] = (t.worker_seconds + t.theory_seconds, t.cpu)
    grand = sum(w + h for w, h in spent.values()) or 1.0
    for name, (worker, here) in spent.items():
        t = shared.timings[name]
        rows.append([name, f"{t.start:.0f}–{t.end:.0f} s", f"{worker:.1f}", f"{here:.1f}",
                     f"{worker + here:.1f}", f"{total * (worker + here) / grand:.1f}"])
    rows.append(["all", f"0–{total:.0f} s", f"{sum(w for w, _ in spent.values()):.1f}",
                 f"{sum(h for _, h in spent.values()):.1f}", f"{grand:.1f}", f"{total:.1f}"])
    sec.table(rows, header=["experiment", "ran (since start)", "pool tasks (s)",
                            "this process (CPU s)", "work (s)", "share of the wall time (s)"])
    sec.para("The experiments run side by side — one thread each, their simulations on one "
             "shared process pool — so their spans (second column) overlap and do not add up. "
             "\"Work\" is what an experiment itself cost: its pool tasks (simulations and "
             "theory, each on one worker's single compute thread, timed there) and its "
             "thread's CPU time in this process (analysis, figures, prose). The wall time is "
             "split in proportion to the work, so the last column adds up to the total (the "
             "workers' start-up and the report's writing are spread with it). "
             "`attnsignal reproduce --profile` breaks each experiment down further.")


def _run_one(exp: Experiment[Any, Any], plan: Plan, shared: Shared,
             sections: dict[str, Section], log: Callable[[str], None]) -> None:
    """One experiment: run, figures (one at a time), report section."""
    fut = shared.results[exp.name]
    timing = shared.timings[exp.name]
    timing.start = time.perf_counter() - shared.t0
    cpu0 = time.thread_time()
    try:
        log(f"[{exp.name}] running")
        p = plan.section(exp)
        m = exp.run(p, ExperimentContext(exp, plan, shared))
        fut.set_result(m)  # experiments that need this one go on
        with shared.figure_lock:
            t = time.perf_counter()
            exp.figures(p, m, shared.figure_dir)
            timing.figures = time.perf_counter() - t
        t = time.perf_counter()
        sections[exp.name] = exp.report_section(p, m, shared.figure_dir)
        timing.report = time.perf_counter() - t
        timing.end = time.perf_counter() - shared.t0
        timing.cpu = time.thread_time() - cpu0
        log(f"[{exp.name}] done in {timing.wall:.1f} s")
    except BaseException as exc:
        timing.end = time.perf_counter() - shared.t0
        if shared.record_failure(exp.name, exc):
            log(f"[{exp.name}] failed: {type(exc).__name__}: {exc}")
        if not fut.done():
            fut.set_exception(exc)
        else:  # figures or prose failed after the measurements were published
            shared.results[exp.name] = _failed(exc)
        if shared.pool is not None:
            shared.pool.shutdown()  # the others fail fast instead of finishing for nothing


def _failed(exc: BaseException) -> Future:
    f: Future = Future()
    f.set_exception(exc)
    return f


def _profile(shared: Shared, profile_dir: Path, t_start: float, cpu_start: float,
             worker_cpu: float | None, *, io: float, total: float) -> dict[str, Any]:
    """Where the wall time went (seconds): see :func:`profile_table`."""
    warm = []
    for f in sorted(Path(profile_dir).glob("worker-*.json")):
        try:
            warm.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            pass
        f.unlink(missing_ok=True)
    try:
        os.rmdir(profile_dir)
    except OSError:
        pass
    exps = {}
    for name, t in shared.timings.items():
        exps[name] = {"start": t.start, "end": t.end, "wall": t.wall, "waiting": t.waiting,
                      "compute": t.compute, "io": t.io, "figures": t.figures,
                      "report": t.report, "worker_seconds": t.worker_seconds, "tasks": t.tasks,
                      "theory_seconds": t.theory_seconds, "theory_cpu": t.theory_cpu,
                      "theory_tasks": t.theory_tasks}
    return {
        "total_wall": total,
        "coordinator_cpu": time.process_time() - cpu_start,
        "worker_cpu": worker_cpu,
        "workers": shared.pool.workers if shared.pool is not None else None,
        "kernel_warmup": [w["warm_seconds"] for w in warm],
        "kernel_warmup_cpu": [w["warm_cpu_seconds"] for w in warm],
        "report_io": io,
        "experiments": exps,
    }


def profile_table(prof: dict[str, Any]) -> list[list[str]]:
    """Rows (phase, wall s, CPU s, note) of a profile written by :func:`reproduce`.

    An experiment's rows overlap the others' in time: "waited" is the wall time its thread
    spent waiting for its sweeps (or for an experiment it needs) while the pool ran
    everyone's tasks; the kernel rows are per worker, in parallel."""
    rows = []
    warm = prof.get("kernel_warmup") or []
    if warm:
        cpu = sum(prof.get("kernel_warmup_cpu") or warm)
        rows.append(["kernel load / compile (each pool worker, in parallel)",
                     f"{max(warm):.1f}", f"{cpu:.1f}", f"{len(warm)} worker(s)"])
    for name, e in prof["experiments"].items():
        rows.append([f"{name} simulation (pool tasks)", f"{e['waiting']:.1f} waited", "",
                     f"{e['tasks']} task(s), {e['worker_seconds']:.1f} s of task time in the "
                     "workers"])
        if e.get("theory_tasks"):
            rows.append([f"{name} theory (pool tasks)", "",
                         f"{e.get('theory_cpu', e['theory_seconds']):.1f}",
                         f"{e['theory_tasks']} task(s), {e['theory_seconds']:.1f} s of task time, "
                         "beside the simulations"])
        rows.append([f"{name} theory + analysis (this process)", f"{e['compute']:.1f}", "", ""])
        rows.append([f"{name} figures", f"{e['figures']:.1f}", "", ""])
        rows.append([f"{name} I/O (load sweeps, write frames) + prose",
                     f"{e['io'] + e['report']:.1f}", "", f"{e['start']:.0f}–{e['end']:.0f} s"])
    rows.append(["report, claims, JSON (I/O)", f"{prof['report_io']:.1f}", "", ""])
    cpu = prof["coordinator_cpu"] + (prof["worker_cpu"] or 0.0)
    rows.append(["total", f"{prof['total_wall']:.1f}", f"{cpu:.1f}",
                 f"coordinator {prof['coordinator_cpu']:.1f} s CPU, workers "
                 + (f"{prof['worker_cpu']:.1f} s CPU" if prof["worker_cpu"] is not None
                    else "not measured")])
    return rows


class _Progress:
    """One progress bar over every sweep task of the reproduction (stderr), or nothing."""

    def __init__(self, enabled: bool):
        self.prog = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.prog = Progress(TextColumn("[bold]simulation tasks"), BarColumn(),
                             MofNCompleteColumn(), TimeElapsedColumn(),
                             console=Console(stderr=True))
        self.prog.start()
        self.task = self.prog.add_task("tasks", total=0)
        self.total = 0

    def add_total(self, n: int) -> None:
        if self.prog is not None:
            self.total += n
            self.prog.update(self.task, total=self.total)

    def advance(self, n: int) -> None:
        if self.prog is not None:
            self.prog.advance(self.task, n)

    def close(self) -> None:
        if self.prog is not None:
            self.prog.stop()
