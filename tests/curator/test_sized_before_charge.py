"""Sized before the charge (issue 16): the curator's stricter limits, named in the refusal.

Before: ``hist(bins=10_000_000)`` was charged, grew the server to 3.3 GB and
held the analyst's lock for minutes; 20,000-key category lists passed.  Now
the catalog's limits (``[server.limits]``, default
:meth:`~dpframe.plan.estimate.ResourceLimits.remote`: 10**5 output cells,
10**4 items in one list, ...) refuse them before the charge, on the curator
and already in the client, and the refusal names the limit.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pandas as pd
import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.service import Curator
from dpframe.errors import ResourceLimitError
from dpframe.plan.estimate import ResourceLimits, estimate, public_lists
from dpframe.plan.expressions import Bucket, col
from dpframe.plan.nodes import Source
from dpframe.remote.client import RemoteSession
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, RELEASES, Server, release_body, write_catalog


def auth(token: str = ALICE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Curator(Catalog.load(write_catalog(tmp_path))))) as test_client:
        yield test_client


def _nothing_charged(client: TestClient, dataset: str = "cps") -> None:
    budget = client.get(f"/v1/datasets/{dataset}/budget", headers=auth()).json()
    assert decode_response(budget["spent"]).epsilon == 0
    ledger = client.get(f"/v1/datasets/{dataset}/ledger", headers=auth()).json()
    assert len(decode_response(ledger["ledger"])) == 0


def _key(name: str, count: int) -> dict[str, Any]:
    return {
        "name": name,
        "expr": {"op": "col", "name": name},
        "categories": [f"k{i}" for i in range(count)],
    }


def _grouped(*keys: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(release_body(RELEASES["mean"]))
    body["node"]["by"] = list(keys)
    return body


@pytest.mark.parametrize(
    ("what", "body", "message"),
    [
        (
            "400 x 400 cells",
            _grouped(_key("region", 400), _key("smsa", 400)),
            r"160000 output cells \(limit 100000\)",
        ),
        (
            "a 20,000-key category list",
            _grouped(_key("region", 20_000)),
            r"20000 values in one list of keys, isin values, .* \(limit 10000\)",
        ),
        (
            "an isin list of 20,000 values",
            {
                **release_body(RELEASES["mean"]),
                "node": {
                    **release_body(RELEASES["mean"])["node"],
                    "plan": [
                        {
                            "filter": {
                                "op": "isin",
                                "operand": {"op": "col", "name": "education"},
                                "values": list(range(20_000)),
                            }
                        }
                    ],
                },
            },
            r"20000 values in one list .* \(limit 10000\)",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and " " in v else "",
)
def test_oversized_requests_are_refused_before_the_charge_naming_the_limit(
    client: TestClient, what: str, body: dict[str, Any], message: str
) -> None:
    started = time.perf_counter()
    answer = client.post("/v1/datasets/cps/query", json=body, headers=auth())
    assert time.perf_counter() - started < 15
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "resource_limit"
    assert "nothing was charged" in error["message"]
    assert re.search(message, error["message"]), error["message"]
    _nothing_charged(client)


def test_the_schema_answer_publishes_the_limits(client: TestClient) -> None:
    limits = client.get("/v1/datasets/cps", headers=auth()).json()["limits"]
    assert ResourceLimits(**limits) == ResourceLimits.remote()


def test_remote_defaults_are_stricter_than_embedded() -> None:
    remote, embedded = vars(ResourceLimits.remote()), vars(ResourceLimits())
    assert all(remote[name] <= embedded[name] for name in embedded)
    assert remote["max_cells"] == 100_000 and remote["max_list_items"] == 10_000


def test_the_catalog_sets_the_limits(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path, server="[server.limits]\nmax_cells = 50")
    client = TestClient(create_app(Curator(Catalog.load(catalog))))
    small = release_body(lambda pf: pf["wage"].hist(bins=8, epsilon=0.1))
    assert client.post("/v1/datasets/cps/query", json=small, headers=auth()).status_code == 200
    wide = release_body(lambda pf: pf["wage"].hist(bins=64, epsilon=0.1))
    answer = client.post("/v1/datasets/cps/query", json=wide, headers=auth())
    assert answer.json()["error"]["code"] == "resource_limit"
    assert "64 output cells (limit 50)" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ("[server.limits]\nmax_rows = 5", r"\[server\]\.limits has unknown keys: max_rows"),
        ("[server.limits]\nmax_cells = 0", "max_cells must be a positive integer"),
        ("limits = 5", r"\[server\]\.limits must be a table"),
    ],
)
def test_bad_limits_are_refused(tmp_path: Path, server: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        Catalog.load(write_catalog(tmp_path, server=server))


def test_the_client_refuses_a_huge_histogram_at_once(server: Server) -> None:
    pf = dp.connect(server.url, token=ALICE).open("sentinel")
    session = cast(RemoteSession, pf.session)
    assert session.limits == ResourceLimits.remote()
    before = len(session.ledger)
    started = time.perf_counter()
    with pytest.raises(
        ResourceLimitError,
        match=r"hist\(bins=10000000\) has 10000000 output cells \(limit 100000\)",
    ):
        pf["wage"].hist(bins=10_000_000, epsilon=0.1)
    keys = [f"r{i}" for i in range(20_000)]
    with pytest.raises(ResourceLimitError, match=r"20000 values in one list .*\(limit 10000\)"):
        pf.with_categories(region=keys).groupby("region").size(epsilon=0.1)
    assert time.perf_counter() - started < 15
    assert len(session.ledger) == before


def test_a_refusal_from_the_curator_is_a_resource_limit_error_in_the_client(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    pf = dp.connect(server.url, token=ALICE).open("sentinel")
    session = cast(RemoteSession, pf.session)
    monkeypatch.setattr(session, "_limits", ResourceLimits())  # skip the client's own check
    before = session.spent
    with pytest.raises(ResourceLimitError, match=r"160000 output cells \(limit 100000\)"):
        pf.with_categories(
            region=[f"r{i}" for i in range(400)], smsa=[f"s{i}" for i in range(400)]
        ).groupby(["region", "smsa"]).size(epsilon=0.1)
    assert session.spent == before


def test_embedded_sessions_keep_their_wider_limits() -> None:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"x": [1.0, 2.0]}), bounds={"x": (0.0, 3.0)})
    assert len(pf["x"].hist(bins=200_000, epsilon=1.0)) == 200_000
    tight = dp.Session(epsilon=1.0, ledger=":memory:", limits=ResourceLimits.remote())
    frame = tight.private_frame(pd.DataFrame({"x": [1.0, 2.0]}), bounds={"x": (0.0, 3.0)})
    with pytest.raises(
        ResourceLimitError, match=r"hist\(bins=200000\) has 200000 output cells \(limit 100000\)"
    ):
        frame["x"].hist(bins=200_000, epsilon=1.0)
    assert tight.spent == dp.Budget()


def test_public_lists_counts_the_lists_a_node_carries() -> None:
    built: dict[str, Any] = {}

    class Recorder(dp.Session):
        def run(self, node: Any) -> Any:
            built["node"] = node
            raise ResourceLimitError("stop")

    session = Recorder(epsilon=1.0, ledger=":memory:")
    pf = session.private_frame(
        pd.DataFrame({"x": [1.0], "k": ["a"]}), bounds={"x": (0, 1)}, categories={"k": ["a", "b"]}
    )
    with pytest.raises(ResourceLimitError, match="stop"):
        pf["x"].quantile([i / 1000 for i in range(1001)], epsilon=1)
    assert max(public_lists(built["node"])) == 1001
    with pytest.raises(ResourceLimitError, match="stop"):
        pf.groupby("k")["x"].mean(epsilon=1)
    assert 2 in public_lists(built["node"])


def test_the_quick_check_answers_without_hashing_the_edges() -> None:
    edges = tuple(float(i) for i in range(2_000_001))
    bucket = Bucket(col("x"), edges)
    started = time.perf_counter()
    sizes = estimate(Source("d"), [bucket], 2_000_000, [2_000_000], ResourceLimits.remote())
    assert time.perf_counter() - started < 2.0
    assert sizes.longest_list == 2_000_001 and sizes.output_cells == 2_000_000
    assert sizes.literal_values == 4_000_001
