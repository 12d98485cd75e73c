"""Recover what was paid for (issue 16): a lost answer is fetched again by its ledger id, free.

Before: a client that timed out (a 10**7-bin histogram, a dropped connection)
had paid the ε and could never see the answer.  Now the curator stores the
answer it sends (public: the release as sent) in the ledger's ``answers``
table, and ``GET /v1/datasets/{name}/releases/{id}`` (``session.recover(id)``)
returns it without any charge.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.accounting import Charge
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from dpframe.remote import http as http_module
from dpframe.remote.client import CuratorUnavailableError, RemoteSession
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, BOB, RELEASES, Server, release_body, write_catalog


def auth(token: str = ALICE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def curator(tmp_path: Path) -> Curator:
    return Curator(Catalog.load(write_catalog(tmp_path)))


@pytest.fixture
def client(curator: Curator) -> Iterator[TestClient]:
    with TestClient(create_app(curator)) as test_client:
        yield test_client


def _spent(client: TestClient, token: str = ALICE) -> Any:
    return decode_response(
        client.get("/v1/datasets/sentinel/budget", headers=auth(token)).json()["spent"]
    )


def _rows(client: TestClient, token: str = ALICE) -> int:
    answer = client.get("/v1/datasets/sentinel/ledger", headers=auth(token))
    return len(decode_response(answer.json()["ledger"]))


@pytest.mark.parametrize("name", ["mean", "grouped mean", "describe", "quantile", "hist"])
def test_a_release_is_fetched_again_by_its_id_free(client: TestClient, name: str) -> None:
    body = release_body(RELEASES[name])
    first = client.post("/v1/datasets/sentinel/query", json=body, headers=auth())
    assert first.status_code == 200, first.text
    release = first.json()["release"]
    assert isinstance(release, int)
    spent, rows = _spent(client), _rows(client)
    again = client.get(f"/v1/datasets/sentinel/releases/{release}", headers=auth())
    assert again.status_code == 200, again.text
    for field in ("result", "cost", "query", "release"):
        assert again.json()[field] == first.json()[field]
    assert _spent(client) == spent and _rows(client) == rows  # free
    ledger = decode_response(
        client.get("/v1/datasets/sentinel/ledger", headers=auth()).json()["ledger"]
    )
    assert release in ledger.index


def test_explanations_have_no_release_id(client: TestClient) -> None:
    body = dict(release_body(RELEASES["mean"]), explain=True)
    answer = client.post("/v1/datasets/sentinel/query", json=body, headers=auth())
    assert answer.status_code == 200 and answer.json()["release"] is None


def test_other_ids_are_unknown_alike(client: TestClient, curator: Curator) -> None:
    mine = client.post(
        "/v1/datasets/cps/query", json=release_body(RELEASES["mean"]), headers=auth(BOB)
    ).json()["release"]
    # a charged release that failed while computing: no answer to keep
    seat = curator._seats[("bob", "cps")]
    failed = seat.ledger.charge(
        "bob/cps", "cps", Charge(epsilon=Fraction(1, 100)), lambda s: None, "q", "m"
    )
    seat.ledger.complete(failed, "", status="failed")
    failed = seat.ledger.number_of("bob/cps", failed)  # the analyst's number of it
    answers = [
        client.get(f"/v1/datasets/cps/releases/{release}", headers=auth(token))
        for release, token in ((mine, ALICE), (failed, BOB), (10**9, BOB))
    ]
    assert all(a.status_code == 404 for a in answers)
    assert {a.json()["error"]["code"] for a in answers} == {"unknown_release"}
    assert len({a.text for a in answers}) == 1
    assert client.get(f"/v1/datasets/cps/releases/{mine}", headers=auth(BOB)).status_code == 200


def test_a_release_still_computing_is_pending(client: TestClient, curator: Curator) -> None:
    assert client.get("/v1/datasets/cps", headers=auth(BOB)).status_code == 200
    seat = curator._seats[("bob", "cps")]
    running = seat.ledger.charge(
        "bob/cps", "cps", Charge(epsilon=Fraction(1, 100)), lambda s: None, "q", "m"
    )
    running = seat.ledger.number_of("bob/cps", running)  # the analyst's number of it
    answer = client.get(f"/v1/datasets/cps/releases/{running}", headers=auth(BOB))
    assert (answer.status_code, answer.json()["error"]["code"]) == (409, "pending")
    assert answer.headers["retry-after"] == "1"


@pytest.mark.parametrize("release", ["0", "-3", "x", str(2**63)])
def test_bad_ids_are_refused(client: TestClient, release: str) -> None:
    answer = client.get(f"/v1/datasets/cps/releases/{release}", headers=auth())
    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "invalid_request")


def test_a_lost_answer_is_recovered_through_the_client(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    pf = dp.connect(server.url, token=ALICE).open("sentinel")
    session = cast(RemoteSession, pf.session)
    real = http_module.Http._request

    def lose_the_answer(self: Any, method: str, path: str, body: Any = None) -> Any:
        answer = real(self, method, path, body)
        if method == "POST" and not body.get("explain"):
            raise CuratorUnavailableError("Cannot reach the curator: timed out.")
        return answer

    monkeypatch.setattr(http_module.Http, "_request", lose_the_answer)
    with pytest.raises(CuratorUnavailableError, match=r"session\.recover\(id\) fetches its answer"):
        pf["wage"].mean(epsilon=0.25)
    monkeypatch.undo()
    ledger = session.ledger
    lost = int(ledger.index[-1])
    assert ledger.loc[lost, "status"] == "released" and ledger.loc[lost, "query"] == "mean(wage)"
    spent = session.spent
    release = session.recover(lost)
    assert isinstance(release, dp.Release) and 0 <= float(release) <= 5000
    assert release.cost.epsilon == Fraction(1, 4)
    assert session.recover(lost).value == release.value  # the same stored value each time
    assert session.spent == spent and len(session.ledger) == len(ledger)
    with pytest.raises(dp.InvalidArgumentError, match="no stored answer for this release id"):
        session.recover(10**9)
    with pytest.raises(dp.InvalidArgumentError, match="takes a release id"):
        session.recover(0)
    pf.count(epsilon=0.1)
    assert session.last_release == int(session.ledger.index[-1])


def test_answers_are_kept_up_to_the_seats_store(tmp_path: Path) -> None:
    curator = Curator(Catalog.load(write_catalog(tmp_path, server="stored_answers_mb = 1")))
    client = TestClient(create_app(curator))
    body = release_body(RELEASES["mean"])
    kept = client.post("/v1/datasets/cps/query", json=body, headers=auth(BOB)).json()["release"]
    seat = curator._seats[("bob", "cps")]
    assert seat.stored is not None and 0 < seat.stored < 2_000
    seat.stored = 2**20 - 10  # as if the store were full
    fresh = {**body, "fresh": True}  # the same request again, charged (not from the ledger)
    answer = client.post("/v1/datasets/cps/query", json=fresh, headers=auth(BOB))
    assert answer.status_code == 200  # answered, and charged
    dropped = answer.json()["release"]
    assert client.get(f"/v1/datasets/cps/releases/{kept}", headers=auth(BOB)).status_code == 200
    missing = client.get(f"/v1/datasets/cps/releases/{dropped}", headers=auth(BOB))
    assert missing.json()["error"]["code"] == "unknown_release"
