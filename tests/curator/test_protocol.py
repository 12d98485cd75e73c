"""The curator's HTTP API in-process: tokens, isolation, validation, limits, error codes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dpframe.curator.app import MAX_BODY, create_app
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.service import Curator, ServiceError
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, BOB, SENTINEL_TEXT, release_body, write_catalog

MEAN_WAGE: dict[str, Any] = {
    "receiver": {"kind": "series", "expr": {"op": "col", "name": "wage"}},
    "method": "mean",
    "arguments": {"epsilon": 0.1},
}


@pytest.fixture
def curator(tmp_path: Path) -> Curator:
    return Curator(Catalog.load(write_catalog(tmp_path)))


@pytest.fixture
def client(curator: Curator) -> Iterator[TestClient]:
    with TestClient(create_app(curator)) as test_client:
        yield test_client


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def spent(client: TestClient, token: str, dataset: str = "cps") -> Any:
    answer = client.get(f"/v1/datasets/{dataset}/budget", headers=auth(token))
    assert answer.status_code == 200
    return decode_response(answer.json()["spent"])


def test_a_release_round_trip_charges_exactly_its_cost(client: TestClient) -> None:
    answer = client.post("/v1/datasets/cps/query", json=MEAN_WAGE, headers=auth(ALICE))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    release = decode_response(body["result"])
    assert 0 <= float(release) <= 5000
    assert decode_response(body["cost"]).epsilon == pytest.approx(0.1)
    assert spent(client, ALICE).epsilon > 0


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/datasets"),
        ("GET", "/v1/datasets/cps"),
        ("GET", "/v1/datasets/cps/budget"),
        ("GET", "/v1/datasets/cps/ledger"),
        ("POST", "/v1/datasets/cps/query"),
        ("GET", "/v1/datasets/nothing-here"),
    ],
)
@pytest.mark.parametrize("headers", [{}, auth("wrong"), {"Authorization": "Basic x"}, auth("")])
def test_missing_or_wrong_token_gets_401_and_nothing_else(
    client: TestClient, curator: Curator, method: str, path: str, headers: dict[str, str]
) -> None:
    answer = client.request(method, path, json=MEAN_WAGE, headers=headers)
    assert answer.status_code == 401
    expected = {"error": {"code": "unauthorized", "message": "Missing or unknown token."}}
    assert answer.json() == expected
    assert answer.headers["www-authenticate"] == "Bearer"
    assert not curator._seats  # no session was even opened


def test_missing_token_with_an_oversized_body_is_still_401(client: TestClient) -> None:
    body = b"x" * (MAX_BODY + 10)
    answer = client.post("/v1/datasets/cps/query", content=body)
    assert answer.status_code == 401


def test_an_analyst_sees_only_their_own_datasets(client: TestClient) -> None:
    assert client.get("/v1/datasets", headers=auth(ALICE)).json() == {
        "datasets": ["cps", "sentinel"]
    }
    assert client.get("/v1/datasets", headers=auth(BOB)).json() == {"datasets": ["cps", "secret"]}


def test_ungranted_and_nonexistent_datasets_are_indistinguishable(client: TestClient) -> None:
    answers = [
        client.request(method, path, json=MEAN_WAGE, headers=auth(ALICE))
        for name in ("secret", "does-not-exist")
        for method, path in (
            ("GET", f"/v1/datasets/{name}"),
            ("GET", f"/v1/datasets/{name}/budget"),
            ("GET", f"/v1/datasets/{name}/ledger"),
            ("POST", f"/v1/datasets/{name}/query"),
        )
    ]
    first = answers[0]
    assert first.status_code == 404
    for answer in answers:
        assert (answer.status_code, answer.content) == (first.status_code, first.content)


def test_analysts_budgets_and_ledgers_are_separate(client: TestClient) -> None:
    answer = client.post("/v1/datasets/cps/query", json=MEAN_WAGE, headers=auth(ALICE))
    assert answer.status_code == 200
    assert spent(client, BOB).epsilon == 0
    bob_ledger = decode_response(
        client.get("/v1/datasets/cps/ledger", headers=auth(BOB)).json()["ledger"]
    )
    alice_ledger = decode_response(
        client.get("/v1/datasets/cps/ledger", headers=auth(ALICE)).json()["ledger"]
    )
    assert len(bob_ledger) == 0
    assert len(alice_ledger) == 1


def test_over_budget_is_refused_with_a_fixed_code_and_nothing_charged(client: TestClient) -> None:
    body = dict(MEAN_WAGE, arguments={"epsilon": 2.0})
    answer = client.post("/v1/datasets/cps/query", json=body, headers=auth(BOB))
    assert answer.status_code == 403
    error = answer.json()["error"]
    assert error["code"] == "budget_exceeded"
    assert "Requested" in error["message"] and "Remaining" in error["message"]
    assert spent(client, BOB).epsilon == 0


BAD_BODIES: list[tuple[str, Any, int, str]] = [
    ("not json", b"{nope", 422, "invalid_request"),
    (
        "NaN literal epsilon",
        b'{"receiver":{"kind":"frame"},"method":"count","arguments":{"epsilon":NaN}}',
        400,
        "invalid_budget",
    ),
    ("unknown top-level field", dict(MEAN_WAGE, extra=1), 422, "invalid_request"),
    ("unknown receiver", dict(MEAN_WAGE, receiver={"kind": "module"}), 422, "invalid_request"),
    ("private method", dict(MEAN_WAGE, method="_aggregate"), 400, "invalid_query"),
    ("dunder method", dict(MEAN_WAGE, method="__class__"), 400, "invalid_query"),
    ("method of another receiver", dict(MEAN_WAGE, method="argmax"), 400, "invalid_query"),
    ("unknown argument", dict(MEAN_WAGE, arguments={"epsilon": 0.1, "x": 1}), 400, "invalid_query"),
    (
        "unknown column",
        dict(MEAN_WAGE, receiver={"kind": "series", "expr": {"op": "col", "name": "salary"}}),
        400,
        "schema",
    ),
    (
        "malformed expression",
        dict(
            MEAN_WAGE,
            receiver={
                "kind": "series",
                "expr": {"op": "clip", "operand": {"op": "col", "name": "wage"}},
            },
        ),
        400,
        "invalid_expression",
    ),
    (
        "tagged class name",
        dict(MEAN_WAGE, arguments={"epsilon": {"$dc": "Budget"}}),
        400,
        "invalid_value",
    ),
    (
        "pickle-looking value",
        dict(MEAN_WAGE, arguments={"epsilon": {"$pickle": "gASV"}}),
        400,
        "invalid_value",
    ),
    ("negative epsilon", dict(MEAN_WAGE, arguments={"epsilon": -1}), 400, "invalid_budget"),
    ("no epsilon", dict(MEAN_WAGE, arguments={}), 400, "invalid_budget"),
    ("string epsilon", dict(MEAN_WAGE, arguments={"epsilon": "lots"}), 400, "invalid_budget"),
    (
        "filter on text column compared to number",
        dict(
            MEAN_WAGE,
            steps=[
                {
                    "kind": "filter",
                    "predicate": {
                        "op": ">",
                        "left": {"op": "col", "name": "region"},
                        "right": {"op": "lit", "value": 3},
                    },
                }
            ],
        ),
        400,
        "schema",
    ),
    (
        "infinite bounds",
        b'{"receiver":{"kind":"series","expr":{"op":"col","name":"wage"}},'
        b'"method":"mean","arguments":{"epsilon":0.1},"bounds":{"wage":[0,1e400]}}',
        400,
        "schema",
    ),
    (
        "missing required argument",
        {"receiver": {"kind": "frame"}, "method": "discover_keys", "arguments": {"epsilon": 0.1}},
        400,
        "invalid_query",
    ),
    (
        "too many steps",
        dict(
            MEAN_WAGE, steps=[{"kind": "filter", "predicate": {"op": "lit", "value": True}}] * 300
        ),
        422,
        "invalid_request",
    ),
]


@pytest.mark.parametrize(
    ("what", "body", "status", "code"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES]
)
def test_malformed_requests_get_fixed_codes_and_charge_nothing(
    client: TestClient, what: str, body: Any, status: int, code: str
) -> None:
    if isinstance(body, bytes):
        answer = client.post(
            "/v1/datasets/cps/query",
            content=body,
            headers={**auth(ALICE), "Content-Type": "application/json"},
        )
    else:
        answer = client.post("/v1/datasets/cps/query", json=body, headers=auth(ALICE))
    assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), answer.text
    assert spent(client, ALICE).epsilon == 0


def test_deeply_nested_plans_are_refused(client: TestClient) -> None:
    expr: dict[str, Any] = {"op": "col", "name": "wage"}
    for _ in range(200):
        expr = {"op": "neg", "operand": expr}
    body = dict(MEAN_WAGE, receiver={"kind": "series", "expr": expr})
    answer = client.post("/v1/datasets/cps/query", json=body, headers=auth(ALICE))
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "too_deep")
    assert spent(client, ALICE).epsilon == 0


def test_pathologically_nested_json_is_refused_without_a_5xx(client: TestClient) -> None:
    depth = 100_000
    raw = (
        b'{"receiver":{"kind":"frame"},"method":"count","arguments":{"epsilon":'
        + b"[" * depth
        + b"]" * depth
        + b"}}"
    )
    answer = client.post(
        "/v1/datasets/cps/query",
        content=raw,
        headers={**auth(ALICE), "Content-Type": "application/json"},
    )
    assert 400 <= answer.status_code < 500, answer.text
    assert spent(client, ALICE).epsilon == 0


def test_oversized_bodies_are_refused_with_413(client: TestClient) -> None:
    body = dict(MEAN_WAGE, columns=["x" * 1000] * 300)
    answer = client.post("/v1/datasets/cps/query", json=body, headers=auth(ALICE))
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "too_large"


def test_error_messages_never_hold_private_values(client: TestClient) -> None:
    bodies = [
        dict(MEAN_WAGE, receiver={"kind": "series", "expr": {"op": "col", "name": "note"}}),
        dict(MEAN_WAGE, method="sum"),
        {
            "receiver": {"kind": "groupby", "by": ["note"], "column": "wage"},
            "method": "sum",
            "arguments": {"epsilon": 0.1},
        },
    ]
    for body in bodies:
        answer = client.post("/v1/datasets/sentinel/query", json=body, headers=auth(ALICE))
        assert SENTINEL_TEXT not in answer.text
        assert "4321.12" not in answer.text


def test_catalog_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[analysts.x]\ntoken_sha256 = "plain-token"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="token_sha256"):
        Catalog.load(bad)
    with pytest.raises(CatalogError, match="Cannot read"):
        Catalog.load(tmp_path / "missing.toml")
    (tmp_path / "broken.toml").write_text("[datasets\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="not valid TOML"):
        Catalog.load(tmp_path / "broken.toml")


def test_openapi_schema_lists_the_endpoints(client: TestClient) -> None:
    schema = json.loads(client.get("/openapi.json").content)
    assert set(schema["paths"]) >= {
        "/v1/datasets",
        "/v1/datasets/{name}",
        "/v1/datasets/{name}/budget",
        "/v1/datasets/{name}/ledger",
        "/v1/datasets/{name}/query",
    }


def test_answers_are_held_to_the_latency_quantum(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path)
    text = catalog.read_text().replace(
        'ledger = "ledger.sqlite"', 'ledger = "ledger.sqlite"\nlatency_quantum_ms = 250'
    )
    catalog.write_text(text)
    ticks = iter([10.0, 10.37, 20.0, 20.25, 30.0, 30.01])
    slept: list[float] = []
    curator = Curator(Catalog.load(catalog), clock=lambda: next(ticks), sleep=slept.append)
    analyst = curator.authenticate(f"Bearer {ALICE}")
    curator.query(analyst, "cps", MEAN_WAGE)
    curator.query(analyst, "cps", MEAN_WAGE)
    with pytest.raises(ServiceError):  # errors are held too: their timing is no signal
        curator.query(analyst, "cps", dict(MEAN_WAGE, method="nope"))
    assert slept == pytest.approx([0.13, 0.0, 0.24])


def test_latency_quantum_must_be_sane(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path)
    text = catalog.read_text().replace(
        'ledger = "ledger.sqlite"', 'ledger = "ledger.sqlite"\nlatency_quantum_ms = -5'
    )
    catalog.write_text(text)
    with pytest.raises(CatalogError, match="latency_quantum_ms"):
        Catalog.load(catalog)


def test_a_refused_node_format_is_expected_not_an_unexpected_error(
    client: TestClient, curator: Curator, caplog: pytest.LogCaptureFixture
) -> None:
    body = release_body(lambda pf: pf["wage"].mean(epsilon=0.1))
    body["node"]["extra"] = 1  # a NodeFormatError: refused on purpose by the codec
    answer = client.post("/v1/datasets/cps/query", json=body, headers=auth(ALICE))
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "invalid_query")
    assert curator.unexpected_errors == 0
    assert "Unexpected error" not in caplog.text
    assert spent(client, ALICE).epsilon == 0


@pytest.mark.parametrize("version", [True, 1.0, "1", 2, 0])
def test_the_format_version_is_exactly_the_integer_1(
    client: TestClient, curator: Curator, version: object
) -> None:
    body = release_body(lambda pf: pf["wage"].mean(epsilon=0.1))
    body["v"] = version
    answer = client.post("/v1/datasets/cps/query", json=body, headers=auth(ALICE))
    assert (answer.status_code, answer.json()["error"]["code"]) == (422, "invalid_request")
    assert spent(client, ALICE).epsilon == 0
    assert curator.unexpected_errors == 0
