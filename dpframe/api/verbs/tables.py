"""Cross tables: ``dp.crosstab`` and ``pf.pivot_table``, as pandas spells them.

Both are one grouped release over two key columns with public keys (one
charge: the cells are disjoint), reshaped as pandas reshapes it — rows are
the index keys, columns the column keys, in declaration order.  Margins
(``margins=True``) and shares (``normalize=``) are post-processing of the
released cells: free.  ``dp.ci(table)`` gives every cell's interval: a
released cell's own; a margin's from the exact sum of its cells' noises
(:func:`dpframe.mechanisms.tables.consistency.sum_half_width`); shares, where asked,
from the counts' intervals by interval arithmetic (simultaneous over the
table, as in :mod:`dpframe.mechanisms.tables.shares`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.api.handle import FrameHandle, SeriesHandle
from dpframe.api.verbs.aggregates import value_counts_node
from dpframe.api.verbs.aggregation import grouped_agg_node
from dpframe.api.verbs.distinct import distinct_count
from dpframe.api.verbs.frames import assign
from dpframe.api.verbs.grouping import aggregate_node, group, grouped_result, warn_undeclared
from dpframe.api.verbs.requests import public_keys
from dpframe.errors import InvalidArgumentError, SchemaError
from dpframe.mechanisms.answers.results import (
    FrameRelease,
    GroupedRelease,
    NoInterval,
    Release,
    as_answer,
)
from dpframe.mechanisms.calibration.noise_sums import sum_half_width
from dpframe.mechanisms.moments.describe_family import unique_threshold
from dpframe.plan.expressions import Col
from dpframe.plan.privacy import PrivacyRequest

__all__ = ["TableIntervals", "crosstab", "nunique", "pivot_table"]

FloatArray = npt.NDArray[np.float64]
_NORMALIZE = (False, True, "all", "index", "columns")


@dataclass(frozen=True)
class TableIntervals:
    """Intervals of a reshaped grouped release, with its margins and shares.

    Attributes:
        cells: the grouped release's intervals (one per cell, row-major).
        shape: (rows, columns) of the cells.
        noise: the cells' noise (one spec: a grouped count), for the margins.
        margins: whether a margin row and column (and their corner) follow.
        normalize: ``None`` or how shares were taken ("all", "index", "columns").
    """

    cells: Any
    shape: tuple[int, int]
    noise: Any
    margins: bool = False
    normalize: str | None = None

    @property
    def statistic(self) -> str:
        """``count`` for a table of counts (shown as whole numbers), ``share`` for shares."""
        return "count" if self.normalize is None else "share"

    def interval(self, level: float) -> tuple[FloatArray, FloatArray]:
        """(low, high) of every shown cell (margins and shares included)."""
        rows, cols = self.shape
        if self.normalize is not None:
            each = 1 - (1 - level) / (rows * cols)  # every cell at once
            low, high = (np.maximum(a, 0.0).reshape(rows, cols) for a in self.cells.interval(each))
            return _share_bounds(low, high, self.normalize, self.margins)
        low, high = (a.reshape(rows, cols) for a in self.cells.interval(level))
        if not self.margins:
            return low, high
        center = (low + high) / 2  # a count's interval is symmetric around its release
        low_full = np.zeros((rows + 1, cols + 1))
        high_full = np.zeros((rows + 1, cols + 1))
        low_full[:rows, :cols], high_full[:rows, :cols] = low, high
        across = sum_half_width(cols, self.noise, 1 - level)  # a row's total: cols noises
        low_full[:rows, cols] = center.sum(axis=1) - across
        high_full[:rows, cols] = center.sum(axis=1) + across
        down = sum_half_width(rows, self.noise, 1 - level)  # a column's total: rows noises
        low_full[rows, :cols] = center.sum(axis=0) - down
        high_full[rows, :cols] = center.sum(axis=0) + down
        whole = sum_half_width(rows * cols, self.noise, 1 - level)
        low_full[rows, cols] = center.sum() - whole
        high_full[rows, cols] = center.sum() + whole
        return low_full, high_full


def _share_bounds(
    low: FloatArray, high: FloatArray, normalize: str, margins: bool
) -> tuple[FloatArray, FloatArray]:
    """Shares' bounds given every count in [low, high] (the share grows with its own count)."""
    axis = {"all": None, "index": 1, "columns": 0}[normalize]
    total_low = low.sum(axis=axis, keepdims=axis is not None)
    total_high = high.sum(axis=axis, keepdims=axis is not None)
    with np.errstate(invalid="ignore", divide="ignore"):
        share_low = np.nan_to_num(low / (low + (total_high - high)))
        share_high = np.where(high > 0, high / (high + (total_low - low)), 0.0)
    share_high = np.nan_to_num(share_high, nan=1.0)
    if not margins:
        return share_low, share_high
    return _with_share_margins(share_low, share_high, normalize)


def _with_share_margins(
    low: FloatArray, high: FloatArray, normalize: str
) -> tuple[FloatArray, FloatArray]:
    rows, cols = low.shape
    if normalize == "index":  # a margin row of column shares; rows add up to 1
        full_low, full_high = np.vstack([low, low.min(axis=0)]), np.vstack([high, high.max(axis=0)])
        full_low[rows] = np.nan
        full_high[rows] = np.nan
        return full_low, full_high
    if normalize == "columns":
        full_low, full_high = (
            np.hstack([low, np.full((rows, 1), np.nan)]),
            np.hstack([high, np.full((rows, 1), np.nan)]),
        )
        return full_low, full_high
    full_low = np.full((rows + 1, cols + 1), np.nan)
    full_high = np.full((rows + 1, cols + 1), np.nan)
    full_low[:rows, :cols], full_high[:rows, :cols] = low, high
    full_low[rows, cols] = full_high[rows, cols] = 1.0
    return full_low, full_high


def _two_keys(index: object, columns: object) -> tuple[FrameHandle, str, str]:
    if not isinstance(index, SeriesHandle) or not isinstance(columns, SeriesHandle):
        raise SchemaError("crosstab() takes two columns of one private frame: pf['a'], pf['b'].")
    frame = index.frame
    if columns.frame is not frame:
        raise SchemaError("crosstab(): both columns must come from the same private frame.")
    names: list[str] = []
    derived: dict[str, SeriesHandle] = {}
    for series in (index, columns):
        name = series.info.name
        if not isinstance(series.expr, Col):  # a derived column (e.g. a cut) gets a name
            while name in frame.schema.names or name in names:
                name = f"{name}_binned"
            derived[name] = series
        names.append(name)
    if names[0] == names[1]:
        raise SchemaError("crosstab(): the index and the columns are the same column.")
    if derived:
        frame = assign(frame, derived)
    for name in names:
        if not public_keys(frame.schema.get(name)):
            raise SchemaError(
                f"crosstab() needs the public keys of {name!r}: declare categories={{...}} "
                "(or cut a number into bins)."
            )
    return frame, names[0], names[1]


def _reshape(grouped: pd.Series, frame: FrameHandle, rows: str, cols: str) -> pd.DataFrame:
    row_keys = list(public_keys(frame.schema.get(rows)) or ())
    col_keys = list(public_keys(frame.schema.get(cols)) or ())
    values = grouped.to_numpy(dtype=float).reshape(len(row_keys), len(col_keys))
    table: pd.DataFrame = pd.DataFrame(
        values, index=pd.Index(row_keys, name=rows), columns=col_keys
    )
    table.columns.name = cols
    return table


def crosstab(
    index: object,
    columns: object,
    request: PrivacyRequest,
    *,
    normalize: bool | str = False,
    margins: bool = False,
    margins_name: str = "All",
) -> pd.DataFrame:
    """Counts per pair of keys, as ``pandas.crosstab``: one charge over disjoint cells.

    ``index`` and ``columns`` are the two columns' handles (anything else is
    refused).  Margins and shares are post-processing of the released cells.
    """
    if normalize not in _NORMALIZE:
        raise InvalidArgumentError(
            "crosstab(normalize=...) takes False, True, 'all', 'index' or 'columns'."
        )
    frame, rows, cols = _two_keys(index, columns)
    groups = group(frame, (rows, cols))
    grouped = grouped_result(groups, frame.runner.run(aggregate_node(groups, "count", request)))
    meta: GroupedRelease = grouped.attrs["dpframe"]
    cell_intervals: Any = meta.intervals  # a grouped count's IntervalModel: one noise spec
    cell_noise = cell_intervals.noise[0]
    table = _reshape(grouped, frame, rows, cols)
    how = None if normalize is False else ("all" if normalize is True else str(normalize))
    shown: pd.DataFrame = table.copy()
    if margins:
        shown[margins_name] = table.sum(axis=1)
        shown.loc[margins_name] = shown.sum(axis=0)
    if how is not None:
        shown = _normalized(table, how, margins, margins_name)
    shown.attrs["dpframe"] = FrameRelease(
        shown.index,
        shown.columns,
        meta.cost,
        meta.mechanism,
        f"crosstab({rows}, {cols})",
        TableIntervals(meta.intervals, table.shape, cell_noise, margins, how),
        shown.to_numpy(dtype=object),
    )
    return as_answer(shown)  # type: ignore[no-any-return]


def _normalized(table: pd.DataFrame, how: str, margins: bool, name: str) -> pd.DataFrame:
    counts: pd.DataFrame = table.clip(lower=0)
    shares: pd.DataFrame
    if how == "all":
        shares = counts / max(float(counts.to_numpy().sum()), 1.0)
        if margins:
            shares[name] = shares.sum(axis=1)
            shares.loc[name] = shares.sum(axis=0)
            shares.iloc[:-1, -1] = np.nan
            shares.iloc[-1, :-1] = np.nan
        return shares
    if how == "index":
        shares = counts.div(counts.sum(axis=1).replace(0, 1.0), axis=0)
        if margins:
            overall = counts.sum(axis=0) / max(float(counts.to_numpy().sum()), 1.0)
            shares.loc[name] = overall
        return shares
    shares = counts.div(counts.sum(axis=0).replace(0, 1.0), axis=1)
    if margins:
        shares[name] = counts.sum(axis=1) / max(float(counts.to_numpy().sum()), 1.0)
    return shares


def pivot_table(
    self: FrameHandle,
    values: str,
    index: str,
    columns: str | None,
    aggfunc: str | Sequence[str],
    request: PrivacyRequest,
    margins: bool = False,
    margins_name: str = "All",
) -> pd.DataFrame:
    """``values`` aggregated per (index, columns) key pair, as ``pandas.pivot_table``.

    One charge: a grouped ``agg`` over the key pairs (see :meth:`PrivateFrame.pivot_table`).
    ``margins=True`` adds the row and column totals of a ``count`` or ``sum``
    table, derived from the released cells (free; their intervals add up); of a
    ``mean`` table, every mean is a released sum over a released count (one
    charge split between them), so the margins are free ratios of their totals.
    Without ``columns`` (pandas' one-way table) it is refused, naming the group-by.
    """
    if columns is None:
        raise SchemaError(
            "pivot_table() needs columns= (a second key column) here. A table of "
            f"{values!r} per {index!r} alone is a grouped aggregate: "
            f"pf.groupby({index!r})[{values!r}].agg({aggfunc!r}, epsilon=...). "
            "Nothing was charged."
        )
    if margins and aggfunc == "mean":
        return _mean_with_margins(self, values, index, columns, request, margins_name)
    if margins and aggfunc not in ("count", "sum"):
        raise SchemaError(
            f"pivot_table(margins=True) derives the totals from the released cells, which "
            f"works for aggfunc='count', 'sum' or 'mean', not {aggfunc!r}. Release the "
            f"margins on their own instead, e.g. pf.groupby({index!r})[{values!r}]."
            f"{aggfunc if isinstance(aggfunc, str) else 'agg'}(epsilon=...). Nothing was charged."
        )
    for name in (index, columns):
        if not public_keys(self.schema.get(name)):
            raise SchemaError(f"pivot_table() needs the public keys of {name!r}: declare them.")
    grouped = group(self, (index, columns), column=values)
    names = [aggfunc] if isinstance(aggfunc, str) else list(aggfunc)
    result = self.runner.run(grouped_agg_node(grouped, names, request))
    meta: FrameRelease = result.attrs["dpframe"]
    row_keys = list(public_keys(self.schema.get(index)) or ())
    col_keys = list(public_keys(self.schema.get(columns)) or ())
    parts = []
    for name in names:
        block = result[name].to_numpy(dtype=float).reshape(len(row_keys), len(col_keys))
        parts.append(block)
    stacked = np.hstack(parts)
    if isinstance(aggfunc, str):
        header: pd.Index = pd.Index(col_keys, name=columns)
    else:
        header = pd.MultiIndex.from_product([names, col_keys], names=[None, columns])
    table: pd.DataFrame = pd.DataFrame(
        stacked, index=pd.Index(row_keys, name=index), columns=header
    )
    table.attrs["dpframe"] = FrameRelease(
        table.index,
        table.columns,
        meta.cost,
        meta.mechanism,
        f"pivot_table({values}, {index}, {columns}, {names})",
        PivotIntervals(meta.intervals, (len(row_keys), len(col_keys)), len(names)),
        table.to_numpy(dtype=object),
    )
    answer: pd.DataFrame = as_answer(table)
    return with_margins(answer, margins_name) if margins else answer


def _mean_with_margins(
    self: FrameHandle,
    values: str,
    index: str,
    columns: str,
    request: PrivacyRequest,
    name: str,
) -> pd.DataFrame:
    """A table of means with margins: every mean a released sum over a released count.

    One charge: a grouped ``agg(["sum", "count"])`` of the cells (the request
    split evenly).  Each cell's mean, each margin's and the corner's are
    ratios of sums of released cells (post-processing, free), clamped to the
    column's bounds; their intervals follow by interval arithmetic.  The cells
    are ratio estimates, not the adaptive mean of ``aggfunc="mean"`` without
    margins (explain and the docstring say so).
    """
    table = pivot_table(self, values, index, columns, ["sum", "count"], request)
    sums = with_margins(cast("pd.DataFrame", table["sum"]), name)
    counts = with_margins(cast("pd.DataFrame", table["count"]), name)
    means: pd.DataFrame = sums / counts
    bounds = self.schema.get(values).bounds
    if bounds is not None:
        means = means.clip(bounds[0], bounds[1])
    means.index.name, means.columns.name = index, columns
    return means


def with_margins(table: pd.DataFrame, name: str) -> pd.DataFrame:
    """Row and column totals of a released count or sum table (post-processing, free).

    Each total is a sum of released cells, so its interval is the sum of
    theirs (the dp dtype's interval arithmetic); nothing is read or charged.
    """
    wide = table.copy()
    wide[name] = table.sum(axis=1)
    tall = wide.T  # a row added through the transpose keeps the cells' intervals
    tall[name] = tall.sum(axis=1)
    result: pd.DataFrame = tall.T
    return result


@dataclass(frozen=True)
class PivotIntervals:
    """A grouped agg's intervals (key pairs x aggregates), laid out as the pivot table."""

    cells: Any
    shape: tuple[int, int]
    aggregates: int

    def interval(self, level: float) -> tuple[FloatArray, FloatArray]:
        """(low, high) in the pivot table's layout."""
        low, high = self.cells.interval(level)
        rows, cols = self.shape
        return (
            np.hstack([low[:, k].reshape(rows, cols) for k in range(self.aggregates)]),
            np.hstack([high[:, k].reshape(rows, cols) for k in range(self.aggregates)]),
        )


def nunique(series: SeriesHandle, request: PrivacyRequest) -> Release:
    """How many distinct values occur, as ``pandas.Series.nunique``.

    A column with public keys: one noisy histogram; a key counts when its
    noisy count clears the count noise's one-sided 95% quantile
    (:func:`dpframe.mechanisms.moments.describe_family.unique_threshold`), as
    ``describe(include="all")``'s unique.  Any other column (an ID column):
    one noisy distinct count (:func:`dpframe.api.verbs.distinct.distinct_count`).
    """
    if public_keys(series.info) is None:
        return distinct_count(series, request)
    counts = series.runner.run(value_counts_node(series, request))
    if isinstance(series.expr, Col):
        warn_undeclared(counts)
    meta: GroupedRelease = counts.attrs["dpframe"]
    found = int((counts.to_numpy(dtype=float) > unique_threshold(counts)).sum())
    return Release(
        float(found),
        meta.cost,
        meta.mechanism,
        float("nan"),
        f"nunique({series.info.name})",
        NoInterval(
            "nunique counts the declared keys whose noisy count clears the count noise's "
            "95% quantile; it has no value interval (see the docstring's Accuracy)."
        ),
        meta.rho,
    )
