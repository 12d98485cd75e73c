"""The SQLite ledger: every release, persisted, so a kernel restart keeps the spend.

A session's budget is keyed by its name and covers every dataset it touches
(each row also records the dataset's fingerprint).  Keying by name rather
than by data means that re-loading the same people in another order, as a
column subset or with another dtype can never start a fresh budget.  A charge runs in one
``BEGIN IMMEDIATE`` transaction (read the spend, run the accountant's filter,
insert the row), so two processes sharing a ledger file can never overspend:
SQLite serializes the writers, and the spend is always re-read inside the
transaction rather than kept in memory.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import pandas as pd

from dpframe.accounting.accountants import Charge
from dpframe.accounting.budget import Budget
from dpframe.errors import LedgerError

__all__ = ["Ledger", "default_ledger_path"]

_SCHEMA = """
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


def default_ledger_path() -> Path:
    r"""Where the ledger lives when none is given.

    ``$DPFRAME_LEDGER`` if set; else the user's data directory:
    ``$XDG_DATA_HOME/dpframe`` (default ``~/.local/share/dpframe``) on Linux,
    ``~/Library/Application Support/dpframe`` on macOS and
    ``%LOCALAPPDATA%\\dpframe`` on Windows.
    """
    env = os.environ.get("DPFRAME_LEDGER")
    if env:
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME", home / ".local" / "share"))
    return base / "dpframe" / "ledger.sqlite"


class Ledger:
    """A persistent record of releases and the budgets they were charged to.

    Args:
        path: the SQLite file (created with its folder if missing), ``":memory:"``
            for a ledger that lives only as long as this object, or None for
            :func:`default_ledger_path`.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        if path is None:
            path = default_ledger_path()
        self.path = str(path)
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LedgerError(
                    f"Cannot create the ledger folder for {self.path}: {exc}"
                ) from None
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=60.0, isolation_level=None, check_same_thread=False
            )
            self._conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise LedgerError(f"Cannot open the ledger {self.path}: {exc}") from None
        self._lock = threading.Lock()
        self._totals: dict[str, tuple[int, Charge]] = {}

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def register(self, session: str, accounting: str, total: Budget) -> None:
        """Record the budget of ``session``, or check it matches the recorded one.

        Raises:
            LedgerError: the ledger already holds this session with a different
                budget or accounting (a budget is fixed at first use).
        """
        dataset = "*"
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT accounting, epsilon, delta FROM budgets WHERE session=? AND dataset=?",
                (session, dataset),
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO budgets VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        session,
                        dataset,
                        accounting,
                        str(total.epsilon),
                        str(total.delta),
                        time.time(),
                    ),
                )
                return
            recorded = Budget(Fraction(row[1]), Fraction(row[2]))
            if row[0] != accounting or recorded != total:
                raise LedgerError(
                    f"The ledger {self.path} already holds session {session!r} "
                    f"with {row[0]} accounting and total {recorded}; this session "
                    f"asks for {accounting} accounting and total {total}. A budget is fixed "
                    "at first use: resume with the same settings, or choose a new name=."
                )

    def spent(self, session: str) -> Charge:
        """The exact sum of all charges of ``session``."""
        with self._lock:
            return self._sum(self._conn, session)

    def _sum(self, conn: sqlite3.Connection, session: str) -> Charge:
        """The exact total, reading only rows newer than the last total read.

        Release rows are only ever appended (and their costs never change), so
        a cached (last id, total) plus the newer rows is the exact sum; the
        newer rows are read inside the caller's transaction, so rows written by
        other processes are always included.
        """
        last_id, total = self._totals.get(session, (0, Charge()))
        rows = conn.execute(
            "SELECT id, epsilon, delta, rho FROM releases WHERE session=? AND id > ? ORDER BY id",
            (session, last_id),
        ).fetchall()
        for row_id, eps, dlt, rho in rows:
            total = total + Charge(Fraction(eps), Fraction(dlt), Fraction(rho))
            last_id = row_id
        self._totals[session] = (last_id, total)
        return total

    def charge(
        self,
        session: str,
        dataset: str,
        charge: Charge,
        check: Callable[[Charge], None],
        query: str,
        mechanism: str,
    ) -> int:
        """Atomically test and record a charge; return the release id.

        ``check(spent)`` is the accountant's filter: it raises (and so rolls
        back, recording nothing) when the charge does not fit.
        """
        with self._transaction() as conn:
            spent = self._sum(conn, session)
            check(spent)
            cursor = conn.execute(
                "INSERT INTO releases (session, dataset, time, query, mechanism, epsilon, delta,"
                " rho, status, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'charged', NULL)",
                (
                    session,
                    dataset,
                    time.time(),
                    query,
                    mechanism,
                    str(charge.epsilon),
                    str(charge.delta),
                    str(charge.rho),
                ),
            )
            release_id = cursor.lastrowid
        assert release_id is not None
        return release_id

    def complete(self, release_id: int, value: str, status: str = "released") -> None:
        """Store the (public) released value of a charged row."""
        with self._transaction() as conn:
            conn.execute(
                "UPDATE releases SET status=?, value=? WHERE id=?", (status, value, release_id)
            )

    def releases(self, session: str) -> pd.DataFrame:
        """One row per release of ``session``, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, time, dataset, query, mechanism, epsilon, delta, rho, status, value "
                "FROM releases WHERE session=? ORDER BY id",
                (session,),
            ).fetchall()
        frame = pd.DataFrame(
            rows,
            columns=[
                "id",
                "time",
                "dataset",
                "query",
                "mechanism",
                "epsilon",
                "delta",
                "rho",
                "status",
                "value",
            ],
        )
        frame["time"] = pd.to_datetime(frame["time"], unit="s")
        for col in ("epsilon", "delta", "rho"):
            frame[col] = [float(Fraction(v)) for v in frame[col]]
        frame["dataset"] = frame["dataset"].str.slice(0, 12)
        order = ["query", "mechanism", "epsilon", "delta", "rho", "value", "status", "time"]
        indexed: pd.DataFrame = frame.set_index("id")[[*order, "dataset"]]
        return indexed

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()
