"""Every worker lost mid-release: the release ends within seconds (issue 27, part 4).

Before: the scheduler keeps a task waiting for workers forever, so a release
whose workers were all killed waited for ``dpframe.release-timeout`` (one
hour by default) before failing, its charge standing all along.  Now the
release watches the scheduler's count of workers and ends with
:class:`ClusterFailedError` once there has been none for
``dpframe.no-workers-seconds`` (default 5; 1 here).  The cluster here is the
test's own: a scheduler and two ``dask worker --no-nanny`` processes, killed
for good (no nanny restarts them); the watcher's rule is also checked on a
stand-in client.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

import dpframe as dp
from dpframe.backends import cluster as cluster_module
from dpframe.backends.cluster import (
    CLUSTER_FAILED,
    NO_WORKERS_OPTION,
    RELEASE_TIMEOUT_OPTION,
    ClusterFailedError,
    run_bounded,
    worker_count,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="kills worker processes by signal")


def _slow(index: int) -> pd.DataFrame:
    time.sleep(120)  # far past the test: only a lost cluster ends the release
    frame: pd.DataFrame = pd.DataFrame({"x": np.arange(10, dtype=float) + index})
    return frame


@pytest.fixture
def own_cluster() -> Iterator[tuple[Any, list[subprocess.Popen[bytes]]]]:
    """A scheduler (no workers of its own) and two worker processes without a nanny."""
    cluster: Any = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=0, processes=True, host="127.0.0.1", dashboard_address=":0"
    )
    client: Any = Client(cluster)  # type: ignore[no-untyped-call]
    worker = [sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address]
    worker += ["--no-nanny", "--nthreads", "1", "--memory-limit", "1GiB", "--no-dashboard"]
    workers = [
        subprocess.Popen(worker, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(2)
    ]
    try:
        client.wait_for_workers(2, timeout=120)
        yield client, workers
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
            process.wait(30)
        client.close()
        cluster.close()


def test_a_release_whose_workers_are_all_killed_ends_within_seconds(
    own_cluster: tuple[Any, list[subprocess.Popen[bytes]]],
) -> None:
    client, workers = own_cluster
    assert worker_count(client) == 2
    from_map: Callable[..., Any] = dd.from_map
    frame = from_map(_slow, range(3), meta=pd.DataFrame({"x": pd.Series(dtype=float)}))
    session = dp.Session(epsilon=10, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"x": (0, 20)})

    def kill() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(client.processing().values()):
            time.sleep(0.05)  # until the release's tasks run (after the charge)
        for process in workers:
            os.kill(process.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill)
    killer.start()
    started = time.monotonic()
    with (
        dask.config.set({NO_WORKERS_OPTION: 1.0, RELEASE_TIMEOUT_OPTION: 3600}),
        pytest.raises(ClusterFailedError, match=rf"\[{CLUSTER_FAILED}\].*charge stands"),
    ):
        pf.count(epsilon=1.0)
    took = time.monotonic() - started
    killer.join()
    assert took < 30  # was the release timeout: 3,600 s
    assert worker_count(client) == 0
    assert list(session.ledger["status"]) == ["failed"]
    assert session.spent.epsilon == 1.0  # the charge stands


class _Future:
    """A computation that ends after ``seconds`` (never, for None)."""

    def __init__(self, seconds: float | None) -> None:
        self._timer: threading.Timer | None = None
        self._seconds = seconds
        self.cancelled = False

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        if self._seconds is not None:
            self._timer = threading.Timer(self._seconds, callback, (self,))
            self._timer.start()

    def result(self) -> int:
        return 42

    def cancel(self) -> None:
        self.cancelled = True


class _Client:
    """A stand-in for ``distributed.Client``: the worker counts the scheduler reports, in turn."""

    def __init__(self, counts: list[int | Exception], future: _Future) -> None:
        self._counts = counts
        self.future = future

    def compute(self, obj: object) -> _Future:
        return self.future

    def scheduler_info(self, n_workers: int = -1) -> dict[str, Any]:
        count = self._counts.pop(0) if len(self._counts) > 1 else self._counts[0]
        if isinstance(count, Exception):
            raise count
        return {"n_workers": count, "workers": {}}


@pytest.fixture
def quick_watch(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(cluster_module, "_WATCH_SECONDS", 0.02)
    with dask.config.set({NO_WORKERS_OPTION: 0.2, RELEASE_TIMEOUT_OPTION: 30}):
        yield


@pytest.mark.usefixtures("quick_watch")
def test_no_worker_for_the_grace_period_ends_the_release() -> None:
    future = _Future(None)  # never ends by itself
    started = time.monotonic()
    with pytest.raises(ClusterFailedError, match=CLUSTER_FAILED):
        run_bounded(_Client([2, 2, 0], future), object())
    assert time.monotonic() - started < 5
    assert future.cancelled


@pytest.mark.usefixtures("quick_watch")
def test_a_scheduler_that_cannot_be_asked_counts_as_no_worker() -> None:
    future = _Future(None)
    with pytest.raises(ClusterFailedError, match=CLUSTER_FAILED):
        run_bounded(_Client([OSError("gone")], future), object())
    assert future.cancelled


@pytest.mark.usefixtures("quick_watch")
def test_workers_back_within_the_grace_period_keep_the_release() -> None:
    # no worker for 0.1 s (a nanny restarting them), then two again: the release finishes
    counts: list[int | Exception] = [2, 0, 0, 0, 0, 0, 2]
    assert run_bounded(_Client(counts, _Future(0.5)), object()) == 42


@pytest.mark.usefixtures("quick_watch")
def test_a_finished_release_answers_at_once() -> None:
    started = time.monotonic()
    assert run_bounded(_Client([2], _Future(0.0)), object()) == 42
    assert time.monotonic() - started < 1  # no watch interval added to the answer
