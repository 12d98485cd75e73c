"""From the facade's arguments to release nodes: validation against the public schema.

Each function checks what an analyst passed to a release method (columns,
bounds, categories, parameters) and builds the node the engine releases.
Nothing here reads data or charges anything; a bad argument raises a
:class:`~dpframe.DPError` subclass before any node exists.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterable, Mapping, Sequence, Sized
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from dpframe.backends.declared import INTEGER_DTYPE
from dpframe.errors import InvalidBudgetError, ResourceLimitError, SchemaError
from dpframe.mechanisms.aggregates import MAX_CELLS
from dpframe.mechanisms.kde import check_bandwidth
from dpframe.mechanisms.quantiles import check_quantile, integer_candidates
from dpframe.plan.expressions import Bucket, Col, Expr
from dpframe.plan.nodes import Aggregate, GroupKey, describe_plan
from dpframe.plan.privacy import Number, PrivacyRequest
from dpframe.plan.releases import (
    MAX_CANDIDATES,
    ArgMax,
    Describe,
    GroupedQuantile,
    KernelDensity,
    Mode,
    Quantile,
    Regression,
    SanitizedCopy,
    SparseVector,
)
from dpframe.plan.releases.selection import check_candidates
from dpframe.plan.schema import ColumnInfo, infer_column

if TYPE_CHECKING:
    from dpframe.api.frame import PrivateFrame
    from dpframe.api.series import PrivateSeries

__all__ = [
    "argmax_node",
    "copy_node",
    "describe_node",
    "grouped_quantile_node",
    "histogram_node",
    "is_integer_kind",
    "kde_node",
    "mode_node",
    "quantile_candidates",
    "quantile_node",
    "regression_node",
    "request_of",
    "require_bounds",
    "sparse_vector_node",
]


def request_of(
    epsilon: Number | None,
    delta: Number | None,
    rho: Number | None,
    given: PrivacyRequest | None = None,
) -> PrivacyRequest:
    """The privacy request of a release method: ``privacy=`` or ``epsilon=``/``delta=``/``rho=``.

    Raises:
        InvalidBudgetError: when both forms are given, or ``privacy=`` is not a
            :class:`~dpframe.Privacy`.
    """
    if given is None:
        return PrivacyRequest(epsilon=epsilon, delta=delta, rho=rho)
    if not isinstance(given, PrivacyRequest):
        raise InvalidBudgetError(
            "privacy= takes dp.Privacy(epsilon=..., delta=..., rho=...), not a "
            f"{type(given).__name__}."
        )
    if epsilon is not None or delta is not None or rho is not None:
        raise InvalidBudgetError(
            "Give the cost either as privacy=dp.Privacy(...) or as epsilon=/delta=/rho=, not both."
        )
    return given


def require_bounds(info: ColumnInfo, statistic: str) -> tuple[float, float]:
    """The clamping bounds of a column, or an error that says which bounds to add."""
    if not info.summable:
        raise SchemaError(
            f"{statistic}() needs a numeric column; {info.name!r} is {info.kind}. "
            "Use count(), value counts by groupby(), or derive a number first."
        )
    if info.bounds is None:
        raise SchemaError(
            f"{statistic}() of {info.name!r} needs public clamping bounds: pass "
            f"bounds={{{info.name!r}: (low, high)}} when loading, or call "
            f"pf.with_bounds({info.name}=(low, high)), or clip(low, high) the expression."
        )
    return info.bounds


def _levels(qs: object) -> tuple[tuple[Fraction, ...], bool]:
    """The quantile levels asked, exactly, and whether ``q`` was a scalar (as pandas reads it)."""
    scalar = not isinstance(qs, (list, tuple, np.ndarray, pd.Index, pd.Series))
    levels_raw = [qs] if scalar else list(qs)  # type: ignore[call-overload]
    if not levels_raw:
        raise SchemaError("quantile() needs at least one level q in [0, 1].")
    return tuple(check_quantile(q) for q in levels_raw), scalar


def is_integer_kind(info: ColumnInfo) -> bool:
    """True for a column declared integer (``dtypes={col: "integer"}``) or boolean.

    The kind comes from the declared schema only (its dtype ``Int64`` is the
    declaration, never read off the data); a numeric column that merely holds
    whole numbers is not integer unless declared so.
    """
    return info.dtype == INTEGER_DTYPE or info.kind == "boolean"


def quantile_candidates(
    info: ColumnInfo, bounds: tuple[float, float], given: object
) -> tuple[float, ...]:
    """The public candidates of a quantile: ``given``, or integers for an integer column.

    ``()`` is the default 4,097-point grid over the bounds.  ``given`` must be
    sorted, finite and within the bounds (checked here and by the node, before
    anything is charged), at most :data:`~dpframe.plan.releases.MAX_CANDIDATES`.
    """
    if given is None:
        return integer_candidates(bounds) if is_integer_kind(info) else ()
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        raise SchemaError(
            "quantile(candidates=...) takes a sorted list of numbers within the column's bounds."
        )
    size = len(given) if isinstance(given, Sized) else None
    if size is not None and size > MAX_CANDIDATES:
        raise SchemaError(
            f"quantile(): at most {MAX_CANDIDATES:,} candidates, got {size:,}; choose fewer."
        )
    values = list(itertools.islice(given, MAX_CANDIDATES + 1))
    if not values:
        raise SchemaError("quantile(candidates=...) is empty; give at least one value.")
    if not all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in values):
        raise SchemaError("quantile(): candidates must be numbers (no text, booleans or None).")
    chosen = tuple(float(v) for v in values)
    check_candidates(chosen, bounds, "quantile()")
    return chosen


def quantile_node(
    series: PrivateSeries, qs: object, request: PrivacyRequest, candidates: object = None
) -> Quantile:
    """One or several quantiles of a bounded column."""
    levels, scalar = _levels(qs)
    bounds = require_bounds(series._info, "quantile")
    return Quantile(
        plan=series._frame._plan,
        privacy=request,
        expr=series._expr,
        bounds=bounds,
        levels=levels,
        scalar=scalar,
        candidates=quantile_candidates(series._info, bounds, candidates),
    )


def grouped_quantile_node(
    frame: PrivateFrame,
    keys: tuple[GroupKey, ...],
    column: str | None,
    qs: object,
    request: PrivacyRequest,
    candidates: object = None,
) -> GroupedQuantile:
    """One or several quantiles of a bounded column per group of declared keys."""
    if column is None:
        raise SchemaError("Select a column first: grouped['column'].quantile(...) or .median(...).")
    undeclared = [k.name for k in keys if not k.categories]
    if undeclared:
        name = undeclared[0]
        raise SchemaError(
            f"A quantile per group needs the declared keys of {name!r}: pass "
            f"categories={{{name!r}: [...]}} when loading or pf.with_categories({name}=[...]). "
            f"To find them privately, run pf.discover_keys({name!r}, epsilon=..., delta=...) "
            "first and declare what it found."
        )
    levels, scalar = _levels(qs)
    info = frame._schema.get(column)
    bounds = require_bounds(info, "quantile")
    return GroupedQuantile(
        plan=frame._plan,
        privacy=request,
        expr=Col(column),
        bounds=bounds,
        levels=levels,
        by=keys,
        scalar=scalar,
        candidates=quantile_candidates(info, bounds, candidates),
    )


def mode_node(series: PrivateSeries, request: PrivacyRequest) -> Mode:
    """The most frequent declared category."""
    info = series._info
    if info.categories is None:
        raise SchemaError(
            f"mode() needs the public categories of {info.name!r}: declare "
            f"categories={{{info.name!r}: [...]}}."
        )
    group = GroupKey(info.name, series._expr, info.categories)
    return Mode(plan=series._frame._plan, privacy=request, group=group)


def argmax_node(
    frame: PrivateFrame,
    keys: tuple[GroupKey, ...],
    agg: str,
    column: str | None,
    request: PrivacyRequest,
) -> ArgMax:
    """The key whose count, sum or mean is largest."""
    if agg not in ("count", "sum", "mean"):
        raise SchemaError("argmax(agg=...) must be 'count', 'sum' or 'mean'.")
    if agg != "count" and column is None:
        raise SchemaError(f"argmax('{agg}') needs a column: argmax('{agg}', column='...').")
    bounds = None
    if column is not None:
        info = frame._schema.get(column)
        bounds = None if agg == "count" else require_bounds(info, f"argmax('{agg}')")
    return ArgMax(
        plan=frame._plan,
        privacy=request,
        keys=keys,
        agg=agg,  # type: ignore[arg-type]  # checked above
        expr=None if column is None else Col(column),
        column=column,
        bounds=bounds,
    )


def _check_bins(series: PrivateSeries, bins: int) -> None:
    """Refuse more bins than the session's limits allow, before building their edges."""
    limits = series._frame._session.limits
    if bins > limits.max_cells:
        over = f"{bins} output cells (limit {limits.max_cells})"
    elif bins > limits.max_list_items:
        over = f"{bins} values in one list of keys, bin edges (limit {limits.max_list_items})"
    else:
        return
    raise ResourceLimitError(
        f"This request is too large to evaluate; nothing was charged. hist(bins={bins}) "
        f"has {over}. Use fewer bins."
    )


def histogram_node(
    series: PrivateSeries, bins: int | Sequence[float], request: PrivacyRequest
) -> tuple[Aggregate, list[float]]:
    """Counts per public bin: a count aggregate over a binned key, and the bin edges."""
    clamp = isinstance(bins, int) and not isinstance(bins, bool)
    if clamp:
        assert isinstance(bins, int)
        if bins < 1:
            raise SchemaError("hist(bins=...) needs at least one bin.")
        if bins > MAX_CELLS:
            raise SchemaError(f"hist(bins=...) takes at most {MAX_CELLS} bins.")
        _check_bins(series, bins)
        low, high = require_bounds(series._info, "hist")
        edges = [float(e) for e in np.linspace(low, high, bins + 1)]
    else:
        try:
            edges = [float(e) for e in bins]  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise SchemaError(
                "hist(bins=...) takes a number of bins or increasing edges."
            ) from None
        if (
            len(edges) < 2
            or not all(np.isfinite(edges))
            or any(b <= a for a, b in itertools.pairwise(edges))
        ):
            raise SchemaError("hist(bins=...) edges must be finite and strictly increasing.")
    plan = series._frame._plan
    bucket = Bucket(series._expr, tuple(edges), clamp=clamp)
    key = GroupKey(str(series._expr), bucket, tuple(range(len(edges) - 1)))
    label = f"hist({series._expr}, {len(edges) - 1} bins){describe_plan(plan)}"
    agg = Aggregate(plan, "count", series._expr, None, (key,), label, request, undeclared=True)
    return agg, edges


def describe_node(frame: PrivateFrame, request: PrivacyRequest, include: object = None) -> Describe:
    """count, mean, std and quartiles of every bounded numeric column.

    With ``include="all"``, also count, unique, top and freq of every column
    with declared categories (pandas' ``describe(include="all")``).
    """
    if include not in (None, "all"):
        raise SchemaError(
            f"describe(include=...) takes None (bounded numeric columns) or 'all' (also the "
            f"columns with declared categories), not {include!r}."
        )
    columns = tuple(
        (c.name, Col(c.name), c.bounds)
        for c in frame._schema.columns
        if c.kind == "numeric" and c.bounds
    )
    categorical: tuple[GroupKey, ...] = ()
    if include == "all":
        categorical = tuple(
            GroupKey(c.name, Col(c.name), c.categories)
            for c in frame._schema.columns
            if c.categories and not (c.kind == "numeric" and c.bounds)
        )
    if not columns and not categorical:
        raise SchemaError(
            "describe() needs numeric columns with declared bounds"
            + (" or columns with declared categories." if include == "all" else ".")
        )
    return Describe(plan=frame._plan, privacy=request, columns=columns, categorical=categorical)


def sparse_vector_node(
    frame: PrivateFrame,
    queries: object,
    threshold: float,
    max_hits: int,
    numeric: bool,
    request: PrivacyRequest,
) -> SparseVector:
    """Named row conditions for the sparse vector technique."""
    from dpframe.api.frame import _to_expr

    if isinstance(queries, Mapping):
        items = [(str(name), cond) for name, cond in queries.items()]
    elif isinstance(queries, Sequence) and not isinstance(queries, (str, bytes)):
        items = [(str(_to_expr(cond, frame)), cond) for cond in queries]
    else:
        raise SchemaError(
            "above_threshold() needs a dict {name: condition} or a list of conditions."
        )
    if not items:
        raise SchemaError("above_threshold() needs at least one query.")
    named: list[tuple[str, Expr]] = []
    for name, cond in items:
        expr = _to_expr(cond, frame)
        if infer_column(name, expr, frame._schema).kind != "boolean":
            raise SchemaError(f"Query {name!r} is not a row condition (comparison, isin, &, |, ~).")
        named.append((name, expr))
    return SparseVector(
        plan=frame._plan,
        privacy=request,
        conditions=tuple(named),
        threshold=threshold,
        max_hits=max_hits,
        numeric=numeric,
    )


def copy_node(
    series: PrivateSeries,
    kind: Literal["rr", "laplace"],
    request: PrivacyRequest,
    length_share: object,
) -> SanitizedCopy:
    """A randomized-response or Laplace copy of a column."""
    from dpframe.mechanisms.copy_family import check_length_share

    info = series._info
    share = check_length_share(length_share)
    if kind == "rr":
        if info.categories is None or len(info.categories) < 2:
            raise SchemaError(
                f"randomized_response() needs at least two declared categories for "
                f"{info.name!r}: declare categories={{{info.name!r}: [...]}}."
            )
        return SanitizedCopy(
            plan=series._frame._plan,
            privacy=request,
            expr=series._expr,
            name=info.name,
            kind=kind,
            length_share=share,
            categories=tuple(info.categories),
        )
    bounds = require_bounds(info, "laplace_copy")
    if not bounds[1] > bounds[0]:
        raise SchemaError(f"laplace_copy() needs bounds with low < high for {info.name!r}.")
    return SanitizedCopy(
        plan=series._frame._plan,
        privacy=request,
        expr=series._expr,
        name=info.name,
        kind=kind,
        length_share=share,
        bounds=bounds,
    )


def kde_node(
    series: PrivateSeries, bandwidth: float, grid: object, request: PrivacyRequest
) -> KernelDensity:
    """A kernel density estimate on a public grid."""
    from dpframe.mechanisms.model_family import kde_grid

    h = check_bandwidth(bandwidth)
    bounds = require_bounds(series._info, "kde")
    points = kde_grid(grid, bounds)
    return KernelDensity(
        plan=series._frame._plan,
        privacy=request,
        expr=series._expr,
        bounds=bounds,
        bandwidth=h,
        points=tuple(float(p) for p in points),
    )


def regression_node(
    frame: PrivateFrame,
    loss: Literal["squared", "logistic"],
    features: object,
    target: object,
    request: PrivacyRequest,
    options: dict[str, Any],
) -> Regression:
    """A linear or logistic regression."""
    from dpframe.mechanisms.model_family import check_features, check_regression_options

    names, bounds, target_name, target_bounds = check_features(
        frame._schema, features, target, loss
    )
    checked = check_regression_options(options, loss)
    return Regression(
        plan=frame._plan,
        privacy=request,
        loss=loss,
        features=tuple(names),
        feature_bounds=tuple(bounds),
        target=target_name,
        target_bounds=target_bounds,
        **checked,
    )
