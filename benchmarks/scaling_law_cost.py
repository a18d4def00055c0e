"""The cost of the law of a run: the chain's law evolved on a grid (``noise="auto"``, the
default) against the linear-noise law (``noise="linear"``), ``docs/scaling.md``.

Two measurements, each in one process, the two treatments alternating on the same moments:

* E7's law (``attnsignal reproduce``, the proportional path of ``e7_scaling``): for each sign
  and dimension of the quick plan, what ``law_point`` asks of the law — ``samples``,
  ``samples_error`` and the columns of :func:`attnsignal.measure.law_columns` through the
  horizon of E7 — timed after the moments are drawn (they are shared by both treatments and
  timed once, "moments");
* one law evaluation (:func:`attnsignal.theory.escape.hitting_law` with the law's mean step and
  variance) at every ``d`` of the scaling page's configurations B and C, both signs.

Usage::

    nice -n 10 python benchmarks/scaling_law_cost.py [--repeat 3] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

from attnsignal.measure import law_columns
from attnsignal.reproduce.e7_scaling import E7Plan
from attnsignal.theory.escape import hitting_law
from attnsignal.theory.scaling import scaling_law

sys.path.insert(0, str(Path(__file__).parent))
import scaling_law as bench  # noqa: E402

NOISES = ("linear", "auto")


def e7_law_times(repeat: int) -> dict:
    """Seconds per treatment of the law's work for E7's quick plan, best of ``repeat``, and
    the moments' seconds (drawn once, before)."""
    p = E7Plan.quick()
    out = {"moments": 0.0, **{n: 0.0 for n in NOISES}, "points": []}
    for sign in ("fixed", "random"):
        model = replace(p.model, signal_sign=sign)
        t0 = time.perf_counter()
        base = scaling_law(model, target=p.target, c=p.c(sign), path="proportional",
                           n_samples=p.law_samples, seed=0)
        for d in p.dims:  # the moments and exact tables, shared by both treatments
            base._law(d, base.c, noise="linear")
            base._law(d, base.c, 1.0, noise="linear")
            base._law(d, base.c, -1.0, noise="linear")
        out["moments"] += time.perf_counter() - t0
        for d in p.dims:
            row = {"sign": sign, "d": d}
            for noise in NOISES:
                best = float("inf")
                for _ in range(repeat):
                    law = replace(base, noise=noise, _laws={})
                    t0 = time.perf_counter()
                    pred = law.samples(d)
                    law.samples_error(d)
                    law_columns(law, d, int(p.horizon * pred) + 10)
                    best = min(best, time.perf_counter() - t0)
                row[noise] = best
                row[noise + "_samples"] = pred
                out[noise] += best
            out["points"].append(row)
            print(json.dumps(row), flush=True)
    return out


def table_law_times(repeat: int) -> list:
    """Seconds of one ``hitting_law`` call per treatment (best of ``repeat``) at the scaling
    page's rows of B and C."""
    rows = []
    for name in ("B", "C"):
        for sign in ("fixed", "random"):
            law = bench._law(name, sign)
            for d in (100, 1000, 10_000, 100_000):
                how = law.law_method(d, law.c)
                if how == "exact":
                    g, v = law._exact_moments(d, law.c)
                else:
                    g, v, _ = law._step_drift(d, law.c)
                row = {"config": name, "sign": sign, "d": d}
                for noise in NOISES:
                    best = float("inf")
                    for _ in range(repeat):
                        t0 = time.perf_counter()
                        hl = hitting_law(g, v, law.model_at(d).d, law.target, noise=noise)
                        best = min(best, time.perf_counter() - t0)
                    row[noise] = best
                    row[noise + "_used"] = hl.noise
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e7 = e7_law_times(a.repeat)
        tab = table_law_times(a.repeat)
    lin, auto, mom = e7["linear"], e7["auto"], e7["moments"]
    print(f"E7 quick, law work after the moments: linear {lin:.2f} s, auto {auto:.2f} s "
          f"(ratio {auto / lin:.2f}); with the moments ({mom:.1f} s): "
          f"{(mom + lin):.1f} s against {(mom + auto):.1f} s (ratio "
          f"{(mom + auto) / (mom + lin):.2f})")
    for name in ("B", "C"):
        rs = [r for r in tab if r["config"] == name]
        ratios = [r["auto"] / r["linear"] for r in rs]
        print(f"{name}: one law evaluation, auto / linear: {min(ratios):.1f}–{max(ratios):.1f}× "
              f"(linear {min(r['linear'] for r in rs):.2f}–{max(r['linear'] for r in rs):.2f} s, "
              f"auto {min(r['auto'] for r in rs):.2f}–{max(r['auto'] for r in rs):.2f} s)")
    if a.out:
        Path(a.out).write_text(json.dumps({"e7": e7, "table": tab}, indent=1))


if __name__ == "__main__":
    main()
