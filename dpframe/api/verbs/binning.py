"""``cut`` and ``qcut``: binned columns whose public keys are the bins, as in pandas.

``pf["wage"].cut(bins)`` (or ``dp.cut(pf["wage"], bins)``) takes the arguments
of :func:`pandas.cut` and gives a derived column whose categories are what
pandas would give (intervals, the labels, or the bin numbers), so
``value_counts``, ``groupby`` and ``assign(band=...)`` need no declaration.
Binning is free: the bins are public (given, or cut from the declared
bounds, never from the data).  ``qcut`` places the edges at private quantiles,
one charged release, then cuts.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dpframe.api.handle import SeriesHandle
from dpframe.api.keywords import declare_call
from dpframe.api.verbs.columns import keep_name
from dpframe.api.verbs.quantiles import quantile_node
from dpframe.api.verbs.requests import request_of, require_bounds
from dpframe.errors import SchemaError
from dpframe.mechanisms.answers import DPArray
from dpframe.mechanisms.answers.forms import Forms
from dpframe.mechanisms.moments.aggregates import MAX_CELLS
from dpframe.mechanisms.quantiles.quantiles import check_quantile
from dpframe.plan.expressions import Expr
from dpframe.plan.recode import Bin, Label, Recode, plain_label

if TYPE_CHECKING:
    from dpframe.plan.privacy import Number, Privacy

__all__ = ["cut", "qcut"]


def cut(
    x: object,
    bins: int | Sequence[float],
    right: bool = True,
    labels: Sequence[Any] | bool | None = None,
    retbins: bool = False,
    precision: int = 3,
    include_lowest: bool = False,
    duplicates: str = "raise",
    ordered: bool = True,
) -> Any:
    """Bin a numeric column into public bins, as :func:`pandas.cut` (free: nothing is charged).

    Example:
        >>> bands = pf["wage"].cut([0, 500, 1000, 5000])  # doctest: +SKIP
        >>> bands.value_counts(epsilon=0.1)  # doctest: +SKIP
        >>> pf.assign(band=bands).groupby("band")["education"].mean(epsilon=0.1)  # doctest: +SKIP

    The result is a derived column whose public categories are the bins:
    :class:`pandas.Interval` objects (those pandas would make: ``precision``
    significant digits, the first widened with ``include_lowest``) when
    ``labels`` is None, the given ``labels``, or the bin numbers ``0 .. k-1``
    with ``labels=False`` (then the column is numeric).  ``value_counts()``,
    ``mode()``, ``groupby`` (after ``assign(band=...)``) and ``isin`` work
    without declaring categories.  Values outside the bins and missing
    values belong to no bin (pandas' NaN): they are counted in no category.

    Args:
        x: a numeric column (``pf["wage"]``, or a numeric expression).
        bins: increasing bin edges, or a number k of equal-width bins over the
            column's declared bounds [L, U] (never the data's range; as
            pandas does with the data's range, the outer edge is moved out by
            0.1% of U − L so that L, or U with ``right=False``, is in a bin;
            values beyond the bounds are in no bin: ``clip()`` first to count
            them in the end bins).
        right: bins ``(a, b]`` (True) or ``[a, b)`` (False).
        labels: None (intervals), False (bin numbers) or one label per bin
            (strings, finite numbers or booleans).
        retbins: also return the bin edges (a numpy array).
        precision: significant digits of the interval labels.
        include_lowest: the first bin includes its left edge.
        duplicates: ``"raise"`` (repeated edges are an error) or ``"drop"``.
        ordered: the labels are ordered; ``ordered=False`` allows repeated
            labels (their bins share one category).

    Returns:
        A :class:`PrivateSeries` (with ``retbins``: the series and the edges).

    Raises:
        SchemaError: a column that is not numeric, edges that are not finite,
            not increasing or repeated (with ``duplicates="raise"``), a number
            of bins without declared bounds, labels of the wrong number,
            repeated (with ``ordered=True``) or not plain values.

    Privacy: none spent; the bins are public (given, or cut from the declared
    bounds), never derived from the data.
    """
    series = _numeric_series(x, "cut")
    _check_flags(right=right, retbins=retbins, include_lowest=include_lowest, ordered=ordered)
    _check_options(precision, duplicates, ("raise", "drop"), "cut")
    spec: object = bins  # annotations are not checked at run time
    if isinstance(spec, bool):
        raise SchemaError("cut(bins=...) takes a number of bins or a list of increasing edges.")
    if isinstance(spec, numbers.Integral):
        edges = _equal_bins(series, int(spec), right)
    else:
        edges = _given_edges(spec)
    edges = _unique_edges(edges, duplicates, "cut")
    result = _cut_series(series, edges, right, labels, precision, include_lowest, ordered)
    return (result, np.asarray(edges)) if retbins else result


def qcut(
    x: object,
    q: int | Sequence[float],
    labels: Sequence[Any] | bool | None = None,
    retbins: bool = False,
    precision: int = 3,
    duplicates: str = "drop",
    *,
    epsilon: Number | None = None,
    delta: Number | None = None,
    rho: Number | None = None,
    privacy: Privacy | None = None,
) -> Any:
    """Bin a column into groups of about equal size, as :func:`pandas.qcut` (charged once).

    Example:
        >>> quartiles = pf["wage"].qcut(4, epsilon=0.2)  # doctest: +SKIP
        >>> by_quartile = pf.assign(quartile=quartiles).groupby("quartile")  # doctest: +SKIP
        >>> by_quartile["education"].mean(epsilon=0.2)  # doctest: +SKIP

    The edges are the column's quantiles at the levels ``q`` (``q=4``: 0,
    1/4, 1/2, 3/4, 1), released by :meth:`PrivateSeries.quantile` (one
    ledger row, ``quantile(...)``, shown by ``session.explain(lambda:
    pf["wage"].qcut(4, epsilon=0.1))`` before anything is spent); levels 0 and
    1 are the declared bounds L and U (public: not estimated).  The released
    quantiles are sorted (post-processing: each level is estimated on its own,
    so noise may swap two), then the column is cut into the bins
    ``[e0, e1], (e1, e2], ...`` (pandas' ``include_lowest=True``) for free.

    Coinciding edges: the quantiles are charged before the edges are known,
    so ``duplicates="drop"`` is the default here (pandas' is ``"raise"``):
    equal edges merge (fewer bins; the result's categories say which).  With
    ``duplicates="raise"``, or with ``labels`` when bins merge (their number
    no longer matches), a :class:`SchemaError` is raised *after* the charge.

    Args:
        x: a numeric column with declared bounds.
        q: the number of quantile bins, or increasing levels in [0, 1].
        labels: None (intervals), False (bin numbers) or one label per bin.
        retbins: also return the edges: a ``dp`` array (indexed as pandas' array of
            edges) whose interior edges carry their 95% value intervals (``dp.ci(edges)``;
            the ends are the declared bounds, exact); ``np.asarray(edges)`` gives numbers.
        precision: significant digits of the interval labels.
        duplicates: ``"drop"`` (merge equal edges) or ``"raise"``.
        epsilon: privacy cost of the quantiles (or ``rho=`` in zCDP sessions).
        delta: must be 0 except in approximate-DP sessions.
        rho: zCDP cost.
        privacy: the cost as one ``dp.Privacy(...)``.

    Returns:
        A :class:`PrivateSeries` (with ``retbins``: the series and the edges).

    Raises:
        SchemaError: before anything is charged, for a column that is not
            numeric or has no bounds (or L = U), bad levels, labels or options.

    Privacy: the cost of one ``quantile(levels, epsilon=...)`` release over
    the interior levels (ε-DP, permute-and-flip over 4,097 public candidates,
    ε split evenly over the levels); nothing else is charged.  With no
    interior level (``q=1``) nothing is spent.

    Accuracy: as :meth:`PrivateSeries.quantile`: with probability 1 − β each
    edge's rank error exceeds the best candidate's by at most
    (2·max(p, 1 − p)/ε_p)·ln(4097/β) for level p; edges lie on a grid of
    (U − L)/4096, so bins hold about, not exactly, equal shares.
    """
    series = _numeric_series(x, "qcut")
    _check_flags(retbins=retbins)
    _check_options(precision, duplicates, ("drop", "raise"), "qcut")
    low, high = require_bounds(series.info, "qcut")
    if not low < high:
        raise SchemaError(f"qcut() needs bounds with low < high for {series.info.name!r}.")
    levels = _levels(q)
    given = _check_labels(labels, len(levels) - 1, ordered=True)
    request = request_of(epsilon, delta, rho, privacy)
    interior = [level for level in levels if 0 < level < 1]
    found = {Fraction(0): low, Fraction(1): high}
    released: pd.Series | None = None
    if interior:
        node = quantile_node(series, interior, request)
        released = series.runner.run(node)
        found.update(zip(interior, (float(v) for v in np.asarray(released)), strict=True))
    edges = sorted(found[level] for level in levels)
    if len(set(edges)) < 2:
        raise SchemaError(
            "qcut(): every released quantile edge is the same value, so there is no bin; "
            "use levels further apart or cut() with fixed edges (the quantiles were charged)."
        )
    if duplicates == "raise" and len(set(edges)) < len(edges):
        raise SchemaError(
            "qcut(): two released quantile edges coincide (duplicates='raise'); the quantiles "
            "were charged. Use duplicates='drop' to merge the bins."
        )
    edges = sorted(set(edges))
    if given and len(given) != len(edges) - 1:
        raise SchemaError(
            f"qcut(): the released edges coincide, leaving {len(edges) - 1} bins for "
            f"{len(given)} labels (the quantiles were charged); use labels=None or False."
        )
    result = _cut_series(series, edges, True, labels, precision, True, True)
    return (result, _released_edges(low, high, released)) if retbins else result


def _released_edges(low: float, high: float, released: pd.Series | None) -> DPArray:
    """The edges of ``qcut(..., retbins=True)`` with their intervals: a ``dp`` array.

    The interior edges are the released quantiles, each with its 95% value
    interval (it covers its own level's true quantile); the ends are the
    declared bounds (public: no noise).  Sorted as the bins use them, equal
    edges merged: positions as in pandas' array of edges, and ``np.asarray(edges)``
    gives its numbers.
    """
    ends = pd.Series(DPArray([float(low), float(high)], Forms.exact(2)), index=[0.0, 1.0])
    parts = [ends] if released is None else [ends, released]
    edges = pd.concat(parts).sort_values(kind="stable")
    values = edges.to_numpy(dtype=float)
    kept: DPArray = edges.array[np.r_[True, values[1:] != values[:-1]]]
    return kept


# -- checks --------------------------------------------------------------------------


def _numeric_series(x: object, what: str) -> SeriesHandle:
    if not isinstance(x, SeriesHandle):
        raise SchemaError(
            f"dp.{what}() takes a column of a private frame (pf['wage']); for a public "
            f"pandas Series use pandas.{what}()."
        )
    info = x.info
    if info.kind != "numeric":
        raise SchemaError(
            f"{what}() needs a numeric column; {info.name!r} is {info.kind}. Its values are "
            "already keys: group by it (with declared categories) instead."
        )
    return x


def _check_flags(**flags: object) -> None:
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise SchemaError(f"{name}= must be True or False.")


def _check_options(
    precision: object, duplicates: object, allowed: tuple[str, ...], what: str
) -> None:
    if isinstance(precision, bool) or not isinstance(precision, numbers.Integral):
        raise SchemaError(f"{what}(precision=...) must be a whole number of digits.")
    if not 0 <= int(precision) <= 15:
        raise SchemaError(f"{what}(precision=...) must be between 0 and 15 digits.")
    if duplicates not in allowed:
        raise SchemaError(f"{what}(duplicates=...) must be one of {', '.join(map(repr, allowed))}.")


def _equal_bins(series: SeriesHandle, count: int, right: bool) -> list[float]:
    """``count`` equal bins over the declared bounds, the outer edge widened as pandas does."""
    if not 1 <= count <= MAX_CELLS:
        raise SchemaError(f"cut(bins=...) takes between 1 and {MAX_CELLS} bins.")
    info = series.info
    if info.bounds is None:
        raise SchemaError(
            f"cut(bins={count}) of {info.name!r} needs public bounds to cut into equal bins "
            f"(dpframe never uses the data's range): pass bounds={{{info.name!r}: (low, high)}} "
            f"when loading, call {declare_call('with_bounds', info.name, '(low, high)')}, or "
            "give the edges."
        )
    low, high = info.bounds
    if low == high:  # pandas' rule for a single value
        low -= 0.001 * abs(low) if low != 0 else 0.001
        high += 0.001 * abs(high) if high != 0 else 0.001
        return [float(e) for e in np.linspace(low, high, count + 1)]
    edges = np.linspace(low, high, count + 1)
    widen = (high - low) * 0.001  # 0.1% of the range, as pandas
    if right:
        edges[0] -= widen
    else:
        edges[-1] += widen
    return [float(e) for e in edges]


def _given_edges(bins: object) -> list[float]:
    if isinstance(bins, pd.IntervalIndex):
        raise SchemaError("cut(bins=...) takes edges or a number of bins, not an IntervalIndex.")
    if isinstance(bins, (str, bytes)) or not isinstance(bins, (Sequence, np.ndarray, pd.Index)):
        raise SchemaError("cut(bins=...) takes a number of bins or a list of increasing edges.")
    values = list(bins)
    if not all(isinstance(e, numbers.Real) and not isinstance(e, (bool, np.bool_)) for e in values):
        raise SchemaError("cut() bin edges must be numbers.")
    try:
        edges = [float(e) for e in values]
    except OverflowError:
        raise SchemaError("cut() bin edges must be finite numbers.") from None
    if not all(math.isfinite(e) for e in edges):
        raise SchemaError("cut() bin edges must be finite numbers (no NaN or inf).")
    if len(edges) < 2:
        raise SchemaError("cut() needs at least two bin edges (one bin).")
    if len(edges) - 1 > MAX_CELLS:
        raise SchemaError(f"cut() takes at most {MAX_CELLS} bins.")
    if any(b < a for a, b in itertools.pairwise(edges)):
        raise SchemaError("cut() bins must increase monotonically.")
    return [_as_given(v, e) for v, e in zip(values, edges, strict=True)]


def _as_given(value: Any, edge: float) -> Any:
    """Integral edges stay integers (pandas' labels of integer edges are integer intervals)."""
    if isinstance(value, numbers.Integral) and float(int(value)) == edge:
        return int(value)
    return edge


def _unique_edges(edges: list[Any], duplicates: str, what: str) -> list[Any]:
    if len(set(edges)) == len(edges):
        return edges
    if duplicates == "raise":
        raise SchemaError(
            f"{what}() bin edges must be unique; pass duplicates='drop' to merge repeated edges."
        )
    unique = list(dict.fromkeys(edges))
    if len(unique) < 2:
        raise SchemaError(f"{what}() needs at least two distinct bin edges.")
    return unique


def _check_labels(labels: object, bins: int, ordered: bool) -> tuple[Label, ...] | None:
    """The labels given (None for intervals, ``()`` for bin numbers), checked."""
    if labels is None:
        return None
    if labels is False:
        return ()
    if isinstance(labels, (bool, str, bytes)) or not isinstance(
        labels, (Sequence, np.ndarray, pd.Index, pd.Series)
    ):
        raise SchemaError("labels= takes None, False, or a list with one label per bin.")
    given = tuple(plain_label(v, "A bin label") for v in labels)
    if len(given) != bins:
        raise SchemaError(
            f"labels must be one fewer than the number of bin edges: {bins} bins, "
            f"{len(given)} labels."
        )
    if ordered and len(set(given)) != len(given):
        raise SchemaError(
            "labels must be unique if ordered=True; pass ordered=False for duplicate labels."
        )
    return given


def _levels(q: object) -> list[Fraction]:
    if isinstance(q, bool):
        raise SchemaError("qcut(q=...) takes a number of bins or a list of levels in [0, 1].")
    if isinstance(q, numbers.Integral):
        count = int(q)
        if not 1 <= count <= 1000:
            raise SchemaError("qcut(q=...) takes between 1 and 1000 quantile bins.")
        return [Fraction(i, count) for i in range(count + 1)]
    if isinstance(q, (str, bytes)) or not isinstance(q, (Sequence, np.ndarray, pd.Index)):
        raise SchemaError("qcut(q=...) takes a number of bins or a list of levels in [0, 1].")
    levels = [check_quantile(level) for level in q]
    if len(levels) < 2 or any(b <= a for a, b in itertools.pairwise(levels)):
        raise SchemaError("qcut(q=[...]) needs at least two strictly increasing levels.")
    return levels


# -- building the column -------------------------------------------------------------


def _cut_series(
    series: SeriesHandle,
    edges: list[Any],
    right: bool,
    labels: object,
    precision: int,
    include_lowest: bool,
    ordered: bool,
) -> SeriesHandle:
    """``series`` cut at public ``edges`` (unique, increasing) into the labels asked for."""
    given = _check_labels(labels, len(edges) - 1, bool(ordered))
    if given is None and not ordered:
        raise SchemaError("cut(ordered=False) needs labels= (pandas' rule).")
    expr: Expr = Bin(series.expr, tuple(float(e) for e in edges), bool(right), bool(include_lowest))
    if given != ():
        targets = (
            given if given is not None else _intervals(edges, right, precision, include_lowest)
        )
        codes = tuple(range(len(edges) - 1))
        expr = Recode(expr, codes, targets, keep=False, ordered=bool(ordered))
    return keep_name(series, expr)


def _intervals(
    edges: list[Any], right: bool, precision: int, include_lowest: bool
) -> tuple[Label, ...]:
    """The interval labels pandas makes for these edges (computed on no data)."""
    empty = pd.Series([], dtype="float64")
    cutter: Any = pd.cut  # the stubs' overloads do not cover an empty float Series
    made = cutter(
        empty,
        np.asarray(edges),
        right=bool(right),
        precision=int(precision),
        include_lowest=bool(include_lowest),
    )
    return tuple(plain_label(interval, "A bin") for interval in made.cat.categories)
