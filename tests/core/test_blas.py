"""One BLAS thread where the cores are spoken for (attnsignal._blas)."""

from __future__ import annotations

import pytest

from attnsignal import _blas
from attnsignal.sweep.tasks import _single_thread

pytestmark = pytest.mark.skipif(not _blas._controls(), reason="no OpenBLAS in this process")


def _threads() -> list[int]:
    return [get() for get, _ in _blas._controls()]


@pytest.fixture
def two_threads():
    """Two BLAS threads for the test; the BLAS and numba thread counts restored after it."""
    import numba

    before, nb = _threads(), numba.get_num_threads()
    _blas.set_blas_threads(2)
    yield
    for (_, put), n in zip(_blas._controls(), before):
        put(n)
    numba.set_num_threads(nb)


def test_single_blas_thread_sets_one_and_restores_the_count(two_threads):
    assert set(_threads()) == {2}
    with _blas.single_blas_thread():
        assert set(_threads()) == {1}
    assert set(_threads()) == {2}


def test_single_blas_thread_restores_the_count_when_the_body_raises(two_threads):
    with pytest.raises(RuntimeError):
        with _blas.single_blas_thread():
            raise RuntimeError("boom")
    assert set(_threads()) == {2}


def test_a_worker_computes_on_one_blas_thread(two_threads):
    _single_thread()
    assert set(_threads()) == {1}
