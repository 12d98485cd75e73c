"""Seats: one analyst's session on one dataset, used by one release at a time, never waited for.

A seat holds the analyst's :class:`~dpframe.Session` (named
``"analyst/dataset"`` in the curator's ledger) and the curator's frame over
its own copy of the data.  A release takes the seat's lock *without waiting*:
when another release of the same analyst on the same dataset is running, the
request is answered at once with 429 ``busy`` and a ``Retry-After`` header,
uncharged, so a flood of requests from one analyst never parks the server's
worker threads (before issue 16, 40 such requests exhausted the pool and
``/v1/health`` and every other analyst timed out).  Reads (schema, budget,
ledger) need no seat lock: the ledger serializes itself.

Seats are opened once, on first use; each dataset is read (and its declared
kinds applied) once and shared by every seat, and opening one seat never
holds up requests on seats already open.
"""

from __future__ import annotations

import math
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

import dpframe as dp
from dpframe.accounting.accountants import Charge
from dpframe.accounting.ledger import Ledger, PendingCharge
from dpframe.accounting.ledger_schema import ledger_errors
from dpframe.api.handle import FrameHandle
from dpframe.backends.base import Backend
from dpframe.backends.declared import apply_declared_kinds, parse_kind, with_fills
from dpframe.backends.pandas_backend import PandasBackend
from dpframe.curator.caps import CapGuard, SeatCaps
from dpframe.curator.catalog import Analyst, Catalog, CatalogError, DatasetEntry, Grant
from dpframe.curator.codes import UNKNOWN_DATASET, ServiceError
from dpframe.curator.data import read_declared
from dpframe.curator.kept_joins import KeptJoins
from dpframe.curator.settings import ServerSettings
from dpframe.curator.workers import HEAVY_NICE, WorkerBackend, WorkerPool
from dpframe.errors import LedgerError, SchemaError
from dpframe.plan.nodes import Source

__all__ = ["Seat", "SeatLedger", "Seats", "shown_ledger"]


class SeatLedger(Ledger):
    """The ledger of one seat: it notes the ids it charges and keeps abandoned rows abandoned.

    The curator reads the charged ids after a release (while holding the
    seat, so they are this release's) to answer with the release's ledger id
    and to store the answer for :meth:`dpframe.curator.service.Curator.recover`.

    A release the curator gives up on (:meth:`abandon`) keeps its charge, and
    its row says ``abandoned`` whatever the still-running computation writes
    later; a charge attempted after that is refused (nothing is recorded).
    A row the engine marks ``failed`` (the release failed on the data, after
    the charge) is recorded ``abandoned`` too: an analyst cannot tell the two
    causes apart.

    The ledger's ids count the releases of *every* analyst (one file), so an
    analyst shown them would learn how much, and when, the others query.  An
    analyst sees their own numbers instead: a seat's releases numbered 1, 2,
    3, ... in the order they were charged (:meth:`number_of`,
    :meth:`ledger_id`); rows are never deleted, so a number never changes.
    """

    def __init__(self, path: Any) -> None:
        super().__init__(path)
        self.charged: list[int] = []
        self._guard = threading.Lock()
        self._refusing = False
        self._abandoned: set[int] = set()
        #: The caps of the datasets a release reads, checked in each charge's transaction
        #: (None: no cap can be reached and no join recorded).
        self.caps: SeatCaps | None = None

    def _capped(self, check: Callable[[Charge], None], charges: list[Charge]) -> Any:
        """``check`` (the seat's filter), then the caps of the datasets read, in the transaction."""
        caps = self.caps
        if caps is None:
            return check

        def both(spent: Charge) -> None:
            check(spent)
            caps.check(self._conn, charges)  # under the write lock: every committed row

        return both

    def charge(  # noqa: D102  (Ledger.charge)
        self, session: str, dataset: str, charge: Charge, check: Any, *args: Any, **kwargs: Any
    ) -> int:
        with self._guard:
            if self._refusing:
                raise LedgerError(
                    "This release was abandoned before its charge; nothing was charged."
                )
            capped = self._capped(check, [charge])
            release_id = super().charge(session, dataset, charge, capped, *args, **kwargs)
            self.charged.append(release_id)
        return release_id

    def charge_many(  # noqa: D102  (Ledger.charge_many)
        self, session: str, dataset: str, items: Sequence[PendingCharge], check: Any
    ) -> list[int]:
        with self._guard:
            if self._refusing:
                raise LedgerError(
                    "This release was abandoned before its charge; nothing was charged."
                )
            capped = self._capped(check, [item.charge for item in items])
            ids = super().charge_many(session, dataset, items, capped)
            self.charged.extend(ids)
        return ids

    def complete(  # noqa: D102  (Ledger.complete)
        self,
        release_id: int,
        value: str,
        status: str = "released",
        *,
        answer: bytes | None = None,
        noise: str | None = None,
    ) -> None:
        if status == "failed" or release_id in self._abandoned:
            value, status, answer = "", "abandoned", None
        super().complete(release_id, value, status, answer=answer, noise=noise)

    def abandon(self) -> list[int]:
        """Give up on the running release: its charged rows say ``abandoned``; refuse new charges.

        Returns:
            The ids of the rows it had charged (their charges stand).
        """
        with self._guard:
            self._refusing = True
            ids = list(self.charged)
            self.charged.clear()
            self._abandoned.update(ids)
        for release_id in ids:
            super().complete(release_id, "", "abandoned")
        return ids

    def resume(self) -> None:
        """Accept charges again (the abandoned computation has ended)."""
        with self._guard:
            self._refusing = False

    def number_of(self, session: str, release_id: int) -> int:
        """The analyst's number of ``session``'s ledger row ``release_id`` (1: its first)."""
        with self._lock, ledger_errors(self.path):
            row = self._conn.execute(
                "SELECT COUNT(*) FROM releases WHERE session=? AND id <= ?",
                (session, int(release_id)),
            ).fetchone()
        return int(row[0])

    def ledger_id(self, session: str, number: int) -> int | None:
        """The ledger id of ``session``'s release numbered ``number`` (None: no such release)."""
        if number < 1:
            return None
        with self._lock, ledger_errors(self.path):
            row = self._conn.execute(
                "SELECT id FROM releases WHERE session=? ORDER BY id LIMIT 1 OFFSET ?",
                (session, int(number) - 1),
            ).fetchone()
        return None if row is None else int(row[0])

    def numbered_page(self, session: str, *, after: int = 0, limit: int) -> pd.DataFrame:
        """:meth:`page` of ``session`` by the analyst's numbers: rows numbered above ``after``.

        The frame's index holds the numbers (``after + 1``, ``after + 2``, ...),
        not the ledger's ids.
        """
        start = 0 if after <= 0 else self.ledger_id(session, after)
        if start is None:  # fewer releases than ``after``
            table = self.page(session, after=0, limit=0)
        else:
            table = self.page(session, after=start, limit=limit)
        numbered: pd.DataFrame = table.set_axis(
            pd.RangeIndex(after + 1, after + 1 + len(table), name="id")
        )
        return numbered


@dataclass
class Seat:
    """One analyst's session on one dataset.

    Attributes:
        session: the analyst's session (budget, accountant, ledger).
        frame: the curator's frame over its own copy of the data.
        entry: the catalog's dataset.
        ledger: the session's ledger.
        lock: held by the one release running on this seat.
        recent: the clock times of this seat's latest releases (rate limit).
        stored: bytes of this seat's answers kept in the ledger (None: not yet read).
        abandoned: releases abandoned on this seat (wall-clock limit or a
            failure after the charge) since the curator started.
        suspended: True once ``abandoned`` reached the catalog's limit.
        backends: the seat's backends whose row work runs in worker processes
            (empty when the catalog has ``workers = 0``).
        grant: the analyst's grant on the dataset (budget and accounting).
        sides: the other datasets of the seat's ID space loaded in its
            session for joins, by catalog name (their sources).
        sides_lock: held while a side is loaded.
        kept_joins: the joins the seat's session keeps, within the catalog's
            ``kept_join_rows`` (:mod:`dpframe.curator.kept_joins`).
    """

    session: dp.Session
    frame: FrameHandle
    entry: DatasetEntry
    ledger: SeatLedger
    lock: threading.Lock = field(default_factory=threading.Lock)
    recent: deque[float] = field(default_factory=deque)
    stored: int | None = None
    abandoned: int = 0
    suspended: bool = False
    backends: list[WorkerBackend] = field(default_factory=list)
    grant: Grant | None = None
    sides: dict[str, Source] = field(default_factory=dict)
    sides_lock: threading.Lock = field(default_factory=threading.Lock)
    kept_joins: KeptJoins = field(default_factory=KeptJoins)

    def kill_workers(self) -> int:
        """Kill the worker processes computing for this seat now; how many were."""
        return sum(backend.kill() for backend in self.backends)

    @property
    def text_lengths(self) -> dict[str, int]:
        """The declared maximum length of each column that has one (public: the catalog's)."""
        return {c.name: c.max_length for c in self.frame.schema.columns if c.max_length is not None}

    @property
    def source(self) -> Source:
        """The dataset's source as loaded by the curator (with its privacy-unit setting)."""
        plan = self.frame.plan
        if not isinstance(plan, Source):
            raise ServiceError(500, "internal", "The dataset is not a plain source.")
        return plan

    def check_pace(self, now: float, settings: ServerSettings) -> None:
        """Refuse a release over the seat's rate or ledger-row limit (nothing is charged).

        Call while holding the seat.  Raises :class:`ServiceError`: 429
        ``rate_limited`` (with ``Retry-After``) when ``releases_per_minute``
        releases were charged in the last 60 seconds, 403 ``ledger_full`` when
        the ledger holds ``max_ledger_rows`` releases of this seat.
        """
        while self.recent and self.recent[0] <= now - 60:
            self.recent.popleft()
        if len(self.recent) >= settings.releases_per_minute:
            wait = max(1, math.ceil(self.recent[0] + 60 - now))
            raise ServiceError(
                429,
                "rate_limited",
                f"You made {len(self.recent)} releases on this dataset in the last minute, "
                f"the most this curator allows ({settings.releases_per_minute}); nothing was "
                f"charged. Send this one again in {wait} s.",
                {"Retry-After": str(wait)},
            )
        rows = self.ledger.count(self.session.name)
        if rows >= settings.max_ledger_rows:
            raise ServiceError(
                403,
                "ledger_full",
                f"Your ledger on this dataset holds {rows} releases, the most this curator "
                f"records ({settings.max_ledger_rows}); nothing was charged. Ask the data "
                "owner.",
            )

    def note_charges(self, now: float) -> list[int]:
        """The ledger ids charged since the last call (this release's), counted for the rate."""
        charged = list(self.ledger.charged)
        self.ledger.charged.clear()
        self.recent.extend([now] * len(charged))
        return charged

    def take(self, retry_after: int) -> None:
        """Take the seat for one release, or answer 429 ``busy`` at once (nothing charged).

        The taker gives it back with :meth:`give` (or, for an abandoned
        release, the computation does when it ends).  A suspended seat answers
        403 ``suspended``.
        """
        if self.suspended:
            raise ServiceError(
                403,
                "suspended",
                "Your seat on this dataset is suspended after repeated abandoned releases; "
                "nothing was charged. The data owner has been told.",
            )
        if not self.lock.acquire(blocking=False):
            raise ServiceError(
                429,
                "busy",
                "Another release of yours on this dataset is still running; nothing was "
                f"charged. Send this one again after it (in {retry_after} s).",
                {"Retry-After": str(retry_after)},
            )
        for backend in self.backends:  # a release stopped before this one has ended
            backend.resume()

    def give(self) -> None:
        """Give the seat back (see :meth:`take`)."""
        self.lock.release()

    @contextmanager
    def hold(self, retry_after: int) -> Iterator[None]:
        """:meth:`take` the seat for the block, and :meth:`give` it back after."""
        self.take(retry_after)
        try:
            yield
        finally:
            self.give()


class Seats:
    """The open seats of a curator, opened on first use.

    Args:
        catalog: the data owner's catalog.
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        workers = catalog.settings.workers
        posix = os.name == "posix"  # workers get their socket by fd inheritance
        self.pool = WorkerPool(workers) if workers > 0 and posix else None
        heavy = catalog.settings.heavy_workers
        self.heavy_pool = (
            WorkerPool(heavy, nice=HEAVY_NICE) if self.pool is not None and heavy > 0 else None
        )
        self._open: dict[tuple[str, str], Seat] = {}
        self._data: dict[str, Any] = {}  # pandas, or dask (backend = "dask")
        self._lock = threading.Lock()  # guards the two locks' tables below, briefly
        self._opening: dict[tuple[str, str], threading.Lock] = {}
        self._reading: dict[str, threading.Lock] = {}

    def __len__(self) -> int:
        return len(self._open)

    def values(self) -> list[Seat]:
        """The open seats."""
        return list(self._open.values())

    def __getitem__(self, key: tuple[str, str]) -> Seat:
        return self._open[key]

    def __bool__(self) -> bool:
        return bool(self._open)

    def get(self, analyst: Analyst, dataset: str) -> Seat:
        """The analyst's seat on ``dataset`` (opened now if needed), or 404 if not granted."""
        if dataset not in analyst.budgets:
            raise UNKNOWN_DATASET
        key = (analyst.name, dataset)
        seat = self._open.get(key)
        if seat is not None:
            return seat
        with self._lock:
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:  # only requests for this very seat wait for it to open
            seat = self._open.get(key)
            if seat is None:
                seat = self._make(analyst, dataset)
                self._open[key] = seat
        return seat

    def _make(self, analyst: Analyst, dataset: str) -> Seat:
        entry = self.catalog.datasets[dataset]
        grant = analyst.budgets[dataset]
        ledger = SeatLedger(self.catalog.ledger)
        session = self._session(grant, f"{analyst.name}/{dataset}", ledger)
        ledger.caps = self._caps(analyst, entry, session.accounting)
        source, schema = self._load(session, entry, self._frame_data(entry))
        seat = Seat(session, FrameHandle(session, source, schema), entry, ledger)
        seat.grant = grant
        pool = self.pool
        if pool is not None:  # the row work in killable worker processes

            def in_workers(key: tuple[str, str], backend: Backend) -> Backend:
                if not isinstance(backend, PandasBackend):
                    return backend  # e.g. Dask: its own workers compute
                name = entry.name if not key[1] else f"{session.name}|{key[1]}"
                remote = WorkerBackend(backend, name, pool, self.heavy_pool)
                seat.backends.append(remote)
                return remote

            session.replace_backends(in_workers)
        return seat

    def _caps(self, analyst: Analyst, entry: DatasetEntry, kind: str) -> SeatCaps | None:
        """The caps a seat's releases can reach: its dataset's and its joinable datasets'.

        None for a dataset that has no cap and is never joined (nothing to check or record).
        """
        reachable = [entry] + [
            other
            for other in self.catalog.datasets.values()
            if other.name != entry.name
            and entry.id_space is not None
            and other.id_space == entry.id_space
            and other.name in analyst.budgets  # a join needs a grant on every dataset
        ]
        guards = {
            other.name: CapGuard(other.name, kind, other.cap, other.release_cap)
            for other in reachable
            if other.cap is not None or other.release_cap is not None
        }
        if not guards and len(reachable) == 1:
            return None
        return SeatCaps(entry.name, guards)

    def _session(self, grant: Grant, name: str, ledger: Any) -> dp.Session:
        """A session with ``grant``'s budget and accounting and the curator's limits."""
        session = dp.Session(
            grant.budget.epsilon,
            grant.budget.delta,
            name=name,
            ledger=ledger,
            accounting=grant.accounting,
            delta_reserve=grant.delta_reserve,
            limits=self.catalog.settings.limits,  # stricter than embedded
        )
        session.set_release_floor(self.catalog.settings.min_epsilon)  # ε per release, at least
        session.keep_answers(False)  # the curator keeps its answers (same form, its own limit)
        return session

    @staticmethod
    def _load(session: dp.Session, entry: DatasetEntry, data: Any) -> tuple[Source, Any]:
        unit: str | dp.PrivacyUnit | None = entry.privacy_unit
        rows, groups = entry.max_rows_per_unit, entry.max_groups_per_unit
        if entry.id_space is not None and entry.privacy_unit is not None and rows is not None:
            unit = dp.PrivacyUnit(entry.privacy_unit, rows, groups, id_space=entry.id_space)
            rows = groups = None
        return session.load(
            data,
            dict(entry.bounds),
            {k: list(v) for k, v in entry.categories.items()},
            dtypes=dict(entry.kinds),  # declared kinds: never inferred from the rows
            privacy_unit=unit,
            max_rows_per_unit=rows,
            max_groups_per_unit=groups,
            identity=entry.identity,  # named, not fingerprinted
        )

    def join_side(self, seat: Seat, analyst: Analyst, dataset: str) -> Source:
        """The source of ``dataset`` in ``seat``'s session, for a join (loaded now if needed).

        The seat's own dataset is its source; another one is loaded into the
        seat's session once (its declared kinds, privacy unit and ID space,
        from the catalog), so the join is computed and charged in that
        session: one budget, the seat's.  Called before the charge.

        Privacy: the side's row limit per ID and ID space are the catalog's;
        the join's limit is recomputed from them (never the analyst's claim),
        and the engine refuses frames of two ID spaces.

        Raises:
            ServiceError: 404 ``unknown_dataset`` for a dataset that is not in
                the catalog or not granted to ``analyst`` (the same answer).
            SchemaError: a dataset the data owner declared no ID space for.
        """
        if dataset not in analyst.budgets or dataset not in self.catalog.datasets:
            raise UNKNOWN_DATASET
        entry = self.catalog.datasets[dataset]
        if entry.id_space is None:
            raise SchemaError(
                f"The data owner declared no ID space for the dataset {dataset!r}: it is "
                "never joined. Ask on it alone, or ask the owner to declare its id_space."
            )
        if dataset == seat.entry.name:
            return seat.source
        with seat.sides_lock:
            source = seat.sides.get(dataset)
            if source is None:
                source, _ = self._load(seat.session, entry, self._frame_data(entry))
                seat.sides[dataset] = source
        return source

    def entry_of(self, source: Source) -> DatasetEntry:
        """The catalog's dataset a loaded source reads (by its ledger identity)."""
        for entry in self.catalog.datasets.values():
            if entry.identity == source.dataset:
                return entry
        raise ServiceError(500, "internal", "A join side is not a dataset of the catalog.")

    def empty_twin(self, seat: Seat) -> tuple[dp.Session, Source] | None:
        """A throwaway session like ``seat``'s over the same schema and *no* rows (or None).

        It has the seat's grant (so a request gets the same allocation and
        noise), an in-memory ledger, and a backend holding an empty table of
        the dataset's columns: what it releases never depends on the data.
        None for data that is not a pandas DataFrame (a Dask dataset).
        """
        data = self._frame_data(seat.entry)
        if seat.grant is None or not isinstance(data, pd.DataFrame):
            return None
        session = self._session(seat.grant, seat.session.name, ":memory:")
        source, _ = self._load(session, seat.entry, data.iloc[:1])  # its schema (row unused)
        session.replace_backends(lambda key, backend: PandasBackend(data.iloc[:0]))
        return session, source

    def max_rows(self, entry: DatasetEntry) -> int:
        """The dataset's public row ceiling: its own ``max_rows``, else the ``[server]`` default."""
        return entry.max_rows or self.catalog.settings.max_rows

    def check_rows(self, entry: DatasetEntry) -> None:
        """Read the dataset now and refuse it when it has more rows than its declared ceiling.

        Called when the curator starts (the owner sees the error; no analyst
        does), so a worst case estimated from the ceiling bounds the real one.

        Raises:
            CatalogError: naming the dataset and its ceiling (not the row count).
        """
        ceiling = self.max_rows(entry)
        data = self._frame_data(entry)
        if len(data) > ceiling:
            raise CatalogError(
                f"[datasets.{entry.name}] has more rows than its declared max_rows "
                f"({ceiling:,}); raise max_rows (a public ceiling: worst-case times are "
                "estimated from it)."
            )
        self._check_text(entry, data, ceiling)

    def _check_text(self, entry: DatasetEntry, data: Any, ceiling: int) -> None:
        """Refuse a text column without a declared length holding more than its public ceiling.

        Text nodes are priced by the characters they read: a declared maximum
        length (``text(40)``) bounds them, else ``text_chars`` per row of the
        row ceiling, checked here (pandas data; a Dask dataset's text is not
        read here, and declares its lengths).

        Raises:
            CatalogError: naming the dataset, the column and the fixes (no count).
        """
        if not isinstance(data, pd.DataFrame):
            return
        per_row = self.catalog.settings.text_chars
        declared = {c: parse_kind(c, k).max_length for c, k in entry.kinds.items()}
        for name in data.columns:
            column = data[name]
            if declared.get(name) is not None or not _holds_text(column):
                continue
            lengths = column.map(lambda v: len(v) if isinstance(v, str) else 0, na_action="ignore")
            if float(lengths.sum()) > per_row * ceiling:
                raise CatalogError(
                    f"[datasets.{entry.name}] column {str(name)!r} holds more text than "
                    f"text_chars ({per_row:,} characters per row of max_rows, on average) "
                    "allows; declare its maximum length (dtypes = { column = 'text(40)' }) "
                    "or raise [server].text_chars (text nodes are priced by it)."
                )

    def _frame_data(self, entry: DatasetEntry) -> Any:
        """The dataset as declared, read once and shared by every seat."""
        data = self._data.get(entry.name)
        if data is not None:
            return data
        with self._lock:
            reading = self._reading.setdefault(entry.name, threading.Lock())
        with reading:
            data = self._data.get(entry.name)
            if data is None:
                frame = read_declared(entry)
                kinds = {c: parse_kind(c, k) for c, k in entry.kinds.items()}
                data = apply_declared_kinds(frame, with_fills(kinds, entry.bounds))
                self._data[entry.name] = data
        return data


def _holds_text(column: pd.Series) -> bool:
    """True for a column whose values may be text (object, string or categorical)."""
    dtype = column.dtype
    return bool(
        pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        or isinstance(dtype, pd.CategoricalDtype)
    )


def shown_ledger(table: pd.DataFrame, entry: DatasetEntry) -> pd.DataFrame:
    """Ledger rows as an analyst sees them: the data named by catalog name and version.

    The ledger's ``dataset`` field holds what the curator recorded: the
    catalog identity (``name`` or ``name@version``), or for rows written by an
    older curator the data's fingerprint, a hash of every row, which must not
    reach the analyst.  Those rows show the name and no version.
    """
    shown: pd.DataFrame = table.copy()
    recorded = [str(d) for d in shown["dataset"]]
    prefix = entry.name + "@"
    shown["dataset"] = entry.name
    shown["version"] = [d[len(prefix) :] if d.startswith(prefix) else None for d in recorded]
    return shown
