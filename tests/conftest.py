import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("NUMBA_NUM_THREADS", str(os.cpu_count() or 2))


MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one test worker per core, at most ``MAX_WORKERS`` — the tests start
    process pools and compiled kernels of their own, each as wide as the machine."""
    return max(1, min(os.cpu_count() or 1, MAX_WORKERS))


#: The test files that take longest on two cores (``pytest --durations=60``), longest first.
#: ``--dist loadfile`` hands whole files to the workers in collection order
#: (``--no-loadscope-reorder``: not xdist's default order by number of tests, which starts the
#: many-case files and leaves a long file with a few tests for the end, one core idle while it
#: runs); starting these first lets the many short files fill in beside them.
SLOW_FIRST = (
    "tests/reproduce/test_pipeline.py",
    "tests/docs/test_docs_site.py",
    "tests/sweep/test_resume.py",
    "tests/engines/test_engine_law.py",
    "tests/theory/test_advisor.py",
    "tests/engines/test_engine_compile_cache.py",
    "tests/slurm/test_slurm_executor.py",
    "tests/sweep/test_dask_faults.py",
    "tests/theory/test_finite_step.py",
    "tests/reliability/test_file_modes.py",
    "tests/theory/test_landscape.py",
    "tests/theory/test_effective.py",
)


def pytest_collection_modifyitems(session, config, items):
    """Run the files of :data:`SLOW_FIRST` first, in that order; the rest keep theirs."""
    rank = {path: i for i, path in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
