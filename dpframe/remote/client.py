"""The analyst's side of curator mode: ``dp.connect(url, token=...)``.

The client holds no data and no accountant: every release is computed,
charged and recorded by the curator; this process only sees the answers,
the budget figures and fixed error codes.  It uses only the standard
library (``urllib``), so an analyst needs no extra packages.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from dpframe.accounting.status import BudgetStatus, budget_status
from dpframe.api.sql import Catalog, require_parser
from dpframe.engine.observable import note_answer
from dpframe.engine.reruns import asked_fresh, fresh_release
from dpframe.engine.session import Observable, ReleaseEvent, capture
from dpframe.errors import (
    DPError,
    InvalidArgumentError,
    LedgerError,
)
from dpframe.plan.codec import column_extras_from_json, encode_node
from dpframe.plan.estimate import ResourceLimits, check_resources
from dpframe.plan.nodes import Source
from dpframe.plan.privacy import Budget
from dpframe.plan.schema import ColumnInfo, Schema
from dpframe.remote.http import (
    AuthenticationError,
    CuratorBusyError,
    CuratorUnavailableError,
    Http,
    RateLimitedError,
    SeatSuspendedError,
)
from dpframe.remote.wire import ProtocolError, decode_response

if TYPE_CHECKING:
    from dpframe.api.frame import PrivateFrame
    from dpframe.engine.release_path import Node

__all__ = [
    "AuthenticationError",
    "Connection",
    "CuratorBusyError",
    "CuratorUnavailableError",
    "RateLimitedError",
    "RemoteSession",
    "SeatSuspendedError",
    "connect",
]


def _budget(data: Mapping[str, Any]) -> Budget:
    return cast(Budget, decode_response(data))


class RemoteSession(Observable):
    """A session whose data, accountant and ledger live in a curator process.

    It offers the read-only parts of :class:`~dpframe.Session` (``total``,
    ``spent``, ``remaining``, ``ledger``, ``accounting``, ``explain``,
    ``subscribe``); frames opened from it have the embedded API, and their
    releases are computed and charged by the curator.
    """

    is_remote = True

    def __init__(
        self,
        http: Http,
        dataset: str,
        state: Mapping[str, Any],
        limits: ResourceLimits | None = None,
    ) -> None:
        self._http = http
        self._dataset = dataset
        self._listeners: list[Callable[[ReleaseEvent], None]] = []
        self._state = dict(state)
        self._limits = limits or ResourceLimits()
        self._sql_catalog = Catalog()  # tables of sql(): private frames by name, public lookups
        #: The ledger id of the last release answered (None before any).
        self.last_release: int | None = None
        #: The last chain head the curator signed for this session (None: none yet).
        self.ledger_head: dict[str, Any] | None = None
        #: The budget figures when this client opened the dataset (an earlier kernel's spend).
        self._opened_with = dict(self._state)

    @property
    def name(self) -> str:
        """The analyst's session on the curator (analyst and dataset)."""
        return str(self._state["name"])

    @property
    def dataset(self) -> str:
        """The dataset this session's budget protects."""
        return self._dataset

    @property
    def version(self) -> str | None:
        """The data owner's version of the dataset (None when the catalog gives none)."""
        version = self._state.get("version")
        return None if version is None else str(version)

    @property
    def accounting(self) -> str:
        """``pure``, ``approx``, ``zcdp`` or ``gdp``, as configured by the data owner."""
        return str(self._state["accounting"])

    @property
    def total(self) -> Budget:
        """The total budget the data owner granted for this dataset."""
        return _budget(self._state["total"])

    def _refresh(self) -> None:
        path = f"/v1/datasets/{urllib.parse.quote(self._dataset, safe='')}/budget"
        self._state.update(self._http.request("GET", path))

    @property
    def spent(self) -> Budget:
        """What the curator has recorded as spent (asked from the server)."""
        self._refresh()
        return _budget(self._state["spent"])

    @property
    def remaining(self) -> Budget:
        """What is left (asked from the server)."""
        self._refresh()
        return _budget(self._state["remaining"])

    @property
    def guarantee(self) -> Budget:
        """The formal (ε, δ)-DP guarantee of your releases so far (= :attr:`spent`)."""
        return self.spent

    @property
    def used_share(self) -> float:
        """The share of the budget used, in [0, 1], in the accountant's own unit (adds up)."""
        return float(self.budget_status.used_share)

    @property
    def budget_status(self) -> BudgetStatus:
        """Share used, largest next release and guarantee (asked from the server once)."""
        self._refresh()
        return self._status(self._state)

    @property
    def resumed_share(self) -> float:
        """The share of the budget used before this client opened the dataset (0: none)."""
        return float(self._status(self._opened_with).used_share)

    def _status(self, state: Mapping[str, Any]) -> BudgetStatus:
        return budget_status(
            self.accounting, self.total, _budget(state["spent"]), _budget(state["remaining"])
        )

    @property
    def ledger(self) -> pd.DataFrame:
        """This analyst's releases on this dataset, as recorded by the curator (every page).

        The data is named by its catalog name (``dataset``) and the owner's
        ``version``; nothing computed from the rows is shown.
        """
        path = f"/v1/datasets/{urllib.parse.quote(self._dataset, safe='')}/ledger"
        pages: list[pd.DataFrame] = []
        after: int | None = 0
        while after is not None:
            answer = self._http.request("GET", f"{path}?after={after}")
            pages.append(cast(pd.DataFrame, decode_response(answer["ledger"])))
            following = answer.get("next")
            if following is not None and (not isinstance(following, int) or following <= after):
                raise ProtocolError("invalid_value", "The curator's ledger pages do not advance.")
            after = following
        if len(pages) == 1:
            return pages[0]
        return pd.concat(pages)

    @property
    def limits(self) -> ResourceLimits:
        """The curator's resource limits (checked here too, before a request is sent)."""
        return self._limits

    def run(self, node: Node) -> Any:
        """Send ``node`` to the curator, which validates, charges and releases it.

        A request over the curator's resource limits is refused here, before
        it is encoded or sent (the curator would refuse it before the charge).
        """
        capture(self, node)
        answer = self._send(node, explain=False)
        cost = _budget(answer["cost"])
        recorded = answer.get("recorded")
        event = ReleaseEvent(
            str(answer["query"]),
            cost,
            _budget(self._state["spent"]),
            _budget(self._state["remaining"]),
            self.total,
            recorded if isinstance(recorded, str) else None,
        )
        note_answer(event.recorded)
        self._announce(event)
        return answer["result"]

    def recover(self, release_id: int) -> Any:
        """The answer of one of your charged releases, fetched again by its ledger id, free.

        When an answer is lost on the way (a timeout, a dropped connection),
        its charge stands: ``session.ledger`` lists the release (its index is
        the id), and this fetches the stored answer without any new charge.
        While the release is still being computed, the client waits (up to
        ``busy_wait`` seconds).

        Raises:
            InvalidArgumentError: no stored answer of yours has this id.
        """
        if isinstance(release_id, bool) or not isinstance(release_id, int) or release_id < 1:
            raise InvalidArgumentError("recover() takes a release id from session.ledger's index.")
        path = f"/v1/datasets/{urllib.parse.quote(self._dataset, safe='')}/releases/{release_id}"
        answer: dict[str, Any] = self._http.request("GET", path)
        self._state.update(answer["budget"])
        return decode_response(answer["result"])

    def _explain_node(self, node: Any) -> Any:
        return self._send(node, explain=True)["result"]

    def _send(self, node: Node, *, explain: bool) -> dict[str, Any]:
        from dpframe.engine.release_path import size_of

        check_resources(size_of(node, self._limits), self._limits)
        body = encode_node(node)
        body["explain"] = explain
        if not explain and asked_fresh():  # fresh=True: a new, charged release
            body["fresh"] = True
        path = f"/v1/datasets/{urllib.parse.quote(self._dataset, safe='')}/query"
        try:
            answer: dict[str, Any] = self._http.request("POST", path, body)
        except CuratorUnavailableError as exc:
            if explain:
                raise
            raise CuratorUnavailableError(
                f"{exc} If the release was charged, session.ledger lists it and "
                "session.recover(id) fetches its answer again, free."
            ) from None
        self._state.update(answer["budget"])
        if answer.get("release") is not None:
            self.last_release = int(answer["release"])
        if isinstance(answer.get("ledger_head"), dict):  # the curator's signed chain head
            self.ledger_head = answer["ledger_head"]
        answer["result"] = decode_response(answer["result"])
        return answer

    def joins_with(self, other: object) -> bool:
        """True for a session of another dataset of the same connection (a join may pair them).

        A private join of frames of two datasets of one curator is sent to the
        left frame's dataset and charged there (the curator checks that both
        belong to one ID space and are granted to this analyst).
        """
        return isinstance(other, RemoteSession) and other._http is self._http

    def check_ledger_head(self, public_key: str | None = None) -> dict[str, Any]:
        """Check the signature of the last chain head the curator sent; return that head.

        Keep the head (``json.dump(session.ledger_head, file)``): it is an
        anchor for ``dpframe ledger verify --anchor file``, which then catches
        any later rewrite of your session's ledger rows up to it.

        Args:
            public_key: the curator's key (base64), pinned; None: the key
                ``/v1/health`` shows now.

        Raises:
            LedgerError: no head was received yet, or its signature does not verify.
        """
        from dpframe.accounting.head_signatures import check_signed_head

        head = self.ledger_head
        if head is None:
            raise LedgerError("No chain head received yet: the curator sends one per release.")
        if public_key is None:
            public_key = self._http.request("GET", "/v1/health").get("public_key")
        check_signed_head(head, public_key)
        return dict(head)

    def register(self, name: str, table: object) -> None:
        """Name a table for :meth:`sql`: a frame opened from this session, or a public DataFrame.

        The dataset a frame was opened from is registered under its catalog name already.
        """
        self._sql_catalog.register(name, table, self)

    def sql(
        self,
        query: str,
        *,
        epsilon: Any = None,
        delta: Any = None,
        rho: Any = None,
        privacy: Any = None,
        weights: Any = None,
        tables: Mapping[str, object] | None = None,
        fresh: bool = False,
    ) -> Any:
        """Answer a SQL query as :meth:`dpframe.Session.sql` does (docs/sql.md).

        The query is compiled here, in the analyst's process, to the release
        node its pandas spelling builds; the curator receives that node only
        (never the SQL text), charges and releases it.  HAVING, ORDER BY and
        LIMIT act on the released values here.

        Privacy and Accuracy: as :meth:`dpframe.Session.sql` (so are ``tables=`` and
        ``fresh=``).
        """
        require_parser()
        from dpframe.api.sql.run import run_sql  # sqlglot: an optional dependency

        catalog = (
            self._sql_catalog if tables is None else self._sql_catalog.with_frames(tables, self)
        )
        with fresh_release(fresh):
            return run_sql(
                self,
                catalog,
                query,
                epsilon=epsilon,
                delta=delta,
                rho=rho,
                privacy=privacy,
                weights=weights,
            )

    def __repr__(self) -> str:
        return (
            f"RemoteSession({self._dataset!r} at {self._http.url}, {self.accounting} "
            f"accounting, total {self.total})"
        )

    def __reduce__(self) -> Any:
        raise DPError("A remote session holds a credential and cannot be pickled.")


class Connection:
    """An authenticated connection to a dpframe curator.

    Example:
        >>> conn = dp.connect("http://127.0.0.1:8765", token=my_token)  # doctest: +SKIP
        >>> pf = conn.open("cps")  # doctest: +SKIP
        >>> pf["wage"].mean(epsilon=0.1)  # doctest: +SKIP
    """

    def __init__(self, http: Http) -> None:
        self._http = http

    @property
    def url(self) -> str:
        """The curator's address."""
        return self._http.url

    def datasets(self) -> list[str]:
        """The names of the datasets granted to this analyst."""
        return [str(n) for n in self._http.request("GET", "/v1/datasets")["datasets"]]

    def open(self, dataset: str) -> PrivateFrame:
        """A :class:`~dpframe.PrivateFrame` over a curator's dataset (same API as embedded)."""
        from dpframe.api.frame import frame_of
        from dpframe.api.handle import FrameHandle

        if not isinstance(dataset, str) or not dataset:
            raise InvalidArgumentError("open() takes the dataset's name, e.g. conn.open('cps').")
        path = f"/v1/datasets/{urllib.parse.quote(dataset, safe='')}"
        info = self._http.request("GET", path)
        schema = Schema(tuple(_column(c) for c in info["columns"]))
        session = RemoteSession(
            self._http,
            dataset,
            {**info["budget"], "version": info.get("version")},
            _limits(info.get("limits")),
        )
        frame = frame_of(FrameHandle(session, _source(dataset, info.get("privacy_unit")), schema))
        session.register(dataset, frame)  # SELECT ... FROM <dataset>
        return frame

    def __repr__(self) -> str:
        return f"Connection({self._http.url!r})"


def _source(dataset: str, unit: object) -> Source:
    """A remote dataset's source: its name and the privacy unit its catalog declares.

    The unit's facts let this client build a private join of two datasets of
    one ID space (``visits.merge(people, ...)``); the curator recomputes every
    limit from its own catalog, whatever this source says.
    """
    if not isinstance(unit, Mapping):
        return Source(dataset)
    try:
        column, rows = str(unit["column"]), int(unit["max_rows"])
        groups = int(unit.get("max_groups") or rows)
        space = unit.get("id_space")
    except (KeyError, TypeError, ValueError):
        raise ProtocolError("invalid_value", "The curator sent an invalid privacy unit.") from None
    if space is None:  # the owner declared no ID space: never joined
        return Source(dataset)
    return Source(
        dataset, unit_rows=rows, unit_column=column, unit_groups=groups, id_space=str(space)
    )


def _limits(data: object) -> ResourceLimits | None:
    """The curator's resource limits from its schema answer (None: an older curator's)."""
    if not isinstance(data, Mapping):
        return None
    known = {k: v for k, v in data.items() if k in ResourceLimits.__dataclass_fields__}
    try:
        return ResourceLimits(**known)
    except DPError:
        raise ProtocolError("invalid_value", "The curator sent invalid resource limits.") from None


def _column(data: Mapping[str, Any]) -> ColumnInfo:
    bounds = data.get("bounds")
    categories = decode_response(data.get("categories"))
    return ColumnInfo(
        str(data["name"]),
        data["kind"],
        str(data["dtype"]),
        None if bounds is None else (float(bounds[0]), float(bounds[1])),
        None if categories is None else tuple(categories),
        **column_extras_from_json(data),  # date bounds, maximum text length
    )


def connect(
    url: str,
    token: str | None = None,
    *,
    timeout: float = 60.0,
    busy_wait: float = 30.0,
    cafile: str | os.PathLike[str] | None = None,
) -> Connection:
    """Connect to a data owner's curator (``dpframe serve``), to analyse data you cannot see.

    Example:
        >>> conn = dp.connect("https://curator.example.org", token="...")  # doctest: +SKIP
        >>> pf = conn.open("cps")  # doctest: +SKIP
        >>> pf["wage"].mean(epsilon=0.1)  # doctest: +SKIP

    Every release is charged and computed by the curator, against the budget
    the data owner granted you (docs/curator.md).

    Args:
        url: the curator's address, e.g. ``"https://curator.example.org"``.
        token: the analyst's token; default: the ``DPFRAME_TOKEN`` environment variable.
        timeout: seconds to wait for each answer.
        busy_wait: seconds to keep sending a release again while the curator
            answers ``busy`` (another release of yours on the same dataset is
            running; nothing is charged); then :class:`CuratorBusyError`.
        cafile: a PEM file of the certificate authority that signed the
            curator's certificate (an organisation's internal CA); only it is
            trusted for this connection.  Default: the system's authorities
            (or ``SSL_CERT_FILE``).

    Raises:
        AuthenticationError: when the curator refuses the token.
        CuratorUnavailableError: when the curator cannot be reached.
    """
    if token is None:
        token = os.environ.get("DPFRAME_TOKEN")
        if not token:
            raise InvalidArgumentError("Pass token=... or set the DPFRAME_TOKEN variable.")
    connection = Connection(Http(url, token, timeout, busy_wait, cafile))
    connection.datasets()  # fail now on a wrong token or address
    return connection
