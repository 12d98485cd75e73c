"""Selection queries on private frames: quantiles, mode, group argmax, histograms, describe.

Each function validates its arguments first, then hands one unit of work to
the session's release path (charge before any data is read).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dpframe.accounting.accountants import NoiseAllocation, pure_epsilon
from dpframe.accounting.budget import Budget, Number, to_fraction
from dpframe.backends.base import Backend, Measure
from dpframe.errors import SchemaError
from dpframe.frame import describe_plan
from dpframe.mechanisms.aggregates import MAX_CELLS, measures_for
from dpframe.mechanisms.quantiles import (
    QUANTILE_BINS,
    bin_edges,
    check_quantile,
    rank_error,
    select_quantile,
)
from dpframe.mechanisms.selection import permute_and_flip
from dpframe.plan.expressions import Bucket, Col, Expr
from dpframe.plan.nodes import Aggregate, GroupKey, lineage, unit_rows
from dpframe.release import GroupedRelease, NoInterval, Release, grouped_series

if TYPE_CHECKING:
    from dpframe.frame import PrivateFrame
    from dpframe.series import PrivateSeries

__all__ = ["argmax", "describe", "histogram", "mode", "quantiles"]

_EM = "exponential mechanism (permute-and-flip)"
# Every ε-DP mechanism is ε²/2-zCDP. The tighter ε²/8 of bounded-range mechanisms needs
# utility changes of spread at most Δ, which not every use guarantees; stay safe.
_EM_ZCDP = Fraction(1, 2)
_MEAN_GRID_BITS = 20


def quantiles(
    series: PrivateSeries,
    qs: object,
    epsilon: Number | None,
    delta: Number | None,
    rho: Number | None,
) -> Release | pd.Series:
    """Release quantiles of a bounded column (see :mod:`dpframe.mechanisms.quantiles`)."""
    from dpframe.series import require_bounds

    scalar = not isinstance(qs, (list, tuple, np.ndarray, pd.Index))
    levels_raw = [qs] if scalar else list(qs)  # type: ignore[call-overload]
    if not levels_raw:
        raise SchemaError("quantile() needs at least one level q in [0, 1].")
    levels = [check_quantile(q) for q in levels_raw]
    bounds = require_bounds(series._info, "quantile")
    frame = series._frame
    expr = series._expr
    edges = bin_edges(bounds)
    key = GroupKey(
        "_bin",
        Bucket(expr, tuple(float(e) for e in edges), clamp=True),
        tuple(range(QUANTILE_BINS)),
    )
    shown_q = ", ".join(f"{float(q):g}" for q in levels)
    label = f"quantile({expr}, q=[{shown_q}]){describe_plan(frame._plan)}"
    reason = (
        "Quantiles come from the exponential mechanism, whose error is a rank, not an "
        "additive noise: with probability 1-β the released value's rank is within "
        "(2/ε_q)·ln(4097/β) of q·n (see Release.scale)."
    )

    def work(
        backend: Backend, allocation: NoiseAllocation, cost: Budget, rho_q: Fraction | None
    ) -> tuple[Release | pd.Series, str]:
        eps_each = pure_epsilon(allocation, _EM_ZCDP) / len(levels)
        counts = backend.compute(frame._plan, (Measure("nonnull", expr),), (key,))[0]
        below = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        total = int(below[-1])
        rows = unit_rows(frame._plan)
        picked = [
            float(edges[select_quantile(below, total, q, eps_each, frame._session._rng, rows)])
            for q in levels
        ]
        error = rank_error(float(eps_each), 0.95)
        if scalar:
            release = Release(picked[0], cost, _EM, error, label, NoInterval(reason), rho_q)
            return release, repr(picked[0])
        index = pd.Index([float(q) for q in levels], name="q")
        meta = GroupedRelease(
            index, cost, _EM, np.full(len(levels), error), label, NoInterval(reason), rho_q
        )
        return grouped_series(np.array(picked), meta, str(expr)), str(picked)

    return frame._session._run(label, lineage(frame._plan)[0], (epsilon, delta, rho), _EM, work)


def _select_key(
    frame: PrivateFrame,
    label: str,
    keys: tuple[GroupKey, ...],
    utilities_of: Any,
    budget: tuple[Number | None, Number | None, Number | None],
) -> Hashable:
    if math.prod(len(k.categories) for k in keys) > MAX_CELLS:
        raise SchemaError(f"Choosing among more than {MAX_CELLS} keys at once is not supported.")
    index = (
        pd.MultiIndex.from_product([list(k.categories) for k in keys])
        if len(keys) > 1
        else pd.Index(list(keys[0].categories), dtype=object)
    )

    def work(
        backend: Backend, allocation: NoiseAllocation, cost: Budget, rho_q: Fraction | None
    ) -> tuple[Hashable, str]:
        utilities, sensitivity = utilities_of(backend)
        eps = pure_epsilon(allocation, _EM_ZCDP)
        chosen = index[permute_and_flip(utilities, eps, sensitivity, frame._session._rng)]
        return chosen, repr(chosen)

    return frame._session._run(label, lineage(frame._plan)[0], budget, _EM, work)


def mode(
    series: PrivateSeries, epsilon: Number | None, delta: Number | None, rho: Number | None
) -> Hashable:
    """The most frequent declared category (report noisy max); the key only is released."""
    info = series._info
    if info.categories is None:
        raise SchemaError(
            f"mode() needs the public categories of {info.name!r}: declare "
            f"categories={{{info.name!r}: [...]}}."
        )
    frame = series._frame
    key = GroupKey(info.name, series._expr, info.categories)
    label = f"mode({series._expr}){describe_plan(frame._plan)}"

    def utilities(backend: Backend) -> tuple[np.ndarray, int]:
        counts = backend.compute(frame._plan, (Measure("rows"),), (key,))[0]
        return counts.astype(np.int64), unit_rows(frame._plan)

    return _select_key(frame, label, (key,), utilities, (epsilon, delta, rho))


def argmax(
    frame: PrivateFrame,
    keys: tuple[GroupKey, ...],
    agg: str,
    column: str | None,
    budget: tuple[Number | None, Number | None, Number | None],
) -> Hashable:
    """The group whose count, sum or mean is largest (permute-and-flip); the key only."""
    from dpframe.series import require_bounds

    if agg not in ("count", "sum", "mean"):
        raise SchemaError("argmax(agg=...) must be 'count', 'sum' or 'mean'.")
    if agg != "count" and column is None:
        raise SchemaError(f"argmax('{agg}') needs a column: argmax('{agg}', column='...').")
    expr: Expr | None = None if column is None else Col(column)
    bounds = None
    if column is not None:
        info = frame._schema.get(column)
        bounds = None if agg == "count" else require_bounds(info, f"argmax('{agg}')")
    by = ", ".join(k.name for k in keys)
    label = f"argmax {agg}({column or ''}) by {by}{describe_plan(frame._plan)}"

    def utilities(backend: Backend) -> tuple[np.ndarray, int]:
        if agg == "count":
            measure = Measure("rows") if expr is None else Measure("nonnull", expr)
            counts = backend.compute(frame._plan, (measure,), keys)[0].astype(np.int64)
            return counts, unit_rows(frame._plan)
        statistic = "sum" if agg == "sum" else "mean"
        query = Aggregate(frame._plan, statistic, expr, bounds, keys, label)  # type: ignore[arg-type]
        measures, sensitivities = measures_for(query)
        exact = backend.compute(frame._plan, measures, keys)
        if agg == "sum":
            return exact[0].astype(np.int64), sensitivities[0]
        assert bounds is not None
        low, high = bounds
        sums = exact[1] * measures[1].quantum
        means = np.clip((low + high) / 2 + sums / np.maximum(exact[0], 1), low, high)
        width = (high - low) or 1.0
        grid = np.floor((means - low) / width * 2**_MEAN_GRID_BITS).astype(np.int64)
        # A mean moves by at most U - L, i.e. 2**bits grid units, plus one for the floor.
        return grid, 2**_MEAN_GRID_BITS + 1

    return _select_key(frame, label, keys, utilities, budget)


def histogram(
    series: PrivateSeries,
    bins: int | Sequence[float],
    epsilon: Number | None,
    delta: Number | None,
    rho: Number | None,
) -> pd.Series:
    """Noisy counts per public bin (one charge: bins are disjoint)."""
    from dpframe.series import require_bounds

    clamp = isinstance(bins, int) and not isinstance(bins, bool)
    if clamp:
        assert isinstance(bins, int)
        if bins < 1:
            raise SchemaError("hist(bins=...) needs at least one bin.")
        if bins > MAX_CELLS:
            raise SchemaError(f"hist(bins=...) takes at most {MAX_CELLS} bins.")
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
    frame = series._frame
    bucket = Bucket(series._expr, tuple(edges), clamp=clamp)
    key = GroupKey(str(series._expr), bucket, tuple(range(len(edges) - 1)))
    label = f"hist({series._expr}, {len(edges) - 1} bins){describe_plan(frame._plan)}"
    agg = Aggregate(frame._plan, "count", series._expr, None, (key,), label)
    result = frame._session._release(agg, epsilon, delta, rho)
    if not isinstance(result, pd.Series):
        return result  # type: ignore[return-value]  # an Explanation
    index = pd.IntervalIndex.from_breaks(edges, closed="left", name=str(series._expr))
    meta = result.attrs["dpframe"]
    new_meta = dataclasses.replace(meta, index=index)
    return grouped_series(result.to_numpy(), new_meta, "count")


def describe(
    frame: PrivateFrame, epsilon: Number | None, delta: Number | None, rho: Number | None
) -> pd.DataFrame:
    """count, mean, std and quartiles of every bounded numeric column.

    The budget is split evenly over the columns; within a column, half goes to
    the moments (count, centred sum and sum of squares: one ``var`` release)
    and half to the three quartiles (one ``quantile`` release).
    """
    from dpframe.series import PrivateSeries

    names = [c.name for c in frame._schema.columns if c.kind == "numeric" and c.bounds]
    if not names:
        raise SchemaError("describe() needs numeric columns with declared bounds.")
    if frame._session._explaining:
        return frame._session._explain_request(  # type: ignore[no-any-return]
            f"describe({', '.join(names)})", epsilon, delta, rho
        )
    share = Fraction(1, 2 * len(names))
    parts = [
        None if v is None else to_fraction(v, k) * share
        for k, v in (("epsilon", epsilon), ("rho", rho))
    ]
    dparts = to_fraction(delta or 0, "delta") * share
    session = frame._session
    session._check_affordable(epsilon, delta, rho)
    table = {}
    for name in names:
        series = frame[name]
        assert isinstance(series, PrivateSeries)
        var = series.var(epsilon=parts[0], delta=dparts, rho=parts[1])
        noisy = var.intervals.noisy  # type: ignore[attr-defined]
        low, high = frame._schema.get(name).bounds  # type: ignore[misc]
        count = float(noisy[0][0])
        mean = float(np.clip((low + high) / 2 + noisy[1][0] / max(count, 1.0), low, high))
        quarts = series.quantile([0.25, 0.5, 0.75], epsilon=parts[0], delta=dparts, rho=parts[1])
        # Sorting the released quartiles is free post-processing and keeps 25% <= 50% <= 75%.
        table[name] = [count, mean, float(var) ** 0.5, *sorted(quarts.tolist())]
    result: pd.DataFrame = pd.DataFrame(table, index=["count", "mean", "std", "25%", "50%", "75%"])
    result.attrs["dpframe_budget_split"] = (
        f"{len(names)} columns x (1/2 moments + 1/2 quartiles), each 1/{2 * len(names)} "
        "of the request"
    )
    return result
