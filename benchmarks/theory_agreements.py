"""Theory against independent estimates and simulation, in the tests' configurations: prints the
agreements (not timings) that the theory tests assert with tolerances.

    python benchmarks/theory_agreements.py      # about 15 s on 2 cores

exact Φ vs Monte Carlo (z-scores) and its cost per point; the asymptotic error × L as L grows;
the vector field vs the Monte-Carlo one-step drift; the constant-step plateau vs long chain
runs (B = 1, both updates, and minibatches); the ODE tracking gap for decreasing η0; the fixed
points of the two configurations named in the theory issue.
"""
import time
import warnings
import numpy as np
import attnsignal as asg
from attnsignal.config import ModelConfig, StepSize
from attnsignal.theory import (landscape, drift_mc, vector_field, constant_step_plateau,
                               tracking, fixed_points, landscape_verdict)

warnings.simplefilter("ignore")  # the plateau runs use a constant (not Robbins–Monro) step
t0 = time.time()
rho = np.array([-0.7, 0.15, 0.4, 0.9])
zs = []
for m in [ModelConfig(50, 5, 20, 0.8, 1.5), ModelConfig(30, 3, 10, 1.0, 0.7, noise_std=1.3),
          ModelConfig(20, 4, 8, 1.2, 2.0, signal_sign="random")]:
    ex = landscape(m, rho, "exact"); mc = landscape(m, rho, "mc", n_samples=1_000_000, seed=11)
    zs += list((mc.phi - ex.phi) / mc.phi_stderr) + list((mc.dphi - ex.dphi) / mc.dphi_stderr)
print(f"exact vs mc (1e6 draws, 3 models x 4 rho, phi and dphi): max |z| = {np.max(np.abs(zs)):.2f}")
t = time.perf_counter(); m = ModelConfig(2000, 1000, 20000, 0.25, beta=1.5)
landscape(m, np.linspace(-1, 1, 101), "exact"); print(f"exact: {(time.perf_counter()-t)/101*1e3:.2f} ms per point at R=1e3, N=2e4")
t = time.perf_counter(); m = ModelConfig(2_000_000, 1_000_000, 20_000_000, 0.25, beta=1.5)
landscape(m, np.linspace(-1, 1, 101), "exact"); print(f"exact: {(time.perf_counter()-t)/101*1e3:.2f} ms per point at R=1e6, N=2e7")
r3 = np.array([-0.5, 0.3, 0.95]); sc = []
for R in (1000, 10_000, 100_000, 1_000_000):
    m = ModelConfig(2 * R, R, 20 * R, 0.25, beta=1.5)
    sc.append(m.n_tokens * (landscape(m, r3, "asymptotic").phi - landscape(m, r3, "exact").phi))
print("asymptotic: L x (phi_inf - phi) for L = 2.1e4..2.1e7:", np.round(np.array(sc)[:, 1], 2))
rho = np.array([-0.6, 0.2, 0.8, 0.97]); zz = []
for m in [ModelConfig(20, 3, 6, 1.0), ModelConfig(30, 4, 10, 0.8, 1.5, noise_std=1.2),
          ModelConfig(20, 3, 6, 1.0, 0.7, signal_sign="random")]:
    mc = drift_mc(m, rho, n_samples=200_000, seed=4)
    zz += list((mc.value - vector_field(m, rho)) / mc.stderr)
print(f"field vs MC drift (2e5 draws, 3 models x 4 rho): max |z| = {np.max(np.abs(zz)):.2f}")
M = M_PLATEAU = ModelConfig(20, 3, 6, 1.0)
for update in ("riemannian", "projected"):
    for eta in (2e-3, 1e-3):
        pred = constant_step_plateau(M, eta, update=update, n_samples=50_000)
        res = asg.simulate(M, StepSize(eta, 1000, 0.0), steps=100_000, runs=40, update=update,
                           initial_alignment=0.9, seed=2, record_every=500, engine="chain")
        a = np.abs(res.alignment[:, res.alignment.shape[1] // 4:])
        print(f"plateau {update} eta={eta}: predicted {pred:.5f}, chain {a.mean():.5f}, "
              f"(1-|rho|) ratio {(1 - a.mean()) / (1 - pred):.3f}")
M = ModelConfig(4, 20, 20, 1.5)
for update in ("riemannian", "projected"):
    gaps = []
    for eta0 in (0.04, 0.02, 0.01, 0.005):
        st = StepSize(eta0, 100, 0.75); K = int(st.step_at_time(3.0)) + 1
        r = asg.simulate(M, st, steps=K, runs=200, update=update, initial_alignment=0.1, seed=1,
                         record_every=max(1, K // 100), engine="chain")
        gaps.append(tracking(r, T=3.0).gap)
    print(f"tracking {update}: gaps for eta0 0.04,0.02,0.01,0.005 =", np.round(gaps, 4))
for m in (ModelConfig(1000, 10, 200, 0.25), ModelConfig(100, 500, 10_000, 0.25)):
    print(m.d, m.n_informative, m.n_nuisance, [(round(p.rho, 4), p.kind, p.stable) for p in fixed_points(m)],
          "|", landscape_verdict(m).verdict)
for B in (2, 4):
    eta = 3e-3 * B
    pred = constant_step_plateau(M_PLATEAU, eta, B, n_samples=50_000)
    res = asg.simulate(M_PLATEAU, StepSize(eta, 1000, 0.0), steps=30_000, runs=40, batch=B,
                       update="riemannian", initial_alignment=0.9, seed=3, record_every=250,
                       engine="chain")
    a = np.abs(res.alignment[:, res.alignment.shape[1] // 4:])
    print(f"plateau riemannian B={B} eta={eta:g}: predicted {pred:.5f}, chain {a.mean():.5f}, "
          f"(1-|rho|) ratio {(1 - a.mean()) / (1 - pred):.3f}")
print(f"total {time.time() - t0:.0f} s")
