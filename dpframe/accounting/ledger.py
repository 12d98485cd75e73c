"""The SQLite ledger: every release, persisted, so a kernel restart keeps the spend.

A session's budget is keyed by its name and covers every dataset it touches
(each row also records the dataset's fingerprint).  Keying by name rather
than by data means that re-loading the same people in another order, as a
column subset or with another dtype can never start a fresh budget.  A charge runs in one
``BEGIN IMMEDIATE`` transaction (read the spend, run the accountant's filter,
insert the row), so two processes sharing a ledger file can never overspend:
SQLite serializes the writers, and the spend is always re-read inside the
transaction rather than kept in memory.

Durability, at one synchronous commit per release: the file is in WAL mode
(see :mod:`dpframe.accounting.ledger_schema`) and the charge commits with
``synchronous=FULL``, so it is on stable storage before :meth:`Ledger.charge`
returns and before any data is read.  The completion (status and shown
value) commits with ``synchronous=NORMAL``: it survives a crash of the
process, and a power loss can only lose it, leaving the row ``charged``,
which still counts toward the spend.  Where WAL does not work the ledger
keeps the rollback journal and both commits are synchronous, as before.

The file identifies itself and carries a schema version; older versions are
migrated in place, newer ones refused (:mod:`dpframe.accounting.ledger_schema`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

from dpframe.accounting.accountants import Charge
from dpframe.accounting.ledger_answers import KeptAnswers
from dpframe.accounting.ledger_chain import (
    link_budget,
    link_charge,
    link_outcome,
    link_row,
    link_state,
)
from dpframe.accounting.ledger_frames import FrameRecord, record_frame
from dpframe.accounting.ledger_location import default_ledger_path
from dpframe.accounting.ledger_modes import make_folder, tighten_files
from dpframe.accounting.ledger_reads import LedgerReads
from dpframe.accounting.ledger_rows import (
    MAX_LABEL,
    PendingCharge,
    Row,
    charge_fields,
    clip_label,
    decode_parts,
    row_statement,
)
from dpframe.accounting.ledger_schema import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    create_file,
    ledger_errors,
    open_file,
    open_memory,
)
from dpframe.accounting.ledger_traces import DataTraces
from dpframe.errors import LedgerError
from dpframe.plan.privacy import Budget

T = TypeVar("T")

__all__ = [
    "APPLICATION_ID",
    "MAX_LABEL",
    "SCHEMA_VERSION",
    "Ledger",
    "PendingCharge",
    "clip_label",
    "decode_parts",
    "default_ledger_path",
]


class Ledger(KeptAnswers, LedgerReads):
    """A persistent record of releases and the budgets they were charged to.

    Args:
        path: the SQLite file (created with its folder if missing; a new file
            has mode 0600, a folder created for it 0700, and an existing file
            open to others is set to 0600 with a warning), ``":memory:"`` for
            a ledger that lives only as long as this object, or None for
            :func:`default_ledger_path`.

    Raises:
        LedgerError: the file cannot be created, or exists but is empty,
            damaged, another application's database, or of a newer schema
            version (it is then left unchanged; see ``docs/errors.md``).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        if path is None:
            path = default_ledger_path()
        self.path = str(path)
        if self.path == ":memory:":
            self._conn = open_memory()
            self._journal = "memory"
        else:
            file = Path(self.path)
            try:
                make_folder(file.parent)  # 0700 when dpframe creates it
            except OSError as exc:
                raise LedgerError(
                    f"Cannot create the ledger folder for {self.path}: {exc}"
                ) from None
            if not file.exists():
                create_file(file)
            self._conn, self._journal = open_file(file)  # a file that is no ledger: untouched
            for message in tighten_files(file):  # an older dpframe made them 0644
                warnings.warn(message, RuntimeWarning, stacklevel=2)
        self._lock = threading.Lock()
        self._totals: dict[str, tuple[int, Charge]] = {}
        #: The session of each row charged through this object and not yet completed
        #: (a row's session never changes), so that :meth:`complete` links it unread.
        self._charged: dict[int, str] = {}
        # The accounting of each session registered through this object (fixed at first use).
        self._accounting: dict[str, str] = {}
        #: What the ledger keeps about data: its key and its sketch file (opened at first use).
        self.traces = DataTraces(self.path, wal=self._journal == "wal")

    @property
    def journal_mode(self) -> str:
        """``"wal"`` (one synchronous commit per release), ``"memory"``, or a rollback mode."""
        return self._journal

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; SQLite failures become :class:`LedgerError`."""
        with self._lock, ledger_errors(self.path):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def register(
        self,
        session: str,
        accounting: str,
        total: Budget,
        delta_reserve: Fraction | None = None,
    ) -> None:
        """Record the budget of ``session``, or check it matches the recorded one.

        Args:
            session: the session's name.
            accounting: its accounting (``"pure"``, ``"approx"``, ``"zcdp"``, ``"gdp"``).
            total: its total budget.
            delta_reserve: a Gaussian DP session's δ reserve (None for other accountings).

        Raises:
            LedgerError: the ledger already holds this session with a different
                budget, accounting or δ reserve (a budget is fixed at first use).
        """
        dataset = "*"
        reserve = None if delta_reserve is None else str(delta_reserve)
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT accounting, epsilon, delta, delta_reserve FROM budgets "
                "WHERE session=? AND dataset=?",
                (session, dataset),
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO budgets (session, dataset, accounting, epsilon, delta, "
                    "created, delta_reserve) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        session,
                        dataset,
                        accounting,
                        str(total.epsilon),
                        str(total.delta),
                        time.time(),
                        reserve,
                    ),
                )
                link_budget(conn, session)  # the session's chain starts with its budget
                self._accounting[session] = accounting
                return
            recorded = Budget(Fraction(row[1]), Fraction(row[2]))
            if row[0] != accounting or recorded != total:
                raise LedgerError(
                    f"The ledger {self.path} already holds session {session!r} "
                    f"with {row[0]} accounting and total {recorded}; this session "
                    f"asks for {accounting} accounting and total {total}. A budget is fixed "
                    "at first use: resume with the same settings, or choose a new name=."
                )
            was = _reserve_of(row[0], row[3])
            asked = _reserve_of(accounting, reserve)
            if was != asked:
                raise LedgerError(
                    f"The ledger {self.path} already holds session {session!r} with a "
                    f"delta reserve of {float(was or 0):.3g}; this session asks for "
                    f"{float(asked or 0):.3g}. A budget is fixed at first use: "
                    "resume without delta_reserve= (or with the recorded one), or choose "
                    "a new name=."
                )
            self._accounting[session] = accounting

    def recorded_accounting(self, session: str) -> str | None:
        """The accounting ``session`` was registered with in this ledger, or None if new.

        A resumed session that names no accounting keeps this one (its rows are
        in that currency and are never reinterpreted).
        """
        with self._lock, ledger_errors(self.path):
            row = self._conn.execute(
                "SELECT accounting FROM budgets WHERE session=? AND dataset='*'", (session,)
            ).fetchone()
        return None if row is None else str(row[0])

    def recorded_delta_reserve(self, session: str) -> Fraction | None:
        """The δ reserve a Gaussian DP ``session`` was registered with (0 if it kept none).

        None for a new session or one of another accounting; a resumed session
        that names no reserve keeps this one.
        """
        with self._lock, ledger_errors(self.path):
            row = self._conn.execute(
                "SELECT accounting, delta_reserve FROM budgets WHERE session=? AND dataset='*'",
                (session,),
            ).fetchone()
        return None if row is None else _reserve_of(str(row[0]), row[1])

    def spent(self, session: str) -> Charge:
        """The exact sum of all charges of ``session``."""
        with self._lock, ledger_errors(self.path):
            return self._sum(self._conn, session)

    def _sum(self, conn: sqlite3.Connection, session: str) -> Charge:
        """The exact total, reading only rows newer than the last total read.

        Release rows are only ever appended (and their costs never change), so
        a cached (last id, total) plus the newer rows is the exact sum; the
        newer rows are read inside the caller's transaction, so rows written by
        other processes are always included.
        """
        last_id, total = self._totals.get(session, (0, Charge()))
        # "+session": search the rowid range (new rows only), not the session index,
        # which would visit every row of the session (82 µs at 1,000 rows, 330 at 4,000).
        rows = conn.execute(
            "SELECT id, epsilon, delta, rho FROM releases WHERE +session=? AND id > ? ORDER BY id",
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
        *,
        parts: Sequence[tuple[str, Charge]] | None = None,
        privacy_unit: str | None = None,
        currency: str | None = None,
        request: str | None = None,
    ) -> int:
        """Atomically test and record a charge, durably; return the release id.

        ``check(spent)`` is the accountant's filter: it raises (and so rolls
        back, recording nothing) when the charge does not fit.  The row is
        committed with ``synchronous=FULL`` before this returns.

        Args:
            session: the session's name.
            dataset: the dataset's fingerprint.
            charge: the cost, in the accountant's native units.
            check: the filter, called with the session's spend inside the transaction.
            query: the ledger label.
            mechanism: the mechanism's name.
            parts: see :class:`PendingCharge`.
            privacy_unit: see :class:`PendingCharge`.
            currency: see :class:`PendingCharge`.
            request: see :class:`PendingCharge`.

        Returns:
            The new row's id, for :meth:`complete`.

        Raises:
            InvalidArgumentError: ``parts`` do not add up to ``charge``, or an
                unknown ``currency``.
            LedgerError: SQLite failed (nothing is recorded).
        """
        row = row_statement(
            (session, dataset, time.time()),
            charge,
            query,
            mechanism,
            parts,
            privacy_unit,
            currency,
            self._accounting.get(session),
            request,
        )
        return self._admit(session, [row], charge, check)[0]

    def charge_many(
        self,
        session: str,
        dataset: str,
        items: Sequence[PendingCharge],
        check: Callable[[Charge], None],
    ) -> list[int]:
        """Admit several charges at once, all or none, in one durable transaction.

        ``check(spent)`` is called once, with the session's spend before the
        batch; it must test the batch's total (the sum of the items' charges,
        which the caller knows) and raise to refuse them all.  Each item gets
        its own row, ``charged`` until :meth:`complete`; a later failure of one
        release leaves its charge standing.

        Args:
            session: the session's name.
            dataset: the dataset's fingerprint.
            items: the releases to admit, in order.
            check: the filter for the total.

        Returns:
            The release ids, in the order of ``items`` (empty for no items).

        Raises:
            InvalidArgumentError: an item's parts or currency are invalid.
            LedgerError: SQLite failed (nothing is recorded).
        """
        if not items:
            return []
        head, registered = (session, dataset, time.time()), self._accounting.get(session)
        rows = [
            row_statement(
                head,
                i.charge,
                i.query,
                i.mechanism,
                i.parts,
                i.privacy_unit,
                i.currency,
                registered,
                i.request,
            )
            for i in items
        ]
        total = Charge()
        for item in items:
            total = total + item.charge
        return self._admit(session, rows, total, check)

    def _admit(
        self, session: str, rows: list[Row], total: Charge, check: Callable[[Charge], None]
    ) -> list[int]:
        """Check the filter and insert ``rows`` in one transaction; move the cached total after."""
        ids: list[int] = []
        with self._transaction() as conn:
            spent = self._sum(conn, session)
            check(spent)
            for row in rows:
                release_id = conn.execute(*row).lastrowid
                assert release_id is not None
                fields = charge_fields(row)  # as bound: no need to read the row back
                if fields is None:  # its currency was read from the budgets row in SQL
                    link_row(conn, release_id)  # in the charge's transaction
                else:
                    link_charge(conn, release_id, fields)
                ids.append(release_id)
        # Only once committed (a failed COMMIT rolls the ids back for reuse): every row
        # up to the last one was read in the transaction, under the write lock, or is ours.
        # Another thread may have cached a later pair meanwhile; an earlier consistent
        # pair is still exact (the rows after it are read again).
        self._totals[session] = (ids[-1], spent + total)
        with self._lock:
            self._charged.update(dict.fromkeys(ids, session))
        return ids

    def complete(
        self,
        release_id: int,
        value: str,
        status: str = "released",
        *,
        answer: bytes | None = None,
        noise: str | None = None,
    ) -> None:
        """Store the (public) released value of a charged row, and its whole answer if given.

        One transaction: the row's outcome, its answer and its ``state`` link
        in the hash chain (:mod:`~dpframe.accounting.ledger_chain`).  In WAL
        mode it commits with ``synchronous=NORMAL`` (no sync: it survives a
        crash of the process, and a power loss can only leave the row
        ``charged``, which still counts toward the spend, with no answer kept);
        with a rollback journal it is synchronous, since NORMAL there risks
        more than the one row.

        Args:
            release_id: the id :meth:`charge` returned.
            value: the public text shown for the release.
            status: ``"released"`` or ``"failed"``.
            answer: the encoded answer (public: the release as returned), kept
                for :meth:`recorded_answer` and :meth:`answer`; None keeps none.
            noise: the noise calibrations the release used (JSON text, public:
                :func:`dpframe.mechanisms.calibration.recorded.encode`); None: not recorded.
        """
        update = "UPDATE releases SET status=?, value=?, noise=? WHERE id=?"
        insert = "INSERT OR REPLACE INTO answers (release_id, body, time) VALUES (?, ?, ?)"
        with self._lock, ledger_errors(self.path):
            wal = self._journal == "wal"
            if wal:
                self._conn.execute("PRAGMA synchronous=NORMAL")
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    updated = self._conn.execute(update, (status, value, noise, release_id))
                    session = self._charged.pop(release_id, None)
                    if answer is not None:
                        self._conn.execute(insert, (release_id, answer, time.time()))
                    if (
                        answer is not None
                        and session is not None
                        and updated.rowcount == 1
                        and type(status) is str
                        and type(value) is str
                        and (noise is None or type(noise) is str)
                    ):
                        # the row's outcome and answer are the values just written
                        outcome = (status, value, noise, answer)
                        link_outcome(self._conn, session, release_id, outcome)
                    else:  # a row charged elsewhere, or an answer kept before: as stored
                        link_state(self._conn, release_id)
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            finally:
                if wal:
                    self._conn.execute("PRAGMA synchronous=FULL")

    def fix_privacy_unit(self, session: str, setting: str, frame: FrameRecord | None = None) -> str:
        """Record ``session``'s privacy-unit setting if it has none; return the recorded one.

        The first frame of a session fixes the setting, in one transaction, so
        of two processes loading frames at once exactly one setting wins.

        Args:
            session: the session's name (registered).
            setting: the setting's public text (see
                :func:`dpframe.engine.guard_rails.unit_setting`).
            frame: the frame being loaded, recorded in the same transaction
                when the setting admits it (:mod:`dpframe.accounting.ledger_frames`).
        """
        with self._transaction() as conn:
            conn.execute(
                "UPDATE budgets SET privacy_unit=? WHERE session=? AND dataset='*'"
                " AND privacy_unit IS NULL",
                (setting, session),
            )
            row = conn.execute(
                "SELECT privacy_unit FROM budgets WHERE session=? AND dataset='*'", (session,)
            ).fetchone()
            recorded = setting if row is None or row[0] is None else str(row[0])
            if frame is not None and (recorded == "rows") == (setting == "rows"):
                record_frame(conn, session, frame)
        return recorded

    def run(self, work: Callable[[sqlite3.Connection], T], *, write: bool = False) -> T:
        """Run ``work`` on the ledger's connection: read under the lock, or in a write transaction.

        A write runs with ``secure_delete`` on, so that deleted rows (the unkeyed
        digests of :mod:`~dpframe.accounting.ledger_legacy`) are overwritten.
        """
        if not write:
            with self._lock, ledger_errors(self.path):
                return work(self._conn)
        with self._transaction() as conn:
            conn.execute("PRAGMA secure_delete=ON")
            try:
                return work(conn)
            finally:
                conn.execute("PRAGMA secure_delete=OFF")

    def vacuum(self) -> None:
        """Rewrite the file (``VACUUM``) and empty its write-ahead log: no deleted page remains."""
        with self._lock, ledger_errors(self.path):
            self._conn.execute("VACUUM")
            if self._journal == "wal":
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        """Close the database connection (and the sketch file's)."""
        with self._lock:
            self._conn.close()
        self.traces.close()


def _reserve_of(accounting: str, recorded: str | None) -> Fraction | None:
    """A budgets row's δ reserve: None unless Gaussian DP; a gdp row without one kept none."""
    if accounting != "gdp":
        return None
    return Fraction(0) if recorded is None else Fraction(recorded)
