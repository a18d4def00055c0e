import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("NUMBA_NUM_THREADS", str(os.cpu_count() or 2))


MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one test worker per core, at most ``MAX_WORKERS`` — the tests start
    process pools and compiled kernels of their own, each as wide as the machine."""
    return max(1, min(os.cpu_count() or 1, MAX_WORKERS))
