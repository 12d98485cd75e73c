"""Seats that do not park threads (issue 16).

Before: a release held the analyst's seat lock, and every further request of
that analyst waited for it in a worker thread; 40 of them exhausted the pool,
and ``/v1/health`` and every other analyst timed out.  Now a busy seat is
answered at once with 429 ``busy`` and ``Retry-After``, uncharged; reads
(schema, budget, ledger) need no seat lock; ``/v1/health`` is answered on the
event loop, off the worker threads.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Analyst, Catalog
from dpframe.curator.service import Curator
from dpframe.remote.client import CuratorBusyError
from dpframe.remote.wire import decode_response, dumps
from tests.curator.support import ALICE, BOB, RELEASES, release_body, write_catalog
from tests.curator.threaded import served

MEAN = release_body(RELEASES["mean"])


def auth(token: str = ALICE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def curator(tmp_path: Path) -> Curator:
    return Curator(Catalog.load(write_catalog(tmp_path)))


@pytest.fixture
def client(curator: Curator) -> Iterator[TestClient]:
    with TestClient(create_app(curator)) as test_client:
        yield test_client


def _rows(client: TestClient, token: str = ALICE) -> int:
    answer = client.get("/v1/datasets/cps/ledger", headers=auth(token))
    assert answer.status_code == 200, answer.text
    return len(decode_response(answer.json()["ledger"]))


def _seat_lock(curator: Curator, client: TestClient, analyst: str = "alice") -> threading.Lock:
    assert client.get("/v1/datasets/cps", headers=auth()).status_code == 200  # opens the seat
    return curator._seats[(analyst, "cps")].lock


def test_a_busy_seat_answers_429_at_once_and_charges_nothing(
    client: TestClient, curator: Curator
) -> None:
    lock = _seat_lock(curator, client)
    with lock:  # another release of alice's is running
        started = time.perf_counter()
        answer = client.post("/v1/datasets/cps/query", json=MEAN, headers=auth())
        assert time.perf_counter() - started < 5  # a wait for the lock would never end
        assert answer.status_code == 429
        assert answer.headers["retry-after"] == "1"
        error = answer.json()["error"]
        assert error["code"] == "busy" and "nothing was charged" in error["message"]
        # reads need no seat, and other analysts have their own
        assert client.get("/v1/datasets/cps/budget", headers=auth()).status_code == 200
        assert _rows(client) == 0
        assert (
            client.post("/v1/datasets/cps/query", json=MEAN, headers=auth(BOB)).status_code == 200
        )
    budget = client.get("/v1/datasets/cps/budget", headers=auth()).json()
    assert decode_response(budget["spent"]).epsilon == 0
    assert client.post("/v1/datasets/cps/query", json=MEAN, headers=auth()).status_code == 200
    assert _rows(client) == 1


def test_the_retry_after_comes_from_the_catalog(tmp_path: Path) -> None:
    curator = Curator(Catalog.load(write_catalog(tmp_path, server="busy_retry_seconds = 3")))
    client = TestClient(create_app(curator))
    with _seat_lock(curator, client):
        answer = client.post("/v1/datasets/cps/query", json=MEAN, headers=auth())
    assert (answer.status_code, answer.headers["retry-after"]) == (429, "3")


def test_forty_requests_on_a_busy_seat_park_no_thread(curator: Curator) -> None:
    with served(create_app(curator)) as url:
        request = urllib.request.Request(url + "/v1/datasets/cps", headers=auth())
        urllib.request.urlopen(request, timeout=10).close()
        lock = curator._seats[("alice", "cps")].lock

        def post(_: int) -> int:
            data = dumps(MEAN).encode()
            request = urllib.request.Request(
                url + "/v1/datasets/cps/query",
                data=data,
                method="POST",
                headers={**auth(), "Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    return int(answer.status)
            except urllib.error.HTTPError as exc:
                return int(exc.code)

        with lock:
            started = time.perf_counter()
            with ThreadPoolExecutor(40) as pool:
                statuses = list(pool.map(post, range(40)))
            elapsed = time.perf_counter() - started
            with urllib.request.urlopen(url + "/v1/health", timeout=2) as health:
                assert health.status == 200
        assert statuses == [429] * 40
        assert elapsed < 30  # generous for a loaded CI machine; a queue would never end
        print(f"\n40 requests on a busy seat answered 429 in {elapsed:.2f} s")
        assert curator._seats[("alice", "cps")].session.spent == dp.Budget()


def test_health_is_answered_when_every_worker_thread_is_taken(
    curator: Curator, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    entered = threading.Event()
    plain = curator.datasets

    def stuck(analyst: Analyst) -> list[str]:
        entered.set()
        gate.wait(20)
        return plain(analyst)

    monkeypatch.setattr(curator, "datasets", stuck)
    with served(create_app(curator, threads=1)) as url:
        request = urllib.request.Request(url + "/v1/datasets", headers=auth())
        waiting = threading.Thread(target=lambda: urllib.request.urlopen(request, timeout=30))
        waiting.start()
        try:
            assert entered.wait(10)  # the one worker thread is taken
            started = time.perf_counter()
            with urllib.request.urlopen(url + "/v1/health", timeout=5) as health:
                assert health.status == 200
            assert time.perf_counter() - started < 5
        finally:
            gate.set()
            waiting.join(30)


def test_the_client_waits_out_a_busy_seat_then_raises(curator: Curator) -> None:
    with served(create_app(curator)) as url:
        impatient = dp.connect(url, token=ALICE, busy_wait=0).open("cps")
        patient = dp.connect(url, token=ALICE, busy_wait=10).open("cps")
        lock = curator._seats[("alice", "cps")].lock
        with lock:
            with pytest.raises(CuratorBusyError, match="still running; nothing was charged"):
                impatient["wage"].mean(epsilon=0.1)
            assert impatient.session.spent == dp.Budget()
            timer = threading.Timer(0.5, lock.release)
            timer.start()
            released: Any = patient["wage"].mean(epsilon=0.1)  # retried after the Retry-After
            lock.acquire()  # give the `with` block its lock back
        assert isinstance(released, dp.Release)
        assert list(patient.session.ledger["epsilon"]) == [pytest.approx(0.1)]  # charged once


def test_the_latency_quantum_holds_answers_but_no_thread(tmp_path: Path) -> None:
    catalog = Catalog.load(write_catalog(tmp_path, quantum_ms=1000))
    curator = Curator(catalog)
    with served(create_app(curator, threads=1)) as url:
        for token in (ALICE, BOB):  # open both seats first
            urllib.request.urlopen(
                urllib.request.Request(url + "/v1/datasets/cps", headers=auth(token)), timeout=10
            ).close()

        def post(token: str) -> float:
            request = urllib.request.Request(
                url + "/v1/datasets/cps/query",
                data=dumps(MEAN).encode(),
                method="POST",
                headers={**auth(token), "Content-Type": "application/json"},
            )
            started = time.perf_counter()
            urllib.request.urlopen(request, timeout=10).close()
            return time.perf_counter() - started

        with ThreadPoolExecutor(2) as pool:
            times = list(pool.map(post, [ALICE, BOB]))
    # each answer is held to the 1 s grid; with one worker thread, a wait that held the
    # thread would have made the second answer take 2 s
    assert all(0.95 <= t < 1.95 for t in times), times
