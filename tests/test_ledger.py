"""The SQLite ledger: persistence across sessions and no overspend across processes."""

from __future__ import annotations

import multiprocessing
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting import Charge, Ledger, default_ledger_path


def test_default_location_honours_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPFRAME_LEDGER", str(tmp_path / "x.sqlite"))
    assert default_ledger_path() == tmp_path / "x.sqlite"
    monkeypatch.delenv("DPFRAME_LEDGER")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert str(default_ledger_path()).startswith(str(tmp_path))


def test_spend_survives_a_restart(ledger_path: Path, cps: pd.DataFrame) -> None:
    first = dp.Session(epsilon=1, ledger=ledger_path, name="study")
    pf = first.private_frame(cps)
    pf.count(epsilon=0.25)
    pf.count(epsilon=0.25, fresh=True)  # a new release (else answered from the ledger, free)
    del first, pf
    second = dp.Session(epsilon=1, ledger=ledger_path, name="study")
    assert second.spent == dp.Budget(0.5)  # resumed from the ledger before any data is loaded
    second.private_frame(cps)
    assert second.spent == dp.Budget(0.5)
    assert second.remaining == dp.Budget(0.5)
    assert len(second.ledger) == 2


def test_budget_is_per_name_whatever_the_data(ledger_path: Path, cps: pd.DataFrame) -> None:
    dp.Session(epsilon=1, ledger=ledger_path, name="a").private_frame(cps).count(epsilon=0.5)
    other = dp.Session(epsilon=1, ledger=ledger_path, name="b")
    with pytest.warns(dp.BudgetResetWarning, match="'a': 1 release"):  # a new name: warned
        other.private_frame(cps)
    assert other.spent == dp.Budget(0)
    for reloaded in (cps.iloc[::-1], cps[["wage"]], cps.astype({"education": float}), cps[:100]):
        same_name = dp.Session(epsilon=1, ledger=ledger_path, name="a")
        same_name.private_frame(reloaded)
        assert same_name.spent == dp.Budget(0.5)


def test_rewrapping_with_new_bounds_does_not_reset(ledger_path: Path, cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1, ledger=ledger_path)
    session.private_frame(cps).count(epsilon=0.4)
    session.private_frame(cps, bounds={"wage": (0, 10)}).count(epsilon=0.4, fresh=True)
    assert session.spent == dp.Budget(0.8)


def test_changed_budget_for_same_session_is_refused(ledger_path: Path) -> None:
    dp.Session(epsilon=1, ledger=ledger_path)
    with pytest.raises(dp.LedgerError, match="fixed at first use"):
        dp.Session(epsilon=2, ledger=ledger_path)
    with pytest.raises(dp.LedgerError, match="fixed at first use"):
        dp.Session(epsilon=1, delta=1e-6, ledger=ledger_path)


def test_refused_charge_writes_nothing(ledger_path: Path) -> None:
    ledger = Ledger(ledger_path)

    def refuse(spent: Charge) -> None:
        raise dp.BudgetExceededError("no")

    with pytest.raises(dp.BudgetExceededError, match=r"^no$"):
        ledger.charge("s", "d", Charge(epsilon=Fraction(1)), refuse, "q", "m")
    assert ledger.spent("s") == Charge()
    assert ledger.releases("s").empty


def _spend_until_refused(path: str, epsilon: str, results: multiprocessing.Queue[Any]) -> None:
    admitted = 0
    try:
        ledger = Ledger(path)
        total = Fraction(1)
        for _ in range(200):

            def check(spent: Charge) -> None:
                if spent.epsilon + Fraction(epsilon) > total:
                    raise dp.BudgetExceededError("full")

            try:
                ledger.charge("shared", "d", Charge(epsilon=Fraction(epsilon)), check, "q", "m")
                admitted += 1
            except dp.BudgetExceededError:
                break
    except BaseException as exc:  # say what went wrong instead of leaving the queue empty
        results.put(f"after {admitted} charges: {exc!r}")
        raise
    results.put(admitted)


def test_two_processes_never_overspend(ledger_path: Path) -> None:
    # fork: an IPython shell made by other tests replaces __main__, which spawn needs.
    methods = multiprocessing.get_all_start_methods()
    ctx: Any = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    results: multiprocessing.Queue[Any] = ctx.Queue()
    procs = [
        ctx.Process(target=_spend_until_refused, args=(str(ledger_path), "1/100", results))
        for _ in range(3)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in procs] == [0, 0, 0], [p.exitcode for p in procs]
    counts = [results.get(timeout=10) for _ in procs]
    assert all(isinstance(c, int) for c in counts), counts
    assert sum(counts) == 100
    assert Ledger(ledger_path).spent("shared").epsilon == Fraction(1)


def test_cached_totals_include_rows_from_other_connections(ledger_path: Path) -> None:
    first, second = Ledger(ledger_path), Ledger(ledger_path)

    def accept(spent: Charge) -> None:
        return None

    for i in range(6):
        writer = first if i % 2 == 0 else second
        writer.charge("s", "d", Charge(epsilon=Fraction(1, 10)), accept, "q", "m")
        assert first.spent("s").epsilon == Fraction(i + 1, 10)
        assert second.spent("s").epsilon == Fraction(i + 1, 10)


def test_reading_new_charges_searches_the_rowid_range_not_the_whole_session() -> None:
    # The spent total is the cached total plus the rows newer than the last one
    # read; SQLite must find those by rowid (cost: the new rows), not through the
    # session index (cost: every row of the session, growing with the ledger).
    ledger = Ledger(":memory:")
    for _ in range(50):
        ledger.charge("s", "d", Charge(epsilon=Fraction(1, 100)), lambda spent: None, "q", "m")
    seen: list[str] = []
    ledger._conn.set_trace_callback(seen.append)
    ledger.spent("s")
    (query,) = [sql for sql in seen if sql.startswith("SELECT")]
    plan = ledger._conn.execute("EXPLAIN QUERY PLAN " + query).fetchall()
    assert any("INTEGER PRIMARY KEY" in str(step) for step in plan), plan
    assert not any("releases_by_session" in str(step) for step in plan), plan
    assert ledger.spent("s").epsilon == Fraction(1, 2)


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


def test_a_failed_commit_leaves_the_cached_total_exact() -> None:
    # The rolled-back row's id is reused by the next insert: a total cached before
    # the commit would then skip that next row and under-count the spend.
    ledger = Ledger(":memory:")
    tenth = Charge(epsilon=Fraction(1, 10))
    ledger.charge("s", "d", tenth, lambda spent: None, "q", "m")
    real = ledger._conn
    ledger._conn = _FailingCommit(real)  # type: ignore[assignment]
    with pytest.raises(
        dp.LedgerError, match=r"in-memory ledger failed \(OperationalError: disk I/O"
    ):
        ledger.charge("s", "d", tenth, lambda spent: None, "q", "m")
    ledger._conn = real
    ledger.charge("s", "d", tenth, lambda spent: None, "q", "m")
    assert ledger.spent("s").epsilon == Fraction(2, 10)
    assert len(ledger.releases("s")) == 2
