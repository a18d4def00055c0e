"""Scaling laws: the exact structure in d, the moments as polynomials in D against the reduced
sampler and the quadrature, and a cheap, seeded slice of the law against the chain engine
(the full comparison, to d = 10⁵, is ``benchmarks/scaling_law.py``; ``docs/scaling.md``).

Tolerances are stated where they are used; every comparison with a simulation has a fixed seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnsignal import ConfigError, ModelConfig
from attnsignal.theory import landscape
from attnsignal.theory.dimension_moments import STATISTICS, dimension_moments
from attnsignal.theory.reduced import accumulate, reduced_chunks
from attnsignal.theory.scaling import scaling_law, step_scale, time_scale

SMALL = dict(n_informative=3, n_nuisance=9, theta=1.2, beta=1.3)
SLICE = dict(n_informative=4, n_nuisance=16, theta=2.0, beta=1.0)


# --------------------------------------------------------------------------- exact in d


def test_objective_is_affine_in_d():
    """Φ_d = Φ_A + (d − 1)Ψ: second differences in d vanish (quadrature, ~1e-13)."""
    rho = np.linspace(-0.9, 0.9, 7)
    phis = [landscape(ModelConfig(d=d, **SMALL), rho).phi for d in (3, 40, 77)]
    assert np.allclose(phis[2] - 2 * phis[1] + phis[0], 0.0, atol=1e-11 * np.abs(phis[2]).max())


@pytest.mark.parametrize("sign", ["fixed", "random"])
def test_psi_prime_vanishes_at_zero(sign):
    """Ψ'(0) = 0 by exchangeability at ρ = 0 (both signs), Ψ''(0) > 0: a saddle of the
    d-proportional drift."""
    m3 = ModelConfig(d=3, signal_sign=sign, **SMALL)
    m4 = ModelConfig(d=1003, signal_sign=sign, **SMALL)
    h = 1e-3
    r = np.array([-h, 0.0, h])
    psi = (landscape(m4, r).dphi - landscape(m3, r).dphi) / 1000.0
    assert abs(psi[1]) < 1e-12
    assert (psi[2] - psi[0]) / (2 * h) > 1e-3


# --------------------------------------------------------------------------- moments in D


@pytest.mark.parametrize("sign", ["fixed", "random"])
def test_moments_in_d_match_the_reduced_sampler_at_each_d(sign):
    """The D-polynomials of E[g_e], E[g_q], E[g_e²], E[g_q g_e], E[g_q²], E||u||² against direct
    reduced-sampler means at d = 6, 60, 3000 (independent draws; |z| < 4.5 for all 54)."""
    rho = np.array([-0.4, 0.1, 0.6])
    base = ModelConfig(d=10, signal_sign=sign, **SMALL)
    dm = dimension_moments(base, rho, n_samples=6000, seed=3)
    for d in (6, 60, 3000):
        m = base.replace(d=d)
        mu, cov, n = accumulate(m, rho, 20000, 11, lambda p, r: np.stack(
            [p.g_e, p.g_q, p.g_e ** 2, p.g_q * p.g_e, p.g_q ** 2, p.u2], 1))
        se = np.sqrt(np.diagonal(cov, axis1=1, axis2=2) / n)
        for i, st in enumerate(STATISTICS):
            z = (dm.mean(st, d) - mu[:, i]) / np.hypot(dm.stderr(st, d), se[:, i])
            assert np.all(np.abs(z) < 4.5), (sign, d, st, z)


def test_drift_from_the_moments_matches_the_quadrature():
    """s E[g_e] from the polynomial at any d equals (1 − ρ²)Φ'_d (|z| < 4 at three d)."""
    rho = np.array([-0.5, 0.2, 0.7])
    base = ModelConfig(d=10, **SMALL)
    dm = dimension_moments(base, rho, n_samples=8000, seed=5)
    s = np.sqrt(1 - rho ** 2)
    for d in (5, 500, 50_000):
        field = landscape(base.replace(d=d), rho).field
        z = (s * dm.mean("g_e", d) - field) / (s * dm.stderr("g_e", d))
        assert np.all(np.abs(z) < 4.0), (d, z)


def test_leading_coefficient_is_two_beta_squared_rho_times_the_fourth_moment():
    """κ's D³ coefficient is 2β²ρ E Σ α_i²(α_i − n²)² — the same draws, to rounding."""
    m = ModelConfig(d=10, **SMALL)
    rho = np.array([-0.3, 0.4])
    dm = dimension_moments(m, rho, n_samples=3000, seed=9)
    k3 = dm.kappa_coefficients("projected")[0][:, 3]
    assert np.allclose(k3, dm.kappa_coefficients("riemannian")[0][:, 3], rtol=1e-12)
    draws = next(reduced_chunks(m, 3000, 9))
    for r, k in zip(rho, k3):
        s = draws.a.copy()
        s[:, :m.n_informative] += m.theta * r
        z = m.beta * s
        a = np.exp(z - z.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        n2 = (a * a).sum(1, keepdims=True)
        M = ((a * a) * (a - n2) ** 2).sum(1).mean()
        assert k == pytest.approx(2 * m.beta ** 2 * r * M, rel=1e-9)


# --------------------------------------------------------------------------- the law


#: L = 300 and 4 000 draws: two chunks of the reduced sampler, whose γ² ~ χ²_D draws between
#: them consume a D-dependent share of the stream at seed 1 (d = 10² against 10⁴)
MULTI_CHUNK = dict(n_informative=30, n_nuisance=270, theta=1.5, beta=0.8)


def test_moments_in_d_are_the_same_draws_whatever_the_models_d():
    """One seed, one set of coefficients: the model's d enters neither the polynomials nor the
    draws (bit for bit at d = 10² and 10⁴, over two chunks of draws)."""
    rho = np.array([0.3])
    dm = [dimension_moments(ModelConfig(d=d, **MULTI_CHUNK), rho, n_samples=4000, seed=1)
          for d in (100, 10_000)]
    assert np.array_equal(dm[0].coef, dm[1].coef) and np.array_equal(dm[0].cov, dm[1].cov)


def test_law_does_not_depend_on_the_order_the_dimensions_are_evaluated(monkeypatch):
    """samples(d) is a function of (model, options, seed, d): d = 10⁴ before or after 10²
    gives the same values, bit for bit (7 nodes instead of 33 and the fixed sign keep it
    cheap: the moments' draws are the fixed-sign model's for both signs, and the order
    dependence does not involve the nodes)."""
    import attnsignal.theory.scaling as scaling

    monkeypatch.setattr(scaling, "_NODES", 7)
    m = ModelConfig(d=1000, **MULTI_CHUNK)

    def law():
        return scaling_law(m, target=0.5, c=0.01, n_samples=4000, seed=1, method="expansion")

    up, down = law(), law()
    first = [up.samples(100), up.samples(10_000)]
    second = [down.samples(10_000), down.samples(100)][::-1]
    assert first == second and np.isfinite(first).all(), (first, second)


@pytest.fixture(scope="module")
def slice_laws():
    """The expansion's laws (the limit, the closed forms and the critical c are the
    expansion's; the exact-moment law has its own tests below, the benchmark the rest)."""
    return {s: scaling_law(ModelConfig(d=1000, signal_sign=s, **SLICE), target=0.5, c=0.02,
                           n_samples=2000, seed=1, method="expansion")
            for s in ("fixed", "random")}


@pytest.fixture(scope="module")
def random_limit(slice_laws):
    return slice_laws["random"].limit()


def test_step_and_time_scales():
    assert step_scale(1000, 20) == pytest.approx((20 / 1020) ** 2)
    assert time_scale(1000, 20) == pytest.approx(51.0)
    law = scaling_law(ModelConfig(d=100, **SLICE), target=0.5, c=0.5, n_samples=200)
    assert law.step_size(10_000) == pytest.approx(0.5 * (20 / 10_020) ** 2)
    prop = scaling_law(ModelConfig(d=100, **SLICE), target=0.5, c=0.5, n_samples=200,
                       path="proportional")
    m = prop.model_at(1000)
    assert (m.n_informative, m.n_nuisance) == (40, 160)
    assert prop.step_size(1000) == pytest.approx(prop.step_size(100))  # s is constant on it


def test_limit_constants_are_consistent(random_limit):
    """The fixed-L limit: λ(c) = c f'(0) − c² k'(0) vanishes at f'/k' (where ρ = 0 turns
    stable); c_escape = f'/(2k') maximises it; the target's critical c is below f'/k'."""
    lim = random_limit
    assert lim.rate(lim.f1 / lim.k1) == pytest.approx(0.0, abs=1e-12)
    assert lim.c_escape == pytest.approx(0.5 * lim.f1 / lim.k1)
    assert 0 < lim.c_critical <= lim.f1 / lim.k1 * (1 + 1e-3)
    assert lim.c_optimal == min(lim.c_escape, lim.c_critical)


def test_escape_law_of_the_random_sign_is_the_closed_form(slice_laws):
    """At d = 10⁴ the start sits at the saddle: the quadrature's hitting-time mean and spread
    agree with (1/λ)[ln(X/σ_A) + (γ_E + ln 2)/2] + C̄ and π/(2√2 λ) to a few per cent (the
    closed form neglects the non-linearity of the drift within the start's spread)."""
    e = slice_laws["random"].law(10_000).escape
    assert e is not None and abs(e.root) < 1e-12
    assert e.mean == pytest.approx(e.mean_closed, rel=0.02)
    assert e.sd == pytest.approx(e.sd_closed, rel=0.05)
    assert e.noise_sd > 0.3 * e.initial_sd  # the accumulated noise is of the start's order


def test_law_matches_the_chain_on_a_cheap_slice(slice_laws, chain_simulate):
    """d = 100, 64 runs, both signs: the predicted samples within the measured 95 % bootstrap
    interval widened by the law's error (Monte-Carlo error of κ, and 5 % for the O(1/d) terms
    at this small d). Larger d, more runs and the other configurations: the benchmark."""
    from attnsignal.measure import measure_samples

    for sign, law in slice_laws.items():
        for d in (100,):
            pred = law.samples(d)
            ms = measure_samples(law.model_at(d), law.step(d), 0.5, steps=int(3 * pred),
                                 runs=64, seed=7, n_records=100)
            slack = 0.05 * pred + law.samples_error(d)
            lo, hi = ms.interval
            assert lo - slack <= pred <= hi + slack, (sign, d, pred, ms.samples, ms.interval)


def test_the_law_of_a_run_takes_the_scaling_laws_noise_treatment(slice_laws):
    """``scaling_law(noise=...)`` reaches ``hitting_law``: each treatment's samples are those of
    ``hitting_law`` on the law's own mean step and variance (to rounding), and by default the
    fixed sign at d = 100 (a noise share of about 0.5: the grid resolves its spread) takes the
    grid, whose samples differ from the linear law's by more than 1 % there."""
    from dataclasses import replace

    from attnsignal.theory.escape import hitting_law

    law = slice_laws["fixed"]
    g, v, _ = law._step_drift(100, law.c)
    got = {}
    for noise in ("grid", "linear"):
        ref = hitting_law(g, v, 100, 0.5, noise=noise)
        got[noise] = replace(law, noise=noise, _laws={}).law(100)
        assert got[noise].noise == noise
        assert got[noise].samples == pytest.approx(ref.samples, rel=1e-12)
    assert law.noise == "auto" and law.law(100).noise == "grid"
    assert abs(got["grid"].samples / got["linear"].samples - 1) > 0.01


def test_censored_hit_statistics_match_exponential_closed_forms():
    """``hit_statistics`` on synthetic hitting steps ``T ~ Exp(μ)`` censored at ``H``
    (``μ = 1000``, ``H = 1500``: 22 % censored): ``hit_mean``, ``hit_sd`` estimate the moments
    of ``T`` given ``T <= H``, ``restricted_*`` those of ``min(T, H)`` — closed forms below.
    8 000 runs: standard errors under 0.9 %; tolerance 3 %. The bootstrap intervals (200
    resamples) contain the truth and their half-widths are 1.96 standard errors within 25 %."""
    from attnsignal.measure import bootstrap_counts, hit_statistics

    mu, H, n = 1000.0, 1500.0, 8000
    rng = np.random.default_rng(3)
    t = rng.exponential(mu, n)
    hits = np.where(t <= H, t, np.nan)
    _, counts = bootstrap_counts(rng, 200, n)
    s = hit_statistics(hits, H, counts)
    e, h = math.exp(-H / mu), H / mu
    p = 1 - e
    m1 = mu * (1 - e * (1 + h)) / p  # E[T | T <= H]
    m2 = mu ** 2 * (2 - e * (h * h + 2 * h + 2)) / p
    r1 = mu * (1 - e)  # E min(T, H)
    r2 = 2 * mu ** 2 * (1 - e * (1 + h))
    truth = {"hit_mean": m1, "hit_sd": math.sqrt(m2 - m1 * m1), "restricted_mean": r1,
             "restricted_sd": math.sqrt(r2 - r1 * r1)}
    for key, val in truth.items():
        assert s[key] == pytest.approx(val, rel=0.03), key
        lo, hi = s[key + "_interval"]
        assert lo <= val <= hi, key
    assert s["restricted_mean"] < s["hit_mean"] + (1 - p) * H + 1e-9  # a censored run counts H
    se = truth["restricted_sd"] / math.sqrt(n)
    lo, hi = s["restricted_mean_interval"]
    assert 0.5 * (hi - lo) == pytest.approx(1.96 * se, rel=0.25)


def test_bootstrap_counts_count_the_resampled_runs():
    """``bootstrap_counts``: the resamples are one ``integers(0, runs, (n_boot, runs))`` draw of
    the generator, and each row of the counts is how often each run is drawn in that resample
    (so ``counts @ x / runs`` is the resample's mean of ``x``)."""
    from attnsignal.measure import bootstrap_counts

    idx, counts = bootstrap_counts(np.random.default_rng(9), 300, 17)
    assert np.array_equal(idx, np.random.default_rng(9).integers(0, 17, (300, 17)))
    assert np.array_equal(counts, [np.bincount(row, minlength=17) for row in idx])
    x = np.arange(17.0) ** 2
    assert np.allclose(counts @ x / 17, x[idx].mean(axis=1), rtol=1e-14)


def test_law_columns_are_the_law_through_the_horizon(slice_laws):
    """``law_columns`` (the law's columns of a ``compare_law`` row and of the benchmark's rows):
    the prediction and the hitting-time law with no horizon, and ``hit_moments(H)`` through
    ``H``; NaN through ``H = 0`` (nothing simulated); a ``compare_law`` row with no runs has
    exactly these columns at its own horizon."""
    from attnsignal.measure import compare_law, law_columns

    law = slice_laws["random"]
    hl, H = law.law(100), 900
    cols = law_columns(law, 100, H)
    hm = hl.hit_moments(H)
    assert (cols["predicted"], cols["hit_mean_predicted"], cols["hit_sd_predicted"]) == (
        hl.samples, hl.hit_mean, hl.hit_sd)
    assert (cols["horizon_steps"], cols["reached_predicted"], cols["hit_mean_conditional"],
            cols["hit_sd_conditional"], cols["hit_sd_kurtosis"],
            cols["restricted_mean_predicted"], cols["restricted_sd_predicted"]) == (
        H, hm.reached, hm.mean, hm.sd, hm.kurtosis, hm.restricted_mean, hm.restricted_sd)
    assert cols["predicted_error"] == law.samples_error(100)
    assert math.isnan(law_columns(law, 100, 0)["hit_mean_conditional"])
    row = compare_law(law, [100], runs=0)[0]
    assert {k: row[k] for k in cols} == law_columns(law, 100, row["horizon_steps"])


@pytest.fixture(scope="module")
def bench():
    """``benchmarks/scaling_law.py`` as a module."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[2] / "benchmarks" / "scaling_law.py"
    spec = importlib.util.spec_from_file_location("scaling_law_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _jsonl(path, rows) -> None:
    import json

    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_benchmark_rows_key_by_point_and_hit_rows_by_seed(tmp_path, bench):
    """``benchmarks/scaling_law.py``: a row's point is ``(kind, config, sign, d)``, and rows
    of kind "hits" of the same point with other base seeds are other points (they pool in
    the hitting-time table); a point read again from a later file, or later in one file,
    replaces the earlier row; the resume set of an output file is its measurements (point,
    base seed, runs, draws), without the rows that have no seed (recovered from the page)."""
    a = {"kind": "samples", "config": "B", "sign": "fixed", "d": 100, "runs": 64,
         "seed": [7, "scaling_law", "B", "fixed", "d", 100]}
    h13 = {"kind": "hits", "config": "B", "sign": "random", "d": 10_000, "runs": 64,
           "seed": [13, "scaling_law", "escapeB", 10_000]}
    h14 = dict(h13, seed=[14, "scaling_law", "escapeB", 10_000])
    old = {"kind": "samples", "config": "B", "sign": "fixed", "d": 1000, "runs": 64,
           "recovered_from": "docs table"}
    assert bench.row_key(a) == ("samples", "B", "fixed", 100)
    assert bench.row_key(h13) == ("hits", "B", "random", 10_000, 13) != bench.row_key(h14)
    f1, f2 = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    _jsonl(f1, (old, a, h13, h14, dict(old, runs=128)))
    _jsonl(f2, [dict(a, runs=256)])
    rows = bench.read_rows([f1, f2])
    assert len(rows) == 4
    assert [r["runs"] for r in rows if r["kind"] == "samples"] == [128, 256]
    assert bench._done(f1) == {("samples", "B", "fixed", 100, 7, 64, None),
                               ("hits", "B", "random", 10_000, 13, 13, 64, None),
                               ("hits", "B", "random", 10_000, 14, 14, 64, None)}
    assert bench._table_files(str(f1), f1) == [f1]
    assert bench._table_files(str(f1), f2) == [f1, f2]


def _synthetic_rows() -> list[dict]:
    """One row of each kind the page's tables show, measurements and the law's columns
    (made-up values; the hitting-step moments and one chain's c finer than the tables print,
    the other measurements at the precision they print)."""
    law_hit = {"hit_mean_predicted": 1234.4, "hit_sd_predicted": 456.7, "reached_predicted": 0.981,
               "hit_mean_conditional": 1200.2, "hit_sd_conditional": 400.9,
               "hit_sd_kurtosis": 1.5, "restricted_mean_predicted": 1220.6,
               "restricted_sd_predicted": 430.1}
    hits = {"horizon_steps": 3000, "hit_mean": 1190.37, "hit_sd": 410.62,
            "restricted_mean": 1215.0, "restricted_sd": 433.0}
    samples = {"kind": "samples", "config": "B", "sign": "random", "d": 1000, "L": 5000,
               "runs": 64, "c": 0.001, "measured": 1150.0, "measured_lo": 1100.0,
               "measured_hi": 1210.0, "iqr": 500.0, "iqr_lo": 400.0, "iqr_hi": 610.0,
               "reached": 63 / 64, "reached_runs": 63, **hits}
    law_samples = {"predicted": 1180.3, "predicted_error": 2.2, "law_method": "exact",
                   "predicted_expansion": 1175.9, "iqr_predicted": 520.4, **law_hit}
    summary = {"kind": "hits_summary", "config": "C", "sign": "random", "d": 1000, "runs": 960,
               "seeds": [20, 21], "reached": 935 / 960, "reached_runs": 935, **hits,
               "hit_mean_lo": 1170.0, "hit_mean_hi": 1210.0, "hit_sd_lo": 390.0,
               "hit_sd_hi": 430.0}
    crit = {"kind": "critical", "config": "A", "sign": "fixed", "d": 10_000, "sides": {
        "1": {"c_chain": 0.06721, "lo": 0.06713, "hi": 0.06729, "steps": 168_629,
              "c_law_recorded": 0.06793},
        "-1": {"c_chain": 0.022503, "lo": 0.02244, "hi": 0.02256, "steps": 168_629,
               "c_law_recorded": 0.02202, "c_chain_q3": 0.02249, "c_chain_q4": 0.02251}}}
    law_crit = {"1": {"c_law": 0.06793, "c_law_expansion": 0.06793},
                "-1": {"c_law": 0.02202, "c_law_expansion": 0.02202}}
    return [samples, summary, crit], [law_samples, law_hit, law_crit]


def test_benchmark_tables_recovered_from_the_page_round_trip(tmp_path, bench):
    """``recover_rows`` reads back from the page's tables what ``table`` wrote into them: the
    measurements of a samples row (with and without the hitting-time intervals), of a pooled
    "hits_summary" row and of a critical row (both branches, one with quarters), as printed;
    ``refine_rows`` narrows the hitting-step moments and the chain's c by the cells that
    print them against the law, to ranges that hold the values written, so the rows, given
    the same law's columns, make the same tables. The table refuses rows without the law's
    columns; a point's rows of kind "hits" replace its summary."""
    measured, law = _synthetic_rows()
    no_ci = {k: v for k, v in measured[0].items() if not k.startswith(("hit_mean_", "hit_sd_"))}
    no_ci.update(d=100)
    measured.insert(1, no_ci)
    law.insert(1, law[0])

    def with_law(rows):
        out = []
        for r, lw in zip(rows, law):
            if r["kind"] == "critical":
                out.append(dict(r, sides={s: {**v, **lw[s]} for s, v in r["sides"].items()}))
            else:
                out.append({**r, **lw})
        return out

    src = tmp_path / "rows.jsonl"
    _jsonl(src, with_law(measured))
    text = bench.table([src])
    assert text.count("\n\n") == 2 and "960 (20+21)" in text
    page = f"# p\n{bench.DOCS_BEGIN}\n{text}\n{bench.DOCS_END}\n"
    got = bench.recover_rows(page)
    assert {r["kind"] for r in got} == {"samples", "hits_summary", "critical"}
    assert all(r["recovered_from"] == "docs table" for r in got)
    key = {bench.row_key(r): r for r in got}
    printed = [dict(r, hit_mean=round(r["hit_mean"]), hit_sd=round(r["hit_sd"]))
               if "hit_mean" in r else r for r in measured]
    printed[-1] = dict(measured[-1], sides=dict(measured[-1]["sides"]))
    printed[-1]["sides"]["-1"] = dict(printed[-1]["sides"]["-1"], c_chain=0.0225)
    for r in printed:
        g = {k: v for k, v in key[bench.row_key(r)].items()
             if k not in ("recovered_from", "precision")}
        assert g == r
    rec = tmp_path / "recovered.jsonl"
    _jsonl(rec, got)
    with pytest.raises(ValueError, match="--repredict"):
        bench.table([rec])
    got = [key[bench.row_key(r)] for r in measured]
    fine = bench.refine_rows(got, page, with_law(got))
    for r, f in zip(measured, fine):
        for k, v in (r["sides"]["-1"] if "sides" in r else r).items():
            rng = (f["sides"]["-1"] if "sides" in r else f)["refined"].get(k)
            if rng is not None:
                assert rng[0] <= v <= rng[1] and rng[1] - rng[0] < (1.0 if v > 1 else 1e-5)
    _jsonl(rec, with_law(fine))
    assert bench.table([rec]) == text
    with pytest.raises(ValueError, match="law"):
        bench.refine_rows(got, page, with_law(got)[:-1] + [
            dict(got[-1], sides={s: dict(v, c_law=0.03) for s, v in got[-1]["sides"].items()})])
    hits = dict(measured[2], kind="hits", hits=[100.0, 200.0, float("nan")],
                horizon_steps=3000, seed=[5, "scaling_law", "escapeC", 1000])
    pooled = [r for r in bench.hit_rows(with_law(measured)[:3] + [hits])
              if r["source"] == "hits"]
    assert [(r["runs"], r["seeds"]) for r in pooled] == [(3, [5])]


def test_benchmark_committed_measurements_parse(bench):
    """The committed measurements (``benchmarks/data/scaling/measured.jsonl``) parse into the
    rows the page's tables show: at least the 22 samples points, the two pooled hitting-time
    points recovered as summaries and the seven critical-c points; the hitting-time table has a
    row for each samples point and for each pooled point (``hits`` rows of one point and seed
    pool into one row, a summary is its own)."""
    rows = bench.read_rows([bench.MEASURED])
    kinds = [r["kind"] for r in rows]
    assert kinds.count("samples") >= 22 and kinds.count("critical") >= 7
    assert kinds.count("hits_summary") >= 2
    hit = bench.hit_rows(rows)
    pooled = {(r["config"], r["sign"], r["d"]) for r in rows if r["kind"] == "hits"}
    assert len(hit) == kinds.count("samples") + kinds.count("hits_summary") + len(pooled)
    assert {960, 5120} <= {r["runs"] for r in hit if r["source"] == "hits"}
    for r in rows:
        if r["kind"] != "critical":
            assert 0 < r["reached"] <= 1 and r["horizon_steps"] > 0
        if r["kind"] in ("samples", "hits_summary"):
            assert r["reached_runs"] == round(r["reached"] * r["runs"])
        if r["kind"] == "hits":
            hits = np.asarray(r["hits"], dtype=np.float64)
            assert hits.size == r["runs"]
            assert np.isfinite(hits).mean() == pytest.approx(r["reached"])


def test_critical_c_brackets_the_chain(slice_laws, chain_simulate):
    """Random sign at d = 1000: at 0.9 × c_critical the chain's stationary mean |ρ| (runs
    started at 0.9, the run-mean averaged over the second half) is above the target, at
    1.1 × c_critical below it. (The law's long-run mean is within about 0.01 of the chain's
    there — its O(η³) remainder; 10 % in c moves it by about 0.05.)"""
    law = slice_laws["random"]
    cc = law.c_critical_at(1000)
    steps = int(law.with_c(0.6 * cc).samples(1000))
    means = []
    for f in (0.9, 1.1):
        res = chain_simulate(law.model_at(1000), law.with_c(f * cc).step(1000), steps=steps,
                             runs=16, seed=2, initial_alignment=0.9, record_every=steps // 50)
        a = np.abs(res.alignment)
        means.append(a[:, a.shape[1] // 2:].mean())
        assert law.settled_mean(1000, f * cc, 1) == pytest.approx(means[-1], abs=0.02)
    assert means[0] > 0.5 > means[1]


def test_exact_critical_c_matches_the_expansion_where_the_step_is_small(slice_laws):
    """L = 20 at d = 1000, random sign: the critical step is η ≈ 2e-5, where the O(η²) mean
    step is the exact one to 0.3 % of its finite-step term: the critical c from the exact
    one-step moments (:mod:`attnsignal.theory.settled`) is the expansion's to 5 % (measured
    with 64 000 draws of the exact moments: 0.0496 against the expansion's 0.0480, +3.4 %;
    0.0498 with the default draws), and "auto" keeps the expansion's."""
    law = slice_laws["random"]
    c_exp = law.c_critical_at(1000, method="expansion")
    assert law.c_critical_at(1000) == c_exp
    assert law.c_critical_at(1000, method="exact") == pytest.approx(c_exp, rel=0.05)


def test_law_keeps_the_expansion_where_its_step_is_accurate(slice_laws):
    """L = 20 at d = 1003, random sign, c = 0.01 (η ≈ 3.8e-6): the expansion's mean step is
    the exact one-step mean within 0.6 % (1.5 % at c = 0.02, 0.27 % at c = 0.005: the error
    is the O(η²) term it drops, so it halves with the step; 2 000 draws with the drift's
    control variates, SE ≈ 0.17 %), inside the rule's 1 %: "auto" keeps it — the same law,
    bit for bit. (d = 1003: Φ' there is the law's own quadrature, no other.)"""
    from dataclasses import replace

    d, expansion = 1003, slice_laws["random"].with_c(0.01)
    law = replace(expansion, method="auto", _laws={})
    err, se = law.step_error(d)
    assert err <= 0.01 and se < 0.005 and law.law_method(d) == "expansion"
    assert law.samples(d) == expansion.samples(d)


def test_law_takes_the_exact_one_step_moments_where_the_expansion_is_off():
    """L = 12 at d = 1003, random sign, at 0.8 × the expansion's critical c: the expansion's
    mean step is 8 % off the exact one (2.5 SE): "auto" switches, and the law is a literal
    computation from :func:`one_step_moments` — its mean step and variance at the probes are
    the one-step moments there (common draws: interpolation error only, < 1 %), and its
    samples are those of :func:`hitting_law` on a table of 32 alignments linearly
    interpolated (the symmetry by reflection), to 1 %."""
    from attnsignal.theory.escape import hitting_law
    from attnsignal.theory.moments import one_step_moments

    d = 1003
    law = scaling_law(ModelConfig(d=d, signal_sign="random", **SMALL), target=0.5, c=0.016,
                      n_samples=2000, seed=1)
    err, se = law.step_error(d)
    assert err > max(0.05, 2 * se) and law.law_method(d) == "exact"
    model, eta = law.model_at(d), law.step_size(d)
    m, v = law._exact_moments(d, law.c)
    rr = np.arange(32) / 32.0  # holds the probes 1/8, 1/4, 1/2
    rr[0] = 1e-3
    om = one_step_moments(model, rr, eta, n_samples=2000, seed=1)
    r = np.array([4, 8, 16])
    assert m(rr[r]) == pytest.approx(om.drift_rho[r, 0], rel=0.01)
    assert v(rr[r]) == pytest.approx(om.var_rho[r, 0], rel=0.01)
    x = np.concatenate([-rr[::-1], rr])
    mean = np.concatenate([-om.drift_rho[::-1, 0], om.drift_rho[:, 0]])
    var = np.concatenate([om.var_rho[::-1, 0], om.var_rho[:, 0]])
    literal = hitting_law(lambda q: np.interp(q, x, mean), lambda q: np.interp(q, x, var), d,
                          0.5)
    assert law.samples(d) == pytest.approx(literal.samples, rel=0.01)


def test_bad_input_is_one_line():
    m = ModelConfig(d=100, **SLICE)
    with pytest.raises(ConfigError, match="^path:"):
        scaling_law(m, target=0.5, path="sideways")
    with pytest.raises(ConfigError, match="^target:"):
        scaling_law(m, target=1.5)
    with pytest.raises(ConfigError, match="^schedule:"):
        scaling_law(m, target=0.5, schedule="fast")
    with pytest.raises(ConfigError, match="^model.d:"):
        scaling_law(m.replace(d=3), target=0.5)
    with pytest.raises(ConfigError, match="^c:"):
        scaling_law(m, target=0.5, c=-1.0)
    with pytest.raises(ConfigError, match="^method:"):
        scaling_law(m, target=0.5, c=0.1, method="exact", schedule="optimal")
    with pytest.raises(ConfigError, match="^noise:"):
        scaling_law(m, target=0.5, c=0.1, noise="gaussian")


def test_the_law_at_large_d_tends_to_the_fixed_L_limit(slice_laws, random_limit):
    """At d = 10⁶ the finite-d law's escape rate (per unit t = k/τ) and the ratio of the noise
    to the start's variance are the limit's λ(c) and c² noise/(2λ), to O(1/√d + L/d)."""
    law = slice_laws["random"]
    lim = random_limit
    d = 10 ** 6
    e = law.law(d).escape
    lam = lim.rate(law.c)
    assert e.rate * law.tau(d) == pytest.approx(lam, rel=0.01)
    assert (e.noise_sd / e.initial_sd) ** 2 == pytest.approx(law.c ** 2 * lim.noise / (2 * lam),
                                                             rel=0.02)
    tau = law.tau(d)
    t = lim.escape_time(law.c, d, 0.5, const=0.5 * (e.c_plus + e.c_minus) / tau)
    assert t * tau == pytest.approx(e.mean_closed, rel=0.01)
