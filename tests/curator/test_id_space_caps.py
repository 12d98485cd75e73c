"""Caps across an ID space: a join counts against the cap of every dataset it reads (issue 31).

``visits`` and ``people`` share the ID space ``persons``.  A private join is
charged to the seat it is sent to (``alice/visits``), and it must count
against ``people``'s cap too: checked in the charge's transaction (409
``dataset_cap`` naming ``people``, nothing charged, no data read), and
recorded so that later releases on ``people`` — by any analyst, in any
process, after a restart — see it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dpframe.accounting.ledger_caps import CapSpend, next_release_ids, record_touches
from dpframe.accounting.ledger_verify import verify_file
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.codes import ServiceError
from dpframe.curator.service import Curator
from tests.curator.support import ALICE, BOB, release_body
from tests.curator.test_joins_remote import EPS, _join_body, write_join_catalog

JOIN_EPS = float(EPS)  # the join body's ε (a count at ε = 1000)


def _catalog(folder: Path, people_cap: float, visits_cap: str = "") -> Path:
    path = write_join_catalog(folder)
    text = path.read_text()
    text = text.replace(
        'id_space = "persons"\nbounds = {{ age'.replace("{{", "{"),
        f'id_space = "persons"\ncap = {{ epsilon = {people_cap} }}\nbounds = {{ age',
        1,
    )
    if visits_cap:
        text = text.replace(
            'id_space = "persons"\nbounds = { cost',
            f'id_space = "persons"\n{visits_cap}\nbounds = {{ cost',
        )
    # bob may also ask about people (a second analyst on the capped dataset)
    text = text.replace(
        "budgets = { visits = { epsilon = 10.0 } }",
        "budgets = { visits = { epsilon = 10000.0 }, people = { epsilon = 10000.0 } }",
    )
    path.write_text(text)
    assert "cap = { epsilon" in path.read_text()
    return path


def _ask(curator: Curator, token: str, dataset: str, body: dict[str, Any]) -> dict[str, Any]:
    return curator.answer(curator.authenticate(f"Bearer {token}"), dataset, {**body, "fresh": True})


def _count(epsilon: float) -> dict[str, Any]:
    return release_body(lambda pf: pf.count(epsilon=epsilon))


def _rows(path: Path) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(path.parent / "ledger.sqlite")
    try:
        rows = conn.execute("SELECT id, session, epsilon FROM releases ORDER BY id").fetchall()
        return [(int(i), str(s), str(e)) for i, s, e in rows]
    finally:
        conn.close()


def test_a_join_counts_against_the_cap_of_every_dataset_it_reads(tmp_path: Path) -> None:
    path = _catalog(tmp_path, people_cap=2.5 * JOIN_EPS)
    curator = Curator(Catalog.load(path))
    try:
        _ask(curator, ALICE, "visits", _join_body())  # seat alice/visits; reads people too
        _ask(curator, ALICE, "visits", _join_body())
        assert [s for _, s, _ in _rows(path)] == ["alice/visits"] * 2
        # people's cap has 0.5 × JOIN_EPS left: another join is refused before any charge
        with pytest.raises(ServiceError, match="about the dataset 'people' together") as refused:
            _ask(curator, ALICE, "visits", _join_body())
        assert (refused.value.status, refused.value.code) == (409, "dataset_cap")
        assert f"Requested:  ε={EPS}\n  Remaining:  ε={EPS // 2}\n" in refused.value.message
        assert "nothing was charged and no data was read" in refused.value.message
        assert len(_rows(path)) == 2  # nothing recorded
        # another analyst's release on people sees the joins too
        with pytest.raises(ServiceError, match="about the dataset 'people' together"):
            _ask(curator, BOB, "people", _count(0.6 * JOIN_EPS))
        _ask(curator, BOB, "people", _count(0.5 * JOIN_EPS))  # exactly what is left
        # visits itself has no cap: releases on visits alone are not limited by people's
        _ask(curator, ALICE, "visits", _count(JOIN_EPS))
    finally:
        curator.close()
    # a restarted curator reads the recorded joins (a new process's first read)
    restarted = Curator(Catalog.load(path))
    try:
        with pytest.raises(ServiceError, match="Remaining:  ε=0\n"):
            _ask(restarted, BOB, "people", _count(0.001))
    finally:
        restarted.close()
    assert verify_file(path.parent / "ledger.sqlite").ok  # the side table breaks nothing


def test_the_refusing_dataset_is_any_read_one_and_nothing_is_charged(tmp_path: Path) -> None:
    caps = "cap = { epsilon = 1500.0 }"  # visits: 1.5 joins
    path = _catalog(tmp_path, people_cap=10 * JOIN_EPS, visits_cap=caps)
    curator = Curator(Catalog.load(path))
    try:
        _ask(curator, ALICE, "people", _count(JOIN_EPS))  # people only: visits' cap untouched
        _ask(curator, ALICE, "visits", _join_body())
        with pytest.raises(ServiceError, match="about the dataset 'visits' together"):
            _ask(curator, ALICE, "visits", _join_body())
        rows = _rows(path)
        assert len(rows) == 2
        conn = sqlite3.connect(path.parent / "ledger.sqlite")
        try:
            touches = conn.execute("SELECT release, dataset FROM cap_touches").fetchall()
            people = CapSpend("people", "pure").read(conn)
            visits = CapSpend("visits", "pure").read(conn)
        finally:
            conn.close()
        assert touches == [(rows[1][0], "people")]  # the join's row, under the seat's id
        assert people.epsilon == 2 * JOIN_EPS and visits.epsilon == JOIN_EPS
    finally:
        curator.close()


def test_a_release_cap_of_a_joined_dataset_applies_to_the_join(tmp_path: Path) -> None:
    path = _catalog(tmp_path, people_cap=100 * JOIN_EPS)
    text = path.read_text().replace(
        f"cap = {{ epsilon = {100 * JOIN_EPS} }}",
        f"cap = {{ epsilon = {100 * JOIN_EPS} }}\nrelease_cap = {{ epsilon = 10.0 }}",
    )
    path.write_text(text)
    curator = Curator(Catalog.load(path))
    try:
        with pytest.raises(ServiceError, match="any one release about the dataset 'people'"):
            _ask(curator, ALICE, "visits", _join_body())
        assert _rows(path) == []
    finally:
        curator.close()


def test_a_joined_seat_whose_accounting_the_cap_cannot_take_is_refused(tmp_path: Path) -> None:
    path = _catalog(tmp_path, people_cap=10.0)
    text = path.read_text().replace(
        "visits = { epsilon = 1000000.0 }",
        'visits = { epsilon = 1000000.0, delta = 1e-6, accounting = "approx" }',
    )
    path.write_text(text)
    with pytest.raises(CatalogError, match=r"'alice \(seat visits, joining people\)' uses approx"):
        Catalog.load(path)


def test_recorded_touches_take_the_ids_the_rows_get(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "t.sqlite", isolation_level=None)
    try:
        conn.execute("CREATE TABLE releases (id INTEGER PRIMARY KEY AUTOINCREMENT, x TEXT)")
        conn.execute("BEGIN IMMEDIATE")
        assert next_release_ids(conn, 2) == [1, 2]
        conn.executemany("INSERT INTO releases (x) VALUES (?)", [("a",), ("b",)])
        conn.execute("DELETE FROM releases WHERE id = 2")  # AUTOINCREMENT never reuses 2
        ids = record_touches(conn, 3, ["people", "jobs"])
        got = [conn.execute("INSERT INTO releases (x) VALUES ('c')").lastrowid for _ in range(3)]
        conn.execute("COMMIT")
        assert ids == got == [3, 4, 5]
        stored = conn.execute("SELECT release, dataset FROM cap_touches ORDER BY 1, 2").fetchall()
        assert stored == [(i, name) for i in ids for name in ("jobs", "people")]
    finally:
        conn.close()
