"""Output-directory checks are safe to run from several threads of one process at once.

The reproduction runs each experiment's sweeps in threads of one process; every sweep checks
its store with :func:`attnsignal.paths.check_output_dir`, which probes the nearest existing
directory (``OUT/data``) by creating and removing a file. The probe file was named after the
process only, so two threads probing ``OUT/data`` at once removed each other's file and one of
them reported ``out: must be in a writable directory (No such file or directory)`` — the
reduced reproduction's intermittent E1 failure in the whole test suite.
"""

from __future__ import annotations

import threading

from attnsignal.paths import check_output_dir


def test_concurrent_checks_of_one_directory_all_pass(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(i: int) -> None:
        start.wait()
        for j in range(300):
            try:
                check_output_dir(data / f"store-{i}-{j}", "out", create=False)
            except BaseException as exc:  # noqa: BLE001 - collected and reported below
                errors.append(exc)
                return

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    assert list(data.iterdir()) == []  # no probe file left behind
