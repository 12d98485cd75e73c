"""The family of additive-noise aggregates: count, sum, mean, var, std, overall or per group.

The privacy map is :func:`dpframe.mechanisms.moments.aggregates.noise_plan` (every
measure's sensitivity, quantum and share of the allocation, validated
against the samplers' limits before the charge); the release adds noise to
the backend's exact measures (:func:`~dpframe.mechanisms.moments.aggregates.release_aggregate`).
Histograms and value counts are count aggregates over a binned or declared key.
A group-by over declared keys also releases, free, the noisy count of the rows
whose key is not declared (:mod:`dpframe.mechanisms.moments.undeclared`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpframe.mechanisms.answers.results import (
    GroupedRelease,
    Release,
    UndeclaredRows,
    grouped_series,
)
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.core.explanations import Explanation, explain_aggregate
from dpframe.mechanisms.core.family import Asked, Family, Released
from dpframe.mechanisms.core.work import PLAIN, Work
from dpframe.mechanisms.moments.aggregates import (
    AggregateNoise,
    IntervalModel,
    aggregate_noise,
    release_aggregate,
)
from dpframe.mechanisms.moments.undeclared import UndeclaredNoise, release_undeclared
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Bucket, Col
from dpframe.plan.nodes import Aggregate
from dpframe.plan.privacy import Budget

__all__ = ["AggregateFamily", "group_index", "undeclared_release"]


def group_index(agg: Aggregate) -> pd.Index:
    """The index of a grouped release: every declared key (combination), in order."""
    if len(agg.by) == 1:
        key = agg.by[0]
        single: pd.Index = pd.Index(list(key.categories), name=key.name, dtype=object)
        return single
    product: pd.Index = pd.MultiIndex.from_product(
        [list(k.categories) for k in agg.by], names=[k.name for k in agg.by]
    )
    return product


#: Privacy maps kept per session (a repeated release skips recomputing its map).
_MAPS_KEPT = 256


def _measured(node: Aggregate) -> tuple[Any, ...]:
    """What an aggregate's privacy map depends on besides its plan and statistic, exactly."""
    expr = None if node.expr is None else node.expr.key()
    bounds = None if node.bounds is None else tuple(float(b).hex() for b in node.bounds)
    return expr, bounds, tuple(key.key() for key in node.by), node.undeclared


def undeclared_release(
    agg: Aggregate, planned: UndeclaredNoise, rows: float, rng: SecureRandom
) -> UndeclaredRows:
    """The noisy count of ``rows`` undeclared rows, as a free :class:`Release` with its interval.

    Privacy and Accuracy: see :mod:`dpframe.mechanisms.moments.undeclared` (the cost is
    zero: the group-by's charge covers the cell).
    """
    noisy, spec = release_undeclared(planned, np.array([rows]), rng)
    keys = tuple(key.name for key in agg.by)
    bins = all(isinstance(key.expr, Bucket) for key in agg.by)
    outside = "the bins" if bins else "the declared categories"
    count = Release(
        float(noisy[0]),
        Budget(0),
        spec.name,
        spec.scale,
        f"rows with {' or '.join(keys)} outside {outside} (part of: {agg.label})",
        IntervalModel("count", (noisy,), (spec,), None),
    )
    return UndeclaredRows(count, planned.threshold, keys, outside)


class AggregateFamily(Family[Aggregate]):
    """Counts, sums, means, variances and standard deviations (see moments/aggregates.py)."""

    node_type = Aggregate

    def work(self, node: Aggregate) -> Work:
        """One evaluation and a noise draw per cell: nothing more."""
        return PLAIN

    def __init__(self) -> None:
        # Privacy maps by (what is measured, allocation): a repeated release reuses its map.
        # Public inputs only, and the map is a pure function of them.
        self._maps: dict[tuple[Any, ...], AggregateNoise] = {}

    def privacy_map(self, node: Aggregate, allocation: NoiseAllocation) -> AggregateNoise:
        """The measures, their sensitivities and noise (checked against the samplers)."""
        key = (node.plan.key(), node.statistic, *_measured(node), allocation)
        found = self._maps.get(key)
        if found is None:
            found = aggregate_noise(node, allocation)
            if len(self._maps) >= _MAPS_KEPT:
                self._maps.clear()
            self._maps[key] = found
        return found

    def release(self, run: Released[Aggregate]) -> tuple[Any, str]:
        """Exact measures from the backend, noise, post-processing."""
        agg = run.node
        planned: AggregateNoise = run.noise
        extra = planned.undeclared
        exact = run.backend.compute(agg.plan, planned.measures, agg.by, extra is not None)
        outside = None
        if extra is not None:
            *exact, rows = exact
            outside = undeclared_release(agg, extra, float(rows[0]), run.rng)
        result = release_aggregate(agg, exact, run.allocation, run.rng, planned)
        if agg.by:
            shown, notes = thin_groups(agg.statistic, result.values, result.intervals)
            meta = GroupedRelease(
                group_index(agg),
                run.cost,
                result.mechanism,
                result.scales,
                agg.label,
                result.intervals,
                run.rho,
                undeclared=outside,
                notes=notes,
                released=np.asarray(result.values, dtype=float) if notes else None,
            )
            series = grouped_series(shown, meta, pandas_name(agg))
            return series, f"{len(result.values)} groups"
        value = float(result.values[0])
        release = Release(
            value,
            run.cost,
            result.mechanism,
            float(result.scales[0]),
            agg.label,
            result.intervals,
            run.rho,
        )
        return release, repr(value)

    def explain(self, node: Aggregate, asked: Asked) -> Explanation:
        """Each measure's noise and 95% half-width, and the accuracy floor."""
        return explain_aggregate(node, asked)


def pandas_name(agg: Aggregate) -> str | None:
    """The name pandas gives this grouped result: the column's (``grouped["wage"].mean()``).

    A count of rows (``size()``) has none; a derived expression keeps its text.
    """
    if agg.expr is None:
        return None
    return agg.expr.name if isinstance(agg.expr, Col) else str(agg.expr)


#: A group's mean is shown when its noisy count clears this one-sided quantile of the count noise.
THIN_LEVEL = 0.95


def thin_groups(
    statistic: str, values: np.ndarray, intervals: IntervalModel
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Means, variances and deviations of groups too thin to tell from empty, as missing.

    A group is too thin when its released (noisy) count is at most the count
    noise's one-sided 95% quantile: the released value of such a group is
    mostly the clamping bounds' midpoint, so it is shown as ``<NA>`` (as
    pandas shows an empty group), with a note.  Decided from released values
    only: post-processing, free.
    """
    if statistic not in ("mean", "var", "std") or not intervals.noise:
        return values, ()
    # Each cell against its own count's noise (a mean's cells may divide by different counts).
    threshold = intervals.count_quantile(1 - 2 * (1 - THIN_LEVEL))
    thin = np.asarray(intervals.noisy[0], dtype=float) <= threshold
    if not thin.any():
        return values, ()
    shown = np.where(thin, np.nan, values)
    groups = "group" if thin.sum() == 1 else "groups"
    highest = float(np.max(np.where(thin, threshold, -np.inf)))
    note = (
        f"{int(thin.sum())} {groups} too thin to show a {statistic} (noisy count at most "
        f"{highest:.3g}, the count noise's one-sided {THIN_LEVEL:.0%} quantile): <NA>."
    )
    return shown, (note,)
