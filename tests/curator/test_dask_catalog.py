"""A catalog dataset served from a Parquet folder on the Dask backend (issue 16).

``backend = "dask"`` opens the file or folder lazily with ``dask.dataframe``;
the declared kinds, the row ceiling and every release work as on pandas, and
the answers agree with an embedded session on the same rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, CatalogError, hash_token
from dpframe.curator.service import Curator
from dpframe.examples.datasets import load_cps1988
from dpframe.remote.wire import decode_response
from tests.curator.support import (
    ALICE,
    RELEASES,
    cps_declarations,
    cps_parquet_folder,
    release_body,
)
from tests.sessions import backends

pytest.importorskip("dask.dataframe")

KINDS = ("count", "mean", "grouped mean", "filtered mean", "hist", "quantile", "describe")


def _catalog(folder: Path, extra: str = "") -> Path:
    folder.mkdir(exist_ok=True)
    cps_parquet_folder(folder / "cps.parquet")  # a folder of three files
    path = folder / "catalog.toml"
    path.write_text(
        '[server]\nledger = "ledger.sqlite"\nlatency_quantum_ms = 0\n\n'
        '[datasets.cps]\npath = "cps.parquet"\nbackend = "dask"\n'
        f"{cps_declarations()}{extra}\n"
        f'[analysts.alice]\ntoken_sha256 = "{hash_token(ALICE)}"\n'
        "budgets = { cps = { epsilon = 100.0 } }\n"
    )
    return path


def test_a_parquet_folder_is_served_on_dask(tmp_path: Path) -> None:
    curator = Curator(Catalog.load(_catalog(tmp_path)))
    client = TestClient(create_app(curator))
    headers = {"Authorization": f"Bearer {ALICE}"}
    for kind in KINDS:
        answer = client.post(
            "/v1/datasets/cps/query", json=release_body(RELEASES[kind]), headers=headers
        )
        assert answer.status_code == 200, (kind, answer.json())
    seat = curator._seats[("alice", "cps")]
    backend = next(iter(backends(seat.session).values()))
    assert type(backend).__name__ == "DaskBackend" and not seat.backends  # no worker processes
    schema = client.get("/v1/datasets/cps", headers=headers).json()
    assert {c["name"]: c["kind"] for c in schema["columns"]}["wage"] == "numeric"
    ledger = decode_response(
        client.get("/v1/datasets/cps/ledger", headers=headers).json()["ledger"]
    )
    assert list(ledger["status"]) == ["released"] * len(KINDS)


def test_count_on_dask_agrees_with_the_rows(tmp_path: Path) -> None:
    client = TestClient(create_app(Curator(Catalog.load(_catalog(tmp_path)))))
    body = release_body(lambda pf: pf.count(epsilon=50))
    answer = client.post(
        "/v1/datasets/cps/query", json=body, headers={"Authorization": f"Bearer {ALICE}"}
    )
    value = float(decode_response(answer.json()["result"]))
    assert abs(value - len(load_cps1988())) < 2  # ε = 50: the noise is below 2 with p > 1 - 1e-6


def test_the_dask_backend_checks_its_ceiling_and_format(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="more rows than its declared max_rows"):
        Curator(Catalog.load(_catalog(tmp_path / "a", "max_rows = 1000")))
    path = _catalog(tmp_path / "b")
    path.write_text(path.read_text().replace('path = "cps.parquet"', 'path = "cps.csv"'))
    with pytest.raises(CatalogError, match="the dask backend reads Parquet"):
        Catalog.load(path)
    path.write_text(path.read_text().replace('backend = "dask"', 'backend = "spark"'))
    with pytest.raises(CatalogError, match="backend must be 'pandas' or 'dask'"):
        Catalog.load(path)
