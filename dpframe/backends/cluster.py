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
"""

from __future__ import annotations

import concurrent.futures
import importlib.metadata
from collections.abc import Mapping
from typing import Any

import dask

from dpframe.errors import DPError

__all__ = [
    "CHECK_TIMEOUT_OPTION",
    "NO_CLIENT_WARNING",
    "VERSIONED",
    "ClusterNotReadyError",
    "check_workers",
    "software_versions",
]

#: The packages whose versions must match between this process and every worker.
VERSIONED = ("dpframe", "pandas", "numpy")
#: The dask option holding the check's bounded wait, in seconds (default 30).
CHECK_TIMEOUT_OPTION = "dpframe.cluster-check-timeout"
_DEFAULT_TIMEOUT = 30.0

NO_CLIENT_WARNING = (
    "No distributed Client is active, so dask computes this private data with local threads "
    "and its rows stream through this process. To run on a cluster, create a "
    "distributed.Client(...) first (docs/backends.md, 'Running on a real cluster')."
)


class ClusterNotReadyError(DPError):
    """The cluster cannot run dpframe's tasks (checked before any charge)."""


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
