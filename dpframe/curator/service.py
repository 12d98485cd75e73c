"""The curator's core, independent of HTTP: analysts, sessions, releases and error codes.

Each (analyst, dataset) pair has its own :class:`~dpframe.Session`, named
``"analyst/dataset"`` in the curator's SQLite ledger, so spends survive
restarts and one analyst can neither read nor spend another's budget.  Calls
on one session are serialized by a lock of that session; the ledger's
``BEGIN IMMEDIATE`` transactions also guard against other processes.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

import dpframe as dp
from dpframe.api.frame import PrivateFrame
from dpframe.curator.catalog import Analyst, Catalog, DatasetEntry
from dpframe.curator.data import check_columns, read_declared
from dpframe.engine.session import ReleaseEvent
from dpframe.errors import (
    WIRE_CODES,
    DPError,
)
from dpframe.plan.codec import NodeFormatError, decode_node
from dpframe.plan.nodes import Source
from dpframe.plan.privacy import Budget
from dpframe.remote.wire import ProtocolError, check_depth, encode_response

__all__ = ["LEDGER_PAGE", "Curator", "ServiceError", "error_payload", "shown_ledger"]

#: The most ledger rows one ``/ledger`` answer holds (the client follows ``next``).
LEDGER_PAGE = 1_000

_log = logging.getLogger("dpframe.curator")


class ServiceError(Exception):
    """An error with a fixed code and HTTP status, safe to send to the analyst."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


UNKNOWN_DATASET = ServiceError(404, "unknown_dataset", "No dataset of this name is granted to you.")


def error_payload(code: str, message: str) -> dict[str, Any]:
    """The JSON body of every error response."""
    return {"error": {"code": code, "message": message}}


def classify(exc: Exception) -> ServiceError:
    """Map an exception raised while serving a call to a fixed code.

    Errors that dpframe raises on purpose carry messages written never to
    hold private values; anything else gets a fixed message (and is logged
    on the curator's side for the data owner).
    """
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, ProtocolError):
        return ServiceError(413 if exc.code == "too_large" else 400, exc.code, str(exc))
    if isinstance(exc, NodeFormatError):
        return ServiceError(400, "invalid_query", str(exc))
    for cls, status, code in WIRE_CODES:
        if isinstance(exc, cls):
            return ServiceError(status, code, str(exc))
    if isinstance(exc, DPError):
        return ServiceError(400, "dp_error", str(exc))
    return ServiceError(
        400,
        "invalid_query",
        "The query could not be evaluated; check its arguments against the API. "
        "Nothing was charged.",
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


@dataclass
class _Seat:
    """One analyst's session on one dataset."""

    session: dp.Session
    frame: dp.PrivateFrame
    lock: threading.Lock
    entry: DatasetEntry

    @property
    def source(self) -> Source:
        """The dataset's source as loaded by the curator (with its privacy-unit setting)."""
        plan = self.frame.plan
        if not isinstance(plan, Source):
            raise ServiceError(500, "internal", "The dataset is not a plain source.")
        return plan


class Curator:
    """Serve releases from the catalog's datasets to its analysts.

    Args:
        catalog: the data owner's catalog.
    """

    def __init__(
        self,
        catalog: Catalog,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.catalog = catalog
        self._clock = clock
        self._sleep = sleep
        self._data: dict[str, pd.DataFrame] = {}
        self._seats: dict[tuple[str, str], _Seat] = {}
        self._lock = threading.Lock()
        self.unexpected_errors = 0
        for entry in catalog.datasets.values():
            check_columns(entry)  # every column's kind declared (reads the header only)

    # -- identity --------------------------------------------------------------

    def authenticate(self, authorization: str | None) -> Analyst:
        """The analyst named by an ``Authorization: Bearer <token>`` header, or 401."""
        scheme, _, token = (authorization or "").partition(" ")
        analyst = None
        if scheme.lower() == "bearer" and token:
            analyst = self.catalog.analyst_for(token.strip())
        if analyst is None:
            raise ServiceError(401, "unauthorized", "Missing or unknown token.")
        return analyst

    def datasets(self, analyst: Analyst) -> list[str]:
        """The datasets granted to ``analyst``."""
        return sorted(analyst.budgets)

    # -- sessions --------------------------------------------------------------

    def _frame_data(self, entry: DatasetEntry) -> pd.DataFrame:
        data = self._data.get(entry.name)
        if data is None:
            data = read_declared(entry)
            self._data[entry.name] = data
        return data

    def _seat(self, analyst: Analyst, dataset: str) -> _Seat:
        if dataset not in analyst.budgets:
            raise UNKNOWN_DATASET
        key = (analyst.name, dataset)
        with self._lock:
            seat = self._seats.get(key)
            if seat is None:
                entry = self.catalog.datasets[dataset]
                budget, accounting = analyst.budgets[dataset]
                session = dp.Session(
                    budget.epsilon,
                    budget.delta,
                    name=f"{analyst.name}/{dataset}",
                    ledger=self.catalog.ledger,
                    accounting=accounting,
                    limits=self.catalog.settings.limits,  # stricter than embedded
                )
                source, schema = session.load(
                    self._frame_data(entry),
                    dict(entry.bounds),
                    {k: list(v) for k, v in entry.categories.items()},
                    dtypes=dict(entry.kinds),  # declared kinds: never inferred from the rows
                    privacy_unit=entry.privacy_unit,
                    max_rows_per_unit=entry.max_rows_per_unit,
                    max_groups_per_unit=entry.max_groups_per_unit,
                    identity=entry.identity,  # named, not fingerprinted
                )
                frame = PrivateFrame._create(session, source, schema)
                seat = _Seat(session, frame, threading.Lock(), entry)
                self._seats[key] = seat
        return seat

    @staticmethod
    def _budget_state(session: dp.Session) -> dict[str, Any]:
        return {
            "name": session.name,
            "accounting": session.accounting,
            "total": encode_response(session.total),
            "spent": encode_response(session.spent),
            "remaining": encode_response(session.remaining),
        }

    # -- requests --------------------------------------------------------------

    def describe(self, analyst: Analyst, dataset: str) -> dict[str, Any]:
        """The public schema of a dataset and the analyst's budget on it."""
        seat = self._seat(analyst, dataset)
        columns = [
            {
                "name": c.name,
                "kind": c.kind,
                "dtype": c.dtype,
                "bounds": None if c.bounds is None else [c.bounds[0], c.bounds[1]],
                "categories": encode_response(None if c.categories is None else list(c.categories)),
            }
            for c in seat.frame._schema.columns
        ]
        with seat.lock:
            return {
                "dataset": dataset,
                "version": seat.entry.version or None,
                "limits": dict(vars(self.catalog.settings.limits)),
                "columns": columns,
                "budget": self._budget_state(seat.session),
            }

    def budget(self, analyst: Analyst, dataset: str) -> dict[str, Any]:
        """The analyst's budget on ``dataset``, read from the ledger."""
        seat = self._seat(analyst, dataset)
        with seat.lock:
            return self._budget_state(seat.session)

    def ledger(
        self, analyst: Analyst, dataset: str, *, after: int = 0, limit: int = LEDGER_PAGE
    ) -> dict[str, Any]:
        """One page of the analyst's own releases on ``dataset``, oldest first.

        At most ``limit`` rows (at most :data:`LEDGER_PAGE`) with an id above
        ``after``; ``next`` is the ``after`` of the next page, or None after the
        last one.  The data is named by its catalog name and version, never by
        anything computed from the rows.
        """
        seat = self._seat(analyst, dataset)
        limit = max(1, min(int(limit), LEDGER_PAGE))
        with seat.lock:
            table = seat.session._ledger.page(seat.session.name, after=after, limit=limit + 1)
        more = len(table) > limit
        table = shown_ledger(table.iloc[:limit], seat.entry)
        following = int(table.index[-1]) if more else None
        return {"ledger": encode_response(table), "next": following}

    def query(self, analyst: Analyst, dataset: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and run one release call; raises :class:`ServiceError` on failure."""
        started = self._clock()
        try:
            return self._query(analyst, dataset, body)
        finally:
            self._pad(started)

    def _pad(self, started: float) -> None:
        """Hold the answer until a multiple of the catalog's latency quantum has passed.

        A release's computing time grows with the rows it reads (e.g. how many
        pass a filter), a side channel that DP does not cover; answering only
        on a fixed grid of times hides variations within one quantum.
        """
        quantum = self.catalog.latency_quantum
        if quantum <= 0:
            return
        elapsed = self._clock() - started
        self._sleep(math.ceil(elapsed / quantum) * quantum - elapsed if elapsed > 0 else quantum)

    def _query(self, analyst: Analyst, dataset: str, body: Mapping[str, Any]) -> dict[str, Any]:
        seat = self._seat(analyst, dataset)
        try:
            check_depth(body)
            explain = body.get("explain", False)
            if not isinstance(explain, bool):
                raise ProtocolError("invalid_query", "explain must be true or false.")
            envelope = {k: v for k, v in body.items() if k != "explain"}
            node = decode_node(envelope, seat.source)  # on the curator's own source
            events: list[ReleaseEvent] = []
            with seat.lock:
                unsubscribe = seat.session.subscribe(events.append)
                try:
                    result = seat.session.explain(node) if explain else seat.session.run(node)
                finally:
                    unsubscribe()
                state = self._budget_state(seat.session)
            encoded = encode_response(result)
        except Exception as exc:
            error = classify(exc)
            if error.code == "invalid_query" and not isinstance(exc, (DPError, ServiceError)):
                self.unexpected_errors += 1
                _log.warning("Unexpected error in a query", exc_info=exc)
            raise error from None
        cost = Budget()
        for event in events:
            cost = cost + event.cost
        label = "; ".join(e.query for e in events) if events else node.label
        return {"result": encoded, "budget": state, "cost": encode_response(cost), "query": label}
