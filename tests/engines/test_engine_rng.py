"""The compiled random streams of the exact engines: bit-level checks against references,
and the laws of the normal, χ² and minibatch-complement samplers."""

import math

import numpy as np
import pytest
from scipy import stats

from attnsignal.engines import _kernel as K
from attnsignal.engines._kernel_common import ZT
from attnsignal.engines._kernel import ZIGGURAT_R
from attnsignal.engines._rng import child_seed, run_keys, ziggurat_tables, ziggurat_tables32

import kernel_probes as probes

KEY = np.array([0x0123456789ABCDEF, 0x0FEDCBA987654321], dtype=np.uint64)
M64 = (1 << 64) - 1


def _u(x):
    return np.uint64(x)


def test_philox_matches_numpy_bit_for_bit():
    rng = np.random.default_rng(5)
    for _ in range(20):
        key = rng.integers(0, 2**63, size=2, dtype=np.uint64)
        ctr = rng.integers(0, 2**63, size=4, dtype=np.uint64)
        ours = probes.philox_block(_u(ctr[0]), _u(ctr[1]), _u(ctr[2]), _u(ctr[3]), key[0], key[1])
        prev = ctr.copy()
        prev[0] -= np.uint64(1)  # numpy increments the counter before each block
        ref = np.random.Philox(key=key, counter=prev).random_raw(4)
        assert np.array_equal(ours, ref)


def _xoshiro_ref(state, n):
    s = [int(x) for x in state]
    rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & M64  # noqa: E731
    out = []
    for _ in range(n):
        out.append((rotl((s[0] + s[3]) & M64, 23) + s[0]) & M64)
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
    return out


def test_stream_is_philox_seeded_xoshiro256pp():
    step = 12345
    seed = probes.philox_block(_u(step), _u(1), _u(0), _u(0), KEY[0], KEY[1])
    ours = probes.draw_u64(KEY[0], KEY[1], step, 50)
    assert [int(x) for x in ours] == _xoshiro_ref(seed, 50)


def test_streams_differ_between_steps_and_keys():
    a = probes.draw_u64(KEY[0], KEY[1], 0, 8)
    b = probes.draw_u64(KEY[0], KEY[1], 1, 8)
    c = probes.draw_u64(KEY[0] ^ np.uint64(1), KEY[1], 0, 8)
    assert not np.array_equal(a, b) and not np.array_equal(a, c)


def test_bulk_and_scalar_normals_agree_bit_for_bit():
    a = probes.draw_normals(KEY[0], KEY[1], 7, 100_000, ZT)
    b = probes.draw_normals_scalar(KEY[0], KEY[1], 7, 100_000, ZT)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("single", [False, True])
def test_bulk_samplers_draw_nothing_for_a_count_of_zero_or_less(single):
    """The bulk samplers count with an unsigned position: a count <= 0 must not wrap to 2^64."""
    seeded = probes.state_after_fill(KEY[0], KEY[1], 7, 0, ZT, single)
    for n in (-1, -5):
        assert np.array_equal(probes.state_after_fill(KEY[0], KEY[1], 7, n, ZT, single), seeded)
    assert not np.array_equal(probes.state_after_fill(KEY[0], KEY[1], 7, 1, ZT, single), seeded)


def test_ziggurat_tables():
    zt = ziggurat_tables(ZIGGURAT_R)
    # numpy's ki_double[0] (its tables were computed independently: equal to ~1e-15)
    assert zt[0, 0] == pytest.approx(0x000EF33D8025EF6A, rel=1e-14)
    assert zt[0, 1] == 0.0
    assert zt[1, 255] * 2.0**52 == pytest.approx(ZIGGURAT_R, rel=1e-15)
    assert zt[2, 0] == 1.0
    assert np.all(np.diff(zt[2]) < 0)  # heights decrease as the layers widen


def test_kernel_tables_mirror_each_table_for_the_sign_bit():
    """ZT's rows: a 256-entry table, then its mirror for a draw whose sign bit (bit 8 of the
    9-bit index the bulk sampler reads) is set: k and f again, the widths negated."""
    assert ZT.shape == (6, 512)
    assert np.array_equal(ZT[:3, :256], ziggurat_tables(ZIGGURAT_R))
    assert np.array_equal(ZT[3:, :256], ziggurat_tables32(ZIGGURAT_R))
    for half in (ZT[:3], ZT[3:]):
        assert np.array_equal(half[0, 256:], half[0, :256])
        assert np.array_equal(half[1, 256:], -half[1, :256])
        assert np.array_equal(half[2, 256:], half[2, :256])


def test_normals_in_law():
    z = probes.draw_normals(KEY[0], KEY[1], 3, 1_000_000, ZT)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    n = z.size
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.var() - 1) < 5 * math.sqrt(2 / n)
    # the tail beyond the base layer (Marsaglia's tail sampler)
    p_tail = 2 * stats.norm.sf(ZIGGURAT_R)
    k = int((np.abs(z) > ZIGGURAT_R).sum())
    assert stats.binomtest(k, n, p_tail).pvalue > 1e-3
    zt = z[np.abs(z) > ZIGGURAT_R]
    ref = stats.truncnorm(ZIGGURAT_R, np.inf)
    assert stats.kstest(np.abs(zt), ref.cdf).pvalue > 1e-3
    # wedges: the fraction in each of the 256 layers' x-ranges is the normal one
    edges = np.concatenate([[0.0], ZT[1, 1:256] * 2.0**52])
    edges = np.sort(edges)
    counts, _ = np.histogram(np.abs(z), bins=np.concatenate([edges, [np.inf]]))
    cdf = stats.norm.cdf(np.concatenate([edges, [np.inf]]))
    expected = 2 * np.diff(cdf) * n
    assert stats.chisquare(counts, expected * counts.sum() / expected.sum()).pvalue > 1e-3


def test_single_precision_normals_in_law():
    """The chain32 engine's 32-bit ziggurat (two draws per word, tables ZT[3:6]): standard
    normal in KS, moments, tail fraction and per-layer frequencies."""
    z = probes.draw_normals32(KEY[0], KEY[1], 3, 2_000_000, ZT).astype(np.float64)
    n = z.size
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(z.mean()) < 5 / math.sqrt(n)
    assert abs(z.var() - 1) < 5 * math.sqrt(2 / n)
    p_tail = 2 * stats.norm.sf(ZIGGURAT_R)
    k = int((np.abs(z) > ZIGGURAT_R).sum())
    assert stats.binomtest(k, n, p_tail).pvalue > 1e-3
    edges = np.sort(np.concatenate([[0.0], ZT[4, 1:256] * 2.0**23]))
    counts, _ = np.histogram(np.abs(z), bins=np.concatenate([edges, [np.inf]]))
    expected = 2 * np.diff(stats.norm.cdf(np.concatenate([edges, [np.inf]]))) * n
    assert stats.chisquare(counts, expected * counts.sum() / expected.sum()).pvalue > 1e-3
    # the same key and step give the same draws; another step others
    again = probes.draw_normals32(KEY[0], KEY[1], 3, 1000, ZT)
    assert np.array_equal(again, z[:1000].astype(np.float32))
    assert not np.array_equal(probes.draw_normals32(KEY[0], KEY[1], 4, 1000, ZT), again)


def test_single_precision_exp_accuracy():
    rng = np.random.default_rng(1)
    x = np.concatenate([-rng.uniform(0, 87, 500_000), -rng.uniform(0, 1, 200_000),
                        np.linspace(-87, 0, 10_001), rng.uniform(0, 88, 1000)]).astype(np.float32)
    ours = probes.exp32_array(x).astype(np.float64)
    ref = np.exp(x.astype(np.float64))
    ulp = np.abs(ours - ref) / np.spacing(ref.astype(np.float32)).astype(np.float64)
    assert ulp.max() <= 4.0, ulp.max()
    special = probes.exp32_array(np.array([0.0, -0.0, -87.5, -1e6, -np.inf, np.nan, 89.0],
                                          dtype=np.float32))
    assert special[0] == 1.0 and special[1] == 1.0
    assert np.all(special[2:5] == 0.0)
    assert np.isnan(special[5]) and special[6] == np.inf


@pytest.mark.parametrize("df", [1, 2, 3, 7, 50, 10**9 - 2])
def test_chi2_in_law(df):
    x = probes.draw_chi2(KEY[0], KEY[1], df % 1000, 100_000, df, ZT)
    assert stats.kstest(x, "chi2", args=(df,)).pvalue > 1e-3


def test_chi2_zero_df_is_zero():
    assert np.all(probes.draw_chi2(KEY[0], KEY[1], 0, 10, 0, ZT) == 0.0)


def _direct_complement(r, D, n, rng):
    out = []
    for m in [min(2000, n - i) for i in range(0, n, 2000)]:
        y = rng.standard_normal((m, len(r), D))
        y /= np.linalg.norm(y, axis=2, keepdims=True)
        out.append(np.sum((r[None, :, None] * y).sum(axis=1) ** 2, axis=1))
    return np.concatenate(out)


@pytest.mark.parametrize(
    "r, D",
    [
        ([0.3, 1.0, 0.7], 5),  # Bartlett, D > B
        ([0.3, 1.0, 0.7], 3),  # Bartlett, D = B
        ([0.3, 1.0, 0.7, 0.2], 2),  # direct draws, D < B
        ([0.3, 1.0, 0.7], 1),  # D = 1: the directions are signs
        ([0.5, 0.5], 40),
        (np.linspace(0.1, 1.0, 100), 40),  # B > BARTLETT_MAX_B: sequential form
        (np.linspace(0.1, 1.0, 100), 3),
        (np.linspace(0.1, 1.0, 65), 1),
    ],
)
def test_minibatch_complement_norm_in_law(r, D):
    r = np.asarray(r, dtype=np.float64)
    n = 40_000 if len(r) <= K.BARTLETT_MAX_B else 10_000
    ours = probes.complement_sq_norms(KEY[0], KEY[1], n, r, D, ZT)
    ref = _direct_complement(r, D, n, np.random.default_rng(D))
    # (D = 1 gives a discrete law; round away the last-bit noise before comparing)
    assert stats.ks_2samp(np.round(ours, 12), np.round(ref, 12)).pvalue > 1e-3


def test_minibatch_complement_trivial_cases():
    assert np.all(probes.complement_sq_norms(KEY[0], KEY[1], 5, np.array([0.4, 2.0]), 0, ZT) == 0)
    one = probes.complement_sq_norms(KEY[0], KEY[1], 5, np.array([0.4]), 7, ZT)
    assert np.allclose(one, 0.16, rtol=0, atol=1e-15)


def test_fast_exp_accuracy():
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.uniform(0, 708, 500_000), -rng.uniform(0, 1, 200_000),
                        np.linspace(-708, 0, 10_001), rng.uniform(0, 700, 1000)])
    ours = probes.exp_array(x)
    ref = np.exp(x)
    ulp = np.abs(ours - ref) / np.spacing(ref)
    assert ulp.max() <= 1.0
    special = probes.exp_array(np.array([0.0, -0.0, -708.5, -1e6, -np.inf, np.nan, 710.0]))
    assert special[0] == 1.0 and special[1] == 1.0
    assert np.all(special[2:5] == 0.0)
    assert np.isnan(special[5]) and special[6] == np.inf


def test_run_keys_depend_only_on_the_run_seed_and_do_not_mutate_it():
    seeds = [np.random.SeedSequence(9, spawn_key=(r,)) for r in range(4)]
    k1 = run_keys(seeds)
    k2 = run_keys(seeds[2:])
    assert np.array_equal(k1[2:], k2)
    assert all(s.n_children_spawned == 0 for s in seeds)
    assert len({tuple(k) for k in k1}) == 4
    # child_seed is what spawn() would give
    s = np.random.SeedSequence(3, spawn_key=(1,))
    c = child_seed(s, 1)
    assert np.array_equal(c.generate_state(4), s.spawn(2)[1].generate_state(4))
