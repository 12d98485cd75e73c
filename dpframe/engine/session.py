"""The session: owns data sources, the accountant, the ledger and the random source.

Order of work for every release (never changed):

1. validate the query (columns, bounds, keys, privacy parameters);
2. compute its cost and ask the accountant to charge it, in one ledger
   transaction (refused here if over budget: nothing has touched the data);
3. evaluate the plan on the backend (exact, non-private);
4. add noise and post-process;
5. record the released value in the ledger and notify listeners (the meter);
6. return the release.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpframe.accounting.accountants import Accountant, Charge
from dpframe.accounting.choice import make_accountant
from dpframe.accounting.ledger import Ledger
from dpframe.accounting.ledger_chain import Head
from dpframe.accounting.ledger_frames import FrameRecord
from dpframe.backends.base import Backend, is_dask_frame
from dpframe.backends.declared import (
    DeclaredKind,
    apply_declared_kinds,
    declared_kinds,
    declared_schema,
)
from dpframe.backends.factory import make_backend
from dpframe.engine.batch import Batch, is_unset, prepaid_release
from dpframe.engine.guard_rails import check_other_sessions, fix_unit_setting, identify
from dpframe.engine.joins import forget_join
from dpframe.engine.loading import check_groups, check_unit
from dpframe.engine.observable import (
    Observable,
    ReleaseEvent,
    capture,
    is_capturing,
    note_answer,
)
from dpframe.engine.public_tables import public_table
from dpframe.engine.release_path import ReleasePath, families
from dpframe.engine.reruns import asked_fresh
from dpframe.errors import (
    DPError,
    InvalidArgumentError,
    InvalidBudgetError,
    LedgerError,
    SchemaError,
)
from dpframe.mechanisms.core.explanations import with_thin
from dpframe.noise import SecureRandom
from dpframe.noise.pool import NoisePool
from dpframe.plan.estimate import ResourceLimits
from dpframe.plan.joins import PUBLIC_VIEW
from dpframe.plan.nodes import Join, Source
from dpframe.plan.parameters import PrivacyUnit
from dpframe.plan.privacy import Budget, Number, to_fraction
from dpframe.plan.schema import Schema, schema_from_frame

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskDataFrame

    from dpframe.accounting.composition import CompositionSummary
    from dpframe.accounting.renyi import RenyiCurve
    from dpframe.accounting.status import BudgetStatus
    from dpframe.engine.release_path import Node
    from dpframe.mechanisms.core.explanations import Explanation

__all__ = ["Observable", "ReleaseEvent", "Session", "capture", "is_capturing"]


class Session(Observable):
    """The engine's half of a session: budget, accountant, ledger, loaded data, listeners.

    The public class is :class:`dpframe.Session` (:mod:`dpframe.api.session`),
    which adds the loaders that return a :class:`~dpframe.PrivateFrame`; its
    docstring describes the arguments.  Everything that releases goes through
    :meth:`run`.
    """

    def __init__(
        self,
        epsilon: Number,
        delta: Number = 0,
        *,
        name: str = "default",
        ledger: str | os.PathLike[str] | Ledger | None = None,
        accounting: str | None = None,
        limits: ResourceLimits | None = None,
        delta_reserve: Number | None = None,
    ) -> None:
        if os.environ.get("DPFRAME_CLIENT_ONLY") == "1":
            raise DPError(
                "This kernel is a curator client (DPFRAME_CLIENT_ONLY=1): private data is "
                "not loaded here. Open the curator's datasets with dp.connect(url).open(name)."
            )
        total = Budget(epsilon, delta)
        if total.epsilon <= 0:
            raise InvalidBudgetError("The session's epsilon must be > 0.")
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError("name must be a non-empty string.")
        if not (ledger is None or isinstance(ledger, (str, os.PathLike, Ledger))):
            raise LedgerError("ledger= takes a file path, ':memory:', a Ledger or None.")
        reserve = None if delta_reserve is None else to_fraction(delta_reserve, "delta_reserve")
        if accounting is not None or reserve is not None:
            # a bad accounting= or delta_reserve= fails before the ledger opens
            make_accountant(total, accounting, reserve)
        self._ledger = ledger if isinstance(ledger, Ledger) else Ledger(ledger)
        # A resumed session keeps the accounting (and a Gaussian DP session its δ
        # reserve) that its ledger recorded unless told otherwise.
        kind = accounting if accounting is not None else self._ledger.recorded_accounting(name)
        if reserve is None and kind in (None, "gdp"):
            reserve = self._ledger.recorded_delta_reserve(name)
        try:
            self._accountant: Accountant = make_accountant(total, kind, reserve)
        except InvalidBudgetError:  # recorded with another budget: register() says so
            self._accountant = make_accountant(total, accounting, reserve)
        self._name = name
        self._rng = SecureRandom(pool=NoisePool())  # pre-drawn batches: dpframe/noise/pool.py
        self._listeners: list[Callable[[ReleaseEvent], None]] = []
        if limits is not None and not isinstance(limits, ResourceLimits):
            raise InvalidArgumentError("limits= takes a dpframe.plan.estimate.ResourceLimits.")
        self._path = ReleasePath(
            name,
            self._accountant,
            self._ledger,
            limits or ResourceLimits(),
            families(),
            self._rng,
            self._notify,
        )
        self._ledger.register(
            self._name,
            self._accountant.kind,
            total,
            getattr(self._accountant, "delta_reserve", None),
        )
        #: What the ledger held for this name when the session opened (an earlier kernel's).
        self._opened_with = self._charges()

    # -- public state --------------------------------------------------------

    @property
    def name(self) -> str:
        """The session's name: its budget's key in the ledger.

        Example:
            >>> dp.Session(epsilon=1.0, ledger=":memory:", name="wages").name  # doctest: +SKIP

        A session of the same name and ledger, in a later kernel or process,
        resumes the same budget.
        """
        return self._name

    @property
    def total(self) -> Budget:
        """The session's total budget, as it was created.

        Example:
            >>> session.total  # doctest: +SKIP
        """
        return self._accountant.total

    @property
    def accounting(self) -> str:
        """How the session adds up its releases: ``pure``, ``approx``, ``zcdp`` or ``gdp``.

        Example:
            >>> session.accounting  # doctest: +SKIP

        Chosen when the session is created (``accounting=``; by default
        ``pure`` without δ and ``gdp`` with one).  docs/budget.md explains each.
        """
        return self._accountant.kind

    @property
    def delta_reserve(self) -> Fraction | None:
        """A Gaussian DP session's δ reserve D for releases with a δ of their own.

        Fixed at creation (default δ/10) and recorded in the ledger; key
        discovery and copies with ``delta=`` spend from it, in all at most D.
        None for other accountings.
        """
        reserve = getattr(self._accountant, "delta_reserve", None)
        return None if reserve is None else Fraction(reserve)

    @property
    def limits(self) -> ResourceLimits:
        """The largest request this session evaluates (sized before the charge)."""
        return self._path.limits

    @property
    def ledger_path(self) -> str:
        """Where the ledger file is."""
        return self._ledger.path

    def _charges(self) -> Charge:
        return self._ledger.spent(self._name)

    @property
    def spent(self) -> Budget:
        """What the releases so far guarantee, as (ε, δ) (read from the ledger).

        Example:
            >>> pf.count(epsilon=0.1)  # doctest: +SKIP
            >>> session.spent  # doctest: +SKIP

        The same as :attr:`guarantee`.  Under pure DP it is the sum of the
        releases' ε; under zCDP and Gaussian DP it is the conversion of their
        total, which does not add up release by release: :attr:`used_share`
        does.
        """
        return self._accountant.spent(self._charges())

    @property
    def remaining(self) -> Budget:
        """The largest (ε, δ) that a next release may ask for.

        Example:
            >>> session.remaining  # doctest: +SKIP

        A release asking more is refused before anything is charged
        (``BudgetExceededError``).  Under zCDP and Gaussian DP it is not the
        total minus :attr:`spent` (see :attr:`used_share`).
        """
        return self._accountant.remaining(self._charges())

    @property
    def guarantee(self) -> Budget:
        """The formal (ε, δ)-DP guarantee of everything released so far (= :attr:`spent`).

        Example:
            >>> session.guarantee  # doctest: +SKIP
            >>> print(session.budget_status)  # doctest: +SKIP

        Under zCDP and Gaussian DP it is not the sum of the releases' ``epsilon=``
        (the conversion is not additive); :attr:`used_share` is the figure that adds up.
        """
        return self.spent

    @property
    def used_share(self) -> float:
        """The share of the budget used, in [0, 1]: the figure that adds up.

        Example:
            >>> pf.count(epsilon=0.1)  # doctest: +SKIP
            >>> session.used_share  # doctest: +SKIP

        Counted in the accountant's own unit: ε under pure DP, ρ under zCDP,
        μ² under Gaussian DP, units in which releases add up, so two releases
        asking ``epsilon=0.25`` of a total ``epsilon=1`` use 0.5, in every
        accounting.
        """
        return float(self.budget_status.used_share)

    @property
    def budget_status(self) -> BudgetStatus:
        """Share used, largest next release and guarantee, in words (read once from the ledger).

        Example:
            >>> print(session.budget_status)  # doctest: +SKIP

        The meter's and ``%dp_budget``'s figures.
        """
        from dpframe.accounting.status import budget_status

        charges = self._charges()
        return budget_status(
            self.accounting,
            self.total,
            self._accountant.spent(charges),
            self._accountant.remaining(charges),
        )

    @property
    def resumed_share(self) -> float:
        """The share of the budget that was used before this session opened (0: a new one).

        Non-zero only when an earlier session of the same name and ledger (an
        earlier kernel or process) had spent: what this session resumed.
        """
        from dpframe.accounting.status import budget_status

        charges = self._opened_with
        status = budget_status(
            self.accounting,
            self.total,
            self._accountant.spent(charges),
            self._accountant.remaining(charges),
        )
        return float(status.used_share)

    @property
    def ledger(self) -> pd.DataFrame:
        """Every release of this session so far, one row each (on any dataset), oldest first.

        Example:
            >>> session.ledger[["query", "epsilon"]]  # doctest: +SKIP

        Free (the ledger only): the query in words, its cost, the mechanism,
        the released value and when; docs/audit.md describes the columns.
        """
        return self._ledger.releases(self._name)

    @property
    def ledger_head(self) -> Head | None:
        """This session's chain head in the ledger: its newest link's position and hash.

        Free (the ledger only).  Keep it somewhere the ledger's owner cannot
        rewrite (a notebook's output, an export): ``dpframe ledger verify
        --anchor`` then catches a rewrite of every row up to it, which the
        hash chain alone cannot (see docs/ledger-verify.md).
        """
        return self._ledger.head(self._name)

    @property
    def frames(self) -> pd.DataFrame:
        """The frames this session loaded, with their ID spaces and row limits (from the ledger).

        Example:
            >>> session.frames  # doctest: +SKIP

        One row per dataset and privacy-unit setting: ``dataset`` (its key in
        the ledger), ``id_space`` and ``unit_column`` (empty for row-level
        data), ``max_rows`` and the time it was first loaded.  Frames of one
        ID space may be joined privately (``visits.merge(people, ...)``).
        """
        return self._ledger.frames(self._name)

    def renyi(self, orders: Sequence[float] | None = None) -> RenyiCurve:
        """The Rényi-DP curve ε(α) of everything released so far (a view; free).

        Example:
            >>> session.renyi().to_dp(1e-5)  # doctest: +SKIP

        ``curve.to_dp(delta)`` gives the best conversion to (ε, δ) and the α
        that attains it; ``curve.plot(delta)`` draws it.  How each release's
        curve is obtained is in :func:`dpframe.accounting.renyi.release_rdp`.
        """
        from dpframe.accounting.renyi import session_curve

        return session_curve(self.accounting, self.ledger, orders)

    def composition(self, delta: float | None = None) -> CompositionSummary:
        """What the releases so far cost under each composition theorem that applies (a view).

        Example:
            >>> print(session.composition())  # doctest: +SKIP

        Basic, advanced (where valid), zCDP, RDP and, in a Gaussian DP session,
        Gaussian DP; the one the session uses is marked.

        Args:
            delta: the slack δ' of the advanced, zCDP, RDP and GDP conversions
                (default: the session's δ not used by mechanisms with their own;
                in a Gaussian DP session, its δ minus its reserve).
        """
        from dpframe.accounting.composition import summarize

        reserve = self.delta_reserve
        if delta is None and reserve is not None:
            delta = float(self.total.delta - reserve)
        return summarize(self.accounting, float(self.total.delta), self.ledger, delta)

    def __repr__(self) -> str:
        return (
            f"Session(name={self._name!r}, {self.accounting} accounting, total {self.total}, "
            f"spent {self.spent}, remaining {self.remaining}, ledger head {self.ledger_head})"
        )

    def __reduce__(self) -> Any:
        raise DPError("A session holds private data and cannot be pickled.")

    # -- loading data --------------------------------------------------------

    def load(
        self,
        df: pd.DataFrame | DaskDataFrame,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        categories: Mapping[str, Sequence[Hashable]] | None = None,
        *,
        dtypes: Mapping[str, str] | None = None,
        privacy_unit: str | PrivacyUnit | None = None,
        max_rows_per_unit: int | None = None,
        max_groups_per_unit: int | None = None,
        identity: str | None = None,
    ) -> tuple[Source, Schema]:
        """Hold ``df`` (by reference) under this session; the plan's source and its public schema.

        The facade's ``private_frame`` wraps the result; the arguments are
        documented there (:meth:`dpframe.Session.private_frame`).  ``identity``
        names the data in the ledger instead of its keyed identity (a keyed
        hash of every row, :func:`dpframe.engine.guard_rails.identify`): a
        curator names its datasets by catalog name and version, so nothing
        computed from the rows is ever recorded or shown, and no key is read.

        Raises:
            SchemaError: for an empty frame, unknown columns, invalid bounds or
                categories, or a privacy-unit setting other than the one the
                session's first frame fixed (:mod:`dpframe.engine.guard_rails`).

        Warns:
            BudgetResetWarning: ``df`` resembles data that another session of
                the ledger has spent on (rows in common, or a matching column:
                a new session name starts a separate budget).
        """
        if isinstance(privacy_unit, PrivacyUnit):
            if max_rows_per_unit is not None or max_groups_per_unit is not None:
                raise SchemaError(
                    "Give privacy_unit=dp.PrivacyUnit(column, max_rows, max_groups) alone, or "
                    "privacy_unit='column' with max_rows_per_unit=, not both."
                )
            unit_spec = privacy_unit
            space = unit_spec.space
            privacy_unit = unit_spec.column
            max_rows_per_unit, max_groups_per_unit = unit_spec.max_rows, unit_spec.max_groups
        else:
            space = privacy_unit or ""
        kinds: dict[str, DeclaredKind] = {}
        if isinstance(df, pd.DataFrame) or is_dask_frame(df):
            kinds = declared_kinds({str(k): v for k, v in df.dtypes.items()}, dtypes, bounds)
            df = apply_declared_kinds(df, kinds)
        backend = make_backend(df)  # pandas, or dask for a dask DataFrame (docs/backends.md)
        schema = declared_schema(
            schema_from_frame(backend.schema_frame(), bounds, categories), kinds
        )
        unit = check_unit(backend.schema_frame(), privacy_unit, max_rows_per_unit)
        groups = check_groups(unit, max_groups_per_unit)
        data = None if identity is not None else identify(self._ledger, backend, df, unit)
        dataset = data.identity if data is not None else str(identity)  # named, or keyed
        record = FrameRecord(dataset) if unit is None else FrameRecord(dataset, space, *unit)
        fix_unit_setting(self._ledger, self._name, unit, record)  # refused here: nothing charged
        if data is not None:
            check_other_sessions(self._ledger, self._name, data, df)
        path = self._path
        if unit is None:
            path.backends.setdefault((dataset, ""), backend)
            path.schemas.setdefault((dataset, ""), schema)
            return Source(dataset), schema
        column, k = unit
        view = f"unit:{column}:{k}:{self._rng.randbits(64):016x}"
        path.backends[(dataset, view)] = backend.bound_contributions(column, k, self._rng)
        path.schemas[(dataset, view)] = schema
        source = Source(
            dataset, unit_rows=k, view=view, unit_column=column, unit_groups=groups, id_space=space
        )
        return source, schema

    def load_public(
        self, table: pd.DataFrame, key: str, max_rows: int = 10_000
    ) -> tuple[Source, Schema]:
        """Hold a public table whose ``key`` repeats, as the public side of a join.

        At most ``max_rows`` rows (the facade's lookup-table limit).

        Its source has ``unit_rows`` = the most rows one key has in the table
        (a public fact): a merge multiplies each private row by at most that
        (:func:`dpframe.plan.joins.public_join`).  See
        :mod:`dpframe.engine.public_tables`.

        Raises:
            SchemaError: as :func:`~dpframe.engine.public_tables.public_table`.
        """
        name, rows, schema, most = public_table(table, key, max_rows)
        self._path.backends.setdefault((name, PUBLIC_VIEW), make_backend(rows))
        self._path.schemas.setdefault((name, PUBLIC_VIEW), schema)
        return Source(name, unit_rows=most, view=PUBLIC_VIEW), schema

    def forget_join(self, join: Join) -> bool:
        """Drop the rows this session keeps for a private join (a curator's memory ceiling).

        A later release on it computes them again (a new random subset):
        :func:`dpframe.engine.joins.forget_join`.  True if any rows were kept.
        """
        return forget_join(self._path, join)

    # -- releasing -----------------------------------------------------------

    def run(self, node: Node) -> Any:
        """Release one query: check it, charge it, compute it with noise and record it.

        Example:
            >>> pf.count(epsilon=0.1)  # doctest: +SKIP

        Every release method builds a release node and calls ``run`` with it
        (the line above calls ``session.run`` for you).

        validate → privacy map → charge (refused here if over budget: nothing
        has touched the data) → compute → release → record → notify.  Inside
        :meth:`explain` the node is captured instead and nothing is spent.  A
        request this session's ledger already answered is answered from it,
        free (:mod:`dpframe.engine.reruns`), unless the release method was
        called with ``fresh=True`` (:func:`dpframe.engine.reruns.fresh_release`).

        Raises:
            BudgetExceededError: when the budget would be exceeded (nothing charged).
        """
        capture(self, node)
        prepaid = prepaid_release(self, node)
        if not is_unset(prepaid):
            return prepaid
        return self._path.run(node, asked_fresh())

    @contextmanager
    def batch(self) -> Iterator[Batch]:
        """Release several queries at once, all or none, in one durable ledger commit.

        Example:
            >>> with session.batch() as batch:  # doctest: +SKIP
            ...     n = batch.add(lambda: pf.count(epsilon=0.1))
            ...     m = batch.add(lambda: pf["wage"].mean(epsilon=0.1))
            >>> n.result, m.result  # doctest: +SKIP

        Releases added with ``batch.add(lambda: ...)`` are captured (nothing is
        read or charged) and, when the block ends without an error, admitted
        together by the budget filter and the ledger, then computed in order;
        each one's result is ``pending.result``.  See :mod:`dpframe.engine.batch`.

        Raises:
            BudgetExceededError: when the releases together exceed the budget
                (none is charged).
        """
        batch = Batch(self, self._path)
        yield batch
        batch.run()

    def _explain_node(self, node: Any) -> Explanation:
        # Many outputs: also the row counts below which a cell is too thin to read.
        return with_thin(self._path.explain(node), node, self._path.explain)

    # -- seams for a data owner's server (the curator) ------------------------

    def set_release_floor(self, epsilon: Number) -> None:
        """Refuse, before the charge, any release asking less than ``epsilon`` (ε ≥ 0).

        A curator sets its catalog's ``min_epsilon`` here: a tiny ε buys only
        noise, and many of them would fill the ledger.
        """
        floor = to_fraction(epsilon, "epsilon")
        if floor < 0:
            raise InvalidBudgetError("The release floor must be an epsilon >= 0.")
        self._accountant.floor = floor

    def keep_answers(self, keep: bool) -> None:
        """Whether the engine keeps each answer in the ledger for a re-run (default True).

        A curator keeps its answers itself (in the same form, within its
        per-seat limit) and turns this off; the ledger's answers are found
        either way.
        """
        self._path.keep_answers = bool(keep)

    def replace_backends(self, replace: Callable[[tuple[str, str], Backend], Backend]) -> None:
        """Put ``replace(key, backend)`` in place of each loaded source's backend.

        ``key`` is the source's (dataset, view); a curator uses this to run the
        row work of its datasets in worker processes it can kill.
        """
        backends = self._path.backends
        for key, backend in list(backends.items()):
            backends[key] = replace(key, backend)

    def _notify(self, query: str, cost: Budget, recorded: str | None = None) -> None:
        note_answer(recorded)
        if not self._listeners:
            return
        charges = self._charges()
        event = ReleaseEvent(
            query,
            cost,
            self._accountant.spent(charges),
            self._accountant.remaining(charges),
            self.total,
            recorded,
        )
        self._announce(event)
