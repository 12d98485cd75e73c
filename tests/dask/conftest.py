"""A tiny Dask cluster on loopback for the Dask backend's tests (two one-thread worker processes).

``on_dask`` makes :meth:`dpframe.Session.private_frame` turn every pandas
DataFrame into a dask DataFrame (three partitions) before loading it, so a
core test runs unchanged on the Dask backend; it fails the test if no frame
was converted (a test that silently ran on pandas would prove nothing).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from distributed import Client, LocalCluster

import dpframe as dp
from dpframe.backends.dask_backend import DaskBackend
from tests.dask._support import from_pandas
from tests.sessions import backends

PARTITIONS = 3


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    cluster: Any = LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=":0",
        memory_limit="2GiB",
    )
    client: Any = Client(cluster)  # type: ignore[no-untyped-call]
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture
def on_dask(dask_client: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[DaskBackend]]:
    original = dp.Session.private_frame
    made: list[DaskBackend] = []

    def private_frame(self: dp.Session, df: Any, *args: Any, **kwargs: Any) -> dp.PrivateFrame:
        if isinstance(df, pd.DataFrame) and len(df) > 0 and len(df.columns) > 0:
            df = from_pandas(df, PARTITIONS)
        frame = original(self, df, *args, **kwargs)
        made.extend(
            b for b in backends(self).values() if isinstance(b, DaskBackend) and b not in made
        )
        return frame

    monkeypatch.setattr(dp.Session, "private_frame", private_frame)
    yield made
    assert made, "the test loaded no data on the Dask backend"
