"""Re-running spends nothing twice through a curator too (issue 31), per analyst.

The curator answers a request the analyst's ledger already answered from its
stored answer: free, marked ``recorded``.  The key names the data by the
catalog's declared name and version, never by anything computed from the
rows: a new version misses, and a changed file under the same version takes
the same path as an unchanged one (a hit, the same answer), so a miss never
says that the data changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from dpframe.engine.recorded import RecordedRelease
from dpframe.engine.session import ReleaseEvent
from dpframe.remote.client import RemoteSession
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, BOB, RELEASES, Server, release_body, write_catalog
from tests.test_reruns import plain

QUERY = "/v1/datasets/{}/query"


def auth(token: str = ALICE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    return write_catalog(tmp_path)


@pytest.fixture
def client(catalog: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Curator(Catalog.load(catalog)))) as test_client:
        yield test_client


def post(
    client: TestClient, body: dict[str, Any], dataset: str = "sentinel", token: str = ALICE
) -> Any:
    answer = client.post(QUERY.format(dataset), json=body, headers=auth(token))
    assert answer.status_code == 200, answer.text
    return answer.json()


def spent(client: TestClient, dataset: str = "sentinel", token: str = ALICE) -> Any:
    path = f"/v1/datasets/{dataset}/budget"
    return decode_response(client.get(path, headers=auth(token)).json()["spent"])


def rows(client: TestClient, dataset: str = "sentinel", token: str = ALICE) -> int:
    path = f"/v1/datasets/{dataset}/ledger"
    return len(decode_response(client.get(path, headers=auth(token)).json()["ledger"]))


@pytest.mark.parametrize("name", ["mean", "grouped mean", "describe", "quantile", "hist"])
def test_the_same_request_again_is_answered_from_the_ledger(client: TestClient, name: str) -> None:
    body = release_body(RELEASES[name])
    first = post(client, body)
    used, count = spent(client), rows(client)
    again = post(client, body)
    assert spent(client) == used and rows(client) == count
    assert again["recorded"].startswith("from the ledger, recorded")
    assert again["release"] is None
    assert decode_response(again["cost"]) == dp.Budget(0)
    # the stored answer, as first sent (with the mark)
    assert plain(decode_response(again["result"])) == plain(decode_response(first["result"]))


def test_fresh_asks_for_a_new_charged_release(client: TestClient) -> None:
    body = release_body(RELEASES["mean"])
    post(client, body)
    used = spent(client)
    fresh = post(client, {**body, "fresh": True})
    assert "recorded" not in fresh and isinstance(fresh["release"], int)
    assert spent(client).epsilon > used.epsilon  # charged again (GDP: not additive in ε)
    refused = client.post(QUERY.format("sentinel"), json={**body, "fresh": "yes"}, headers=auth())
    assert refused.status_code == 422


def test_answers_are_per_analyst(client: TestClient) -> None:
    body = release_body(RELEASES["mean"])
    post(client, body, "cps", ALICE)
    bob = post(client, body, "cps", BOB)
    assert "recorded" not in bob and spent(client, "cps", BOB).epsilon > 0


def test_a_new_dataset_version_misses(catalog: Path) -> None:
    body = release_body(RELEASES["mean"])
    with TestClient(create_app(Curator(Catalog.load(catalog)))) as first:
        post(first, body)
    catalog.write_text(
        catalog.read_text(encoding="utf-8").replace('version = "2024-06"', 'version = "2024-07"'),
        encoding="utf-8",
    )
    with TestClient(create_app(Curator(Catalog.load(catalog)))) as second:
        answer = post(second, body)
        assert "recorded" not in answer and isinstance(answer["release"], int)


def test_changed_rows_under_the_same_version_take_the_same_path(catalog: Path) -> None:
    """A hit whether or not the file changed: the key is the declared version, not the rows."""
    body = release_body(RELEASES["grouped mean"])
    with TestClient(create_app(Curator(Catalog.load(catalog)))) as first:
        released = post(first, body)
    data = catalog.parent / "sentinel.csv"
    lines = data.read_text(encoding="utf-8").splitlines()
    data.write_text("\n".join(lines[: len(lines) // 2]) + "\n", encoding="utf-8")  # half the rows
    with TestClient(create_app(Curator(Catalog.load(catalog)))) as second:
        again = post(second, body)
    assert again["recorded"].startswith("from the ledger")
    assert plain(decode_response(again["result"])) == plain(decode_response(released["result"]))


def test_the_client_marks_the_answer_and_sends_fresh(server: Server) -> None:
    pf = dp.connect(server.url, token=ALICE).open("sentinel")
    session = cast(RemoteSession, pf.session)
    events: list[ReleaseEvent] = []
    session.subscribe(events.append)
    first = pf["education"].sum(epsilon=0.125)
    used = session.spent
    again = pf["education"].sum(epsilon=0.125)
    assert isinstance(again, RecordedRelease) and again.value == first.value
    assert "from the ledger" in repr(again)
    assert session.spent == used
    assert events[-1].recorded is not None and events[-1].cost == dp.Budget(0)
    fresh = pf["education"].sum(epsilon=0.125, fresh=True)
    assert not isinstance(fresh, RecordedRelease)
    assert session.spent.epsilon > used.epsilon  # charged (GDP: not additive in ε)
    assert events[-1].recorded is None
