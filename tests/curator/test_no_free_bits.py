"""Nothing computed from the rows crosses outside a release (issue 16).

Before: ``/ledger`` (and the client's ``session.ledger``) showed the first 12
hex digits of the dataset's fingerprint, a hash of every row (an analyst who
knew all rows but one recovered the last by recomputing it), and the public
schema's dtypes were inferred from the values (one missing age turned
``int64`` into ``float64``; one stray word turned a numeric column into text).
Now data is named by catalog name and the owner's version, and every kind
comes from the catalog's declarations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.accounting import Charge, Ledger
from dpframe.backends.pandas_backend import PandasBackend
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.data import read_declared
from dpframe.curator.service import Curator
from dpframe.remote.client import RemoteSession
from dpframe.remote.wire import decode_response
from tests.curator.support import (
    ALICE,
    BOB,
    RELEASES,
    Server,
    release_body,
    sentinel_frame,
    write_catalog,
)

#: A run of hex digits (letters and digits) as long as the fingerprint prefix the ledger showed.
HEX_RUN = re.compile(
    r"(?<![0-9a-z.])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{12,}(?![0-9a-z.+-])"
)


def auth(token: str = ALICE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def curator(tmp_path: Path) -> Curator:
    return Curator(Catalog.load(write_catalog(tmp_path)))


@pytest.fixture
def client(curator: Curator) -> Iterator[TestClient]:
    with TestClient(create_app(curator)) as test_client:
        yield test_client


def _fingerprints(tmp_path: Path) -> set[str]:
    """The fingerprints the sentinel data could have had (as written, as read, as declared)."""
    frame = sentinel_frame()
    read = pd.read_csv(tmp_path / "sentinel.csv")
    return {PandasBackend(f).fingerprint() for f in (frame, read)}


def test_no_response_holds_a_hash_of_the_rows(
    client: TestClient, curator: Curator, tmp_path: Path
) -> None:
    texts: list[str] = []
    heads: list[dict[str, Any]] = []
    for name in sorted(RELEASES):
        body = release_body(RELEASES[name])
        for explain in (True, False):
            answer = client.post(
                "/v1/datasets/sentinel/query", json=dict(body, explain=explain), headers=auth()
            )
            assert answer.status_code == 200, answer.text
            # The signed chain head (issue 31) is a hash of the analyst's own ledger
            # records (labels, costs, released values, the catalog's name@version),
            # nothing computed from the rows: checked against the ledger below.
            data = answer.json()
            heads.append(data.pop("ledger_head"))
            texts.append(json.dumps(data))
    bad = dict(release_body(RELEASES["mean"]))
    bad["node"] = dict(bad["node"], expr={"op": "col", "name": "nope"})
    texts.append(client.post("/v1/datasets/sentinel/query", json=bad, headers=auth()).text)
    for path in ("", "/budget", "/ledger"):
        texts.append(client.get(f"/v1/datasets/sentinel{path}", headers=auth()).text)
    ledger = decode_response(
        client.get("/v1/datasets/sentinel/ledger", headers=auth()).json()["ledger"]
    )
    assert len(ledger) >= len(RELEASES)
    assert set(ledger["dataset"]) == {"sentinel"}
    assert set(ledger["version"]) == {"2024-06"}
    everything = "\n".join(texts)
    for fingerprint in _fingerprints(tmp_path):
        assert fingerprint[:8] not in everything
    assert HEX_RUN.findall(everything) == []
    # the curator's own ledger records the catalog's identity, not a fingerprint
    recorded = curator._seats[("alice", "sentinel")].session._ledger.page("alice/sentinel")
    assert set(recorded["dataset"]) == {"sentinel@2024-06"}
    last = curator._seats[("alice", "sentinel")].ledger.head("alice/sentinel")
    assert last is not None and heads[-1]["hash"] == last.hash
    assert {h["session"] for h in heads} == {"alice/sentinel"}


def test_rows_an_older_curator_recorded_with_the_fingerprint_show_the_name_only(
    tmp_path: Path,
) -> None:
    catalog = Catalog.load(write_catalog(tmp_path))
    old = Ledger(catalog.ledger)
    old.register("bob/cps", "pure", dp.Budget(1))
    old.charge("bob/cps", "ab" * 20, Charge(epsilon=Fraction(1, 10)), lambda s: None, "count", "m")
    old.close()
    client = TestClient(create_app(Curator(catalog)))
    answer = client.get("/v1/datasets/cps/ledger", headers=auth(BOB))
    assert answer.status_code == 200, answer.text
    table = decode_response(answer.json()["ledger"])
    assert list(table["dataset"]) == ["cps"]
    assert table["version"].isna().all()
    assert "abab" not in answer.text
    describe = client.get("/v1/datasets/cps", headers=auth(BOB)).json()
    assert describe["dataset"] == "cps" and describe["version"] is None


def _schema_of(tmp_path: Path, frame: pd.DataFrame, name: str) -> Any:
    folder = tmp_path / name
    folder.mkdir()
    write_catalog(folder)
    frame.to_csv(folder / "sentinel.csv", index=False)  # the same catalog over other rows
    client = TestClient(create_app(Curator(Catalog.load(folder / "catalog.toml"))))
    answer = client.get("/v1/datasets/sentinel", headers=auth())
    assert answer.status_code == 200, answer.text
    return answer.json()["columns"]


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("education", np.nan),  # one missing value: int64 became float64
        ("education", "unknown"),  # one stray word: numeric became text
        ("person_id", "n/a"),
        ("note", 12),  # one number in a text column
        ("region", np.nan),
    ],
)
def test_the_schema_is_the_same_whatever_one_row_holds(
    tmp_path: Path, column: str, value: object
) -> None:
    clean = sentinel_frame()
    changed = clean.astype({column: object})
    changed.loc[changed.index[3], column] = value
    assert _schema_of(tmp_path, changed, "changed") == _schema_of(tmp_path, clean, "clean")


def test_the_schema_shows_the_declared_kinds(client: TestClient) -> None:
    columns = {
        c["name"]: (c["kind"], c["dtype"])
        for c in client.get("/v1/datasets/sentinel", headers=auth()).json()["columns"]
    }
    assert columns["education"] == ("numeric", "float64")
    assert columns["person_id"] == ("numeric", "float64")
    assert columns["note"] == ("text", "string")
    assert columns["region"] == ("categorical", "string")


def test_a_stray_value_is_missing_not_a_new_kind(tmp_path: Path) -> None:
    frame = sentinel_frame().astype({"education": object})
    frame.loc[frame.index[:100], "education"] = "unknown"
    frame.to_csv(tmp_path / "stray.csv", index=False)
    write_catalog(tmp_path)
    text = (tmp_path / "catalog.toml").read_text().replace('"sentinel.csv"', '"stray.csv"', 1)
    (tmp_path / "catalog.toml").write_text(text)
    client = TestClient(create_app(Curator(Catalog.load(tmp_path / "catalog.toml"))))
    body = release_body(lambda pf: pf["education"].mean(epsilon=1))
    answer = client.post("/v1/datasets/sentinel/query", json=body, headers=auth())
    assert answer.status_code == 200, answer.text
    assert 5 <= float(decode_response(answer.json()["result"])) <= 20


def test_boolean_columns_of_a_csv_are_read_value_by_value(tmp_path: Path) -> None:
    (tmp_path / "flags.csv").write_text(
        "flag,x\nTrue,1\nfalse,2\n1,3\n0.0,4\n TRUE ,5\nmaybe,6\n,7\n", encoding="utf-8"
    )
    write_catalog(tmp_path)
    text = (tmp_path / "catalog.toml").read_text()
    text = text.replace(
        "[datasets.secret]",
        '[datasets.flags]\npath = "flags.csv"\ndtypes = { flag = "boolean", x = "numeric" }\n\n'
        "[datasets.secret]",
    )
    text = text.replace(
        "secret = { epsilon = 1.0 } }", "secret = { epsilon = 1.0 }, flags = { epsilon = 1.0 } }"
    )
    (tmp_path / "catalog.toml").write_text(text)
    curator = Curator(Catalog.load(tmp_path / "catalog.toml"))
    entry = curator.catalog.datasets["flags"]
    flags = read_declared(entry)["flag"]
    assert str(flags.dtype) == "boolean"
    assert flags.tolist() == [True, False, True, False, True, pd.NA, pd.NA]
    client = TestClient(create_app(curator))
    columns = client.get("/v1/datasets/flags", headers=auth(BOB)).json()["columns"]
    assert {c["name"]: c["kind"] for c in columns} == {"flag": "boolean", "x": "numeric"}


CATALOG_ERRORS = [
    ('dtypes = { note = "text" }', "no kind is declared for person_id"),
    (
        'dtypes = { note = "text", person_id = "numeric", ghost = "text" }',
        "declares columns that sentinel.csv does not have: ghost",
    ),
    ('dtypes = { note = "words", person_id = "numeric" }', r"dtypes\.note must be one of"),
    (
        'dtypes = { note = "text", person_id = "numeric", wage = "text" }',
        "a column with numeric bounds is numeric, not text",
    ),
    ('dtypes = { note = "text", person_id = "numeric", region = "numeric" }', "are text keys"),
]


@pytest.mark.parametrize(("dtypes", "message"), CATALOG_ERRORS, ids=[m for _, m in CATALOG_ERRORS])
def test_a_column_without_a_declared_kind_is_refused_at_start(
    tmp_path: Path, dtypes: str, message: str
) -> None:
    catalog = write_catalog(tmp_path)
    text = catalog.read_text()
    declared = 'dtypes = { note = "text", person_id = "numeric" }'
    assert text.count(declared) == 1
    catalog.write_text(text.replace(declared, dtypes))
    with pytest.raises(CatalogError, match=message):
        Curator(Catalog.load(catalog))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('version = "a b"', "version must be text of 1-64"),
        ("version = 3", "version must be text of 1-64"),
        ('categories = { region = ["a", 1] }', "must be all text, all numbers or all booleans"),
        ("categories = { region = [] }", "must not be empty"),
    ],
)
def test_catalog_declarations_are_checked(tmp_path: Path, line: str, message: str) -> None:
    catalog = write_catalog(tmp_path)
    text = catalog.read_text().replace(
        '[datasets.secret]\npath = "sentinel.csv"',
        f'[datasets.secret]\npath = "sentinel.csv"\n{line}',
    )
    catalog.write_text(text)
    with pytest.raises(CatalogError, match=message):
        Catalog.load(catalog)


def test_the_client_sees_names_and_versions_only(server: Server) -> None:
    pf = dp.connect(server.url, token=ALICE).open("sentinel")
    assert cast(RemoteSession, pf.session).version == "2024-06"
    pf.count(epsilon=0.1)
    pf["wage"].mean(epsilon=0.1)
    table = pf.session.ledger
    assert list(table["query"])[-2:] == ["count()", "mean(wage)"]
    assert set(table["dataset"]) == {"sentinel"} and set(table["version"]) == {"2024-06"}
    assert not any(HEX_RUN.search(str(v)) for v in table.to_numpy().ravel())
    assert str(pf.dtypes["education"]) == "float64"
    assert str(pf.dtypes["note"]) == "string"


def test_serve_refuses_a_catalog_with_an_undeclared_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dpframe.cli import main

    catalog = write_catalog(tmp_path)
    text = catalog.read_text().replace(', person_id = "numeric" }', " }", 1)
    catalog.write_text(text)
    assert main(["serve", "--catalog", str(catalog)]) == 2  # before anything is served
    assert "no kind is declared for person_id" in capsys.readouterr().err
