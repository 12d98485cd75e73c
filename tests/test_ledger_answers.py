"""Ledger schema version 3: the answers table (a curator's answers, for recovery by id).

A version-2 file (built by the same migration path, cut at step 2) is
migrated in place: its rows stay, the ``answers`` table appears, and the file
has the layout of a new ledger.
"""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

import dpframe as dp
from dpframe.accounting import Charge, Ledger, ledger_schema
from dpframe.accounting.ledger_schema import APPLICATION_ID, SCHEMA_VERSION


def _accept(spent: Charge) -> None:
    return None


def _tables(path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            n: [c[1] for c in conn.execute(f"PRAGMA table_info('{n}')")]
            for n in sorted(names)
            if not n.startswith("sqlite_")
        }
    finally:
        conn.close()


def test_a_version_2_ledger_gains_the_answers_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v2.sqlite"
    with monkeypatch.context() as patch:
        patch.setattr(ledger_schema, "MIGRATIONS", ledger_schema.MIGRATIONS[:2])
        old = Ledger(path)
        # the budgets row as a version-2 dpframe wrote it (register() now writes version 4's)
        old._conn.execute(
            "INSERT INTO budgets VALUES (?, ?, ?, ?, ?, ?)", ("s", "*", "pure", "1", "0", 0.0)
        )
        # the release row as a version-2 dpframe wrote it (charge() now also links it in the
        # hash chain of version 9, which a version-2 file has no table for)
        first = old._conn.execute(
            "INSERT INTO releases (session, dataset, time, query, mechanism, epsilon, delta, rho,"
            " status, value, currency) VALUES ('s', 'd', 0.0, 'count()', 'm', '1/10', '0', '0',"
            " 'released', '12', 'pure')"
        ).lastrowid
        assert first is not None
        old.close()
    assert "answers" not in _tables(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    conn.close()

    ledger = Ledger(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 10
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()
    assert _tables(path) == _tables_of_a_new_ledger(tmp_path)
    assert _tables(path)["answers"] == ["release_id", "body", "time"]
    assert ledger.spent("s") == Charge(epsilon=Fraction(1, 10))
    assert list(ledger.releases("s")["value"]) == ["12"]
    assert ledger.answer("s", first) == ("released", None)  # released before answers were kept
    ledger.store_answer(first, b"kept")
    assert ledger.answer("s", first) == ("released", b"kept")


def _tables_of_a_new_ledger(tmp_path: Path) -> dict[str, list[str]]:
    Ledger(tmp_path / "new.sqlite").close()
    return _tables(tmp_path / "new.sqlite")


def test_answers_are_found_only_under_their_session() -> None:
    ledger = Ledger(":memory:")
    ledger.register("a", "pure", dp.Budget(1))
    release = ledger.charge("a", "d", Charge(epsilon=Fraction(1, 10)), _accept, "q", "m")
    assert ledger.answer("a", release) == ("charged", None)
    ledger.store_answer(release, b"x")
    assert ledger.answer("b", release) is None
    assert ledger.answer("a", release + 1) is None
    assert ledger.answer("a", release) == ("charged", b"x")
