"""Each analyst's releases are numbered on their own (issue 27, part 4).

Before: the ledger's ids count every analyst's releases (one file), and the
curator showed them: bob's first release after four of alice's was id 5, so
bob learned how much, and when, alice queries.  Now an analyst's releases on
a dataset are numbered 1, 2, 3, ... in the ledger view, in the answers'
``release`` and in ``session.recover(id)``, whatever the others do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, BOB, RELEASES, release_body, write_catalog

MEAN = release_body(RELEASES["mean"])
COUNT = release_body(RELEASES["count"])


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    curator = Curator(Catalog.load(write_catalog(tmp_path, alice_epsilon=50.0)))
    with TestClient(create_app(curator)) as test_client:
        yield test_client


def _release(client: TestClient, token: str, body: dict[str, Any] = MEAN) -> int:
    fresh = {**body, "fresh": True}  # a new, charged release each time (issue 31)
    answer = client.post("/v1/datasets/cps/query", json=fresh, headers=auth(token))
    assert answer.status_code == 200, answer.text
    number = answer.json()["release"]
    assert isinstance(number, int)
    return number


def _ledger(client: TestClient, token: str, query: str = "") -> tuple[Any, Any]:
    page = client.get(f"/v1/datasets/cps/ledger{query}", headers=auth(token)).json()
    return decode_response(page["ledger"]), page["next"]


def test_an_analyst_numbers_reveal_nothing_about_the_others(client: TestClient) -> None:
    # alice releases four times, then bob once, then alice and bob alternate
    alice = [_release(client, ALICE) for _ in range(4)]
    bob = [_release(client, BOB, COUNT)]
    for _ in range(3):
        alice.append(_release(client, ALICE))
        bob.append(_release(client, BOB, COUNT))
    assert alice == list(range(1, 8))
    assert bob == [1, 2, 3, 4]  # was [5, 7, 9, 11]: ids counted alice's releases
    # bob's ledger is the same as if alice had never queried
    ledger, following = _ledger(client, BOB)
    assert list(ledger.index) == [1, 2, 3, 4] and following is None
    assert set(ledger["query"]) == {"count()"}
    # and each number fetches that analyst's own answer again
    for number in bob:
        again = client.get(f"/v1/datasets/cps/releases/{number}", headers=auth(BOB))
        assert again.status_code == 200 and again.json()["query"] == "count()"
        assert again.json()["release"] == number
    mine = client.get("/v1/datasets/cps/releases/5", headers=auth(ALICE))
    assert mine.json()["query"] == "mean(wage)"
    unknown = client.get("/v1/datasets/cps/releases/5", headers=auth(BOB))
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "unknown_release")


def test_pages_follow_the_analysts_numbers(client: TestClient) -> None:
    for _ in range(3):
        _release(client, BOB, COUNT)
        _release(client, ALICE)
        _release(client, ALICE)
    first, following = _ledger(client, ALICE, "?limit=4")
    assert list(first.index) == [1, 2, 3, 4] and following == 4
    second, following = _ledger(client, ALICE, f"?after={following}&limit=4")
    assert list(second.index) == [5, 6] and following is None
    past, following = _ledger(client, ALICE, "?after=40")
    assert len(past) == 0 and following is None
    whole, _ = _ledger(client, ALICE)
    assert list(whole.index) == [1, 2, 3, 4, 5, 6]
    assert list(whole["time"]) == list(first["time"]) + list(second["time"])
