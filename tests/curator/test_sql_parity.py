"""SQL through the curator: the client compiles, the server receives release nodes only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.api.sql import SQLRefusedError
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.remote import http
from tests.curator.support import ALICE, Server, write_catalog
from tests.sql_cases import REGIONS

BIG = 1e5

QUERIES = [
    "SELECT AVG(wage) FROM cps WHERE education >= 12 AND region <> 'south'",
    "SELECT region, AVG(wage) AS m, COUNT(*) AS n FROM cps GROUP BY region ORDER BY m DESC",
    "SELECT CASE WHEN education < 12 THEN 'low' ELSE 'high' END AS level, SUM(wage) "
    "FROM cps GROUP BY level",
    "SELECT r.division, COUNT(*) FROM cps JOIN regions r USING (region) GROUP BY r.division",
    "WITH t AS (SELECT wage / 40 AS hourly, smsa FROM cps) SELECT smsa, AVG(hourly) FROM t "
    "GROUP BY smsa HAVING COUNT(*) > 100",
]


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("curator-sql"), alice_epsilon=1e7)


@pytest.fixture(scope="module")
def remote(server: Server) -> Any:
    frame = dp.connect(server.url, token=ALICE).open("cps")
    session = frame.session
    assert isinstance(session, dp.RemoteSession)
    session.register("regions", REGIONS)
    return frame


@pytest.fixture(scope="module")
def embedded() -> dp.Session:
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    frame = session.private_frame(
        load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
    )
    session.register("cps", frame)
    session.register("regions", REGIONS)
    return session


@pytest.mark.parametrize("query", QUERIES)
def test_remote_sql_matches_embedded(query: str, remote: Any, embedded: dp.Session) -> None:
    session = remote.session
    before = len(session.ledger)
    far, local = session.sql(query, epsilon=BIG), embedded.sql(query, epsilon=BIG)
    assert type(far) is type(local)
    if isinstance(far, pd.DataFrame):
        assert list(far.index) == list(local.index)
        assert list(far.columns) == list(local.columns)
        assert dp.ci(far).shape == dp.ci(local).shape
    np.testing.assert_allclose(np.asarray(far, float), np.asarray(local, float), rtol=1e-3, atol=1)
    ledger = session.ledger
    assert len(ledger) == before + 1  # one release, whatever HAVING or ORDER BY asked
    assert ledger["query"].iloc[-1] == embedded.ledger["query"].iloc[-1]


def test_the_server_receives_nodes_only(remote: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[Any] = []
    original: Callable[..., Any] = http.Http.request

    def request(self: Any, method: str, path: str, body: Any = None) -> Any:
        sent.append(body)
        return original(self, method, path, body)

    monkeypatch.setattr(http.Http, "request", request)
    session = remote.session
    node = session.capture_node(lambda: session.sql(QUERIES[1], epsilon=1.0))
    spelled = session.capture_node(
        lambda: (
            remote.assign(**{"*": 1})
            .groupby("region")
            .agg({"wage": ["mean"], "*": ["count"]}, epsilon=1.0)
        )
    )
    assert node == spelled  # compiled here, in the analyst's process
    session.sql(QUERIES[1], epsilon=1.0)
    session.sql("EXPLAIN " + QUERIES[0], epsilon=1.0)
    bodies = [b for b in sent if b is not None]
    assert len(bodies) == 2
    for body in bodies:
        text = json.dumps(body)
        assert "SELECT" not in text and "regions" not in text
        assert "node" in text or "type" in text


def test_remote_refusals_send_nothing_and_charge_nothing(
    remote: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = remote.session
    spent = session.spent
    sent: list[Any] = []
    monkeypatch.setattr(http.Http, "request", lambda self, *args: sent.append(args))
    with pytest.raises(SQLRefusedError, match=r"SELECT \* returns private rows"):
        session.sql("SELECT * FROM cps", epsilon=1.0)
    with pytest.raises(SQLRefusedError, match=r"joins of two private tables"):
        session.register("again", remote)
        session.sql("SELECT COUNT(*) FROM cps JOIN again USING (region)", epsilon=1.0)
    assert sent == []
    monkeypatch.undo()
    assert session.spent == spent
