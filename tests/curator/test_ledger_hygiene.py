"""Ledger hygiene (issue 16): clipped labels, a least ε per release, rates, row limits, pages.

Before: each row stored the whole label (243 KiB for a 24,000-item ``isin``),
ε could be 1e-12, one analyst could record releases without limit, and
``/ledger`` returned the whole table in one answer.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.accounting import Charge, Ledger
from dpframe.accounting.ledger import MAX_LABEL, clip_label, decode_parts
from dpframe.curator import service
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.service import Curator
from dpframe.remote.client import RateLimitedError
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, BOB, RELEASES, release_body, write_catalog
from tests.curator.threaded import served

MEAN = release_body(RELEASES["mean"])


def auth(token: str = ALICE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def with_epsilon(epsilon: str, body: dict[str, Any] = MEAN) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    changed["node"]["privacy"]["epsilon"] = epsilon
    return changed


class Clock:
    """A settable monotonic clock for the rate limit."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _client(tmp_path: Path, server: str = "", clock: Clock | None = None) -> TestClient:
    catalog = Catalog.load(write_catalog(tmp_path, server=server))
    curator = Curator(catalog, pace_clock=clock or Clock())
    return TestClient(create_app(curator))


def _ledger(client: TestClient, token: str = ALICE, query: str = "") -> Any:
    answer = client.get(f"/v1/datasets/cps/ledger{query}", headers=auth(token))
    assert answer.status_code == 200, answer.text
    return answer.json()


def _rows(client: TestClient, token: str = ALICE) -> pd.DataFrame:
    table: pd.DataFrame = decode_response(_ledger(client, token)["ledger"])
    return table


def _post(client: TestClient, body: dict[str, Any], token: str = ALICE) -> Any:
    fresh = {**body, "fresh": True}  # a new, charged release each time (issue 31)
    return client.post("/v1/datasets/cps/query", json=fresh, headers=auth(token))


# -- labels ----------------------------------------------------------------------


def test_long_labels_keep_their_start_and_a_digest() -> None:
    short = "mean(wage) where (education >= 12)"
    assert clip_label(short) == short
    long_a, long_b = "x" * 5000 + "a", "x" * 5000 + "b"
    clipped = clip_label(long_a)
    assert len(clipped) == MAX_LABEL
    assert clipped.startswith("x" * 200)
    assert clipped.endswith(" … #" + hashlib.sha256(long_a.encode()).hexdigest()[:16])
    assert clip_label(long_b) != clipped


def test_an_embedded_isin_of_24000_items_stores_a_short_row() -> None:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    frame = pd.DataFrame({"x": np.arange(100.0)})
    pf = session.private_frame(frame, bounds={"x": (0.0, 100.0)})
    pf[pf["x"].isin(list(range(24_000)))].count(epsilon=0.1)
    label = session.ledger["query"].iloc[0]
    assert len(label) == MAX_LABEL and " … #" in label


def test_the_parts_of_a_composite_are_clipped_too() -> None:
    ledger = Ledger(":memory:")
    ledger.register("s", "pure", dp.Budget(1))
    half = Charge(epsilon=dp.Budget(0.5).epsilon)
    ledger.charge(
        "s", "d", half + half, lambda s: None, "q" * 900, "m", parts=[("p" * 900, half)] * 2
    )
    row = ledger.releases("s").iloc[0]
    assert len(row["query"]) == MAX_LABEL
    parts = decode_parts(row["parts"])
    assert parts is not None and all(len(name) == MAX_LABEL for name, _ in parts)


def test_the_curator_clips_a_long_label(tmp_path: Path) -> None:
    client = _client(tmp_path)
    body = copy.deepcopy(MEAN)
    body["node"]["label"] = "y" * 1000  # the wire's longest label
    assert _post(client, body).status_code == 200
    assert len(_rows(client)["query"].iloc[0]) == MAX_LABEL


# -- the least epsilon ----------------------------------------------------------------


@pytest.mark.parametrize(("epsilon", "token"), [("1e-7", ALICE), ("9.9e-7", BOB)])
def test_a_release_below_the_least_epsilon_is_refused_uncharged(
    tmp_path: Path, epsilon: str, token: str
) -> None:
    client = _client(tmp_path)  # alice: zCDP (epsilon is a share), bob: pure DP
    answer = _post(client, with_epsilon(epsilon), token)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_budget"
    assert (
        "below the least one release may cost here (1e-06); nothing was charged"
        in (error["message"])
    )
    assert len(_rows(client, token)) == 0
    assert _post(client, with_epsilon("1e-6"), token).status_code == 200


def test_a_rho_below_the_least_share_is_refused(tmp_path: Path) -> None:
    # rho= is a zCDP request: alice's cps grant names zcdp (the default with delta is gdp)
    path = write_catalog(tmp_path)
    text = path.read_text(encoding="utf-8")
    zcdp = text.replace("delta = 1e-6 }, ", 'delta = 1e-6, accounting = "zcdp" }, ', 1)
    assert zcdp != text
    path.write_text(zcdp, encoding="utf-8")
    client = TestClient(create_app(Curator(Catalog.load(path), pace_clock=Clock())))
    body = copy.deepcopy(MEAN)
    body["node"]["privacy"] = {"epsilon": None, "delta": "0", "rho": "1e-14"}
    answer = _post(client, body)
    assert answer.json()["error"]["code"] == "invalid_budget", answer.text
    assert "below the least one release may cost" in answer.json()["error"]["message"]
    assert len(_rows(client)) == 0


def test_the_least_epsilon_is_set_by_the_catalog(tmp_path: Path) -> None:
    client = _client(tmp_path, 'min_epsilon = "1/100"')
    message = _post(client, with_epsilon("1e-3"), BOB).json()["error"]["message"]
    assert "below the least one release may cost here (0.01)" in message
    assert _post(client, with_epsilon("1/100"), BOB).status_code == 200


def test_no_least_epsilon_embedded() -> None:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"x": [1.0]}), bounds={"x": (0.0, 1.0)})
    assert isinstance(pf.count(epsilon=1e-12), dp.Release)


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ('min_epsilon = "lots"', r"min_epsilon must be a number"),
        ("min_epsilon = -1", r"min_epsilon must be >= 0"),
        ("releases_per_minute = 0", r"releases_per_minute must be a positive integer"),
        ("max_ledger_rows = true", r"max_ledger_rows must be a positive integer"),
        ("busy_retry_seconds = 1.5", r"busy_retry_seconds must be a positive integer"),
        ("rows_per_minute = 5", r"\[server\] has unknown keys: rows_per_minute"),
    ],
)
def test_bad_server_settings_are_refused(tmp_path: Path, server: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        Catalog.load(write_catalog(tmp_path, server=server))


# -- rates and rows --------------------------------------------------------------------


def test_releases_per_minute_are_limited_per_seat(tmp_path: Path) -> None:
    clock = Clock()
    client = _client(tmp_path, "releases_per_minute = 3", clock)
    for _ in range(3):
        assert _post(client, MEAN).status_code == 200
        clock.now += 1
    refused = _post(client, MEAN)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"
    assert "most this curator allows (3); nothing was charged" in refused.json()["error"]["message"]
    assert refused.headers["retry-after"] == "57"  # when the oldest of the three leaves the minute
    assert len(_rows(client)) == 3
    assert _post(client, dict(MEAN, explain=True)).status_code == 200  # explaining is free
    assert _post(client, MEAN, BOB).status_code == 200  # another analyst's seat
    clock.now += 56
    assert _post(client, MEAN).status_code == 429
    clock.now += 1
    assert _post(client, MEAN).status_code == 200
    assert len(_rows(client)) == 4


def test_ledger_rows_are_limited_per_seat(tmp_path: Path) -> None:
    client = _client(tmp_path, "max_ledger_rows = 2")
    assert _post(client, MEAN).status_code == 200
    assert _post(client, MEAN).status_code == 200
    refused = _post(client, MEAN)
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "ledger_full")
    assert (
        "holds 2 releases, the most this curator records (2)" in refused.json()["error"]["message"]
    )
    assert len(_rows(client)) == 2


def test_the_client_raises_the_limits(tmp_path: Path) -> None:
    catalog = Catalog.load(write_catalog(tmp_path, server="releases_per_minute = 1"))
    with served(create_app(Curator(catalog))) as url:
        pf = dp.connect(url, token=BOB).open("cps")
        with pytest.raises(dp.InvalidBudgetError, match="below the least one release may cost"):
            pf.count(epsilon=1e-9)
        pf.count(epsilon=0.01)
        with pytest.raises(RateLimitedError, match="nothing was charged") as info:
            pf.count(epsilon=0.01)
        assert 50 <= info.value.retry_after <= 60
        assert len(pf.session.ledger) == 1
    full = tmp_path / "full"
    full.mkdir()
    catalog = Catalog.load(write_catalog(full, server="max_ledger_rows = 1"))
    with served(create_app(Curator(catalog))) as url:
        pf = dp.connect(url, token=BOB).open("cps")
        pf.count(epsilon=0.01)
        with pytest.raises(dp.LedgerError, match="holds 1 releases, the most this curator"):
            pf.count(epsilon=0.01)
        assert len(pf.session.ledger) == 1


# -- pages ------------------------------------------------------------------------------


@pytest.fixture
def five(tmp_path: Path) -> TestClient:
    client = _client(tmp_path)
    for _ in range(5):
        assert _post(client, MEAN).status_code == 200
    return client


def test_the_ledger_comes_in_pages(five: TestClient) -> None:
    ids: list[int] = []
    after, pages = 0, 0
    while True:
        page = _ledger(five, query=f"?after={after}&limit=2")
        table = decode_response(page["ledger"])
        ids.extend(int(i) for i in table.index)
        pages += 1
        if page["next"] is None:
            break
        assert page["next"] == int(table.index[-1])
        after = page["next"]
    assert pages == 3 and len(ids) == 5 and ids == sorted(ids)
    assert len(decode_response(_ledger(five, query=f"?after={ids[-1]}")["ledger"])) == 0


@pytest.mark.parametrize("query", ["?limit=0", "?limit=1001", "?after=-1", "?after=x"])
def test_bad_page_parameters_are_refused(five: TestClient, query: str) -> None:
    answer = five.get(f"/v1/datasets/cps/ledger{query}", headers=auth())
    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "invalid_request")


def test_the_client_reads_every_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "LEDGER_PAGE", 2)
    curator = Curator(Catalog.load(write_catalog(tmp_path)))
    with served(create_app(curator)) as url:
        pf = dp.connect(url, token=BOB).open("cps")
        for _ in range(5):
            pf.count(epsilon=0.01, fresh=True)  # five releases, not answers from the ledger
        table = pf.session.ledger
    assert len(table) == 5 and list(table.index) == sorted(table.index)
    assert list(table["query"]) == ["count()"] * 5
