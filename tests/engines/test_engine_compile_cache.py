"""The exact engines give the same bits whether a process compiled the kernel or loaded it from
numba's on-disk cache.

With ``fastmath`` reassociation the two differed in the last bits (LLVM picked different
summation orders), so a sweep whose workers loaded the cache disagreed with the process that had
compiled it. Each subprocess here gets its own ``NUMBA_CACHE_DIR``: the first compiles into an
empty one, the second loads what the first wrote.

The first process also shows that the ``chain`` engine's compiled driver holds no float32
code: the chain driver is compiled per precision (``_kernel.reduced_sample_as``), so running
``chain`` compiles ``reduced_sample`` and never ``reduced_sample32`` (with a branch on a flag
instead, numba typed and compiled both).
"""

import os
import subprocess
import sys

import numpy as np
import pytest

_SCRIPT = r"""
import sys
import numpy as np
import attnsignal as asg
from attnsignal.engines import _kernel as K
m = asg.ModelConfig(d=40, n_informative=5, n_nuisance=23, theta=1.0, beta=1.3)
st = asg.StepSize(0.05, 100, 0.7)
out = []
for engine in ("chain", "chain32", "projected"):
    for batch in (1, 3):
        r = asg.simulate(m, st, steps=60, runs=3, seed=11, engine=engine, record_every=5,
                         batch=batch)
        out.append(r.alignment)
    if engine == "chain":
        print("float32 sample compiled with chain only:", len(K.reduced_sample32.signatures))
np.save(sys.argv[1], np.stack(out))
"""


def _run(cache_dir, out):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    res = subprocess.run([sys.executable, "-c", _SCRIPT, str(out)], env=env, check=True,
                         timeout=600, capture_output=True, text=True)
    return np.load(out), res.stdout


@pytest.mark.slow
def test_freshly_compiled_and_cached_kernels_agree_bit_for_bit(tmp_path):
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    cold, said = _run(cache, tmp_path / "cold.npy")
    assert any(cache.rglob("*.nbc")), "the first process did not write numba's cache"
    assert "float32 sample compiled with chain only: 0" in said, said
    warm, _ = _run(cache, tmp_path / "warm.npy")
    assert np.isfinite(cold).all()
    np.testing.assert_array_equal(cold, warm)
