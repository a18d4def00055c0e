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
