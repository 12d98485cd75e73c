"""The answers a ledger keeps: each release's public answer, found by its id or its request.

A curator stores the answer it sent for each release (``session.recover(id)``
fetches it again, free); every session stores its answers with their
request's key, so that the same request asked again is answered from the
ledger (:mod:`dpframe.engine.reruns`).  Both are the ``answers`` table
(schema version 3) and the ``request`` column of ``releases`` (version 8).
:class:`KeptAnswers` is the part of :class:`~dpframe.accounting.ledger.Ledger`
that reads and writes them.
"""

from __future__ import annotations

import sqlite3
import threading
import time

from dpframe.accounting.ledger_chain import link_state
from dpframe.accounting.ledger_schema import ledger_errors

__all__ = ["KeptAnswers"]


class KeptAnswers:
    """Reads and writes of the ``answers`` table (a base of the ledger, on its connection)."""

    path: str
    _conn: sqlite3.Connection
    _lock: threading.Lock
    _journal: str

    def store_answer(self, release_id: int, body: bytes) -> None:
        """Keep the public answer sent for a release (a curator's), for :meth:`answer`.

        One transaction with the row's new ``state`` link in the hash chain
        (``NORMAL`` sync in WAL mode, like :meth:`complete`: a crash of the
        process never loses it).

        Args:
            release_id: the release's id (from :meth:`charge`).
            body: the encoded answer (public: the release as sent).
        """
        insert = "INSERT OR REPLACE INTO answers (release_id, body, time) VALUES (?, ?, ?)"
        with self._lock, ledger_errors(self.path):
            wal = self._journal == "wal"
            if wal:
                self._conn.execute("PRAGMA synchronous=NORMAL")
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    self._conn.execute(insert, (release_id, body, time.time()))
                    link_state(self._conn, release_id)
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            finally:
                if wal:
                    self._conn.execute("PRAGMA synchronous=FULL")

    def answer(self, session: str, release_id: int) -> tuple[str, bytes | None] | None:
        """The status and stored answer of release ``release_id`` of ``session``.

        Returns:
            None when ``session`` has no release of this id; else its status
            (``charged``, ``released``, ``failed``, ...) and the stored answer
            (None when none was stored).
        """
        with self._lock, ledger_errors(self.path):
            row = self._conn.execute(
                "SELECT r.status, a.body FROM releases AS r LEFT JOIN answers AS a"
                " ON a.release_id = r.id WHERE r.id=? AND r.session=?",
                (int(release_id), session),
            ).fetchone()
        return None if row is None else (str(row[0]), row[1])

    def stored_bytes(self, session: str) -> int:
        """The bytes of the answers stored for ``session``'s releases (:meth:`store_answer`)."""
        with self._lock, ledger_errors(self.path):
            row = self._conn.execute(
                "SELECT COALESCE(SUM(LENGTH(a.body)), 0) FROM answers AS a"
                " JOIN releases AS r ON r.id = a.release_id WHERE r.session=?",
                (session,),
            ).fetchone()
        return int(row[0])

    def recorded_answer(self, session: str, request: str) -> tuple[int, float, bytes] | None:
        """The newest released answer of ``session`` to the request keyed ``request``.

        Only rows whose release completed (``released``) and whose answer was
        kept count; a failed or abandoned release is never answered again.
        Reads the ledger only (one indexed lookup).

        Returns:
            The release's id, its time (seconds since the epoch) and its stored
            answer; None when the ledger holds none.
        """
        with self._lock, ledger_errors(self.path):
            row = self._conn.execute(
                "SELECT r.id, r.time, a.body FROM releases AS r JOIN answers AS a"
                " ON a.release_id = r.id WHERE r.session=? AND r.request=?"
                " AND r.status='released' ORDER BY r.id DESC LIMIT 1",
                (session, request),
            ).fetchone()
        return None if row is None else (int(row[0]), float(row[1]), bytes(row[2]))
