"""The analyst's session: the engine's session with loaders that return a :class:`PrivateFrame`."""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpframe.api.frame import PrivateFrame, frame_of
from dpframe.api.handle import FrameHandle
from dpframe.api.notices import told
from dpframe.api.sql import Catalog, require_parser
from dpframe.engine import session as engine_session
from dpframe.engine.loading import read_data
from dpframe.engine.observable import answers_collected
from dpframe.engine.reruns import fresh_release
from dpframe.plan.parameters import PrivacyUnit

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskDataFrame

__all__ = ["Session"]


class Session(engine_session.Session):
    """A privacy budget and the private data it protects.

    Args:
        epsilon: the total ε of the session (> 0).
        delta: the total δ (0 ≤ δ < 1); default 0.
        name: the session's name in the ledger.  A session with the same
            name and ledger resumes its spend, also from another process; the
            budget covers every dataset the session loads (use a new name for
            unrelated data), and is fixed at first use.
        ledger: the SQLite ledger file; None for the default location
            (``$DPFRAME_LEDGER`` or the user's data directory), ``":memory:"``
            for one that is forgotten when the session ends, or a
            :class:`~dpframe.accounting.Ledger`.
        accounting: ``"pure"``, ``"approx"``, ``"zcdp"`` or ``"gdp"`` (Gaussian
            DP: exact for Gaussian noise; regressions with
            ``analysis="iteration"`` need ``delta=`` from the reserve; see
            docs/proofs/gdp_accounting.md) (or a
            :class:`~dpframe.Accounting`); default: what the ledger recorded
            for a resumed session, else ``"pure"`` when ``delta == 0`` and
            ``"gdp"`` otherwise.
        delta_reserve: Gaussian DP only: the part D of ``delta`` kept for
            releases with a δ of their own (key discovery, copies with
            ``delta=``, regressions with ``analysis="iteration"``), which
            together may spend at most D; the Gaussian
            noise is calibrated to (ε, δ − D).  Default: what the ledger
            recorded for a resumed session, else ``delta / 10`` (about +0.6%
            σ at (1, 1e-6)); 0 refuses such releases.  Fixed at creation.
        limits: the largest request a release may make (expression nodes, plan
            steps, nesting, literal values, output cells), checked from public
            inputs before the charge; default :class:`~dpframe.plan.estimate.ResourceLimits`.

    Example:
        >>> import dpframe as dp
        >>> session = dp.Session(epsilon=1.0, ledger=":memory:")
        >>> session.remaining
        Budget(epsilon=1, delta=0)
    """

    # -- loading data --------------------------------------------------------

    def private_frame(
        self,
        df: pd.DataFrame | DaskDataFrame,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        categories: Mapping[str, Sequence[Hashable]] | None = None,
        *,
        dtypes: Mapping[str, str] | None = None,
        privacy_unit: str | PrivacyUnit | None = None,
        max_rows_per_unit: int | None = None,
        max_groups_per_unit: int | None = None,
    ) -> PrivateFrame:
        """Protect a DataFrame: a :class:`PrivateFrame` that answers only with noisy releases.

        Example:
            >>> pf = session.private_frame(  # doctest: +SKIP
            ...     df, bounds={"wage": (0, 5000)}, categories={"region": ["south", "west"]})

        The DataFrame is held by reference, not copied.

        Args:
            df: the private data.  Neighbouring datasets differ by one row, or,
                with ``privacy_unit``, by all the rows of one unit.  A dask
                DataFrame stays partitioned on its cluster (docs/backends.md).
            bounds: public clamping bounds ``{column: (low, high)}`` for
                numeric columns to be summed or averaged.
            categories: public keys ``{column: [key, ...]}`` for group-bys;
                rows with other values are dropped from grouped results.
            dtypes: declared kinds ``{column: "numeric" | "integer" | "boolean" |
                "text"}``; a column with ``bounds`` is numeric by declaration
                (``"integer"``: numeric, and its quantiles choose among whole
                numbers).  Values are read as declared (one that does not
                convert becomes missing), so no kind is inferred from the
                private values.  A kind ending in ``" not null"``
                (``"integer not null"``) declares a value in every row: a
                missing one is read as a public fill (the bounds' midpoint,
                rounded down for integers; 0; False; ""; the first date), and
                ``describe()`` shows one row count in all such columns.
            privacy_unit: the column identifying a person (or household...)
                when one unit can have several rows, or a :class:`~dpframe.PrivacyUnit`
                (which then also holds the two limits below).
            max_rows_per_unit: with ``privacy_unit``: keep at most this many
                rows per unit (a uniformly random subset from the secure
                source; this makes a bounded copy) and multiply every
                sensitivity by it.  Rows with a missing unit id count as units
                of their own.
            max_groups_per_unit: with ``privacy_unit``: when a group-by's keys
                are discovered privately, each unit's rows are limited to at
                most this many keys (a secure random choice), so one unit can
                add at most this many new keys (default: ``max_rows_per_unit``).

        Raises:
            SchemaError: for an empty frame, unknown columns, invalid bounds
                or categories, or a privacy-unit setting other than the one
                the session's first frame fixed in the ledger (row level, or
                the unit column and ``max_rows_per_unit``): one budget, one
                kind of neighbour.
            LedgerError: if the ledger holds this session and data with a
                different budget or accounting.

        Warns:
            BudgetResetWarning: a column of ``df`` matches (in any row order,
                dtype or name) data that another session in the ledger has
                spent on: a new session name starts a separate budget.
        """
        source, schema = self.load(
            df,
            bounds,
            categories,
            dtypes=dtypes,
            privacy_unit=privacy_unit,
            max_rows_per_unit=max_rows_per_unit,
            max_groups_per_unit=max_groups_per_unit,
        )
        return frame_of(FrameHandle(self, source, schema))

    def read_csv(
        self,
        path: str | os.PathLike[str],
        bounds: Mapping[str, tuple[float, float]] | None = None,
        categories: Mapping[str, Sequence[Hashable]] | None = None,
        *,
        dtypes: Mapping[str, str] | None = None,
        privacy_unit: str | PrivacyUnit | None = None,
        max_rows_per_unit: int | None = None,
        max_groups_per_unit: int | None = None,
        backend: str = "pandas",
        **read_csv_kwargs: Any,
    ) -> PrivateFrame:
        """Read a CSV file straight into a :class:`PrivateFrame` (see :meth:`private_frame`).

        Example:
            >>> pf = session.read_csv("cps.csv", bounds={"wage": (0, 5000)})  # doctest: +SKIP

        ``backend="dask"`` opens it (or a glob of files) lazily as a partitioned
        dask DataFrame instead of reading it into memory (needs ``dpframe[dask]``).
        """
        df = read_data(pd.read_csv, "csv", path, backend, read_csv_kwargs)
        return self.private_frame(
            df,
            bounds,
            categories,
            dtypes=dtypes,
            privacy_unit=privacy_unit,
            max_rows_per_unit=max_rows_per_unit,
            max_groups_per_unit=max_groups_per_unit,
        )

    def read_parquet(
        self,
        path: str | os.PathLike[str],
        bounds: Mapping[str, tuple[float, float]] | None = None,
        categories: Mapping[str, Sequence[Hashable]] | None = None,
        *,
        dtypes: Mapping[str, str] | None = None,
        privacy_unit: str | PrivacyUnit | None = None,
        max_rows_per_unit: int | None = None,
        max_groups_per_unit: int | None = None,
        backend: str = "pandas",
        **read_parquet_kwargs: Any,
    ) -> PrivateFrame:
        """Read a Parquet file (needs pyarrow) into a :class:`PrivateFrame`.

        Example:
            >>> pf = session.read_parquet("cps.parquet", {"wage": (0, 5000)})  # doctest: +SKIP

        ``backend="dask"`` opens it (or a directory of files) lazily as a
        partitioned dask DataFrame instead of reading it into memory.
        """
        df = read_data(pd.read_parquet, "parquet", path, backend, read_parquet_kwargs)
        return self.private_frame(
            df,
            bounds,
            categories,
            dtypes=dtypes,
            privacy_unit=privacy_unit,
            max_rows_per_unit=max_rows_per_unit,
            max_groups_per_unit=max_groups_per_unit,
        )

    # -- SQL (docs/sql.md) ----------------------------------------------------

    @property
    def _sql_tables(self) -> Catalog:
        """The tables this session's SQL queries name (created on first use)."""
        found = self.__dict__.get("_sql_catalog")
        if found is None:
            found = self.__dict__["_sql_catalog"] = Catalog()
        return found

    def register(self, name: str, table: object) -> None:
        """Name a table for :meth:`sql`: a private frame of this session, or a public DataFrame.

        Example:
            >>> session.register("cps", pf)  # doctest: +SKIP
            >>> regions = pd.DataFrame({"region": ["south"], "pop_m": [126.0]})  # doctest: +SKIP
            >>> session.register("regions", regions)  # doctest: +SKIP

        A public DataFrame is a lookup table: queries may JOIN it to a
        private table (``DataFrame.merge`` of the facade, one row per key),
        never select from it alone.  Registering a name again replaces it.
        """
        self._sql_tables.register(name, table, self)

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
        """Answer a SQL query over private tables with noisy results, for one budget.

        Example:
            >>> session.register("cps", pf)  # doctest: +SKIP
            >>> session.sql(  # doctest: +SKIP
            ...     "SELECT region, AVG(wage) FROM cps GROUP BY region", epsilon=0.2)

        DuckDB's dialect, built as its pandas spelling:
        ``SELECT region, AVG(wage) FROM cps WHERE education >= 12 GROUP BY region``
        is ``pf[pf.education >= 12].groupby("region")["wage"].mean(...)``: the
        same node, charged once.  ``EXPLAIN SELECT ...`` returns what
        :meth:`explain` says of it, spending nothing.  See docs/sql.md.

        ``tables=`` names more private frames of this session for this query
        only (``%%dpsql`` passes the notebook's variables); registered names
        win, and anything but a private frame of this session is ignored.
        The same query asked again (the same node, privacy parameters and
        data) is answered from the ledger, free; ``fresh=True`` asks for a
        new, charged release.

        Returns:
            The facade's release for one aggregate without GROUP BY, else a
            DataFrame (one row per group, keys as the index) with intervals.

        Raises:
            SQLSyntaxError, SQLRefusedError, SQLError: before anything is charged.

        Privacy: the request (``epsilon=``, or ``rho=``; ``delta=`` pays for
        finding undeclared GROUP BY keys privately) is split equally over the
        aggregates of the query (``weights=``: positive integers, one per
        aggregate) in one charge; an aggregate used only by HAVING or ORDER BY
        is released and charged too.  HAVING, ORDER BY and LIMIT act on the
        released values (post-processing, free).

        Accuracy: each aggregate as its facade method at its share of the
        request; ``dp.ci(answer)`` gives the intervals.
        """
        require_parser()
        from dpframe.api.sql.run import run_sql  # sqlglot: an optional dependency

        catalog = self._sql_tables if tables is None else self._sql_tables.with_frames(tables, self)
        with fresh_release(fresh), answers_collected() as answers:
            result = run_sql(
                self,
                catalog,
                query,
                epsilon=epsilon,
                delta=delta,
                rho=rho,
                privacy=privacy,
                weights=weights,
            )
        return told(result, answers, thin=False)
