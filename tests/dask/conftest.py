"""A tiny Dask cluster on loopback for the Dask backend's tests (two one-thread worker processes).

``on_dask`` makes :meth:`dpframe.Session.private_frame` turn every pandas
DataFrame into a dask DataFrame (three partitions) before loading it, so a
core test runs unchanged on the Dask backend; it fails the test if no frame
was converted (a test that silently ran on pandas would prove nothing).
"""

from __future__ import annotations

import sys
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


def _spawnable_main() -> None:
    """Give ``__main__`` the ``__spec__`` that multiprocessing's spawn reads.

    Dask's nannies start (and restart) worker processes with spawn, which reads
    ``sys.modules["__main__"].__spec__``.  An IPython shell made by an earlier
    test in the same process (the magics' tests) leaves a ``__main__`` without
    one; in a single process the Dask tests happened to run first, in a
    pytest-xdist worker they may not.  ``None`` is what ``python -c`` has.
    """
    main = sys.modules.get("__main__")
    if main is not None and not hasattr(main, "__spec__"):
        main.__spec__ = None


@pytest.fixture(autouse=True)
def _main_for_spawn() -> None:
    _spawnable_main()  # a test that restarts workers spawns them again


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    _spawnable_main()
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
