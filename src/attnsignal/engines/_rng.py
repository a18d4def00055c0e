"""Python side of the counter-based random streams of the exact engines.

The compiled generators live in :mod:`._kernel`; this module derives the per-run keys from
the run's ``numpy.random.SeedSequence``, gives the literal engine its per-update numpy streams,
and builds the ziggurat tables. It does not import numba.

Per-run seeding (pure: a ``SeedSequence`` is never mutated, so calling ``init`` twice gives
the same state)::

    child(seed, 0)  ->  numpy Generator(PCG64) for the initial condition (ρ0 or q0)
    child(seed, 1)  ->  generate_state(2, uint64) = the run's 128-bit Philox key

Update ``k`` (0-based) of run ``r`` draws from a counter-based stream that depends on
``(key_r, k)`` only: the exact engines hash Philox counter ``(k, 1, 0, 0)`` into a xoshiro256++
state (:mod:`._kernel`); the literal engine uses numpy's ``Philox`` under the same key with
counter ``(0, k, 2, 0)`` (:func:`update_generator`; its blocks run through ``c0``, so two
updates' streams would meet only after ``2^64`` blocks).

where ``child(s, i) = SeedSequence(s.entropy, spawn_key=(*s.spawn_key, i))`` — exactly what
``s.spawn(...)`` would return, without its side effect.

The ziggurat tables are those of Marsaglia & Tsang (2000) with 256 layers, in the 52-bit form
numpy uses (``r = 3.6541528853610088``); each layer has area ``v`` to float64 precision, which
makes the sampler exact up to rounding of the tables.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["child_seed", "init_generator", "run_keys", "update_generator", "ziggurat_tables",
           "ziggurat_tables32", "ziggurat_tables_signed"]


def child_seed(seed: np.random.SeedSequence, i: int) -> np.random.SeedSequence:
    """The ``i``-th child of ``seed``, without mutating ``seed`` (cf. ``SeedSequence.spawn``)."""
    return np.random.SeedSequence(
        seed.entropy, spawn_key=tuple(seed.spawn_key) + (int(i),), pool_size=seed.pool_size
    )


def init_generator(seed: np.random.SeedSequence) -> np.random.Generator:
    """The generator a run uses for its initial condition only."""
    return np.random.Generator(np.random.PCG64(child_seed(seed, 0)))


def run_keys(seeds: Sequence[np.random.SeedSequence]) -> np.ndarray:
    """(runs, 2) uint64 Philox keys, one per run, depending only on that run's seed."""
    out = np.empty((len(seeds), 2), dtype=np.uint64)
    for r, s in enumerate(seeds):
        out[r] = child_seed(s, 1).generate_state(2, np.uint64)
    return out


def update_generator(key: np.ndarray, k: int) -> np.random.Generator:
    """The numpy generator of update ``k`` (0-based) of the run with Philox ``key`` (2 uint64):
    ``Philox(key, counter=(0, k, 2, 0))`` — a pure function of ``(key, k)``."""
    counter = np.array([0, k, 2, 0], dtype=np.uint64)
    return np.random.Generator(np.random.Philox(key=np.asarray(key, dtype=np.uint64),
                                                counter=counter))


def _f(x: float) -> float:
    return math.exp(-0.5 * x * x)


def ziggurat_tables(r: float) -> np.ndarray:
    """(3, 256) float64: ``[k, w, f]`` of the 256-layer ziggurat for the half normal whose base
    layer ends at ``r`` (``_kernel.ZIGGURAT_R``, the constant the compiled tail sampler uses).

    Layer 0 is the base strip (width ``v/f(r)``, including the tail beyond ``r``); layer
    ``i >= 1`` is the rectangle of width ``x_i`` between heights ``f(x_i)`` and ``f(x_{i-1})``
    (``x_0 = 0``, ``f(x_0) = 1``). A 52-bit integer ``m`` is accepted at once when
    ``m < k[i]`` (``k[i] = 2^52 x_{i-1}/x_i`` — stored as an integer-valued float, exact);
    the value is ``m w[i]``, ``w[i] = x_i / 2^52``.
    """
    v = r * _f(r) + math.sqrt(math.pi / 2.0) * math.erfc(r / math.sqrt(2.0))
    two52 = 2.0**52
    k = np.zeros(256)
    w = np.zeros(256)
    f = np.zeros(256)
    dn = r
    tn = r
    q = v / _f(dn)
    k[0] = math.floor((dn / q) * two52)
    k[1] = 0.0
    w[0] = q / two52
    w[255] = dn / two52
    f[0] = 1.0
    f[255] = _f(dn)
    for i in range(254, 0, -1):
        dn = math.sqrt(-2.0 * math.log(v / dn + _f(dn)))
        k[i + 1] = math.floor((dn / tn) * two52)
        tn = dn
        f[i] = _f(dn)
        w[i] = dn / two52
    # closure: the top layer [0, x_1] x [f(x_1), 1] must have area v as well
    closure = dn * (1.0 - _f(dn)) / v - 1.0
    if abs(closure) > 1e-9:  # pragma: no cover - a wrong constant
        raise RuntimeError(f"ziggurat tables do not close (relative error {closure:.3g})")
    return np.stack([k, w, f])


def ziggurat_tables32(r: float) -> np.ndarray:
    """(3, 256) float64: the tables of :func:`ziggurat_tables` for a 23-bit mantissa ``m``
    (the 32-bit draws of the ``chain32`` engine): ``k`` scaled by 2^-29 and rounded down (a
    conservative rectangle test: a point not accepted at once goes through the exact wedge
    test, so the law is unchanged), ``w[i] = x_i / 2^23``, ``f`` unchanged."""
    k, w, f = ziggurat_tables(r)
    return np.stack([np.floor(k / 2.0**29), w * 2.0**29, f])


def ziggurat_tables_signed(tables: np.ndarray) -> np.ndarray:
    """(3, 512) float64: the (3, 256) ``[k, w, f]`` of :func:`ziggurat_tables` (or
    :func:`ziggurat_tables32`) followed by their mirror for a negative draw — ``k`` and ``f``
    again, the widths negated — so that a 9-bit index (the layer and the sign bit, bit 8)
    reads ``k`` and the *signed* width at once, and indices below 256 read the tables as
    before. The bulk sampler (``_kernel.fill_normals``) then needs no sign operation on its
    fast path: ``m · (−w) = −(m · w)`` exactly in IEEE arithmetic, so its draws are bit for
    bit those of the unsigned tables."""
    k, w, f = tables
    return np.stack([np.concatenate([k, k]), np.concatenate([w, -w]), np.concatenate([f, f])])
