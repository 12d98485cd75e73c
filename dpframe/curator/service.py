"""The curator's core, independent of HTTP: analysts, seats, releases and error codes.

Each (analyst, dataset) pair has its own seat (:mod:`dpframe.curator.seats`):
a :class:`~dpframe.Session` named ``"analyst/dataset"`` in the curator's
SQLite ledger, so spends survive restarts and one analyst can neither read
nor spend another's budget.  One release runs on a seat at a time; another
one arriving meanwhile is answered 429 ``busy`` at once, uncharged.  The
ledger's ``BEGIN IMMEDIATE`` transactions also guard against other processes.
"""

from __future__ import annotations

import logging
import math
import os
import time
import traceback
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dpframe.accounting.head_signatures import HeadSigner
from dpframe.accounting.ledger import Ledger
from dpframe.accounting.ledger_modes import make_folder, tighten_files
from dpframe.backends.declared import parse_kind
from dpframe.curator.catalog import Analyst, Catalog, CatalogError
from dpframe.curator.codes import ServiceError, classify, error_payload
from dpframe.curator.dask_cluster import DaskCluster, connect_cluster, local_threads_lines
from dpframe.curator.data import check_columns
from dpframe.curator.grants_check import check_grants
from dpframe.curator.join_costs import datasets_read, join_cost, join_text_chars, leaves
from dpframe.curator.kept_joins import check_keepable, request_joins
from dpframe.curator.release_work import ReleaseWork, infrastructure_failure
from dpframe.curator.seats import Seat, Seats, shown_ledger
from dpframe.curator.worst_case import check_worst_case
from dpframe.engine.release_path import size_of
from dpframe.engine.session import ReleaseEvent
from dpframe.errors import DPError, LedgerError, SchemaError
from dpframe.plan.codec import column_extras, decode_node, encode_node
from dpframe.plan.estimate import check_resources
from dpframe.plan.nodes import Join, Source, lineage
from dpframe.plan.privacy import Budget
from dpframe.remote.wire import ProtocolError, check_depth, dumps, encode_response, loads

__all__ = ["LEDGER_PAGE", "Curator", "ServiceError", "error_payload", "shown_ledger"]

#: The most ledger rows one ``/ledger`` answer holds (the client follows ``next``).
LEDGER_PAGE = 1_000

_log = logging.getLogger("dpframe.curator")


#: The one answer to a release that did not come back, whatever the cause.
LIMIT_EXCEEDED = ServiceError(
    503,
    "limit_exceeded",
    "This release was not completed; its charge stands and your ledger records it as "
    "abandoned. The cause is not shown (it could depend on the data).",
)


def private_ledger(path: Path) -> None:
    """Create the curator's ledger readable by its owner only, before SQLite opens it.

    Every analyst's releases are in it.  A new ledger is created 0600 (when
    the curator starts, before it serves), in a folder the curator creates
    0700; an existing one open to others is set 0600, and the operator is told
    in the log (:mod:`dpframe.accounting.ledger_modes`).  Before issue 16 the
    ledger was created 0644: any local user could read every release.
    """
    if os.name != "posix":  # pragma: no cover - POSIX modes only
        return
    make_folder(path.parent)
    for message in tighten_files(path):
        log = _log.warning if "now 0600" in message else _log.error
        log("%s", message)
    if not path.exists():
        Ledger(path).close()


def _unit_facts(seat: Seat) -> dict[str, Any] | None:
    """A dataset's declared privacy unit and ID space (public, the catalog's), or None.

    The analyst's client builds joins from them (the curator recomputes every
    limit from its own catalog whatever the client claims).
    """
    entry = seat.entry
    if entry.privacy_unit is None:
        return None
    source = seat.source
    return {
        "column": entry.privacy_unit,
        "max_rows": source.unit_rows,
        "max_groups": source.unit_groups,
        "id_space": entry.id_space,
    }


class Curator:
    """Serve releases from the catalog's datasets to its analysts.

    Args:
        catalog: the data owner's catalog.
        clock: seconds on a monotonic clock (the latency quantum).
        sleep: how :meth:`query` waits out the latency quantum.
        pace_clock: seconds on a monotonic clock for the rate limit.

    Raises:
        CatalogError: a dataset's file has a column without a declared kind, or
            more rows than its declared ceiling (``max_rows``).
    """

    def __init__(
        self,
        catalog: Catalog,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        pace_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.catalog = catalog
        self._clock = clock
        self._pace_clock = pace_clock
        self._sleep = sleep
        private_ledger(catalog.ledger)  # 0600 (its WAL and shared memory follow), folder 0700
        self.grant_report = check_grants(catalog)  # grants changed in place, said in the log
        self._seats = Seats(catalog)
        self.signer = head_signer(catalog)  # signs each response's chain head (None: no key)
        self.unexpected_errors = 0
        self.default_releases = 0  # computations that failed after their charge (last resort)
        self.cluster: DaskCluster | None = None
        try:
            self.cluster = connect_cluster(catalog)  # [server].dask_scheduler (None: not named)
            for entry in catalog.datasets.values():
                check_columns(entry)  # every column's kind declared (reads the header only)
                self._seats.check_rows(entry)  # at most the declared ceiling (read once, shared)
        except BaseException:
            self.close()
            raise
        for pool in (self._seats.pool, self._seats.heavy_pool):
            if pool is not None:
                pool.warm()  # the worker processes, started before serving

    def close(self) -> None:
        """Stop the worker processes (idle ones now, busy ones when their release ends).

        Also disconnects from the Dask scheduler (its workers keep running).
        """
        for pool in (self._seats.pool, self._seats.heavy_pool):
            if pool is not None:
                pool.close()
        if self.cluster is not None:
            self.cluster.close()  # the client only: the cluster is the owner's

    def start_lines(self) -> list[str]:
        """What ``dpframe serve`` says at start: grant changes, where Dask datasets run."""
        where = local_threads_lines(self.catalog) if self.cluster is None else self.cluster.lines()
        return [*self.grant_report.lines(), *where]

    def now(self) -> float:
        """The curator's clock (monotonic seconds)."""
        return self._clock()

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

    # -- reads (no seat lock: the ledger serializes itself) --------------------

    @staticmethod
    def _budget_state(seat: Seat) -> dict[str, Any]:
        session = seat.session
        return {
            "name": session.name,
            "accounting": session.accounting,
            "total": encode_response(session.total),
            "spent": encode_response(session.spent),
            "remaining": encode_response(session.remaining),
        }

    def describe(self, analyst: Analyst, dataset: str) -> dict[str, Any]:
        """The public schema of a dataset, its version, the limits and the analyst's budget.

        The limits include the declared row ceiling and the largest worst-case
        estimate admitted (both public: the refusals they cause are computed
        from them and the request alone).
        """
        seat = self._seats.get(analyst, dataset)
        columns = [
            {
                "name": c.name,
                "kind": c.kind,
                "dtype": c.dtype,
                "bounds": None if c.bounds is None else [c.bounds[0], c.bounds[1]],
                "categories": encode_response(None if c.categories is None else list(c.categories)),
                **column_extras(c),  # date bounds, maximum text length
            }
            for c in seat.frame.schema.columns
        ]
        return {
            "dataset": dataset,
            "version": seat.entry.version or None,
            "limits": dict(vars(self.catalog.settings.limits)),
            "max_rows": self._seats.max_rows(seat.entry),  # the declared ceiling (public)
            "release_estimate_seconds": self.catalog.settings.release_estimate_seconds,
            "columns": columns,
            "budget": self._budget_state(seat),
            "privacy_unit": _unit_facts(seat),
        }

    def budget(self, analyst: Analyst, dataset: str) -> dict[str, Any]:
        """The analyst's budget on ``dataset``, read from the ledger."""
        return self._budget_state(self._seats.get(analyst, dataset))

    def ledger(
        self, analyst: Analyst, dataset: str, *, after: int = 0, limit: int | None = None
    ) -> dict[str, Any]:
        """One page of the analyst's own releases on ``dataset``, oldest first.

        At most ``limit`` rows (at most :data:`LEDGER_PAGE`) numbered above
        ``after``; ``next`` is the ``after`` of the next page, or None after the
        last one.  Rows are numbered per analyst and dataset (1 for the first;
        :class:`~dpframe.curator.seats.SeatLedger`), never by the ledger's own
        ids, which count every analyst's releases.  The data is named by its
        catalog name and version, never by anything computed from the rows.
        """
        seat = self._seats.get(analyst, dataset)
        limit = LEDGER_PAGE if limit is None else max(1, min(int(limit), LEDGER_PAGE))
        table = seat.ledger.numbered_page(seat.session.name, after=after, limit=limit + 1)
        more = len(table) > limit
        table = shown_ledger(table.iloc[:limit], seat.entry)
        following = int(table.index[-1]) if more else None
        return {"ledger": encode_response(table), "next": following}

    # -- releases ----------------------------------------------------------------

    def query(self, analyst: Analyst, dataset: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and run one release call; raises :class:`ServiceError` on failure.

        The answer (or error) is held until a multiple of the latency quantum
        has passed (with this object's ``sleep``; the HTTP app waits without
        holding a thread).
        """
        started = self._clock()
        try:
            return self.answer(analyst, dataset, body)
        finally:
            wait = self.padding(started)
            if wait > 0:
                self._sleep(wait)

    def padding(self, started: float) -> float:
        """Seconds to hold an answer begun at ``started``, to a multiple of the latency quantum.

        A release's computing time grows with the rows it reads (e.g. how many
        pass a filter), a side channel that DP does not cover; answering only
        on a fixed grid of times hides variations within one quantum.
        """
        quantum = self.catalog.latency_quantum
        if quantum <= 0:
            return 0.0
        elapsed = self._clock() - started
        return math.ceil(elapsed / quantum) * quantum - elapsed if elapsed > 0 else quantum

    def answer(self, analyst: Analyst, dataset: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """One release call, answered at once (no latency quantum); see :meth:`query`."""
        seat = self._seats.get(analyst, dataset)
        try:
            check_depth(body)
            explain, fresh = body.get("explain", False), body.get("fresh", False)
            if not isinstance(explain, bool):
                raise ProtocolError("invalid_query", "explain must be true or false.")
            if not isinstance(fresh, bool):
                raise ProtocolError("invalid_query", "fresh must be true or false.")
            envelope = {k: v for k, v in body.items() if k not in ("explain", "fresh")}
            node = decode_node(  # on the curator's own sources (a join's too)
                envelope, seat.source, lambda name: self._seats.join_side(seat, analyst, name)
            )
            self._check_addressed(seat, node)
            seconds, rows = self._check_time(seat, node)
            self._kept_joins(node)  # refused here if its joins alone are over the ceiling
            if explain:
                with seat.hold(self.catalog.settings.busy_retry_seconds):
                    return self._answered(seat, seat.session.explain(node), [], [], node.label)
            heavy = seconds >= self.catalog.settings.heavy_seconds
            return self._release(seat, node, heavy, fresh, rows)
        except Exception as exc:
            error = classify(exc)
            if error.code == "invalid_query" and not isinstance(exc, (DPError, ServiceError)):
                self.unexpected_errors += 1
                _log.warning("Unexpected error in a query", exc_info=exc)
            raise error from None

    @staticmethod
    def _check_addressed(seat: Seat, node: Any) -> None:
        """A join is sent to the seat of one of its datasets (the one charged); else refused.

        Raises:
            SchemaError: before any charge.
        """
        source = lineage(node.plan)[0]
        if source.join is not None and seat.source not in leaves(source):
            raise SchemaError(
                f"This join does not read the dataset {seat.entry.name!r} it was sent to; send "
                "it to one of its datasets (the left frame's session does)."
            )

    def _entry_name(self, source: Source) -> str:
        return self._seats.entry_of(source).name

    def _leaf(self, source: Source) -> tuple[int, dict[str, int]]:
        """A join side's declared row ceiling and maximum text lengths (public, the catalog's)."""
        entry = self._seats.entry_of(source)
        lengths = {c: parse_kind(c, k).max_length for c, k in entry.kinds.items()}
        return self._seats.max_rows(entry), {c: n for c, n in lengths.items() if n is not None}

    def _check_time(self, seat: Seat, node: Any) -> tuple[float, int]:
        """The request's worst-case seconds and row ceiling; refused over the curator's limit.

        Refused before the charge.  The worst case comes from public inputs
        and the dataset's declared row ceiling (:mod:`dpframe.curator.worst_case`),
        never from its rows.  A request over the resource limits gets the
        engine's own refusal first.
        """
        settings = self.catalog.settings
        check_resources(size_of(node, settings.limits), settings.limits)
        rows, building = self._row_ceiling(seat, node)
        lengths, chars = seat.text_lengths, settings.text_chars
        source = lineage(node.plan)[0]
        if source.join is not None:  # the join's text, from the catalog
            lengths, chars = {}, join_text_chars(source, self._leaf, chars)
        seconds = check_worst_case(
            node,
            rows,
            settings.cost,
            settings.release_estimate_seconds,
            settings.limits,
            lengths,
            chars,
            building,
        )
        return seconds, rows

    def _row_ceiling(self, seat: Seat, node: Any) -> tuple[int, float]:
        """The public ceiling on the rows ``node`` reads, and a join's building seconds.

        The dataset's declared ``max_rows``, or a join's rows and building
        time from the catalog (:func:`~dpframe.curator.join_costs.join_cost`).
        The worst case is priced with it, and the release runs under it
        (:func:`~dpframe.mechanisms.runtime.row_ceiling.row_ceiling`): a
        synthetic copy of noisy length draws no more rows than it.
        """
        settings = self.catalog.settings
        source = lineage(node.plan)[0]
        if source.join is None:
            return self._seats.max_rows(seat.entry), 0.0
        cost = join_cost(source, self._leaf, settings.cost, settings.limits, settings.text_chars)
        return cost.rows, cost.seconds

    def _kept_joins(self, node: Any) -> dict[Join, int]:
        """The joins ``node`` keeps and their public row ceilings; refused over the ceiling."""
        source = lineage(node.plan)[0]
        if source.join is None:
            return {}
        settings = self.catalog.settings
        chars = settings.text_chars
        joins = request_joins(source, self._leaf, settings.cost, settings.limits, chars)
        check_keepable(joins, settings.kept_join_rows)
        return joins

    def _release(
        self,
        seat: Seat,
        node: Any,
        heavy: bool = False,
        fresh: bool = False,
        rows: int | None = None,
    ) -> dict[str, Any]:
        """Release ``node`` on its seat, within the wall-clock limit (``heavy``: in the heavy lane).

        ``rows`` is the public row ceiling it runs under: a synthetic copy of
        noisy length draws no more rows than it (:meth:`_row_ceiling`).

        A request the seat's ledger already answered (the same node, privacy
        parameters and catalog version) is answered from it, free, unless
        ``fresh`` (:mod:`dpframe.engine.reruns`); the answer then says
        ``recorded``.

        The release runs in a thread of its own while this one waits at most
        ``release_seconds``.  If the limit fires (a server fault: it is set
        far above the slowest request within the limits), the worker process
        reading the rows for it is killed (:mod:`dpframe.curator.workers`),
        the charge stands, the row says ``abandoned``, the answer is
        ``limit_exceeded``, and the seat is free again once the release's
        thread has seen its worker stop (at once) or reached a stop point in
        the curator's own process (:mod:`dpframe.mechanisms.runtime.stopping`).  A computation
        that fails after its charge is answered with the default release
        (:meth:`_default`: the request over no rows), not with an error whose
        presence would depend on the data; a Dask cluster that fails
        (:class:`~dpframe.backends.cluster.ClusterFailedError`) is answered
        ``limit_exceeded``, like the wall-clock limit.
        """
        settings = self.catalog.settings
        seat.take(settings.busy_retry_seconds)
        handed_over = False
        try:
            seat.check_pace(self._pace_clock(), settings)
            seat.note_charges(self._pace_clock())  # forget any row left from before
            if seat.ledger.caps is not None:  # the caps of every dataset it reads (a join's)
                seat.ledger.caps.touching = datasets_read(node, self._entry_name)
            joins = self._kept_joins(node)
            if joins:  # the seat's kept joins within the ceiling (before the charge)
                ceiling = settings.kept_join_rows
                seat.kept_joins.admit(joins, ceiling, seat.session.forget_join)
            work = ReleaseWork(seat, node, heavy, fresh, rows)  # no copy draws more rows
            if not work.wait(settings.release_seconds):
                handed_over = True  # the computation gives the seat back when it ends
                killed = seat.kill_workers()  # it then ends at once (unless not in a worker)
                why = "took longer than the wall-clock limit"
                self._abandon(seat, f"{why}; {killed} worker(s) killed", None)
            charged = seat.note_charges(self._pace_clock())
            if work.error is not None:
                if not charged:  # refused before the charge: an ordinary, data-free error
                    raise work.error
                if not infrastructure_failure(work.error):
                    return self._default(seat, node, charged, work.error)
                self._abandon(seat, "failed after its charge", work.error)
            return self._answered(seat, work.result, work.events, charged, node.label)
        finally:
            if not handed_over:
                seat.give()

    def _default(
        self, seat: Seat, node: Any, charged: list[int], error: BaseException
    ) -> dict[str, Any]:
        """The last resort for a computation that failed after its charge: the default release.

        The computations are total (fuzzed with NaN, ±inf, empty groups and
        frames, 1e308 and 5e-324 in every node kind:
        ``tests/curator/test_total_computations.py``; no failure is known),
        but should one fail, answering an error would tell the analyst a bit
        about the data.  The answer is instead the **default release**: the
        same request, with the noise its charge bought, over an empty table
        of the dataset's columns (:meth:`~dpframe.curator.seats.Seats.empty_twin`),
        recorded in the ledger as released.  The data owner's log names the
        seat, the ledger row, the exception's type and where it was raised
        (never its message, which could hold a value); the seat counts it
        like an abandoned release.  A Dask dataset (no empty twin) answers
        ``limit_exceeded``.
        """
        twin = self._seats.empty_twin(seat)
        cause = error.__context__ if error.__suppress_context__ else error  # the engine's cause
        where = "unknown"
        if cause is not None and cause.__traceback__ is not None:
            frame = traceback.extract_tb(cause.__traceback__)[-1]
            where = f"{Path(frame.filename).name}:{frame.lineno}"
        kind = type(cause).__name__ if cause is not None else type(error).__name__
        name = seat.session.name
        self.default_releases += 1
        self._count_abandoned(seat)
        if twin is None:
            _log.error(
                "Release on %s failed after its charge (%s at %s); no default release for "
                "this data (not pandas); ledger rows %s",
                *(name, kind, where, charged),
            )
            raise LIMIT_EXCEEDED
        session, source = twin
        events: list[ReleaseEvent] = []
        unsubscribe = session.subscribe(events.append)
        try:
            result = session.run(decode_node(encode_node(node), source))
        except Exception as failed:  # on no rows too: the abandoned answer
            _log.error(
                "Release on %s failed after its charge (%s at %s), and on no rows (%s); "
                "ledger rows %s",
                *(name, kind, where, type(failed).__name__, charged),
            )
            raise LIMIT_EXCEEDED from None
        finally:
            unsubscribe()
        shown = str(session.ledger["value"].iloc[-1]) if len(session.ledger) else ""
        for release_id in charged:
            Ledger.complete(seat.ledger, release_id, shown, "released")
        _log.error(
            "Release on %s failed after its charge (%s at %s); answered with the default "
            "release (the same request over no rows); ledger rows %s",
            *(name, kind, where, charged),
        )
        return self._answered(seat, result, events, charged, node.label)

    def _count_abandoned(self, seat: Seat) -> None:
        """Count an abandoned release on ``seat``; suspend it at the catalog's limit (logged)."""
        seat.abandoned += 1
        if seat.abandoned >= self.catalog.settings.abandoned_to_suspend and not seat.suspended:
            seat.suspended = True
            _log.error(
                "Seat %s suspended after %d abandoned releases", seat.session.name, seat.abandoned
            )

    def _abandon(self, seat: Seat, why: str, error: BaseException | None) -> None:
        """Count an abandoned release, log it for the operator, and answer ``limit_exceeded``."""
        ids = seat.ledger.abandon() if error is None else []
        name = seat.session.name
        _log.error("Release abandoned on %s (%s); ledger rows %s", name, why, ids, exc_info=error)
        self._count_abandoned(seat)
        raise LIMIT_EXCEEDED

    def _answered(
        self,
        seat: Seat,
        result: Any,
        events: list[ReleaseEvent],
        charged: list[int],
        default_label: str,
    ) -> dict[str, Any]:
        """The answer to a release or explanation; a release's answer is kept for recovery."""
        cost = Budget()
        for event in events:
            cost = cost + event.cost
        label = "; ".join(e.query for e in events) if events else default_label
        kept = {"result": encode_response(result), "cost": encode_response(cost), "query": label}
        release = charged[-1] if charged else None  # its ledger id (None: explained or recorded)
        number = None
        if release is not None:
            self._keep(seat, release, kept)
            number = seat.ledger.number_of(seat.session.name, release)  # the analyst's own
        answer = {**kept, "budget": self._budget_state(seat), "release": number}
        head = seat.ledger.head(seat.session.name)
        if head is not None and self.signer is not None:  # the analyst's anchor
            answer["ledger_head"] = self.signer.sign(head)
        recorded = [e.recorded for e in events if e.recorded is not None]
        if recorded:  # answered from the ledger, free: the note the analyst's meter shows
            answer["recorded"] = recorded[-1]
        return answer

    def _keep(self, seat: Seat, release: int, kept: Mapping[str, Any]) -> None:
        """Store a release's answer in the ledger for :meth:`recover` (best effort).

        Called while holding the seat.  Answers are kept up to the catalog's
        ``stored_answers_mb`` per seat; later ones are answered but not kept.
        """
        body = zlib.compress(dumps(kept).encode(), 6)
        try:
            if seat.stored is None:
                seat.stored = seat.ledger.stored_bytes(seat.session.name)
            if seat.stored + len(body) > self.catalog.settings.stored_answers_mb * 2**20:
                _log.warning("Answer of release %s not kept: the seat's store is full", release)
                return
            seat.ledger.store_answer(release, body)
            seat.stored += len(body)
        except DPError as exc:  # the release stands and is answered; only recovery is lost
            _log.warning("Could not store the answer of release %s: %s", release, exc)

    def recover(self, analyst: Analyst, dataset: str, release_id: int) -> dict[str, Any]:
        """The answer of one of the analyst's charged releases, again, free.

        ``release_id`` is the analyst's number of the release on ``dataset``
        (the index of their ledger page and the ``release`` of an answer).

        Raises :class:`ServiceError`: 404 ``unknown_release`` when the
        analyst's ledger on ``dataset`` has no release of this number with a
        stored answer (an explanation, a failed release, a number past their
        last release, or one released before answers were stored); 409
        ``pending`` (with ``Retry-After``) while it is still being computed.
        """
        seat = self._seats.get(analyst, dataset)
        ledger_id = seat.ledger.ledger_id(seat.session.name, release_id)
        found = None if ledger_id is None else seat.ledger.answer(seat.session.name, ledger_id)
        if found is not None and found[1] is not None:
            kept = loads(zlib.decompress(found[1]))
            return {**kept, "budget": self._budget_state(seat), "release": release_id}
        if found is not None and found[0] == "charged":
            retry = str(self.catalog.settings.busy_retry_seconds)
            raise ServiceError(
                409,
                "pending",
                "This release is still being computed; ask again shortly.",
                {"Retry-After": retry},
            )
        raise ServiceError(
            404,
            "unknown_release",
            "Your ledger on this dataset has no stored answer for this release id "
            "(explanations and failed releases have none).",
        )


def head_signer(catalog: Catalog) -> HeadSigner | None:
    """The key that signs chain heads: the catalog's ``signing_key``, else beside the ledger.

    Created (0600) on first start.  A key the catalog names must load; the
    default one is skipped with a warning when ``cryptography`` is missing.
    """
    default = catalog.ledger.with_name(catalog.ledger.name + ".ed25519")
    try:
        return HeadSigner(catalog.signing_key or default)
    except LedgerError as exc:
        if catalog.signing_key is not None:
            raise CatalogError(f"[server] signing_key: {exc}") from None
        _log.warning("Chain heads are not signed: %s", exc)
        return None
