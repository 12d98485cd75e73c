"""What a ledger shows of a session: its releases, counts, frames and chain head (reads only).

:class:`LedgerReads` is the part of :class:`~dpframe.accounting.ledger.Ledger`
that reads rows back for people and tools (``session.ledger``, the curator's
``/ledger`` pages, the owner's summary); every charge and completion stays in
the ledger itself.
"""

from __future__ import annotations

import sqlite3
import threading
from fractions import Fraction

import pandas as pd

from dpframe.accounting.ledger_chain import Head, head_of
from dpframe.accounting.ledger_frames import read_frames
from dpframe.accounting.ledger_schema import ledger_errors

__all__ = ["LedgerReads"]

#: The columns of a release row that :meth:`Ledger.releases` reads (all but ``session``).
_SHOWN = (
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
    "currency",
    "privacy_unit",
    "parts",
)
#: The order of :meth:`Ledger.releases`' columns: schema-1 columns first, newer ones after.
_ORDER = (
    "query",
    "mechanism",
    "epsilon",
    "delta",
    "rho",
    "value",
    "status",
    "time",
    "dataset",
    "currency",
    "privacy_unit",
    "parts",
)


class LedgerReads:
    """Reads of a ledger's rows (a base of the ledger, on its connection and lock)."""

    path: str
    _conn: sqlite3.Connection
    _lock: threading.Lock

    def head(self, session: str) -> Head | None:
        """``session``'s chain head (its newest link's position and hash), or None if unknown.

        Record it elsewhere (an export, a notebook's output, a curator's
        signed response): ``dpframe ledger verify --anchor`` then catches a
        rewrite of the whole tail of the chain, which the chain alone cannot.
        """
        with self._lock, ledger_errors(self.path):
            return head_of(self._conn, session)

    def releases(self, session: str) -> pd.DataFrame:
        """One row per release of ``session``, oldest first.

        Args:
            session: the session's name.

        Returns:
            A frame indexed by release id with the columns ``query``,
            ``mechanism``, ``epsilon``, ``delta``, ``rho``, ``value``,
            ``status``, ``time``, ``dataset`` (its first 12 characters), then
            ``currency``, ``privacy_unit`` and ``parts`` (JSON text, see
            :func:`decode_parts`), missing (``pd.isna``) where not recorded.
        """
        frame = self.page(session)
        frame["dataset"] = frame["dataset"].str.slice(0, 12)
        return frame

    def page(self, session: str, *, after: int = 0, limit: int | None = None) -> pd.DataFrame:
        """The releases of ``session`` with an id above ``after``, oldest first, at most ``limit``.

        The columns of :meth:`releases`, with ``dataset`` as recorded (whole).

        Args:
            session: the session's name.
            after: the last release id already read (0: from the first).
            limit: the most rows returned (None: all).
        """
        sql = f"SELECT {', '.join(_SHOWN)} FROM releases WHERE session=? AND id > ? ORDER BY id"
        params: tuple[object, ...] = (session, int(after))
        if limit is not None:
            sql += " LIMIT ?"
            params = (*params, int(limit))
        with self._lock, ledger_errors(self.path):
            rows = self._conn.execute(sql, params).fetchall()
        frame = pd.DataFrame(rows, columns=list(_SHOWN))
        frame["time"] = pd.to_datetime(frame["time"], unit="s")
        for col in ("epsilon", "delta", "rho"):
            frame[col] = [float(Fraction(v)) for v in frame[col]]
        indexed: pd.DataFrame = frame.set_index("id")[list(_ORDER)]
        return indexed

    def count(self, session: str, *, since: float | None = None) -> int:
        """How many releases ``session`` has recorded (since the time ``since``, if given)."""
        sql = "SELECT COUNT(*) FROM releases WHERE session=?"
        params: tuple[object, ...] = (session,)
        if since is not None:
            sql += " AND time >= ?"
            params = (session, float(since))
        with self._lock, ledger_errors(self.path):
            return int(self._conn.execute(sql, params).fetchone()[0])

    def frames(self, session: str) -> pd.DataFrame:
        """The frames ``session`` loaded, with their ID spaces and limits, oldest first."""
        with self._lock, ledger_errors(self.path):
            return read_frames(self._conn, session)

    def spend_by_session(self, dataset: str) -> dict[str, int]:
        """The sessions with releases on ``dataset``, and how many each (in name order)."""
        with self._lock, ledger_errors(self.path):
            rows = self._conn.execute(
                "SELECT session, COUNT(*) FROM releases WHERE dataset=? GROUP BY session"
                " ORDER BY session",
                (dataset,),
            ).fetchall()
        return {str(s): int(n) for s, n in rows}
