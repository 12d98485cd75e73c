"""Oversized bodies answer 413 whatever their framing (issue 16).

Before: a body with a ``Content-Length`` over 256 KiB got 413, but the same
body sent chunked (no declared length) reached the app's body parser and got
400.  Now the body limit reads a chunked body itself, up to the limit.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from dpframe.curator.app import MAX_BODY, create_app
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, RELEASES, release_body, write_catalog
from tests.curator.threaded import served

HEADERS = {"Authorization": f"Bearer {ALICE}", "Content-Type": "application/json"}


@pytest.fixture
def curator(tmp_path: Path) -> Curator:
    return Curator(Catalog.load(write_catalog(tmp_path)))


@pytest.fixture
def client(curator: Curator) -> Iterator[TestClient]:
    with TestClient(create_app(curator)) as test_client:
        yield test_client


def _chunks(total: int, size: int = 10_000) -> Iterator[bytes]:
    sent = 0
    while sent < total:
        yield b" " * min(size, total - sent)
        sent += size


def _rows(client: TestClient) -> int:
    answer = client.get("/v1/datasets/cps/ledger", headers=HEADERS)
    return len(decode_response(answer.json()["ledger"]))


def test_a_chunked_body_over_the_limit_answers_413(client: TestClient) -> None:
    answer = client.post("/v1/datasets/cps/query", content=_chunks(MAX_BODY + 1), headers=HEADERS)
    assert answer.request.headers.get("transfer-encoding") == "chunked"
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"] == {
        "code": "too_large",
        "message": f"The request body is over {MAX_BODY} bytes.",
    }
    assert _rows(client) == 0


def test_a_chunked_body_without_a_token_answers_401(client: TestClient) -> None:
    answer = client.post(
        "/v1/datasets/cps/query",
        content=_chunks(MAX_BODY * 2),
        headers={"Content-Type": "application/json"},
    )
    assert (answer.status_code, answer.json()["error"]["code"]) == (401, "unauthorized")


def test_a_chunked_body_within_the_limit_is_released(client: TestClient) -> None:
    text = json.dumps(release_body(RELEASES["mean"])).encode()
    padded = text + b" " * (MAX_BODY - len(text))  # exactly at the limit

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(padded), 7_000):
            yield padded[start : start + 7_000]

    answer = client.post("/v1/datasets/cps/query", content=pieces(), headers=HEADERS)
    assert answer.status_code == 200, answer.text
    assert _rows(client) == 1


def test_chunked_bodies_over_a_real_connection(curator: Curator) -> None:
    with served(create_app(curator)) as url:
        parts = urlsplit(url)
        for total, status in ((MAX_BODY + 1, 413), (3 * MAX_BODY, 413)):
            connection = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=10)
            connection.putrequest("POST", "/v1/datasets/cps/query")
            for name, value in {**HEADERS, "Transfer-Encoding": "chunked"}.items():
                connection.putheader(name, value)
            connection.endheaders()
            try:
                for chunk in _chunks(total, 16_384):
                    connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                connection.send(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server may answer and close before the whole body is sent
            response = connection.getresponse()
            assert response.status == status
            assert json.loads(response.read())["error"]["code"] == "too_large"
            connection.close()
