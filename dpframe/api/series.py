"""``PrivateSeries``: one column (or column expression) of a private frame.

Operators build expressions (free); ``count``, ``sum``, ``mean``, ``var`` and
``std`` release noisy aggregates, charged to the session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from dpframe.api import aggregation, binning, elementwise, recoding, relations, row_copies, tables
from dpframe.api.frame import PrivateFrame, _to_expr
from dpframe.api.guard import RowGuard
from dpframe.api.node_builders import (
    histogram_node,
    mode_node,
    quantile_node,
    request_of,
    require_bounds,
)
from dpframe.errors import SchemaError
from dpframe.mechanisms.aggregates import reordered
from dpframe.mechanisms.results import grouped_series
from dpframe.mechanisms.shares import shares
from dpframe.plan.expressions import Clip, Col, Expr
from dpframe.plan.nodes import Aggregate, GroupKey, Statistic, describe_plan
from dpframe.plan.releases import ApproxBounds
from dpframe.plan.schema import ColumnInfo, check_bounds, infer_column

if TYPE_CHECKING:
    from dpframe.api.accessors import DatetimeAccessor, StringAccessor
    from dpframe.mechanisms.results import Release
    from dpframe.plan.privacy import Number, Privacy, PrivacyRequest

__all__ = ["PrivateSeries", "require_bounds"]


class PrivateSeries(RowGuard):
    """A column expression over a private frame; never yields raw values."""

    __slots__ = ("_expr", "_frame", "_info")

    _frame: PrivateFrame
    _expr: Expr
    _info: ColumnInfo

    @classmethod
    def _create(cls, frame: PrivateFrame, expr: Expr, info: ColumnInfo) -> PrivateSeries:
        return cls._build(_frame=frame, _expr=expr, _info=info)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise SchemaError("Get a PrivateSeries by indexing a PrivateFrame: pf['column'].")

    def __setattr__(self, name: str, value: Any) -> None:
        raise SchemaError("A PrivateSeries is immutable.")

    def __getattr__(self, name: str) -> Any:
        raise self._missing(name)

    def _to_expr(self) -> Expr:
        return self._expr

    # -- public facts --------------------------------------------------------

    @property
    def name(self) -> str:
        """The column name (or the expression, for derived series)."""
        return self._info.name

    @property
    def dtype(self) -> str:
        """The dtype name (public)."""
        return self._info.dtype

    @property
    def bounds(self) -> tuple[float, float] | None:
        """Declared or derived clamping bounds."""
        return self._info.bounds

    @property
    def categories(self) -> tuple[Any, ...] | None:
        """Declared public keys."""
        return self._info.categories

    @property
    def expr(self) -> Expr:
        """The expression tree of this series."""
        return self._expr

    def __repr__(self) -> str:
        extra = f", bounds={self.bounds}" if self.bounds is not None else ""
        return f"PrivateSeries({self._expr}, dtype={self.dtype}{extra}; values private)"

    # -- expression building (free) ------------------------------------------

    def _wrap(self, expr: Expr) -> PrivateSeries:
        info = infer_column(str(expr), expr, self._frame._schema)
        return PrivateSeries._create(self._frame, expr, info)

    def _date_text(self, other: Any) -> Any:
        """A string compared with a date column is read as a date, as pandas reads it."""
        if self._info.kind != "datetime" or not isinstance(other, str):
            return other
        try:
            return pd.Timestamp(other)
        except ValueError:
            raise SchemaError(f"{other!r} is not a date; write e.g. '2020-01-31'.") from None

    def _binary(self, other: Any, op: str, reverse: bool = False) -> PrivateSeries:
        left, right = self._expr, _to_expr(self._date_text(other), self._frame)
        if reverse:
            left, right = right, left
        method = {
            "+": Expr.__add__,
            "-": Expr.__sub__,
            "*": Expr.__mul__,
            "/": Expr.__truediv__,
            "==": Expr.__eq__,
            "!=": Expr.__ne__,
            "<": Expr.__lt__,
            "<=": Expr.__le__,
            ">": Expr.__gt__,
            ">=": Expr.__ge__,
            "&": Expr.__and__,
            "|": Expr.__or__,
        }[op]
        return self._wrap(method(left, right))

    def __add__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "+")

    def __radd__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "+", reverse=True)

    def __sub__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "-")

    def __rsub__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "-", reverse=True)

    def __mul__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "*")

    def __rmul__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "*", reverse=True)

    def __pow__(self, exponent: Any) -> PrivateSeries:
        """``x ** k`` for a whole k from 1 to 4: the product ``x * ... * x`` (interval bounds)."""
        if isinstance(exponent, bool) or not isinstance(exponent, (int, np.integer)):
            raise SchemaError(
                "A private column takes whole powers 1 to 4 (x ** 2); for other powers derive "
                "the column before loading."
            )
        if not 1 <= int(exponent) <= 4:
            raise SchemaError(f"x ** {int(exponent)}: a private column takes whole powers 1 to 4.")
        result = self
        for _ in range(int(exponent) - 1):
            result = result * self
        return result

    def __truediv__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "/")

    def __rtruediv__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "/", reverse=True)

    def __eq__(self, other: object) -> PrivateSeries:  # type: ignore[override]
        return self._binary(other, "==")

    def __ne__(self, other: object) -> PrivateSeries:  # type: ignore[override]
        return self._binary(other, "!=")

    def __lt__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "<")

    def __le__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "<=")

    def __gt__(self, other: Any) -> PrivateSeries:
        return self._binary(other, ">")

    def __ge__(self, other: Any) -> PrivateSeries:
        return self._binary(other, ">=")

    def __and__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "&")

    def __rand__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "&", reverse=True)

    def __or__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "|")

    def __ror__(self, other: Any) -> PrivateSeries:
        return self._binary(other, "|", reverse=True)

    def __invert__(self) -> PrivateSeries:
        return self._wrap(~self._expr)

    def __neg__(self) -> PrivateSeries:
        return self._wrap(-self._expr)

    def __abs__(self) -> PrivateSeries:
        return self._wrap(abs(self._expr))

    __hash__ = None  # type: ignore[assignment]

    def abs(self) -> PrivateSeries:
        """Absolute value (free)."""
        return self._wrap(abs(self._expr))

    def isin(self, values: Iterable[Any]) -> PrivateSeries:
        """True where the value is one of the public ``values`` (free)."""
        return self._wrap(self._expr.isin(values))

    def between(self, left: Any, right: Any) -> PrivateSeries:
        """``left <= x <= right`` (free)."""
        low, high = self._date_text(left), self._date_text(right)
        return self._wrap(
            self._expr.between(_to_expr(low, self._frame), _to_expr(high, self._frame))
        )

    def isna(self) -> PrivateSeries:
        """True where missing (free)."""
        return self._wrap(self._expr.isna())

    def notna(self) -> PrivateSeries:
        """True where present (free)."""
        return self._wrap(self._expr.notna())

    def clip(self, lower: float, upper: float) -> PrivateSeries:
        """Clamp to public ``[lower, upper]``; the result has these bounds (free)."""
        low, high = check_bounds(self.name, (lower, upper))
        return self._wrap(Clip(self._expr, low, high))

    #: Public bins, as ``pandas.cut`` (free); see :func:`dpframe.api.binning.cut`.
    cut = binning.cut
    #: Bins at private quantiles, as ``pandas.qcut`` (charged); see ``dpframe.api.binning.qcut``.
    qcut = binning.qcut
    #: Several aggregates in one charge, as ``pandas.Series.agg``; see ``dpframe.api.aggregation``.
    agg = aggregation.series_agg
    #: How many declared keys occur (one noisy histogram); see ``dpframe.api.tables``.
    nunique = tables.nunique

    # -- releases ------------------------------------------------------------

    def _aggregate(
        self,
        statistic: Statistic,
        request: PrivacyRequest,
    ) -> Release:
        bounds = None if statistic == "count" else require_bounds(self._info, statistic)
        label = f"{statistic}({self._expr}){describe_plan(self._frame._plan)}"
        agg = Aggregate(self._frame._plan, statistic, self._expr, bounds, (), label, request)
        return cast("Release", self._frame._session.run(agg))

    def count(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> Release:
        """The number of non-missing values.

        Privacy: sensitivity 1; discrete Laplace (ε) or discrete Gaussian (ρ).

        Accuracy: unbiased, noise scale 1/ε (Laplace) or 1/sqrt(2ρ) (Gaussian σ).
        """
        return self._aggregate("count", request_of(epsilon, delta, rho, privacy))

    def sum(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> Release:
        """The sum of values clamped to the column's bounds [L, U].

        Privacy: sensitivity max(|L|, |U|) (missing values add nothing, ±inf
        is clamped); discrete Laplace (ε) or discrete Gaussian (ρ) on a
        power-of-two grid.

        Accuracy: unbiased up to clamping; noise scale max(|L|, |U|)/ε
        (+0.1% grid widening).  A boolean column (``isna()``, a comparison) is
        summed as a count of its true rows: a whole number, noise scale 1/ε.
        """
        request = request_of(epsilon, delta, rho, privacy)
        if self._info.kind == "boolean":
            return relations.count_true(self, request)
        return self._aggregate("sum", request)

    def mean(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> Release:
        """The mean of values clamped to [L, U]; stays inside [L, U], also for no rows.

        Privacy: a twentieth of the budget to the non-missing count
        (sensitivity 1), a twentieth to a first sum of values minus the
        midpoint (sensitivity (U − L)/2) that locates the data, the rest to
        the sum of values minus that rough mean ĉ (sensitivity
        max(U − ĉ, ĉ − L)); on small data (noisy count under 10 noise SDs) a
        second count and the midpoint sum share the rest instead
        (``dpframe/mechanisms/mean.py``; per group, each cell on its own).

        Accuracy: error about max(U − ĉ, ĉ − L)/(0.9·ε·n) for n values, i.e.
        0.56–1.11 × (U − L)/(ε·n); ``ci()`` is a conservative
        (Bonferroni, interval-arithmetic) interval.
        """
        return self._aggregate("mean", request_of(epsilon, delta, rho, privacy))

    def var(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> Release:
        """The (population) variance of values clamped to [L, U], within [0, ((U − L)/2)²].

        Privacy: thirds of the budget to the count (sensitivity 1), the centred
        sum ((U − L)/2) and the centred sum of squares (((U − L)/2)²).

        Accuracy: error about 3·((U − L)/2)²/(ε·n); ``ci()`` is conservative.
        """
        return self._aggregate("var", request_of(epsilon, delta, rho, privacy))

    def quantile(
        self,
        q: float | Sequence[float] = 0.5,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        candidates: Iterable[float] | None = None,
    ) -> Any:
        """The q-quantile(s) among public candidate values, by the exponential mechanism.

        The candidates are public: by default 4,097 equally spaced values over
        the declared bounds; for a column declared integer
        (``dtypes={col: "integer"}``; the declared schema shows ``Int64``,
        never read from the values) the integers within the bounds (or
        4,097 equally spaced integers when more would fit), so the answer is a
        whole number; ``candidates=`` gives your own.

        Privacy: ε-DP (permute-and-flip over the C candidates, utility
        sensitivity max(q, 1 − q) ranks, times the privacy unit's row limit);
        a list of q splits ε evenly (stated in the ledger's label).  Only public
        inputs choose the candidates.

        Accuracy: with probability 1 − β the rank error exceeds the best
        candidate's by at most (2·max(q, 1 − q)/ε_q)·ln(C/β) (``release.scale``
        holds the 95% figure; ``explain`` states it); default candidates are
        (U − L)/4096 apart.  ``ci()`` is not available for this mechanism.

        Args:
            q: a level in [0, 1], or a list of levels (as pandas).
            epsilon: privacy cost (or ``rho=`` in zCDP sessions).
            delta: must be 0 except in approximate-DP sessions.
            rho: zCDP cost.
            privacy: the cost as one ``dp.Privacy(...)`` (instead of the three above).
            candidates: public candidate values, sorted, finite and within the
                bounds, at most 4,097 (refused before anything is charged otherwise).

        Returns:
            A :class:`Release` for a scalar q, a Series indexed by q for a list.

        Example:
            >>> pf["wage"].quantile([0.25, 0.75], epsilon=0.5)  # doctest: +SKIP
            >>> pf["wage"].median(epsilon=0.5, candidates=range(0, 5001, 10))  # doctest: +SKIP
        """
        request = request_of(epsilon, delta, rho, privacy)
        return self._frame._session.run(quantile_node(self, q, request, candidates))

    def median(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        candidates: Iterable[float] | None = None,
    ) -> Release:
        """The 0.5-quantile; Privacy and Accuracy as :meth:`quantile` (rank error (2/ε)·ln(C/β))."""
        return cast(
            "Release",
            self.quantile(
                0.5,
                epsilon=epsilon,
                delta=delta,
                rho=rho,
                privacy=privacy,
                candidates=candidates,
            ),
        )

    def approx_bounds(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> tuple[float, float]:
        """Suggested clamping bounds ``(low, high)``, found without looking at the data.

        Pass the result to ``with_bounds`` (``pf.with_bounds(wage=pf["wage"].approx_bounds(
        epsilon=0.1))``).  The column needs no bounds of its own.

        Privacy: one noisy histogram of the column over 101 fixed public bins
        ±2^k (k = −10…40, a zero bin, values beyond ±2^40 in the end bins):
        the cost of one grouped count; the choice of bins is post-processing.

        Accuracy: with probability ≥ 95% no empty bin widens the result, so it
        is at most a factor 2 wider than the occupied bins; bins too sparse to
        clear the noise (rare extremes) are left out and their values clamped.
        With too few rows for the budget it warns and returns ``(-2**40, 2**40)``.
        See :class:`~dpframe.mechanisms.bounds_family.ApproxBoundsFamily`.
        """
        node = ApproxBounds(
            plan=self._frame._plan,
            privacy=request_of(epsilon, delta, rho, privacy),
            expr=self._expr,
        )
        return cast("tuple[float, float]", self._frame._session.run(node))

    def mode(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> Any:
        """The most frequent declared category (report noisy max); only the key is released.

        Privacy: ε-DP by permute-and-flip on the counts (sensitivity 1), the same
        distribution as report-noisy-max with exponential noise; one charge for
        all categories.

        Accuracy: with probability 1 − β the returned key's count is within
        (2/ε)·ln(k/β) of the largest count, for k categories.
        """
        return self._frame._session.run(mode_node(self, request_of(epsilon, delta, rho, privacy)))

    def value_counts(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        sort: bool = True,
        normalize: bool = False,
    ) -> pd.Series:
        """Noisy counts per declared category (one charge: categories are disjoint).

        Privacy: sensitivity 1 per disjoint cell; discrete Laplace (ε) or Gaussian (ρ).
        ``normalize=True`` (shares, as pandas) and sorting are post-processing: free.

        Accuracy: each count has noise scale 1/ε; ``dp.ci(result)`` gives intervals
        (for shares, intervals that hold for every share at once:
        ``dpframe/mechanisms/shares.py``).
        """
        info = self._info
        if info.categories is None and not isinstance(self._expr, Col):
            raise SchemaError(
                f"value_counts() needs the public categories of {info.name!r}: a derived column "
                "gets them from its column's declared bounds or keys; else recode it with "
                "map({...}), or assign it (pf.assign(k=...)) and find its keys privately with "
                "pf.discover_keys('k', epsilon=..., delta=...)."
            )
        if info.categories is None:
            raise SchemaError(
                f"value_counts() needs the public categories of {info.name!r}: declare "
                f"categories={{{info.name!r}: [...]}}."
            )
        if isinstance(self._expr, Col):
            counts = self._frame.groupby(info.name).size(
                epsilon=epsilon, delta=delta, rho=rho, privacy=privacy
            )
        else:  # a derived column with public keys (e.g. cut): grouped by its expression
            plan = self._frame._plan
            key = GroupKey(info.name, self._expr, info.categories)
            label = f"count() by {self._expr}{describe_plan(plan)}"
            request = request_of(epsilon, delta, rho, privacy)
            node = Aggregate(plan, "count", None, None, (key,), label, request)
            counts = self._frame._session.run(node)
        if sort:
            order = np.argsort(-counts.to_numpy(), kind="stable")
            sorted_counts: pd.Series = counts.iloc[order]
            sorted_counts.attrs = {}
            sorted_counts.attrs["dpframe"] = reordered(counts.attrs["dpframe"], order)
            counts = sorted_counts
        return shares(counts) if normalize else counts  # shares: post-processing

    def hist(
        self,
        bins: int | Sequence[float] = 10,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> pd.Series:
        """Noisy counts per public bin; ``dp.plot(result)`` draws bars with error bars.

        ``bins=k`` cuts the declared bounds into k equal bins and clamps values
        beyond them into the end bins; explicit increasing ``bins`` edges count
        only values inside them (as ``pandas.cut``).

        Privacy: bins are disjoint, so one charge of ε covers all (sensitivity 1).

        Accuracy: each count has noise scale 1/ε (Laplace) or σ = 1/sqrt(2ρ).
        """
        agg, edges = histogram_node(self, bins, request_of(epsilon, delta, rho, privacy))
        result = self._frame._session.run(agg)
        index = pd.IntervalIndex.from_breaks(edges, closed="left", name=str(self._expr))
        meta = dataclasses.replace(result.attrs["dpframe"], index=index)
        return grouped_series(result.to_numpy(), meta, "count")

    def std(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> Release:
        """The square root of :meth:`var` (same privacy cost and guarantee)."""
        return self._aggregate("std", request_of(epsilon, delta, rho, privacy))

    #: Correlation / covariance with another column, one charge (``dpframe.api.relations``).
    corr = relations.series_relation("corr")
    cov = relations.series_relation("cov")
    #: Element-wise verbs with public constants, as pandas (free; ``dpframe.api.elementwise``).
    fillna = elementwise.fillna
    where = elementwise.where
    mask = elementwise.mask
    astype = elementwise.astype
    round = elementwise.round_values
    __floordiv__ = elementwise.floordiv
    __mod__ = elementwise.modulo
    #: numpy's bounded functions (np.log...), np.clip/np.round/np.where: expressions (the guard).
    _numpy_ufunc = elementwise.apply_ufunc
    _numpy_function = staticmethod(elementwise.numpy_function)
    #: Public recodings, as ``Series.map(dict)`` and ``Series.replace`` (``dpframe.api.recoding``).
    map = recoding.map_values
    replace = recoding.replace_values
    #: A sanitized copy by randomized response (``dpframe.api.row_copies``).
    randomized_response = row_copies.randomized_response
    #: A sanitized copy with Laplace noise per value (``dpframe.api.row_copies``).
    laplace_copy = row_copies.laplace_copy
    #: A private kernel density estimate on a grid (``dpframe.api.row_copies``).
    kde = row_copies.kde

    # -- accessors (last: a property named ``str`` hides the builtin in later annotations) --

    def __dir__(self) -> list[str]:
        """What works on this column: ``dt`` only on dates, ``str`` only on text (as pandas)."""
        hidden = set()
        if self._info.kind != "datetime":
            hidden.add("dt")
        if self._info.kind not in ("text", "categorical"):
            hidden.add("str")
        return [name for name in super().__dir__() if name not in hidden]

    @property
    def dt(self) -> DatetimeAccessor:
        """Calendar fields and periods of a date column, as ``Series.dt`` (free)."""
        from dpframe.api.accessors import DatetimeAccessor

        return DatetimeAccessor(self)

    @property
    def str(self) -> StringAccessor:
        """Text methods of a text column, as ``Series.str`` (free)."""
        from dpframe.api.accessors import StringAccessor

        return StringAccessor(self)
