"""Engine benchmarks: what ``attnsignal bench`` and ``benchmarks/bench_engines.py`` print.

:func:`run_bench` times every registered engine (:func:`attnsignal.engines.engine_names`) at
one configuration (default: the reference one, ``d = 1000, R = 50, N = 1000, 30 runs, B = 1``)
in one process and returns rows of measurements and ratios with their targets:

- chain speed-up over literal, per sample        target ≥ 250
- projected speed-up over literal, per sample    target ≥ 20
- chain step time / time numpy's default Generator takes to draw the ``3 L runs`` normal
  variates that step consumes                    target ≤ 0.5

The ratio of each pair is measured in the same process, interleaved, so machine load affects
both sides. The compiled engines use all of numba's threads (``NUMBA_NUM_THREADS``, printed
in the header); literal and numpy are single-threaded apart from BLAS.

:func:`literal_vs_naive` compares the literal engine with the straightforward code a user
would write (a Python loop over runs and samples, one numpy draw of ``X`` per sample).
"""

from __future__ import annotations

import os
import platform
import time
from typing import Any

import numpy as np

from .config import ModelConfig, RunConfig
from .engines import engine_names, get_engine
from .engines.base import run_seeds

__all__ = ["run_bench", "format_bench", "literal_vs_naive", "naive_literal"]

#: Speed-up over the literal engine per sample (by engine name), and the chain's update time
#: over numpy's time for its normals. Engines without a target are timed and reported only.
TARGETS = {"chain": 250.0, "projected": 20.0, "normals": 0.5}
#: Updates timed per repeat (quick, full) by engine name; others get _DEFAULT_STEPS.
_STEPS = {"literal": (1, 3), "projected": (60, 500), "chain": (200, 1500),
          "chain32": (200, 1500)}
_DEFAULT_STEPS = (5, 30)


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _engine_step_seconds(model, run, engine, steps, repeats, eta=1e-3) -> list[float]:
    """Seconds per update (all runs), one value per repeat; the first call compiles/warms."""
    eng = get_engine(engine)
    state = eng.init(model, run, run_seeds(run.seed, run.runs))
    eng.advance(model, run, state, np.full(1, eta))  # compile (cached) and warm up
    out = []
    for _ in range(repeats):
        etas = np.full(steps, eta)
        out.append(_timed(lambda: eng.advance(model, run, state, etas)) / steps)
    return out


def run_bench(
    quick: bool = False,
    *,
    d: int = 1000,
    n_informative: int = 50,
    n_nuisance: int = 1000,
    theta: float = 0.25,
    runs: int = 30,
    batch: int = 1,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Measure the engines; return rows ``{"name", "value", "unit", "target", "ok"}``.

    ``quick=True`` takes a few seconds (fewer steps and repeats; noisier). The full
    benchmark takes about half a minute at the reference configuration.
    """
    import numba

    model = ModelConfig(d=d, n_informative=n_informative, n_nuisance=n_nuisance, theta=theta)
    L = model.n_tokens
    repeats = 3 if quick else 5
    samples = runs * batch

    def run_for(engine: str) -> RunConfig:
        return RunConfig(steps=1, runs=runs, batch=batch, engine=engine, seed=seed)

    def steps_for(engine: str) -> int:
        return _STEPS.get(engine, _DEFAULT_STEPS)[0 if quick else 1]

    # seconds per update (all runs) of every registered engine; the literal engine (slow, no
    # compilation) one repeat, the others the best of `repeats`
    per_update = {}
    for name in engine_names():
        if name == "chain":
            continue  # timed below, interleaved with numpy's normals
        reps = 1 if name == "literal" else repeats
        per_update[name] = min(_engine_step_seconds(model, run_for(name), name,
                                                    steps_for(name), reps))

    # chain and numpy normals, interleaved
    ratio = normals = None
    if "chain" in engine_names():
        eng = get_engine("chain")
        run = run_for("chain")
        chain_steps = steps_for("chain")
        state = eng.init(model, run, run_seeds(seed, runs))
        eng.advance(model, run, state, np.full(1, 1e-3))
        gen = np.random.default_rng(seed)
        n_normals = 3 * L * runs * batch
        buf = np.empty(n_normals)  # drawing only: no allocation or page faults on numpy's side
        gen.standard_normal(out=buf)
        n_draws = max(5, chain_steps // 10)
        chain_t, normal_t, ratios = [], [], []
        for _ in range(repeats):
            etas = np.full(chain_steps, 1e-3)
            c = _timed(lambda: eng.advance(model, run, state, etas)) / chain_steps
            z = _timed(lambda: [gen.standard_normal(out=buf) for _ in range(n_draws)]) / n_draws
            chain_t.append(c)
            normal_t.append(z)
            ratios.append(c / z)
        per_update["chain"] = float(np.median(chain_t))
        normals = float(np.median(normal_t))
        ratio = float(np.median(ratios))

    cfg = (f"d={d}, R={n_informative}, N={n_nuisance}, L={L}, runs={runs}, B={batch}; "
           f"{numba.get_num_threads()} numba threads on {os.cpu_count()} CPUs "
           f"({platform.machine()}), numpy {np.__version__}, numba {numba.__version__}")

    def row(name, value, unit, target=None, ok=None):
        return {"name": name, "value": float(value), "unit": unit, "target": target,
                "ok": ok, "config": cfg}

    per_sample = {name: per_update[name] / samples for name in engine_names()}
    rows = [row(f"{name}: time per sample", per_sample[name], "s") for name in engine_names()]
    if "chain" in per_update:
        rows.append(row("chain: time per update (all runs)", per_update["chain"], "s"))
        rows.append(row(f"numpy: time to draw the {3 * L * samples} normals of one chain update",
                        normals, "s"))
    if "literal" in per_sample:
        for name in engine_names():
            if name == "literal":
                continue
            speedup = per_sample["literal"] / per_sample[name]
            target = TARGETS.get(name)
            rows.append(row(f"{name} speed-up over literal", speedup, "x",
                            None if target is None else f">= {target:g}",
                            None if target is None else speedup >= target))
    if ratio is not None:
        rows.append(row("chain update time / numpy normals time", ratio, "",
                        f"<= {TARGETS['normals']:g}", ratio <= TARGETS["normals"]))
    return rows


def _fmt_value(v: float, unit: str) -> str:
    if unit == "s":
        for scale, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if abs(v) >= scale or u == "ns":
                return f"{v / scale:.3g} {u}"
    if unit == "x":
        return f"{v:,.0f}x" if v >= 100 else f"{v:.3g}x"
    return f"{v:.3g}"


def format_bench(rows: list[dict[str, Any]]) -> str:
    """A plain-text table of :func:`run_bench` (or :func:`literal_vs_naive`) rows."""
    if not rows:
        return ""
    lines = [rows[0].get("config", "")]
    w = max(len(r["name"]) for r in rows)
    for r in rows:
        val = _fmt_value(r["value"], r["unit"])
        tail = ""
        if r.get("target") is not None:
            tail = f"   target {r['target']:<7} {'ok' if r['ok'] else 'MISSED'}"
        lines.append(f"  {r['name']:<{w}}  {val:>12}{tail}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- literal vs naive


def naive_literal(model: ModelConfig, eta: float, steps: int, runs: int, batch: int,
                  seed: int, update: str = "projected") -> np.ndarray:
    """The code a user would write: loops over runs, steps and samples, one numpy draw of
    ``X`` per sample, three mat-vecs for the gradient. Returns the final alignments."""
    rng = np.random.default_rng(seed)
    d, R, L = model.d, model.n_informative, model.n_tokens
    th, be, sg = model.theta, model.beta, model.noise_std
    out = np.empty(runs)
    for r in range(runs):
        q = rng.standard_normal(d)
        q /= np.linalg.norm(q)
        for _ in range(steps):
            g = np.zeros(d)
            for _ in range(batch):
                X = sg * rng.standard_normal((L, d))
                eps = 1.0
                if model.signal_sign == "random" and rng.random() < 0.5:
                    eps = -1.0
                X[:R, 0] += eps * th
                s = be * (X @ q)
                a = np.exp(s - s.max())
                a /= a.sum()
                f = X.T @ a
                F = f @ f
                c = X @ f
                g += 2.0 * be * (X.T @ (a * (c - F)))
            g /= batch
            if update == "riemannian":
                g -= (g @ q) * q
            q = q + eta * g
            q /= np.linalg.norm(q)
        out[r] = q[0]
    return out


def literal_vs_naive(
    *, d: int = 1000, n_informative: int = 50, n_nuisance: int = 1000, runs: int = 30,
    batch: int = 1, steps: int = 2, seed: int = 0,
) -> list[dict[str, Any]]:
    """Seconds per sample of the literal engine and of :func:`naive_literal`, same process,
    and their ratio (naive / literal: above 1 means the engine is faster)."""
    model = ModelConfig(d=d, n_informative=n_informative, n_nuisance=n_nuisance, theta=0.25)
    run = RunConfig(steps=steps, runs=runs, batch=batch, engine="literal", seed=seed)
    samples = steps * runs * batch
    naive_literal(model, 1e-3, 1, 1, 1, seed)  # warm up
    lit = min(_engine_step_seconds(model, run, "literal", steps, 2)) * steps / samples
    nai = min(_timed(lambda: naive_literal(model, 1e-3, steps, runs, batch, seed))
              for _ in range(2)) / samples
    cfg = (f"d={d}, R={n_informative}, N={n_nuisance}, runs={runs}, B={batch}, "
           f"steps={steps}; numpy {np.__version__}")
    mk = lambda n, v, u: {"name": n, "value": float(v), "unit": u, "target": None,  # noqa: E731
                          "ok": None, "config": cfg}
    return [
        mk("literal engine: time per sample", lit, "s"),
        mk("naive loop: time per sample", nai, "s"),
        mk("naive / literal", nai / lit, ""),
        mk("normals per sample (L·d)", (n_informative + n_nuisance) * d, ""),
        mk("literal: ns per token-coordinate", lit / ((n_informative + n_nuisance) * d) * 1e9,
           ""),
    ]


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(format_bench(run_bench(quick="--quick" in sys.argv)))
