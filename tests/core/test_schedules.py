import numpy as np
import pytest

import attnsignal as asg
from attnsignal.schedules import ode_time, step_at_time, step_sizes


def test_step_sizes_follow_the_formula():
    s = asg.StepSize(0.2, k0=50, power=0.8)
    k = np.arange(1000)
    np.testing.assert_allclose(step_sizes(s, k), 0.2 * (1 + k / 50) ** -0.8, rtol=1e-15)


@pytest.mark.parametrize("power", [0.0, 0.6, 1.0])
def test_step_at_time_inverts_ode_time(power):
    s = asg.StepSize(0.05, k0=100, power=power)
    ks = np.array([0, 1, 17, 999, 5000, 150_000])
    t = ode_time(s, ks)
    assert t[0] == 0 and np.all(np.diff(t) > 0)
    back = step_at_time(s, t)
    np.testing.assert_array_equal(back, ks)
    # large k uses the Euler–Maclaurin tail: compare with the exact sum at 3e5
    big = 300_000
    exact = float(np.sum(step_sizes(s, np.arange(big))))
    k = step_at_time(s, exact)
    assert abs(int(k) - big) <= 1
