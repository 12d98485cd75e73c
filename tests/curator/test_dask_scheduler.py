"""The curator on an existing Dask cluster: ``[server] dask_scheduler`` (issue 31, part 4).

A scheduler and two workers are started as separate processes (``python -m
dask scheduler`` / ``python -m dask worker``, port 0, a scheduler file), as a
data owner's cluster would be; the catalog names the scheduler and serves a
Parquet *folder* (``path = "cps/"``).  Releases through the curator must run
as tasks on those workers: the workers' own counters of executed tasks grow
with each release, and the curator's process never computes with dask's
local threads (its local scheduler is replaced by one that fails the test).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, CatalogError, hash_token
from dpframe.curator.service import Curator
from dpframe.examples.datasets import load_cps1988
from dpframe.remote.wire import decode_response
from tests.curator.support import (
    ALICE,
    RELEASES,
    cps_declarations,
    cps_parquet_folder,
    release_body,
)

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

#: The longest wait for the cluster's processes to start (seconds).
START_SECONDS = 90.0


def _start(args: list[str], folder: Path, log: str) -> subprocess.Popen[bytes]:
    out = (folder / log).open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "dask", *args],
        cwd=folder,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopped with its children below
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A scheduler and two one-thread workers, each its own process; yields the address."""
    folder = tmp_path_factory.mktemp("dask-cluster")
    scheduler_file = folder / "scheduler.json"
    started = [
        _start(
            [
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(scheduler_file),
            ],
            folder,
            "scheduler.log",
        )
    ]
    try:
        deadline = time.monotonic() + START_SECONDS
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            assert time.monotonic() < deadline, (folder / "scheduler.log").read_text()
            assert started[0].poll() is None, (folder / "scheduler.log").read_text()
            time.sleep(0.2)
        address = str(json.loads(scheduler_file.read_text())["address"])
        for i in range(2):
            started.append(
                _start(
                    [
                        "worker",
                        address,
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--memory-limit",
                        "2GiB",
                        "--name",
                        f"owner-worker-{i}",
                    ],
                    folder,
                    f"worker-{i}.log",
                )
            )
        with _observer(address) as observer:
            observer.wait_for_workers(2, timeout=START_SECONDS)
        yield address
    finally:
        for process in reversed(started):
            _stop(process)


def _observer(address: str) -> Any:
    """A client of the test's own (never the process's default client)."""
    return distributed.Client(address, timeout=START_SECONDS, set_as_default=False)


def _executed(observer: Any) -> dict[str, int]:
    """Each worker's count of tasks it has executed (its own state machine's counter)."""
    counts: dict[str, int] = observer.run(lambda dask_worker: dask_worker.state.executed_count)
    return counts


def _catalog(folder: Path, server: str) -> Path:
    cps_parquet_folder(folder / "cps")  # a folder of three files
    path = folder / "catalog.toml"
    path.write_text(
        '[server]\nledger = "ledger.sqlite"\nlatency_quantum_ms = 0\nworkers = 0\n'
        f"{server}\n"
        '[datasets.cps]\npath = "cps/"\nbackend = "dask"\n'  # a folder: no suffix
        f"{cps_declarations()}"
        f'[analysts.alice]\ntoken_sha256 = "{hash_token(ALICE)}"\n'
        "budgets = { cps = { epsilon = 100.0 } }\n"
    )
    return path


def _no_local_threads(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("dask computed with local threads inside the curator's process")


def test_releases_through_the_curator_run_on_the_cluster(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dask
    import dask.local
    import dask.threaded

    from dpframe.backends.cluster import RELEASE_TIMEOUT_OPTION

    # Every local scheduler of dask (threads, synchronous) runs through get_async.
    monkeypatch.setattr(dask.local, "get_async", _no_local_threads)
    monkeypatch.setattr(dask.threaded, "get_async", _no_local_threads)
    path = _catalog(tmp_path, f'dask_scheduler = "{cluster}"\ndask_connect_seconds = 60')
    with _observer(cluster) as observer:
        before_start = sum(_executed(observer).values())
        curator = Curator(Catalog.load(path))
        try:
            assert curator.cluster is not None and len(curator.cluster.workers) == 2
            assert curator.start_lines() == [
                f"Dask datasets run on the cluster at {cluster} (2 workers, versions checked)"
            ]
            cluster_client = curator.cluster.client
            assert distributed.default_client() is cluster_client
            assert dask.config.get(RELEASE_TIMEOUT_OPTION) == 300.0  # [server].release_seconds
            counted = sum(_executed(observer).values())
            assert counted > before_start  # the row ceiling was counted by the workers
            client = TestClient(create_app(curator))
            headers = {"Authorization": f"Bearer {ALICE}"}
            grew = []
            for kind in ("count", "grouped mean", "hist", "quantile"):
                before = _executed(observer)
                answer = client.post(
                    "/v1/datasets/cps/query", json=release_body(RELEASES[kind]), headers=headers
                )
                assert answer.status_code == 200, (kind, answer.json())
                after = _executed(observer)
                grew.append(sum(after.values()) - sum(before.values()))
            assert all(n > 0 for n in grew), grew  # every release ran tasks on the workers
            shown = _executed(observer)
            assert len(shown) == 2 and all(n > 0 for n in shown.values())  # both workers
            count = client.post(
                "/v1/datasets/cps/query",
                json=release_body(lambda pf: pf.count(epsilon=50)),
                headers=headers,
            )
            value = float(decode_response(count.json()["result"]))
            assert abs(value - len(load_cps1988())) < 2  # ε = 50: |noise| < 2 w.p. > 1 - 1e-6
            ledger = decode_response(
                client.get("/v1/datasets/cps/ledger", headers=headers).json()["ledger"]
            )
            assert list(ledger["status"]) == ["released"] * 5
        finally:
            curator.close()
    assert cluster_client.status == "closed"
    try:  # another test's cluster may still have a client in this worker process
        current = distributed.default_client()
    except ValueError:  # no client left in the process
        current = None
    assert current is not cluster_client  # closed: no longer the process's default
    assert dask.config.get(RELEASE_TIMEOUT_OPTION, None) is None  # the option as it was


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: nothing listens there


def test_a_scheduler_that_does_not_answer_stops_serve(tmp_path: Path) -> None:
    address = f"tcp://127.0.0.1:{_free_port()}"
    path = _catalog(tmp_path, f'dask_scheduler = "{address}"\ndask_connect_seconds = 2')
    with pytest.raises(CatalogError, match=r"no Dask scheduler answered at tcp://127\.0\.0\.1"):
        Curator(Catalog.load(path))
    done = subprocess.run(
        [sys.executable, "-m", "dpframe.cli", "serve", "--catalog", str(path), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "dask_scheduler: no Dask scheduler answered" in done.stderr
    assert "raise [server].dask_connect_seconds" in done.stderr


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ('dask_scheduler = "10.0.0.5:8786"', "must be a Dask scheduler's address"),
        ('dask_scheduler = "tcp://host:8786/x"', "must be a Dask scheduler's address"),
        ("dask_scheduler = 8786", "must be a Dask scheduler's address"),
        ('dask_scheduler = "tcp://h:1"\ndask_connect_seconds = 0', "dask_connect_seconds must"),
    ],
)
def test_bad_scheduler_settings_are_refused(tmp_path: Path, server: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        Catalog.load(_catalog(tmp_path, server))


def test_a_scheduler_without_a_dask_dataset_is_refused(tmp_path: Path) -> None:
    path = _catalog(tmp_path, 'dask_scheduler = "tcp://127.0.0.1:8786"')
    path.write_text(path.read_text().replace('backend = "dask"\n', ""))
    with pytest.raises(CatalogError, match="no dataset uses it"):
        Catalog.load(path)


def test_without_a_scheduler_serve_warns_that_rows_stream_through_it(tmp_path: Path) -> None:
    curator = Curator(Catalog.load(_catalog(tmp_path, "")))
    try:
        assert curator.cluster is None
        (line,) = curator.start_lines()
        assert line.startswith("WARNING: the Dask dataset cps run on Dask's local threads")
    finally:
        curator.close()


def test_a_parquet_folder_without_a_suffix_is_served_on_pandas(tmp_path: Path) -> None:
    path = _catalog(tmp_path, "")
    path.write_text(path.read_text().replace('backend = "dask"\n', ""))
    curator = Curator(Catalog.load(path))
    try:
        client = TestClient(create_app(curator))
        answer = client.post(
            "/v1/datasets/cps/query",
            json=release_body(RELEASES["count"]),
            headers={"Authorization": f"Bearer {ALICE}"},
        )
        assert answer.status_code == 200, answer.json()
    finally:
        curator.close()


def test_serve_on_the_cluster_says_so_and_an_analyst_releases_there(
    cluster: str, tmp_path: Path
) -> None:
    import dpframe as dp
    from tests.curator.support import free_port

    path = _catalog(tmp_path, f'dask_scheduler = "{cluster}"\ndask_connect_seconds = 60')
    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "dpframe", "serve", "--catalog", str(path), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert serve.stdout is not None
        said: list[str] = []
        deadline = time.monotonic() + START_SECONDS
        while not any("serving" in line for line in said):
            assert time.monotonic() < deadline and serve.poll() is None, said
            said.append(serve.stdout.readline())
        assert f"dpframe curator: Dask datasets run on the cluster at {cluster} (2 workers" in (
            "".join(said)
        )
        with _observer(cluster) as observer:
            before = sum(_executed(observer).values())
            url = f"http://127.0.0.1:{port}"
            for _ in range(100):  # uvicorn binds just after the line above
                try:
                    conn = dp.connect(url, token=ALICE)
                    break
                except Exception:
                    time.sleep(0.2)
            else:
                raise AssertionError("the curator did not answer within 20 s")
            cps = conn.open("cps")
            total = float(cps.count(epsilon=50))
            assert abs(total - len(load_cps1988())) < 2  # ε = 50: |noise| < 2 w.p. > 1 - 1e-6
            assert sum(_executed(observer).values()) > before  # computed on the workers
    finally:
        serve.terminate()
        serve.wait(timeout=30)
        if serve.stdout is not None:
            serve.stdout.close()
