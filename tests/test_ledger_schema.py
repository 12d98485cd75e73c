"""Ledger schema version 2: migration from version 1, the generic step list, the new fields.

The version-1 files here are made by raw SQL that is exactly what dpframe
wrote up to schema version 1 (the ``_SCHEMA`` text and ``_initialize`` of
``dpframe/accounting/ledger.py`` at commit 84d0c59, and its ``charge``
insert); :func:`test_raw_version_1_file_matches_the_base_schema` pins the
base schema to it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting import Charge, Ledger, ledger_schema
from dpframe.accounting.ledger import PendingCharge, decode_parts
from dpframe.accounting.ledger_schema import APPLICATION_ID, SCHEMA_VERSION, Migration
from dpframe.accounting.ledger_sketches import SketchStore, sketch_path

# Verbatim from dpframe/accounting/ledger.py at schema version 1.
_V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    session TEXT NOT NULL,
    dataset TEXT NOT NULL,
    accounting TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (session, dataset)
);
CREATE TABLE IF NOT EXISTS releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    dataset TEXT NOT NULL,
    time REAL NOT NULL,
    query TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    rho TEXT NOT NULL,
    status TEXT NOT NULL,
    value TEXT
);
CREATE INDEX IF NOT EXISTS releases_by_session ON releases (session, dataset);
"""
_V1_INSERT = (
    "INSERT INTO releases (session, dataset, time, query, mechanism, epsilon, delta,"
    " rho, status, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'charged', NULL)"
)
OLD_COLUMNS = [
    "query",
    "mechanism",
    "epsilon",
    "delta",
    "rho",
    "value",
    "status",
    "time",
    "dataset",
]
NEW_COLUMNS = ["currency", "privacy_unit", "parts"]


def _version_1_file(path: Path, *, stamped: bool = True) -> None:
    """A ledger as dpframe wrote it at schema version 1: two sessions, five releases."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=FULL")
    stamp = f"PRAGMA application_id={APPLICATION_ID}; PRAGMA user_version=1;" if stamped else ""
    conn.executescript(f"BEGIN IMMEDIATE; {_V1_SCHEMA} {stamp} COMMIT;")
    now = time.time()
    for session, accounting, eps, dlt in (("p", "pure", "1", "0"), ("z", "zcdp", "1", "1/1000000")):
        conn.execute(
            "INSERT INTO budgets VALUES (?, ?, ?, ?, ?, ?)",
            (session, "*", accounting, eps, dlt, now),
        )
    rows = [
        ("p", "1/10", "0", "0", "released", "12"),
        ("z", "0", "0", "1/100", "released", "7"),
        ("p", "1/5", "0", "0", "failed", ""),
        ("p", "1/20", "0", "0", "charged", None),
        ("z", "0", "0", "1/50", "released", "3.5"),
    ]
    for i, (session, eps, dlt, rho, status, value) in enumerate(rows):
        cursor = conn.execute(
            _V1_INSERT,
            (session, "f" * 40, now + i, f"count #{i}", "discrete Laplace", eps, dlt, rho),
        )
        conn.execute(
            "UPDATE releases SET status=?, value=? WHERE id=?", (status, value, cursor.lastrowid)
        )
    conn.close()


def _schema(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
    ).fetchall()


def _pragmas(path: Path) -> tuple[int, int, str]:
    conn = sqlite3.connect(path)
    try:
        return (
            conn.execute("PRAGMA application_id").fetchone()[0],
            conn.execute("PRAGMA user_version").fetchone()[0],
            conn.execute("PRAGMA journal_mode").fetchone()[0],
        )
    finally:
        conn.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_raw_version_1_file_matches_the_base_schema(tmp_path: Path) -> None:
    raw = tmp_path / "v1.sqlite"
    _version_1_file(raw)
    base = sqlite3.connect(":memory:")
    for statement in ledger_schema.BASE_SCHEMA:
        base.execute(statement)
    conn = sqlite3.connect(raw)
    assert _schema(conn) == _schema(base)
    conn.close()
    assert _pragmas(raw) == (APPLICATION_ID, 1, "delete")


@pytest.mark.parametrize("stamped", [True, False], ids=["version 1", "unstamped (version 0)"])
def test_version_1_file_is_migrated_in_place(ledger_path: Path, stamped: bool) -> None:
    _version_1_file(ledger_path, stamped=stamped)
    before = sqlite3.connect(ledger_path)
    old_rows = before.execute("SELECT * FROM releases ORDER BY id").fetchall()
    before.close()

    ledger = Ledger(ledger_path)
    assert _pragmas(ledger_path) == (APPLICATION_ID, SCHEMA_VERSION, "wal")
    assert SCHEMA_VERSION == 10
    # same layout as a ledger created new
    fresh = Ledger(ledger_path.with_name("fresh.sqlite"))
    assert _schema(ledger._conn) == _schema(fresh._conn)
    # every old row kept, value for value; new fields added
    conn = sqlite3.connect(ledger_path)
    migrated = conn.execute("SELECT * FROM releases ORDER BY id").fetchall()
    conn.close()
    assert [row[: len(old_rows[0])] for row in migrated] == old_rows
    assert ledger.spent("p") == Charge(epsilon=Fraction(1, 10) + Fraction(1, 5) + Fraction(1, 20))
    assert ledger.spent("z") == Charge(rho=Fraction(3, 100))
    frame = ledger.releases("p")
    assert list(frame.columns) == OLD_COLUMNS + NEW_COLUMNS
    assert list(frame["status"]) == ["released", "failed", "charged"]
    assert list(frame["currency"]) == ["pure"] * 3  # from the session's recorded budget
    assert list(ledger.releases("z")["currency"]) == ["zcdp"] * 2
    assert frame["privacy_unit"].isna().all() and frame["parts"].isna().all()
    # and it goes on working: a session resumes its spend and charges with the new fields
    session = dp.Session(epsilon=1, ledger=ledger_path, name="p")
    assert session.spent == dp.Budget(Fraction(7, 20))
    session.private_frame(pd.DataFrame({"x": [1.0]})).count(epsilon=0.1)
    assert list(session.ledger["currency"]) == ["pure"] * 4


def test_migration_is_one_transaction(ledger_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _version_1_file(ledger_path)
    before = _digest(ledger_path)
    later = SCHEMA_VERSION + 1
    failing = Migration(later, "a step that fails half-way", ("CREATE TABLE t (x)", "NOT SQL"))
    monkeypatch.setattr(ledger_schema, "MIGRATIONS", (*ledger_schema.MIGRATIONS, failing))
    with pytest.raises(
        dp.LedgerError, match=rf"Cannot update the ledger .* to schema version {later}"
    ):
        Ledger(ledger_path)
    # neither the real steps nor the first half of the failing one stayed
    assert _digest(ledger_path) == before
    assert _pragmas(ledger_path) == (APPLICATION_ID, 1, "delete")


def test_a_later_step_goes_through_the_same_path(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Ledger(ledger_path).charge("s", "d", Charge(epsilon=Fraction(1)), lambda s: None, "q", "m")
    later = SCHEMA_VERSION + 1
    step = Migration(later, "an example column", ("ALTER TABLE releases ADD COLUMN example TEXT",))
    with monkeypatch.context() as patch:
        patch.setattr(ledger_schema, "MIGRATIONS", (*ledger_schema.MIGRATIONS, step))
        upgraded = Ledger(ledger_path)
        assert _pragmas(ledger_path)[1] == later
        columns = {row[1] for row in upgraded._conn.execute("PRAGMA table_info(releases)")}
        assert "example" in columns
        assert upgraded.spent("s") == Charge(epsilon=Fraction(1))
        new = Ledger(ledger_path.with_name("new.sqlite"))  # a new ledger gets the step too
        assert _schema(new._conn) == _schema(upgraded._conn)
        upgraded.close()
        new.close()
    # this dpframe knows only its own version: the upgraded file is refused, unchanged
    before = _digest(ledger_path)
    with pytest.raises(dp.LedgerError, match=f"schema version {later}, written by a newer dpframe"):
        Ledger(ledger_path)
    assert _digest(ledger_path) == before


def test_processes_opening_a_version_1_file_at_once_migrate_it_once(ledger_path: Path) -> None:
    _version_1_file(ledger_path)
    barrier = threading.Barrier(4)
    opened: list[Ledger] = []
    errors: list[BaseException] = []

    def open_it() -> None:
        barrier.wait()
        try:
            opened.append(Ledger(ledger_path))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert len(opened) == 4
    assert _pragmas(ledger_path)[:2] == (APPLICATION_ID, SCHEMA_VERSION)
    assert {ledger.spent("p").epsilon for ledger in opened} == {Fraction(7, 20)}


# -- the new fields --------------------------------------------------------------


def _accept(spent: Charge) -> None:
    return None


def test_charge_records_parts_privacy_unit_and_currency() -> None:
    ledger = Ledger(":memory:")
    count, total = Charge(epsilon=Fraction(1, 10)), Charge(epsilon=Fraction(3, 10))
    parts = [("count", count), ("sum", Charge(epsilon=Fraction(2, 10)))]
    unit = json.dumps({"column": "person_id", "max_rows": 3})
    ledger.charge(
        "s", "d", total, _accept, "mean(x)", "m", parts=parts, privacy_unit=unit, currency="pure"
    )
    ledger.charge("s", "d", count, _accept, "count", "m")  # today's call, unchanged
    frame = ledger.releases("s")
    assert list(frame.columns) == OLD_COLUMNS + NEW_COLUMNS
    first, second = frame.iloc[0], frame.iloc[1]
    assert decode_parts(first["parts"]) == parts
    assert json.loads(first["parts"])[1] == {
        "name": "sum",
        "epsilon": "1/5",
        "delta": "0",
        "rho": "0",
    }
    assert first["privacy_unit"] == unit and first["currency"] == "pure"
    assert pd.isna(second["parts"]) and pd.isna(second["privacy_unit"])
    assert pd.isna(second["currency"])  # no budget registered for "s", none given
    assert ledger.spent("s") == total + count


def test_currency_defaults_to_the_registered_accounting(ledger_path: Path) -> None:
    ledger = Ledger(ledger_path)
    ledger.register("z", "zcdp", dp.Budget(1, Fraction(1, 10**6)))
    ledger.charge("z", "d", Charge(rho=Fraction(1, 100)), _accept, "q", "m")
    other = Ledger(ledger_path)  # did not register "z" itself: reads the budget row
    other.charge("z", "d", Charge(rho=Fraction(1, 100)), _accept, "q", "m")
    other.charge("z", "d", Charge(epsilon=Fraction(1)), _accept, "q", "m", currency="pure")
    assert list(ledger.releases("z")["currency"]) == ["zcdp", "zcdp", "pure"]


def test_invalid_parts_or_currency_are_refused_and_record_nothing() -> None:
    ledger = Ledger(":memory:")
    tenth = Charge(epsilon=Fraction(1, 10))
    with pytest.raises(dp.InvalidArgumentError, match="add up to the charge exactly"):
        ledger.charge("s", "d", tenth, _accept, "q", "m", parts=[("a", tenth), ("b", tenth)])
    with pytest.raises(dp.InvalidArgumentError, match="non-empty list"):
        ledger.charge("s", "d", tenth, _accept, "q", "m", parts=[])
    with pytest.raises(dp.InvalidArgumentError, match="currency= takes one of"):
        ledger.charge("s", "d", tenth, _accept, "q", "m", currency="euros")
    assert ledger.releases("s").empty
    assert decode_parts(None) is None


# -- batch admission -------------------------------------------------------------


def _items(n: int, cost: Fraction = Fraction(1, 10)) -> list[PendingCharge]:
    return [PendingCharge(Charge(epsilon=cost), f"q{i}", "m") for i in range(n)]


def _at_most(limit: Fraction, batch: Fraction, seen: list[Charge]) -> Any:
    def check(spent: Charge) -> None:
        seen.append(spent)
        if spent.epsilon + batch > limit:
            raise dp.BudgetExceededError("over")

    return check


def test_charge_many_admits_all_in_one_transaction(ledger_path: Path) -> None:
    ledger = Ledger(ledger_path)
    ledger.charge("s", "d", Charge(epsilon=Fraction(1, 2)), _accept, "first", "m")
    seen: list[Charge] = []
    statements: list[str] = []
    ledger._conn.set_trace_callback(statements.append)
    ids = ledger.charge_many("s", "d", _items(3), _at_most(Fraction(1), Fraction(3, 10), seen))
    ledger._conn.set_trace_callback(None)
    assert seen == [Charge(epsilon=Fraction(1, 2))]  # called once, with the spend before
    assert statements.count("BEGIN IMMEDIATE") == statements.count("COMMIT") == 1
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert ledger.spent("s").epsilon == Fraction(8, 10)
    frame = ledger.releases("s")
    assert list(frame.loc[ids, "query"]) == ["q0", "q1", "q2"]
    assert set(frame.loc[ids, "status"]) == {"charged"}
    ledger.complete(ids[1], "", status="failed")  # one failure leaves its charge standing
    assert ledger.spent("s").epsilon == Fraction(8, 10)
    assert Ledger(ledger_path).spent("s").epsilon == Fraction(8, 10)


def test_charge_many_refuses_all_or_records_nothing(ledger_path: Path) -> None:
    ledger = Ledger(ledger_path)
    seen: list[Charge] = []
    with pytest.raises(dp.BudgetExceededError, match="over"):
        ledger.charge_many("s", "d", _items(11), _at_most(Fraction(1), Fraction(11, 10), seen))
    bad = [*_items(2), PendingCharge(Charge(epsilon=Fraction(1)), "q", "m", currency="x")]
    with pytest.raises(dp.InvalidArgumentError, match="currency"):
        ledger.charge_many("s", "d", bad, _accept)
    assert ledger.charge_many("s", "d", [], _accept) == []
    assert ledger.releases("s").empty
    assert ledger.spent("s") == Charge()


class _FailingCommit:
    """A connection that fails its next COMMIT (as a full disk would) and rolls back."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.armed = conn, True

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT" and self.armed:
            self.armed = False
            self.conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("disk I/O error")
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def test_charge_many_with_a_failed_commit_leaves_the_cached_total_exact() -> None:
    ledger = Ledger(":memory:")
    ledger.charge_many("s", "d", _items(2), _accept)
    real = ledger._conn
    ledger._conn = _FailingCommit(real)  # type: ignore[assignment]
    with pytest.raises(dp.LedgerError, match="disk I/O error"):
        ledger.charge_many("s", "d", _items(3), _accept)
    ledger._conn = real
    ledger.charge_many("s", "d", _items(2), _accept)  # reuses the rolled-back ids
    assert ledger.spent("s").epsilon == Fraction(4, 10)
    assert len(ledger.releases("s")) == 4


# -- the sketch file beside the ledger ---------------------------------------------------


def test_sketches_are_recorded_replaced_and_found_by_tag(ledger_path: Path) -> None:
    store = SketchStore(ledger_path)
    assert store.path == sketch_path(ledger_path) == ledger_path.with_name("ledger.sqlite.sketches")
    assert store.recorded("d1") == (frozenset(), {})
    store.record("d1", [("rows", "", (1, 2, 3)), ("column", "wage", (7, 8))], {"wage": "aa"})
    store.record("d2", [("rows", "", (3, 4, 5))], {"wage": "aa", "age": "bb"})
    store.record("d1", [("rows", "", (1, 2, 9))], {"age": "cc"})  # replaced
    store.close()
    reopened = SketchStore(ledger_path)
    assert reopened.recorded("d1") == (frozenset({1, 2, 9}), {"age": "cc"})
    found = reopened.matches({"": (2, 3, 9), "x": (7, 8)})
    assert [(m.dataset, m.part, m.column, m.mine, m.common) for m in found] == [
        ("d1", "rows", "", "", 2),
        ("d2", "rows", "", "", 1),
    ]
    assert reopened.same_digests({"w": "aa", "a": "cc"}) == [
        ("d1", "age", "a"),
        ("d2", "wage", "w"),
    ]
    reopened.close()


def test_a_file_that_is_no_sketch_file_is_refused_unchanged(ledger_path: Path) -> None:
    other = sketch_path(ledger_path)
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    before = _digest(other)
    with pytest.raises(dp.LedgerError, match=r"is not a dpframe sketch file \(application id 0\)"):
        SketchStore(ledger_path)
    assert _digest(other) == before
