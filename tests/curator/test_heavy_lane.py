"""Heavy releases in their own, lower-priority workers (issue 16: one analyst cannot slow the rest).

Before: every release shared the same worker processes, so a hostile analyst
sending the heaviest admitted chain (about a second of work each) held one of
the two workers nearly all the time, and the 16 other analysts' p99 latency
rose 1.93x-2.12x in the load benchmark.  Now a release whose worst-case
estimate (public) is at least ``heavy_seconds`` computes in the heavy pool,
whose workers run at nice +10.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.service import Curator
from dpframe.curator.workers import HEAVY_NICE, WorkerPool
from tests.curator.support import ALICE, release_body, write_catalog

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX processes")

MEAN = release_body(lambda pf: pf["wage"].mean(epsilon=0.1))


def _chain(pf: dp.PrivateFrame) -> object:
    frame = pf.assign(c0=pf["wage"])
    for i in range(1, 200):
        frame = frame.assign(**{f"c{i}": frame[f"c{i - 1}"] * 1.0001})
    return frame["c199"].mean(epsilon=0.1)


def _counting(pool: WorkerPool, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = pool.acquire

    def acquire() -> Any:
        calls.append(1)
        return real()

    monkeypatch.setattr(pool, "acquire", acquire)
    return calls


def test_a_heavy_release_computes_in_the_niced_heavy_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # At 30,000 declared rows the default cost model estimates a mean at 0.055 s
    # and the 200-step chain at 0.95 s: one under heavy_seconds = 0.2, one over.
    server = "heavy_workers = 1\nheavy_seconds = 0.2"
    curator = Curator(Catalog.load(write_catalog(tmp_path, server=server, workers=1)))
    try:
        light_pool, heavy_pool = curator._seats.pool, curator._seats.heavy_pool
        assert light_pool is not None and heavy_pool is not None
        light, heavy = _counting(light_pool, monkeypatch), _counting(heavy_pool, monkeypatch)
        client = TestClient(create_app(curator))
        headers = {"Authorization": f"Bearer {ALICE}"}
        assert client.post("/v1/datasets/cps/query", json=MEAN, headers=headers).status_code == 200
        assert (len(light) > 0, len(heavy)) == (True, 0)
        before = len(light)
        answer = client.post("/v1/datasets/cps/query", json=release_body(_chain), headers=headers)
        assert answer.status_code == 200
        assert (len(light), len(heavy) > 0) == (before, True)
        (worker,) = heavy_pool._idle
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, worker.process.pid) == min(ours + HEAVY_NICE, 19)
        (plain,) = light_pool._idle
        assert os.getpriority(os.PRIO_PROCESS, plain.process.pid) == ours
    finally:
        curator.close()


def test_without_heavy_workers_heavy_releases_share_the_pool(tmp_path: Path) -> None:
    server = "heavy_workers = 0\nheavy_seconds = 0.2"
    curator = Curator(Catalog.load(write_catalog(tmp_path, server=server, workers=1)))
    try:
        assert curator._seats.heavy_pool is None
        client = TestClient(create_app(curator))
        headers = {"Authorization": f"Bearer {ALICE}"}
        answer = client.post("/v1/datasets/cps/query", json=release_body(_chain), headers=headers)
        assert answer.status_code == 200
    finally:
        curator.close()


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ("heavy_workers = -1", r"heavy_workers must be an integer in \[0, 256\]"),
        ("heavy_workers = true", r"heavy_workers must be an integer"),
        ("heavy_seconds = 0", "heavy_seconds must be a number of seconds > 0"),
    ],
)
def test_bad_heavy_settings_are_refused(tmp_path: Path, server: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        Catalog.load(write_catalog(tmp_path, server=server))
