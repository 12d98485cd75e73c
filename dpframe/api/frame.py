"""``PrivateFrame``: a pandas-like view of private data that answers only with releases.

Selecting, filtering and deriving columns build an immutable plan and are
free; aggregations hand the plan to the session, which charges the budget
and returns a :class:`~dpframe.mechanisms.results.Release`.  Nothing here yields a raw
value: ``repr`` shows the public schema, and ``len``, iteration, ``head``,
``values``, ``to_numpy``, ``np.asarray``, pickling and unknown attributes raise.
"""

from __future__ import annotations

import dataclasses
import html
import warnings
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from dpframe.api import aggregation, elementwise, lookup, relations, tables, transforms
from dpframe.api.guard import RowGuard
from dpframe.api.teaching import REVEALING
from dpframe.errors import SchemaError
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.nodes import Aggregate, Assign, Filter, Plan, describe_plan
from dpframe.plan.releases import DiscoverKeys
from dpframe.plan.schema import (
    ColumnInfo,
    Schema,
    check_bounds,
    check_categories,
    infer_column,
)

if TYPE_CHECKING:
    from dpframe.api.groupby import PrivateGroupBy
    from dpframe.api.series import PrivateSeries
    from dpframe.api.session import Session
    from dpframe.mechanisms.results import Release
    from dpframe.plan.privacy import Number, Privacy

__all__ = ["PrivateFrame", "describe_plan"]


class PrivateFrame(RowGuard):
    """A private table: public schema, private rows, answers only through releases.

    Create one with :meth:`Session.private_frame` or :meth:`Session.read_csv`.

    Example:
        >>> pf[pf["education"] >= 12]["wage"].mean(epsilon=0.1)  # doctest: +SKIP
    """

    __slots__ = ("_plan", "_schema", "_session")

    _session: Session
    _plan: Plan
    _schema: Schema

    @classmethod
    def _create(cls, session: Session, plan: Plan, schema: Schema) -> PrivateFrame:
        return cls._build(_session=session, _plan=plan, _schema=schema)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise SchemaError("Create a PrivateFrame with session.private_frame(df, bounds=..., ...).")

    def __setattr__(self, name: str, value: Any) -> None:
        raise SchemaError("A PrivateFrame is immutable; use assign() or with_bounds().")

    def _derive(self, plan: Plan, schema: Schema) -> PrivateFrame:
        return PrivateFrame._create(self._session, plan, schema)

    # -- public schema -------------------------------------------------------

    @property
    def session(self) -> Session:
        """The session that charges this frame's releases."""
        return self._session

    @property
    def plan(self) -> Plan:
        """The immutable query plan behind this frame."""
        return self._plan

    @property
    def columns(self) -> pd.Index:
        """Column names (public)."""
        names: pd.Index = pd.Index(self._schema.names)
        return names

    @property
    def dtypes(self) -> pd.Series:
        """Column dtypes (public)."""
        dtypes: pd.Series = pd.Series({c.name: c.dtype for c in self._schema.columns}, dtype=object)
        return dtypes

    @property
    def bounds(self) -> dict[str, tuple[float, float]]:
        """Declared or derived clamping bounds per column."""
        return {c.name: c.bounds for c in self._schema.columns if c.bounds is not None}

    @property
    def categories(self) -> dict[str, tuple[Hashable, ...]]:
        """Declared public keys per column."""
        return {c.name: c.categories for c in self._schema.columns if c.categories is not None}

    @property
    def schema(self) -> pd.DataFrame:
        """The public schema as a table: kind, dtype, bounds and categories per column."""
        return self._schema.to_frame()

    def column_info(self, name: str) -> ColumnInfo:
        """Public facts about one column."""
        return self._schema.get(name)

    def __repr__(self) -> str:
        lines = [f"PrivateFrame: {len(self._schema.columns)} columns, rows private"]
        for info in self._schema.columns:
            extra = ""
            if info.bounds is not None:
                extra += f" bounds={info.bounds}"
            if info.categories is not None and info.kind != "boolean":
                extra += f" categories={list(info.categories)}"
            lines.append(f"  {info.name}: {info.dtype}{extra}")
        filters = describe_plan(self._plan)
        if filters:
            lines.append(f"  plan:{filters}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
                html.escape(c.name),
                html.escape(c.dtype),
                "" if c.bounds is None else html.escape(str(c.bounds)),
                "" if c.categories is None else html.escape(", ".join(map(str, c.categories))),
            )
            for c in self._schema.columns
        )
        return (
            "<div class='dpframe-schema'><b>PrivateFrame</b> "
            "<span style='color:#666'>(rows private; answers only with releases)</span>"
            "<table><thead><tr><th>column</th><th>dtype</th><th>bounds</th>"
            f"<th>categories</th></tr></thead><tbody>{rows}</tbody></table></div>"
        )

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_") and name in self._schema and name not in REVEALING:
            return self[name]  # pf.wage; a pandas name that reveals rows wins, as in pandas
        raise self._missing(name, f" Columns: {', '.join(self._schema.names)}.")

    def __dir__(self) -> list[str]:
        names = (n for n in self._schema.names if n.isidentifier() and n not in REVEALING)
        return sorted(set(super().__dir__()) | set(names))

    # -- building plans (free) -----------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        from dpframe.api.series import PrivateSeries

        if isinstance(key, str):
            return PrivateSeries._create(self, Col(key), self._schema.get(key))
        if isinstance(key, (PrivateSeries, Expr)):
            return self.filter(key)
        if isinstance(key, (list, tuple)) and all(isinstance(k, str) for k in key):
            return self.select(list(key))
        raise SchemaError(
            "Index a PrivateFrame with a column name, a list of names, or a condition."
        )

    def select(self, columns: Sequence[str]) -> PrivateFrame:
        """Keep only ``columns`` (free)."""
        return self._derive(self._plan, self._schema.select(list(columns)))

    def filter(self, condition: PrivateSeries | Expr) -> PrivateFrame:
        """Keep the rows where ``condition`` holds (free; missing counts as false)."""
        expr = _to_expr(condition, self)
        info = infer_column("_condition", expr, self._schema)
        if info.kind != "boolean":
            raise SchemaError("A filter needs a condition (a comparison, isin, &, |, ~).")
        return self._derive(Filter(self._plan, expr), self._schema)

    def assign(self, **columns: PrivateSeries | Expr | float | int | bool) -> PrivateFrame:
        """Add derived columns; bounds follow by interval arithmetic (see ``with_bounds``)."""
        plan, schema = self._plan, self._schema
        for name, value in columns.items():
            expr = _to_expr(value, self)
            info = infer_column(name, expr, schema)
            plan = Assign(plan, name, expr)
            schema = schema.with_column(info)
        return self._derive(plan, schema)

    def with_bounds(self, **bounds: tuple[float, float]) -> PrivateFrame:
        """Declare (public) clamping bounds for numeric columns, e.g. ``with_bounds(x=(0, 1))``."""
        schema = self._schema
        for name, pair in bounds.items():
            info = schema.get(name)
            if not info.summable:
                raise SchemaError(f"{name!r} is not numeric; bounds apply to numeric columns.")
            schema = schema.with_column(
                ColumnInfo(
                    info.name, info.kind, info.dtype, check_bounds(name, pair), info.categories
                )
            )
        return self._derive(self._plan, schema)

    def with_categories(self, **categories: Sequence[Hashable]) -> PrivateFrame:
        """Declare (public) group keys for columns, e.g. ``with_categories(region=[...])``."""
        schema = self._schema
        for name, cats in categories.items():
            info = schema.get(name)
            values = check_categories(name, cats, info.kind)
            kind = "categorical" if info.kind == "text" else info.kind
            schema = schema.with_column(dataclasses.replace(info, kind=kind, categories=values))
        return self._derive(self._plan, schema)

    def groupby(self, by: Any, keys: Any = None) -> PrivateGroupBy:
        """Group by columns with declared categories (every declared key is returned).

        ``by`` is a column name, a derived column with public keys
        (``pf["age"].cut(bins)``, as pandas' ``df.groupby(pd.cut(...))``) or a list.

        ``keys=`` a public DataFrame of the allowed key combinations (one row
        each) groups by those instead of the cross product of declared
        categories (``dpframe.api.keysets``).
        """
        from dpframe.api.groupby import PrivateGroupBy
        from dpframe.api.keysets import group_columns

        frame, names = group_columns(self, by)  # derived keys (pf["age"].cut(...)) as columns
        return PrivateGroupBy._create(frame, tuple(names), None, keys)

    # -- releases ------------------------------------------------------------

    def above_threshold(
        self,
        queries: Any,
        threshold: float,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        max_hits: int = 1,
        numeric: bool = False,
    ) -> Any:
        """Which row conditions hold for more than ``threshold`` rows (the sparse vector technique).

        ``queries`` is a dict ``{name: condition}`` or a list of conditions; the
        conditions are examined in order and the names of those found above the
        threshold are returned, stopping after ``max_hits``.

        Privacy: ε-DP in total however many queries are asked (Lyu, Su, Li 2017,
        Alg. 1): ε/2 for the noisy threshold (scale 2/ε), ε/2 for the queries
        (scale 4c/ε, c = ``max_hits``).  ``numeric=True`` splits ε in thirds and
        also releases a noisy count of each hit (scale 3c/ε).

        Accuracy: with probability 1 − β every reported query has a count above
        threshold − α and every passed-over one below threshold + α, with
        α = 8c·(ln k + ln(4c/β))/ε for k queries (12c·... for ``numeric``).

        Returns:
            The list of names found above the threshold; with ``numeric=True`` a
            Series of their noisy counts.
        """
        from dpframe.api.node_builders import request_of, sparse_vector_node

        request = request_of(epsilon, delta, rho, privacy)
        node = sparse_vector_node(self, queries, threshold, max_hits, numeric, request)
        return self._session.run(node)

    def discover_keys(
        self,
        column: str | Sequence[str],
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> Any:
        """The keys of ``column`` that a private threshold lets through, sorted.

        A list of columns finds the combinations that occur, as a DataFrame
        for ``groupby(columns, keys=...)`` (``dpframe.api.keysets``).

        Privacy: (ε, δ)-DP and needs δ > 0: discrete Laplace counts (scale 1/ε)
        per key, released only above the smallest threshold τ with
        P(1 + noise ≥ τ) ≤ δ (Korolova et al. 2009; Desfontaines et al. 2022).
        With a privacy unit of k rows in at most g keys: scale k/ε, and each
        new key must clear P(k + noise ≥ τ) ≤ δ/g.

        Accuracy: a key with true count c is shown with probability
        P(c + noise ≥ τ) (see ``dpframe.mechanisms.partition_selection.release_probability``);
        keys with a handful of rows are usually hidden.
        """
        from dpframe.api.keysets import discover_combinations
        from dpframe.api.node_builders import request_of

        if not isinstance(column, str):
            request = request_of(epsilon, delta, rho, privacy)
            return discover_combinations(self, column, request)
        self._schema.get(column)
        node = DiscoverKeys(
            plan=self._plan, privacy=request_of(epsilon, delta, rho, privacy), column=column
        )
        return list(self._session.run(node).index)

    #: Several aggregates in one charge, as ``pandas.DataFrame.agg`` (``dpframe.api.aggregation``).
    agg = aggregation.frame_agg
    #: A grouped aggregate laid out as ``pandas.pivot_table`` (``dpframe.api.tables``).
    pivot_table = tables.pivot_table
    #: Rows where a condition string holds, parsed (never evaluated) (``dpframe.api.transforms``).
    query = transforms.query
    #: Columns under new names (``dpframe.api.transforms``).
    rename = transforms.rename
    #: Rows without missing values in a subset of columns (``dpframe.api.transforms``).
    dropna = transforms.dropna
    #: Missing values replaced by public constants (``dpframe.api.elementwise``).
    fillna = elementwise.frame_fillna
    #: A public lookup table's columns, matched on a key (``dpframe.api.lookup``).
    merge = lookup.merge
    join = lookup.join
    #: Correlation and covariance of bounded columns, one charge (``dpframe.api.relations``).
    corr = relations.corr
    cov = relations.cov
    #: Per-column missing flags, as ``DataFrame.isna`` (``dpframe.api.relations``).
    isna = relations.isna
    notna = relations.notna
    #: Per-column sums (flags counted as integers) and means, one charge (``api.relations``).
    sum = relations.frame_sum
    mean = relations.frame_mean

    def describe(
        self,
        *,
        include: str | None = None,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> pd.DataFrame:
        """A private summary (count, mean, std, quartiles) of the bounded numeric columns.

        Privacy: the request is split evenly over the columns, and within a
        column half to the moments (one ``var`` release) and half to the
        quartiles (one ``quantile`` release); the parts add up to the request.
        The whole request is checked against the budget before the first part.

        With ``include="all"`` (as pandas), the columns with declared
        categories join: count, unique, top and freq from one noisy histogram
        over the declared keys each (one more part of the split); unique counts
        the keys whose noisy count clears the count noise's one-sided 95%
        quantile (see ``dpframe/mechanisms/describe_family.py``).

        Accuracy: as for :meth:`PrivateSeries.var` and :meth:`PrivateSeries.quantile`
        at their shares of the budget; ``dp.ci(result)`` gives count, mean and
        std intervals.
        """
        from dpframe.api.node_builders import describe_node, request_of

        node = describe_node(self, request_of(epsilon, delta, rho, privacy), include)
        return self._session.run(node)  # type: ignore[no-any-return]

    def count(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> Release:
        """The number of rows (after filters), released with noise.

        Privacy: sensitivity 1 (one row added or removed); ε-DP with discrete
        Laplace noise of scale 1/ε, or ρ-zCDP with discrete Gaussian σ² = 1/(2ρ).

        Accuracy: unbiased; ``release.ci(level)`` gives the exact interval.
        """
        from dpframe.api.node_builders import request_of

        label = f"count(){describe_plan(self._plan)}"
        request = request_of(epsilon, delta, rho, privacy)
        agg = Aggregate(self._plan, "count", None, None, (), label, request)
        return cast("Release", self._session.run(agg))

    def linear_regression(
        self,
        features: Sequence[str],
        target: str,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        analysis: str = "rdp",
        radius: float = 2.0,
        steps: int = 50,
        passes: int = 1,
        step_size: float | None = None,
        progress: bool = True,
        accounting: str | None = None,
    ) -> Any:
        """Least squares by noisy projected gradient descent; a model with ``coef_``, ``predict``.

        Privacy: features and target are clamped to their declared bounds and
        rescaled (design vectors of norm ≤ 1, target in [−1, 1]); parameters
        stay in a ball of ``radius`` (per-row gradient norm ≤ radius + 1).
        ``analysis="rdp"``: ``steps`` full-batch steps, each a discrete
        Gaussian release of the gradient sum, composed in zCDP (in a
        Gaussian-DP session each step is charged its μ², for the discrete
        Gaussian actually sampled).
        ``analysis="iteration"``: ``passes`` of per-row noisy SGD, only the
        final weights released, charged by amplification by iteration
        (Feldman, Mironov, Talwar, Thakurta 2018, Thm 22, worst row).  A noisy
        count (1/10 of ρ) normalises the gradients / sets the pass length.
        Needs δ > 0 (Gaussian noise).

        Accuracy: see ``dpframe.mechanisms.regression``; the notebook
        ``notebooks/regression.ipynb`` compares with ordinary least squares.
        """
        from dpframe.api.node_builders import regression_node, request_of

        options = {
            "analysis": _analysis(analysis, accounting),
            "radius": radius,
            "steps": steps,
            "passes": passes,
            "step_size": step_size,
            "progress": progress,
        }
        request = request_of(epsilon, delta, rho, privacy)
        return self._session.run(
            regression_node(self, "squared", features, target, request, options)
        )

    def logistic_regression(
        self,
        features: Sequence[str],
        target: str,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        analysis: str = "rdp",
        radius: float = 2.0,
        steps: int = 50,
        passes: int = 1,
        step_size: float | None = None,
        progress: bool = True,
        accounting: str | None = None,
    ) -> Any:
        """Logistic regression (boolean or [0, 1] target) by noisy projected gradient descent.

        Privacy: as :meth:`linear_regression`, with the logistic loss
        (per-row gradient norm ≤ 1, smoothness 1/4).

        Accuracy: see ``dpframe.mechanisms.regression``.
        """
        from dpframe.api.node_builders import regression_node, request_of

        options = {
            "analysis": _analysis(analysis, accounting),
            "radius": radius,
            "steps": steps,
            "passes": passes,
            "step_size": step_size,
            "progress": progress,
        }
        request = request_of(epsilon, delta, rho, privacy)
        return self._session.run(
            regression_node(self, "logistic", features, target, request, options)
        )

    def synthesize(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        method: str = "mst",
        bins: Any = None,
        rows: int | None = None,
        progress: bool = True,
    ) -> pd.DataFrame:
        """A public synthetic copy of the rows (MST), one charge (``dpframe.api.synthesis``).

        Privacy: MST's three parts (noisy 1-way marginals, a spanning tree of
        pairs chosen privately, their noisy 2-way marginals), the rows sampled
        from a tree model fitted to them (post-processing).

        Accuracy: ``dp.synth_report(copy)`` gives each marginal's error bars
        and the pairs the model kept.
        """
        from dpframe.api.synthesis import synthesize

        return synthesize(
            self,
            epsilon=epsilon,
            delta=delta,
            rho=rho,
            privacy=privacy,
            method=method,
            bins=bins,
            rows=rows,
            progress=progress,
        )


def _analysis(analysis: str, accounting: str | None) -> str:
    """``analysis=``, or the deprecated ``accounting=`` it replaces (with a FutureWarning)."""
    if accounting is None:
        return analysis
    warnings.warn(
        "The regressions' accounting= is now analysis= (accounting= names the session's "
        "accounting); accounting= will be removed.",
        FutureWarning,
        stacklevel=3,
    )
    return accounting


def _to_expr(value: Any, frame: PrivateFrame | None = None) -> Expr:
    """The expression of a series, literal or expression.

    With ``frame``, a series taken from another frame is accepted only if it
    means the same on ``frame``: same data, and the same definitions of every
    derived column it reads (otherwise it would silently be re-bound).
    """
    from dpframe.api.series import PrivateSeries
    from dpframe.plan.inline import resolved_key

    if isinstance(value, PrivateSeries):
        if frame is not None and value._frame is not frame:
            here = resolved_key(frame._plan, value._expr)
            there = resolved_key(value._frame._plan, value._expr)
            if here != there:
                raise SchemaError(
                    f"{value._expr} comes from another frame where it means something else "
                    "(other data or other derived columns); build it from this frame."
                )
        return value._expr
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float, str)):
        from dpframe.plan.expressions import Lit

        return Lit(value)
    from dpframe.plan.temporal import DateLit, is_date

    if is_date(value):  # pd.Timestamp, datetime, date, numpy.datetime64
        return DateLit(value)
    raise SchemaError(f"Cannot use a {type(value).__name__} as a column expression.")
