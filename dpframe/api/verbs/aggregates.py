"""Release verbs of one column or one frame: counts, sums, means, histograms, modes, describe.

Each ``*_node`` function checks the analyst's arguments against the public
schema and builds the release node (nothing read, nothing charged); the
few ``*_result`` functions reshape a released result as pandas would
(post-processing: free).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpframe.api.handle import FrameHandle, SeriesHandle
from dpframe.api.keywords import declare_call
from dpframe.api.verbs.quantiles import quantile_candidates
from dpframe.api.verbs.requests import public_keys, require_bounds
from dpframe.errors import ResourceLimitError, SchemaError
from dpframe.mechanisms.answers.results import grouped_series
from dpframe.mechanisms.moments.aggregates import MAX_CELLS, reordered
from dpframe.mechanisms.tables.shares import shares
from dpframe.plan.elementwise import Where
from dpframe.plan.expressions import Bucket, Col, Expr, Lit
from dpframe.plan.nodes import Aggregate, GroupKey, Statistic, describe_plan
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import ApproxBounds, Describe, Mode

__all__ = [
    "MAX_DRAWN_BINS",
    "aggregate_node",
    "approx_bounds_node",
    "count_node",
    "describe_node",
    "describe_series_node",
    "drawn",
    "histogram_node",
    "histogram_result",
    "mode_node",
    "true_count",
    "value_counts_node",
    "value_counts_result",
]


#: The most bins ``hist`` draws (a wider histogram is returned, not drawn).
MAX_DRAWN_BINS = 1_000


def drawn(draw: bool | None, bins: int) -> bool:
    """Whether ``hist`` draws: asked, or (by default) inside IPython; matplotlib installed."""
    if draw is False or bins > MAX_DRAWN_BINS:
        return False
    if importlib.util.find_spec("matplotlib") is None:
        return False
    if draw is None:
        shell = sys.modules.get("IPython")
        return shell is not None and shell.get_ipython() is not None
    return True


def count_node(frame: FrameHandle, request: PrivacyRequest) -> Aggregate:
    """The number of rows (after filters)."""
    label = f"count(){describe_plan(frame.plan)}"
    return Aggregate(frame.plan, "count", None, None, (), label, request)


def true_count(expr: Expr) -> Expr:
    """1 where the boolean ``expr`` holds, missing elsewhere: its count is the true count."""
    return Where(Lit(1), expr)


def aggregate_node(
    series: SeriesHandle, statistic: Statistic, request: PrivacyRequest
) -> Aggregate:
    """``count``, ``sum``, ``mean``, ``var`` or ``std`` of a column.

    A boolean column's sum is the count of its true rows (a whole number).
    """
    plan = series.plan
    if statistic == "sum" and series.info.kind == "boolean":
        label = f"sum({series.expr}){describe_plan(plan)}"
        return Aggregate(plan, "count", true_count(series.expr), None, (), label, request)
    bounds = None if statistic == "count" else require_bounds(series.info, statistic)
    label = f"{statistic}({series.expr}){describe_plan(plan)}"
    return Aggregate(plan, statistic, series.expr, bounds, (), label, request)


def approx_bounds_node(series: SeriesHandle, request: PrivacyRequest) -> ApproxBounds:
    """Suggested clamping bounds from one noisy histogram over fixed public bins."""
    return ApproxBounds(plan=series.plan, privacy=request, expr=series.expr)


def mode_node(series: SeriesHandle, request: PrivacyRequest) -> Mode:
    """The most frequent declared category."""
    info = series.info
    keys = public_keys(info)
    if keys is None:
        raise SchemaError(
            f"mode() needs the public categories of {info.name!r}: declare "
            f"categories={{{info.name!r}: [...]}}."
        )
    group = GroupKey(info.name, series.expr, keys)
    return Mode(plan=series.plan, privacy=request, group=group)


def value_counts_node(series: SeriesHandle, request: PrivacyRequest) -> Aggregate:
    """Counts per declared category (a grouped count; the groups are disjoint)."""
    info = series.info
    keys = public_keys(info)
    if keys is None and not isinstance(series.expr, Col):
        raise SchemaError(
            f"value_counts() needs the public categories of {info.name!r}: a derived column "
            "gets them from its column's declared bounds or keys; else recode it with "
            "map({...}), or assign it (pf.assign(k=...)) and find its keys privately with "
            "pf.discover_keys('k', epsilon=..., delta=...)."
        )
    if keys is None:
        raise SchemaError(
            f"value_counts() needs the public keys of {info.name!r}, which has no declared "
            f"categories. Either declare the codebook (categories={{{info.name!r}: [...]}} "
            f"when loading, or {declare_call('with_categories', info.name, '[...]')}), or, "
            "in a session with "
            f"a delta, find the keys privately: pf.groupby({info.name!r}).size(epsilon=..., "
            f"delta=...) or pf.discover_keys({info.name!r}, epsilon=..., delta=...)."
        )
    plan = series.plan
    key = GroupKey(info.name, series.expr, keys)
    if isinstance(series.expr, Col):  # as groupby(name).size()
        label = f"count() by {info.name}{describe_plan(plan)}"
        return Aggregate(plan, "count", None, None, (key,), label, request, undeclared=True)
    label = f"count() by {series.expr}{describe_plan(plan)}"
    return Aggregate(plan, "count", None, None, (key,), label, request)


def value_counts_result(counts: pd.Series, sort: bool, normalize: bool) -> pd.Series:
    """Sorted by count (``sort``) and as shares (``normalize``): post-processing, free.

    Named ``count`` (``proportion`` for shares), as pandas names it.
    """
    counts = counts.rename("count")
    if sort:
        order = np.argsort(-counts.to_numpy(), kind="stable")
        sorted_counts: pd.Series = counts.iloc[order]
        sorted_counts.attrs = {}
        sorted_counts.attrs["dpframe"] = reordered(counts.attrs["dpframe"], order)
        counts = sorted_counts
    return shares(counts) if normalize else counts


def _check_bins(series: SeriesHandle, bins: int) -> None:
    """Refuse more bins than the session's limits allow, before building their edges."""
    limits = series.runner.limits
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
    series: SeriesHandle, bins: int | Sequence[float], request: PrivacyRequest
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
        low, high = require_bounds(series.info, "hist")
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
    plan = series.plan
    bucket = Bucket(series.expr, tuple(edges), clamp=clamp)
    key = GroupKey(str(series.expr), bucket, tuple(range(len(edges) - 1)))
    label = f"hist({series.expr}, {len(edges) - 1} bins){describe_plan(plan)}"
    agg = Aggregate(plan, "count", series.expr, None, (key,), label, request, undeclared=True)
    return agg, edges


def histogram_result(series: SeriesHandle, result: Any, edges: list[float]) -> pd.Series:
    """The released counts indexed by their bins (post-processing)."""
    index = pd.IntervalIndex.from_breaks(edges, closed="left", name=str(series.expr))
    meta = dataclasses.replace(result.attrs["dpframe"], index=index)
    return grouped_series(result.to_numpy(), meta, "count")


def describe_node(frame: FrameHandle, request: PrivacyRequest, include: object = None) -> Describe:
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
        for c in frame.schema.columns
        if c.kind == "numeric" and c.bounds
    )
    categorical: tuple[GroupKey, ...] = ()
    if include == "all":
        categorical = tuple(
            GroupKey(c.name, Col(c.name), c.categories)
            for c in frame.schema.columns
            if c.categories and not (c.kind == "numeric" and c.bounds)
        )
    if not columns and not categorical:
        raise SchemaError(
            "describe() needs numeric columns with declared bounds"
            + (" or columns with declared categories." if include == "all" else ".")
        )
    candidates = tuple(
        quantile_candidates(frame.schema.get(name), bounds, None) for name, _, bounds in columns
    )
    return Describe(
        plan=frame.plan,
        privacy=request,
        columns=columns,
        categorical=categorical,
        candidates=candidates if any(candidates) else (),
        not_null=tuple(name for name, _, _ in columns if frame.schema.get(name).not_null),
    )


def describe_series_node(series: SeriesHandle, request: PrivacyRequest) -> Describe:
    """``Series.describe()``: the frame's summary of this one column (numbers or keys).

    A bounded number gets count, mean, std and quartiles; a column with
    declared keys (and no bounds) count, unique, top and freq, as pandas.
    """
    info = series.info
    if info.kind == "numeric" and info.bounds:
        columns = ((info.name, series.expr, info.bounds),)
        chosen = quantile_candidates(info, info.bounds, None)
        return Describe(
            plan=series.frame.plan,
            privacy=request,
            columns=columns,
            categorical=(),
            candidates=(chosen,) if chosen else (),
        )
    if info.categories:
        key = GroupKey(info.name, series.expr, info.categories)
        return Describe(plan=series.frame.plan, privacy=request, columns=(), categorical=(key,))
    raise SchemaError(
        f"describe() of {info.name!r} needs declared bounds (numbers) or declared keys "
        f"(categories): {declare_call('with_bounds', info.name, '(low, high)')} or "
        f"{declare_call('with_categories', info.name, '[...]')}."
    )
