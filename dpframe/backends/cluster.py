"""Before the charge: can the cluster run dpframe's tasks?

A release on Dask runs functions of :mod:`dpframe` on the workers.  A worker
without dpframe (or with another version, or another pandas or numpy, whose
arithmetic or hashing might differ) used to make the query hang after its ε
was charged.  :func:`check_workers` asks every worker for its versions of
dpframe, pandas and numpy — by running a dpframe function there, which also
proves dpframe imports — within a bounded wait, and refuses with
:class:`ClusterNotReadyError` (nothing charged) when one cannot answer or
differs from this process.  The answer is kept per set of workers, so a
stable cluster is asked once; a worker joining triggers a new check.

Without a ``distributed.Client`` dask computes with local threads: the rows
stream through the analyst's process.  That works, but it is not a cluster,
so the backend says so once (:data:`NO_CLIENT_WARNING`).

After the charge, a release on a cluster can still fail: a worker dies again
and again (out of memory: ``KilledWorker``), the scheduler goes away, every
worker is lost, or the computation does not finish.  :func:`run_bounded`
waits at most :data:`RELEASE_TIMEOUT_OPTION` seconds (default 3600) and
meanwhile watches the scheduler's count of workers: with none for
:data:`NO_WORKERS_OPTION` seconds (default 5; a nanny restarts a killed
worker within that) the release ends then, not an hour later (the
scheduler keeps a task waiting for workers forever).  It cancels the
computation and turns every such failure into one
:class:`ClusterFailedError` with a fixed message (no detail from the
cluster, which could depend on the data): the release ends, its charge
stands, and the ledger row says ``failed``.  When the data is opened,
:func:`check_partition_memory` compares the largest partition (estimated
from Parquet footers) with the workers' memory and refuses, naming the
fix, a partition that would not fit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib.metadata
import threading
import time
from collections.abc import Mapping
from typing import Any

import dask

from dpframe.errors import DPError, QueryFailedError

__all__ = [
    "CHECK_TIMEOUT_OPTION",
    "CLUSTER_FAILED",
    "MEMORY_FRACTION_OPTION",
    "NO_CLIENT_WARNING",
    "NO_WORKERS_OPTION",
    "RELEASE_TIMEOUT_OPTION",
    "VERSIONED",
    "ClusterFailedError",
    "ClusterNotReadyError",
    "check_partition_memory",
    "check_workers",
    "run_bounded",
    "software_versions",
    "worker_count",
    "worker_memory_limits",
]

#: The packages whose versions must match between this process and every worker.
VERSIONED = ("dpframe", "pandas", "numpy")
#: The dask option holding the check's bounded wait, in seconds (default 30).
CHECK_TIMEOUT_OPTION = "dpframe.cluster-check-timeout"
_DEFAULT_TIMEOUT = 30.0
#: The dask option holding a release's bounded wait on the cluster, in seconds (default 3600).
RELEASE_TIMEOUT_OPTION = "dpframe.release-timeout"
_DEFAULT_RELEASE_TIMEOUT = 3600.0
#: The dask option holding how long a release waits with no worker in the cluster, in
#: seconds (default 5), before it ends with :class:`ClusterFailedError`.
NO_WORKERS_OPTION = "dpframe.no-workers-seconds"
_DEFAULT_NO_WORKERS = 5.0
#: How often a release on a cluster reads the scheduler's count of workers, in seconds.
_WATCH_SECONDS = 0.5
#: The dask option holding the largest share of a worker's memory one partition may need.
MEMORY_FRACTION_OPTION = "dpframe.partition-memory-fraction"
_DEFAULT_FRACTION = 0.5

#: The fixed code of every cluster failure after the charge (also in the message).
CLUSTER_FAILED = "cluster_failed"

NO_CLIENT_WARNING = (
    "No distributed Client is active, so dask computes this private data with local threads "
    "and its rows stream through this process. To run on a cluster, create a "
    "distributed.Client(...) first (docs/backends.md, 'Running on a real cluster')."
)


class ClusterNotReadyError(DPError):
    """The cluster cannot run dpframe's tasks (checked before any charge)."""


class ClusterFailedError(QueryFailedError):
    """The cluster failed during a release (after its charge, which stands; the row says failed).

    Always the same message, with the fixed :attr:`code` ``cluster_failed``:
    which worker died or why could depend on the data, so none of it is shown.
    """

    code = CLUSTER_FAILED

    def __init__(self, timeout: float, charged: bool = True) -> None:
        ended = (
            "The release has ended; its charge stands and its ledger row says 'failed'."
            if charged
            else "Nothing was charged (the data was being opened, not released)."
        )
        super().__init__(
            f"[{CLUSTER_FAILED}] The Dask cluster failed during this "
            f"{'release' if charged else 'step'}: a worker died (e.g. out of memory), the "
            f"scheduler was lost, or the computation did not finish within {timeout:g} s. "
            f"{ended} Check the workers' logs and memory (docs/backends.md, 'Running on "
            "a real cluster'); raise the limit with "
            f"dask.config.set({{{RELEASE_TIMEOUT_OPTION!r}: seconds}})."
        )


def release_timeout() -> float:
    """A release's bounded wait on the cluster (the dask option, else 3600 s)."""
    return float(dask.config.get(RELEASE_TIMEOUT_OPTION, _DEFAULT_RELEASE_TIMEOUT))


def _cluster_failure(error: BaseException) -> bool:
    """True for a failure of the cluster (not of dpframe's code on the data)."""
    try:
        from distributed import KilledWorker
    except ImportError:  # pragma: no cover - distributed is installed with dask[distributed]
        return False
    # Before Python 3.11 asyncio's and concurrent.futures' TimeoutError (distributed
    # raises the former) are not the built-in one; from 3.11 on all three are one class.
    timeouts = TimeoutError | asyncio.TimeoutError | concurrent.futures.TimeoutError
    failures = KilledWorker | concurrent.futures.CancelledError | timeouts | OSError
    return isinstance(error, failures | _NoWorkersError)


class _NoWorkersError(Exception):
    """The cluster had no worker for :data:`NO_WORKERS_OPTION` seconds (internal)."""


def worker_count(client: Any) -> int:
    """The scheduler's count of workers now (0 when it cannot be asked)."""
    try:
        try:
            info: Any = client.scheduler_info(n_workers=0)  # totals only (distributed >= 2025)
        except TypeError:  # an older distributed: every worker's entry
            info = client.scheduler_info()
        count = info.get("n_workers")
        return int(count) if count is not None else len(info.get("workers") or {})
    except Exception:  # the scheduler is gone, the client closed, ...: no worker seen
        return 0


def _watched(client: Any, future: Any, wait: float) -> Any:
    """``future.result()``, within ``wait`` seconds, ending early when the cluster has no worker.

    Raises:
        TimeoutError: ``wait`` seconds passed.
        _NoWorkersError: the scheduler counted no worker for :data:`NO_WORKERS_OPTION` seconds.
    """
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    grace = float(dask.config.get(NO_WORKERS_OPTION, _DEFAULT_NO_WORKERS))
    deadline = time.monotonic() + wait
    empty_since: float | None = None
    while not done.wait(max(0.0, min(_WATCH_SECONDS, deadline - time.monotonic()))):
        now = time.monotonic()
        if now >= deadline:
            raise TimeoutError
        if worker_count(client) > 0:
            empty_since = None
        elif empty_since is None:
            empty_since = now
        elif now - empty_since >= grace:
            raise _NoWorkersError
    return future.result()


def run_bounded(client: Any, obj: Any, show: Any = None, charged: bool = True) -> Any:
    """Compute ``obj`` on ``client`` within :func:`release_timeout` seconds.

    ``show`` (e.g. ``distributed.progress``) is called with the future first;
    ``charged`` says whether a release's charge stands (False when opening data).

    Raises:
        ClusterFailedError: the time ran out (the computation is cancelled) or
            the cluster failed (a killed worker, a lost scheduler or
            connection, no worker left for :data:`NO_WORKERS_OPTION` seconds).
            An error raised by a task itself (a :class:`DPError`, or an
            exception the engine reports as a failed query) propagates as is.
    """
    wait = release_timeout()
    future = None
    try:
        future = client.compute(obj)
        if show is not None:
            show(future)
        return _watched(client, future, wait)
    except DPError:
        raise
    except Exception as error:
        if not _cluster_failure(error):
            raise
        if future is not None:
            with contextlib.suppress(Exception):  # the client itself may be gone
                future.cancel()
        raise ClusterFailedError(wait, charged) from None


def worker_memory_limits(client: Any) -> list[int]:
    """Each worker's memory limit in bytes (workers without a limit are left out)."""
    info: Any = client.scheduler_info()
    limits = [int(w.get("memory_limit") or 0) for w in info.get("workers", {}).values()]
    return [limit for limit in limits if limit > 0]


def check_partition_memory(partition_bytes: int, limits: list[int]) -> None:
    """Refuse partitions too large for the smallest worker (when the data is opened).

    A partition is loaded whole by one task; dask pauses a worker at 80% of
    its memory limit and restarts it at 95%.  So a partition estimated at
    more than :data:`MEMORY_FRACTION_OPTION` (default one half) of the
    smallest worker's limit is refused before anything is charged, with the
    fixes named.

    Raises:
        ClusterNotReadyError: the estimate is over the limit.
    """
    if not limits or partition_bytes <= 0:
        return
    fraction = float(dask.config.get(MEMORY_FRACTION_OPTION, _DEFAULT_FRACTION))
    smallest = min(limits)
    if partition_bytes <= fraction * smallest:
        return
    raise ClusterNotReadyError(
        f"The largest partition of this data needs about {partition_bytes / 2**20:,.0f} MiB "
        f"in memory, more than {fraction:g} of the smallest worker's memory limit "
        f"({smallest / 2**20:,.0f} MiB), so its worker would run out of memory during a "
        "release (after the charge). Nothing was charged. Fix: write smaller Parquet row "
        "groups or files (e.g. pyarrow's row_group_size=, or dask's "
        "to_parquet(..., row_group_size=...)), or read with split_row_groups=True (a "
        "partition per row group), or give the workers more memory (dask worker "
        "--memory-limit)."
    )


def software_versions() -> dict[str, str]:
    """This process's versions of :data:`VERSIONED` (run on each worker by the check)."""
    found = {}
    for name in VERSIONED:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _ask(client: Any) -> Mapping[str, Any]:
    run: Any = client.run
    answers: Mapping[str, Any] = run(software_versions, on_error="return")
    return answers


def check_workers(client: Any, timeout: float | None = None) -> frozenset[str]:
    """Check every worker of ``client``; return the checked worker addresses.

    Raises:
        ClusterNotReadyError: no worker, a worker that cannot import dpframe,
            versions that differ from this process's, or no answer within
            ``timeout`` seconds (default: the dask option
            :data:`CHECK_TIMEOUT_OPTION`, else 30 s).  The message names the
            workers and versions (public facts about the deployment).
    """
    wait = float(
        dask.config.get(CHECK_TIMEOUT_OPTION, _DEFAULT_TIMEOUT) if timeout is None else timeout
    )
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        answers = pool.submit(_ask, client).result(timeout=wait)
    except concurrent.futures.TimeoutError:
        raise ClusterNotReadyError(
            f"The Dask cluster did not answer a version check within {wait:g} s, so nothing "
            "was charged. Check that the workers are running and reachable (or raise the "
            f"wait: dask.config.set({{{CHECK_TIMEOUT_OPTION!r}: seconds}})."
        ) from None
    except Exception as error:  # the scheduler is gone, the client is closed, ...
        raise ClusterNotReadyError(
            f"The Dask cluster could not be asked for its versions ({type(error).__name__}), "
            "so nothing was charged."
        ) from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if not answers:
        raise ClusterNotReadyError(
            "The Dask cluster has no workers, so nothing was charged. Start workers first."
        )
    here = software_versions()
    problems = []
    for worker, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            problems.append(
                f"{worker} cannot run dpframe ({answer}); install dpframe {here['dpframe']} there"
            )
            continue
        differ = [
            f"{name} {answer.get(name)} (here {here[name]})"
            for name in VERSIONED
            if answer.get(name) != here[name]
        ]
        if differ:
            problems.append(f"{worker} has {', '.join(differ)}")
    if problems:
        raise ClusterNotReadyError(
            "The Dask workers cannot run this release as this process would, so nothing was "
            "charged: " + "; ".join(problems) + ". Use the same versions everywhere "
            "(docs/backends.md, 'Running on a real cluster')."
        )
    return frozenset(answers)
