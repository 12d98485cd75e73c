"""The curator signs each response's chain head (Ed25519, issue 31); the head is an anchor.

The key is created on the curator's first start, 0600, beside the ledger
(or where the catalog's ``signing_key`` says); ``/v1/health`` shows its
public key; every release response carries the analyst's session head,
signed; the client keeps the last one and checks it; and a kept head
catches a later rewrite of that session's rows in the curator's ledger.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.accounting.head_signatures import check_signed_head
from dpframe.accounting.ledger import Ledger
from dpframe.cli import main
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.service import Curator
from dpframe.errors import LedgerError
from dpframe.remote.client import RemoteSession
from tests.curator.support import ALICE, RELEASES, Server, release_body, write_catalog
from tests.test_ledger_verify import rehash

QUERY = "/v1/datasets/sentinel/query"
AUTH = {"Authorization": f"Bearer {ALICE}"}


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    return write_catalog(tmp_path)


@pytest.fixture
def client(catalog: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Curator(Catalog.load(catalog)))) as test_client:
        yield test_client


def _release(client: TestClient, kind: str) -> Any:
    answer = client.post(QUERY, json={**release_body(RELEASES[kind]), "fresh": True}, headers=AUTH)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_health_shows_the_key_created_beside_the_ledger(catalog: Path, client: TestClient) -> None:
    key_file = catalog.parent / "ledger.sqlite.ed25519"
    assert key_file.stat().st_mode & 0o777 == 0o600
    public = client.get("/v1/health").json()["public_key"]
    assert len(base64.b64decode(public)) == 32
    # a restart keeps the key
    assert Curator(Catalog.load(catalog)).signer is not None
    assert Curator(Catalog.load(catalog)).signer.public_key == public  # type: ignore[union-attr]


def test_each_response_carries_the_sessions_signed_head(catalog: Path, client: TestClient) -> None:
    public = client.get("/v1/health").json()["public_key"]
    first = _release(client, "count")["ledger_head"]
    second = _release(client, "mean")["ledger_head"]
    for signed in (first, second):
        assert set(signed) == {"session", "n", "hash", "signature", "public_key"}
        check_signed_head(signed, public)  # raises unless it verifies under the health key
    assert second["session"] == first["session"] and second["n"] > first["n"]
    ledger = Ledger(catalog.parent / "ledger.sqlite")
    head = ledger.head(second["session"])
    assert head is not None and head.to_dict() == {k: second[k] for k in ("session", "n", "hash")}
    tampered = {**second, "n": second["n"] + 1}
    with pytest.raises(LedgerError, match="does not verify"):
        check_signed_head(tampered, public)


def test_a_kept_head_catches_a_rewrite_of_the_curator_ledger(
    catalog: Path, client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    public = client.get("/v1/health").json()["public_key"]
    _release(client, "count")
    kept = _release(client, "sum")["ledger_head"]
    anchor = tmp_path / "head.json"
    anchor.write_text(json.dumps(kept))
    path = catalog.parent / "ledger.sqlite"
    args = ["ledger", "verify", str(path), "--anchor", str(anchor), "--public-key", public]
    assert main(args) == 0
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(
        "UPDATE releases SET epsilon='1/1000' WHERE id=(SELECT MIN(id) FROM releases WHERE"
        " session=?)",
        (kept["session"],),
    )
    conn.close()
    rehash(path, kept["session"])
    capsys.readouterr()
    assert main(["ledger", "verify", str(path)]) == 0  # consistent: the chain alone cannot tell
    assert main(args) == 1
    assert "(re-hashed)" in capsys.readouterr().out


def test_the_catalog_names_the_key(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path, server='signing_key = "keys/head.key"')
    (tmp_path / "keys").mkdir()
    curator = Curator(Catalog.load(catalog))
    assert curator.signer is not None and curator.signer.path == tmp_path / "keys" / "head.key"
    assert (tmp_path / "keys" / "head.key").stat().st_mode & 0o777 == 0o600
    (tmp_path / "keys" / "head.key").write_text("not a key")
    with pytest.raises(CatalogError, match=r"signing_key: The signing key .* is not readable"):
        Curator(Catalog.load(catalog))


def test_the_client_keeps_and_checks_the_last_head(server: Server) -> None:
    pf = dp.connect(server.url, token=ALICE).open("sentinel")
    session = cast(RemoteSession, pf.session)
    with pytest.raises(LedgerError, match="No chain head received yet"):
        session.check_ledger_head()
    pf.count(epsilon=0.1, fresh=True)
    first = session.check_ledger_head()
    pf["wage"].mean(epsilon=0.1, fresh=True)
    second = session.check_ledger_head()
    assert second["n"] > first["n"] and session.ledger_head == second
    session.ledger_head = {**second, "hash": "0" * 64}
    with pytest.raises(LedgerError, match="does not verify"):
        session.check_ledger_head()
