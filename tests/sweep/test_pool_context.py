"""The local pools' start method: forkserver workers start with their modules imported."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor

import pytest

from attnsignal.sweep.executors import WORKER_PRELOAD, pool_context
from sweep_helpers import loaded


def test_pool_workers_start_with_what_they_need_imported():
    """A worker forked by the forkserver finds ``WORKER_PRELOAD`` imported (the server
    imported it once) before its first task imports anything: the task here is a function of
    a module that imports none of it."""
    ctx = pool_context()
    if ctx.get_start_method() != "forkserver":
        pytest.skip("no forkserver on this platform: spawned workers import for themselves")
    with ProcessPoolExecutor(1, mp_context=ctx) as ex:
        got = ex.submit(loaded, WORKER_PRELOAD).result()
    assert all(got.values()), got


def test_the_reproduction_pool_preloads_its_worker_start_up():
    """The reproduction's workers start in ``_init_worker``: its module is among what the
    forkserver imports (``REPRODUCTION_PRELOAD``, which the command line's early start and
    the shared pool both use)."""
    from attnsignal.reproduce.scheduler import SharedPool, _init_worker
    from attnsignal.sweep.executors import REPRODUCTION_PRELOAD

    assert set(WORKER_PRELOAD) <= set(REPRODUCTION_PRELOAD)
    assert _init_worker.__module__ in REPRODUCTION_PRELOAD
    pool = SharedPool(workers=1)._new_pool()  # no worker starts before a task
    try:
        assert pool._initializer is _init_worker
    finally:
        pool.shutdown()


def test_a_forked_worker_with_numba_preloaded_counts_one_compute_thread():
    """numba is imported before the worker's set-up (the forkserver preloaded it): the
    set-up still leaves one numba thread, and the engines' memory estimate counts one."""
    from sweep_helpers import threads_in_a_worker

    with ProcessPoolExecutor(1, mp_context=pool_context()) as ex:
        assert ex.submit(threads_in_a_worker).result() == (1, 1)
