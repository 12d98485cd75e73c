"""Bounded failure on a cluster: every failure after the charge ends the release, marked failed.

The partitions are made by a task on the worker (``dask.dataframe.from_map``)
that misbehaves on purpose: it kills its worker process, sleeps past the
release's time limit, or raises.  The charge stands in every case (the
ledger row says ``failed``); a worker killed once is recomputed and the
release succeeds.  Opening Parquet files whose partitions would not fit in
the workers' memory is refused before anything is charged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client

import dpframe as dp
from dpframe.backends.cluster import (
    CLUSTER_FAILED,
    MEMORY_FRACTION_OPTION,
    RELEASE_TIMEOUT_OPTION,
    ClusterFailedError,
    ClusterNotReadyError,
    check_partition_memory,
    run_bounded,
)
from dpframe.backends.parquet_sizes import largest_partition_bytes, row_width

pytestmark = pytest.mark.usefixtures("dask_client")

ROWS = 100
META = pd.DataFrame({"x": pd.Series(dtype=float)})


def _rows(index: int) -> pd.DataFrame:
    frame: pd.DataFrame = pd.DataFrame({"x": np.arange(ROWS, dtype=float) + index})
    return frame


def _dies(marker: str, index: int) -> pd.DataFrame:
    """Kill the worker process (every time, or only once when ``marker`` is a file to create)."""
    if index == 1:
        if not marker:
            os._exit(1)
        try:
            with open(marker, "x"):
                pass
        except FileExistsError:
            return _rows(index)
        os._exit(1)
    return _rows(index)


def _sleeps(seconds: float, index: int) -> pd.DataFrame:
    time.sleep(seconds)
    return _rows(index)


def _raises(index: int) -> pd.DataFrame:
    if index == 2:
        raise ValueError("a task failed on the worker")
    return _rows(index)


def _frame(make: Callable[[int], pd.DataFrame]) -> Any:
    from_map: Callable[..., Any] = dd.from_map
    return from_map(make, range(3), meta=META)


def _open(frame: Any) -> tuple[dp.Session, dp.PrivateFrame]:
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    return session, session.private_frame(frame, bounds={"x": (0, 200)})


def _one() -> int:
    return 1


def _settle(client: Client) -> None:
    """Give the killed workers time to come back (at most 3 minutes; best effort).

    Only hygiene for the tests that follow: every test here also passes on one
    worker (a killed worker's nanny restarts it, and its tasks are retried).
    """
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if len(client.run(_one)) == 2:
                return
        except Exception:  # a worker still restarting
            pass
        time.sleep(0.5)


def _assert_failed_and_charged(session: dp.Session) -> None:
    assert list(session.ledger["status"]) == ["failed"]
    assert session.spent.epsilon == 1.0  # the charge stands


def test_a_task_that_kills_its_worker_every_time_ends_the_release(dask_client: Client) -> None:
    import functools

    session, pf = _open(_frame(functools.partial(_dies, "")))
    start = time.monotonic()
    with pytest.raises(ClusterFailedError, match=rf"\[{CLUSTER_FAILED}\].*charge stands"):
        pf.count(epsilon=1.0)
    _assert_failed_and_charged(session)
    assert time.monotonic() - start < 120
    _settle(dask_client)


def test_a_worker_killed_once_is_recomputed(tmp_path: Path, dask_client: Client) -> None:
    import functools

    _settle(dask_client)
    marker = str(tmp_path / "killed-once")
    session, pf = _open(_frame(functools.partial(_dies, marker)))
    assert pf.count(epsilon=1e6).value == 3 * ROWS  # noise of scale 1e-6: P(any) < 1e-300
    assert os.path.exists(marker)  # the worker did die
    assert list(session.ledger["status"]) == ["released"]
    _settle(dask_client)


def test_a_release_past_its_time_limit_ends_within_it() -> None:
    import functools

    session, pf = _open(_frame(functools.partial(_sleeps, 4.0)))
    start = time.monotonic()
    with (
        dask.config.set({RELEASE_TIMEOUT_OPTION: 0.5}),
        pytest.raises(ClusterFailedError, match=r"did not finish\s+within 0.5 s"),
    ):
        pf.count(epsilon=1.0)
    assert time.monotonic() - start < 3.5  # the tasks sleep 4 s
    _assert_failed_and_charged(session)
    time.sleep(4)  # let the cancelled tasks' sleeps end before the next test


class _LateFuture:
    """A future whose wait times out with ``error`` (what ``distributed`` raises)."""

    def __init__(self, error: type[BaseException]) -> None:
        self.error = error
        self.cancelled = False

    def add_done_callback(self, callback: Any) -> None:
        callback(self)  # "done": its result raises (a wait that timed out inside distributed)

    def result(self, timeout: float | None = None) -> Any:
        raise self.error(f"no answer within {timeout} s")

    def cancel(self) -> None:
        self.cancelled = True


class _LateClient:
    def __init__(self, future: _LateFuture) -> None:
        self.future = future

    def compute(self, obj: object) -> _LateFuture:
        return self.future


@pytest.mark.parametrize(
    "error",
    [asyncio.TimeoutError, concurrent.futures.TimeoutError, TimeoutError],
    ids=["asyncio", "concurrent.futures", "builtin"],
)
def test_every_timeout_class_is_a_cluster_failure(error: type[BaseException]) -> None:
    # Before Python 3.11 distributed's asyncio.TimeoutError is not the built-in
    # TimeoutError: a release past its limit was reported as a failed query.
    future = _LateFuture(error)
    with (
        dask.config.set({RELEASE_TIMEOUT_OPTION: 0.5}),
        pytest.raises(ClusterFailedError, match=r"did not finish\s+within 0.5 s"),
    ):
        run_bounded(_LateClient(future), object())
    assert future.cancelled


def test_an_error_in_a_task_is_a_failed_query_not_a_cluster_failure() -> None:
    session, pf = _open(_frame(_raises))
    with pytest.raises(dp.QueryFailedError, match="failed while reading the data") as caught:
        pf.count(epsilon=1.0)
    assert not isinstance(caught.value, ClusterFailedError)
    assert "task failed" not in str(caught.value)
    _assert_failed_and_charged(session)


def _write_parquet(directory: Path, files: int, rows: int, row_group: int) -> None:
    directory.mkdir()
    for i in range(files):
        frame = pd.DataFrame({"x": np.arange(rows, dtype=float), "s": ["ab"] * rows})
        frame.to_parquet(directory / f"part-{i}.parquet", row_group_size=row_group)


def test_partitions_too_large_for_the_workers_are_refused_when_opened(tmp_path: Path) -> None:
    _write_parquet(tmp_path / "data", files=2, rows=5_000, row_group=1_000)
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    # Each file is 5,000 rows x (8 + 16) bytes: 120,000 bytes; the workers have 2 GiB.
    fraction = 100_000 / 2**31
    with (
        dask.config.set({MEMORY_FRACTION_OPTION: fraction}),
        pytest.raises(ClusterNotReadyError, match=r"row_group_size=.*--memory-limit"),
    ):
        session.read_parquet(tmp_path / "data", backend="dask", bounds={"x": (0, 1)})
    assert len(session.ledger) == 0
    with dask.config.set({MEMORY_FRACTION_OPTION: 2 * fraction}):
        pf = session.read_parquet(tmp_path / "data", backend="dask", bounds={"x": (0, 1)})
    assert pf.count(epsilon=1e6).value == 10_000


def test_partition_estimate_from_footers(tmp_path: Path) -> None:
    _write_parquet(tmp_path / "data", files=3, rows=4_000, row_group=1_000)
    meta = pd.DataFrame({"x": pd.Series(dtype=float), "s": pd.Series(dtype=object)})
    width = row_width(meta.dtypes)
    assert width == 24
    assert largest_partition_bytes(tmp_path / "data", 3, meta) == 4_000 * width  # a file each
    assert largest_partition_bytes(tmp_path / "data", 12, meta) == 1_000 * width  # split
    assert largest_partition_bytes(tmp_path / "missing", 3, meta) == 0  # unknown: no check


def test_memory_check_names_the_fix() -> None:
    check_partition_memory(2**20, [2**30, 2**31])  # fits
    check_partition_memory(2**40, [])  # no limits known: nothing to check
    with pytest.raises(ClusterNotReadyError, match=r"1,024 MiB in memory.*split_row_groups"):
        check_partition_memory(2**30, [2**30, 2**31])


def test_the_failure_message_is_fixed_and_says_what_was_charged() -> None:
    during = str(ClusterFailedError(60.0))
    opening = str(ClusterFailedError(60.0, charged=False))
    assert during.startswith(f"[{CLUSTER_FAILED}]") and opening.startswith(f"[{CLUSTER_FAILED}]")
    assert "charge stands" in during and "'failed'" in during
    assert "Nothing was charged" in opening and "charge stands" not in opening
    assert isinstance(ClusterFailedError(1.0), dp.QueryFailedError)
