"""Before the charge, the Dask backend checks that the cluster can run dpframe's tasks.

A worker that cannot import dpframe (or runs other versions of dpframe, pandas
or numpy) is refused with a ClusterNotReadyError naming the worker, within a
bounded wait and before anything is charged; without a distributed Client the
backend warns once that the rows stream through this process.
"""

from __future__ import annotations

import importlib.metadata
import time
import warnings
from collections.abc import Iterator
from typing import Any

import dask.dataframe as dd
import pandas as pd
import pytest
from distributed import Client, LocalCluster

import dpframe as dp
from dpframe.backends.cluster import ClusterNotReadyError, check_workers
from dpframe.backends.dask_backend import DaskBackend
from tests.sessions import backends

FRAME = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})


def _frame(session: dp.Session) -> dp.PrivateFrame:
    data: Any = dd.from_pandas(FRAME, npartitions=2)  # type: ignore[no-untyped-call]
    return session.private_frame(data, bounds={"x": (0, 5)})


@pytest.fixture
def lone_cluster() -> Iterator[Any]:
    """A cluster of its own (one worker process): the tests below break its workers."""
    local: Any = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    client: Any = Client(local)  # type: ignore[no-untyped-call]
    try:
        yield client
    finally:
        client.close()
        local.close()


@pytest.mark.fresh_releases
def test_a_matching_cluster_is_checked_once_and_runs(dask_client: Any) -> None:
    session = dp.Session(epsilon=10, ledger=":memory:", name="cluster-ok")
    pf = _frame(session)
    pf.count(epsilon=1)
    backend = next(iter(backends(session).values()))
    assert isinstance(backend, DaskBackend)
    workers = frozenset(dask_client.scheduler_info()["workers"])
    assert backend._checked == workers and len(workers) == 2
    pf.count(epsilon=1)  # the same workers: not asked again
    assert session.spent == dp.Budget(2)


def test_workers_without_dpframe_are_refused_before_the_charge(lone_cluster: Any) -> None:
    def hide_dpframe() -> None:  # defined here: shipped to the worker by value
        import sys

        class NoDpframe:
            def find_spec(self, name: str, path: Any, target: Any = None) -> None:
                if name == "dpframe" or name.startswith("dpframe."):
                    raise ModuleNotFoundError(f"No module named {name!r}")

        for name in [m for m in sys.modules if m == "dpframe" or m.startswith("dpframe.")]:
            del sys.modules[name]
        sys.meta_path.insert(0, NoDpframe())

    lone_cluster.run(hide_dpframe)
    session = dp.Session(epsilon=10, ledger=":memory:", name="cluster-bare")
    pf = _frame(session)
    started = time.monotonic()
    with pytest.raises(ClusterNotReadyError, match=r"cannot run dpframe \(ModuleNotFoundError"):
        pf.count(epsilon=1)
    assert time.monotonic() - started < 30
    assert session.spent.is_zero and session.ledger.empty


def test_other_versions_are_refused_naming_them(
    dask_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.metadata.version

    def here(name: str) -> str:  # this process only: the workers report their real versions
        return "0.0.1" if name == "pandas" else real(name)

    monkeypatch.setattr(importlib.metadata, "version", here)
    session = dp.Session(epsilon=10, ledger=":memory:", name="cluster-versions")
    with pytest.raises(ClusterNotReadyError, match=rf"pandas {pd.__version__} \(here 0\.0\.1\)"):
        _frame(session).count(epsilon=1)
    assert session.ledger.empty


class _SilentClient:
    def run(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(5)
        return {}


class _EmptyClient:
    def run(self, *args: Any, **kwargs: Any) -> Any:
        return {}


def test_an_unanswered_check_ends_within_its_bound() -> None:
    started = time.monotonic()
    with pytest.raises(ClusterNotReadyError, match=r"did not answer a version check within 0\.2 s"):
        check_workers(_SilentClient(), timeout=0.2)
    assert time.monotonic() - started < 2


def test_a_cluster_without_workers_is_refused() -> None:
    with pytest.raises(ClusterNotReadyError, match="has no workers"):
        check_workers(_EmptyClient(), timeout=5)


def test_without_a_client_the_backend_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("dpframe.backends.dask_backend._client", lambda: None)
    session = dp.Session(epsilon=10, ledger=":memory:", name="threads")
    pf = _frame(session)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pf.count(epsilon=1)
        pf.count(epsilon=1)
    messages = [str(w.message) for w in caught if "distributed Client" in str(w.message)]
    assert len(messages) == 1 and "rows stream through this process" in messages[0]
    assert caught[0].filename == __file__  # points at the analyst's line
