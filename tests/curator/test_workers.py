"""Killable workers (issue 16): a release past the wall-clock limit is stopped, not abandoned.

Before: a release past ``release_seconds`` kept computing in a thread that
nothing could stop; its seat stayed busy until it ended.  Now the rows are
read in worker processes (``[server] workers``); past the limit the curator
kills the worker (SIGKILL), the row says ``abandoned`` with its charge, the
seat is free at once and the next release gets a fresh worker.

The slow release here is a real computation (300 derived columns of
``clip(x ** 3, 1, 2)`` over a million rows, about 4 s embedded), admitted because the
catalog's cost model is set to zero: a mis-calibrated model is the server
fault the wall-clock limit exists for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.backends.pandas_backend import PandasBackend
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, hash_token
from dpframe.curator.service import Curator
from dpframe.curator.workers import WorkerBackend, WorkerPool, WorkerStoppedError
from dpframe.plan.codec import encode_node
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Source
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, RELEASES, node_on, release_body, write_catalog

pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="POSIX processes")


#: The wall-clock limit of the slow catalog, and a chain that takes several times as long
#: (a 300-step chain passed a 1.0 s limit on a quiet machine, but once finished within a 1.5 s
#: limit in CI), while one step takes milliseconds.
LIMIT = 2.0  # the release must reach its worker first: a charge under load once took > 1 s
LONG_CHAIN = 600  # 6 evaluation nodes a step: under the remote limit of 4,000


def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {ALICE}"}


def _body(steps: int) -> dict[str, Any]:
    """A mean after ``steps`` derived columns ``c_i = clip(c_{i-1} ** 3, 1, 2)``."""

    def chain(pf: dp.PrivateFrame) -> object:
        column = "x"
        for i in range(steps):
            pf = pf.assign(**{f"c{i}": (pf[column] ** 3).clip(1, 2)})
            column = f"c{i}"
        return pf[column].clip(0, 100).mean(epsilon=0.1)

    stand_in = pd.DataFrame({"x": [1.0, 2.0]})
    return encode_node(node_on(stand_in, chain, bounds={"x": (0, 100)}))


def _slow_catalog(tmp_path: Path, seconds: float) -> Path:
    rng = np.random.default_rng(7)
    pd.DataFrame({"x": rng.uniform(1, 100, 2_000_000)}).to_parquet(tmp_path / "big.parquet")
    (tmp_path / "catalog.toml").write_text(
        "[server]\n"
        'ledger = "ledger.sqlite"\n'
        "workers = 1\n"
        f"release_seconds = {seconds}\n"
        f"release_estimate_seconds = {seconds}\n"
        "cost = { row_op_seconds = 0.0, cell_seconds = 0.0, overhead_seconds = 0.0 }\n\n"
        "[datasets.big]\n"
        'path = "big.parquet"\n'
        "max_rows = 2000000\n"
        "bounds = { x = [0, 100] }\n\n"
        "[analysts.alice]\n"
        f'token_sha256 = "{hash_token(ALICE)}"\n'
        "budgets = { big = { epsilon = 10.0 } }\n"
    )
    return tmp_path / "catalog.toml"


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[tuple[Curator, TestClient]]:
    curator = Curator(Catalog.load(_slow_catalog(tmp_path, LIMIT)))
    with TestClient(create_app(curator)) as client:
        yield curator, client


def _ledger(client: TestClient) -> pd.DataFrame:
    table: pd.DataFrame = decode_response(
        client.get("/v1/datasets/big/ledger", headers=auth()).json()["ledger"]
    )
    return table


def test_a_release_past_the_limit_has_its_worker_killed(
    slow: tuple[Curator, TestClient],
) -> None:
    curator, client = slow
    quick = _body(1)
    assert client.post("/v1/datasets/big/query", json=quick, headers=auth()).status_code == 200
    seat = curator._seats[("alice", "big")]
    pool = curator._seats.pool
    assert pool is not None and pool.started == 1  # started with the curator
    first = pool._idle[0].process
    started = time.perf_counter()
    answer = client.post("/v1/datasets/big/query", json=_body(LONG_CHAIN), headers=auth())
    waited = time.perf_counter() - started
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "limit_exceeded"
    assert LIMIT - 0.1 < waited < LIMIT + 3
    first.wait(timeout=5)
    assert first.returncode == -9  # SIGKILL
    assert list(_ledger(client)["status"]) == ["released", "abandoned"]  # the charge stands
    deadline = time.monotonic() + 5
    while seat.lock.locked():  # the release's thread saw its worker stop
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert len(pool._idle) == 1 and pool._idle[0].process is not first  # replaced at once
    pool._idle[0].ping()  # its start (importing dpframe) is not part of the next release
    again = time.perf_counter()
    fresh = {**quick, "fresh": True}  # computed again, not answered from the ledger (issue 31)
    assert client.post("/v1/datasets/big/query", json=fresh, headers=auth()).status_code == 200
    took = time.perf_counter() - again
    print(f"limit hit after {waited:.2f} s; the next release (a new worker) {took:.2f} s")
    assert pool.started == 2 and list(_ledger(client)["status"])[-1] == "released"
    assert len(pool._idle) == 1 and pool._idle[0].alive


def test_every_release_kind_runs_in_a_worker(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path, alice_epsilon=1000.0, workers=2)
    curator = Curator(Catalog.load(catalog))
    with TestClient(create_app(curator)) as client:
        for name, release in RELEASES.items():
            answer = client.post(
                "/v1/datasets/sentinel/query", json=release_body(release), headers=auth()
            )
            assert answer.status_code == 200, (name, answer.json())
        seat = curator._seats[("alice", "sentinel")]
        assert seat.backends and all(isinstance(b, WorkerBackend) for b in seat.backends)
        pool = curator._seats.pool
        assert pool is not None and pool.started == 2
        workers = [w.process for w in pool._idle]
    for process in workers:  # the app's shutdown stopped them
        assert process.wait(timeout=5) is not None


def test_a_plan_of_a_thousand_steps_reaches_the_worker(tmp_path: Path) -> None:
    # Pickling nests a few frames per plan step: past Python's default limit at
    # about 300 steps (such a release failed after its charge before).
    catalog = write_catalog(tmp_path, workers=1)  # cps declares at most 30,000 rows

    def chain(pf: dp.PrivateFrame) -> object:
        pf = pf.assign(c0=pf["wage"])
        for i in range(1, 999):
            pf = pf.assign(**{f"c{i}": (pf[f"c{i - 1}"] * 1.0001).clip(0, 5000)})
        return pf["c998"].mean(epsilon=0.1)

    stand_in = pd.DataFrame({"wage": [1.0]})
    body = encode_node(node_on(stand_in, chain, bounds={"wage": (0, 5000)}))
    with TestClient(create_app(Curator(Catalog.load(catalog)))) as client:
        answer = client.post("/v1/datasets/cps/query", json=body, headers=auth())
        assert answer.status_code == 200, answer.json()


def test_a_worker_that_dies_mid_release_gets_the_fixed_answer(tmp_path: Path) -> None:
    """A worker killed from outside (OOM, an operator) while computing: one fixed answer."""
    curator = Curator(Catalog.load(_slow_catalog(tmp_path, 120)))
    with TestClient(create_app(curator)) as client:
        pool = curator._seats.pool
        assert pool is not None
        victim = pool._idle[0].process
        timer = threading.Timer(1.0, victim.kill)
        timer.start()
        started = time.perf_counter()
        answer = client.post("/v1/datasets/big/query", json=_body(LONG_CHAIN), headers=auth())
        timer.join()
        assert time.perf_counter() - started < 10  # not the 120 s limit
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "limit_exceeded"
        assert list(_ledger(client)["status"]) == ["abandoned"]
        seat = curator._seats[("alice", "big")]
        assert not seat.lock.locked() and seat.abandoned == 1
        assert len(pool._idle) == 1 and pool._idle[0].process is not victim


def test_a_stopped_backend_refuses_calls_until_it_resumes() -> None:
    """A release stopped while it waited for a worker never computes (then the seat resumes)."""
    pool = WorkerPool(1)
    try:
        backend = WorkerBackend(PandasBackend(pd.DataFrame({"x": [1.0, 2.0]})), "d", pool)
        measures = (Measure("rows"),)
        assert backend.compute(Source("d"), measures, ())[0][0] == 2
        assert backend.kill() is False  # no worker was computing for it
        with pytest.raises(WorkerStoppedError, match="stopped"):
            backend.compute(Source("d"), measures, ())
        backend.resume()
        assert backend.compute(Source("d"), measures, ())[0][0] == 2
        assert pool.started == 1  # the idle worker was not killed
    finally:
        pool.close()
