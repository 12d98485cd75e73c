"""Several aggregates in one charge (pandas' ``agg``): each (column, aggregate) is a part.

Privacy:
    The request (ε, δ) or ρ is split over the cells by the node's public
    weights; each cell is an ordinary dpframe release (a count, sum, mean,
    var or std aggregate, or a median by the exponential mechanism) at its
    share, so the whole is (Σ shares = the request) by sequential
    composition, and per group the cells of one aggregate are disjoint
    (parallel composition, as for a single grouped aggregate).  Assembling
    the table is post-processing.

Accuracy:
    Each cell has the accuracy of its aggregate at its share of ε: with k
    equal cells, each gets ε/k, so its noise scale is k times that of the
    aggregate asked alone.  ``dp.ci(result)`` gives every cell's interval
    (a median's has none: its accuracy is a rank error, NaN).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.answers.results import (
    FrameRelease,
    GroupedRelease,
    Intervals,
    Release,
    as_answer,
    grouped_series,
)
from dpframe.mechanisms.core.explanations import Explanation
from dpframe.mechanisms.core.family import Asked, Family, Released
from dpframe.mechanisms.core.work import PLAIN, Work
from dpframe.plan.releases import Agg

__all__ = ["AggFamily", "CellIntervals"]


@dataclass(frozen=True)
class CellIntervals:
    """Intervals of an assembled table: each part's intervals placed at its cells.

    ``places`` holds, per part, (row or None for every row, column, the part's
    intervals); ``shape`` is (rows, columns); ``flat`` returns 1-D arrays (a
    Series result: one column).  A part without value intervals (a median) is NaN.
    """

    places: tuple[tuple[int | None, int, Intervals], ...]
    shape: tuple[int, int]
    flat: bool = False

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) of every cell at coverage ``level`` each."""
        low = np.full(self.shape, np.nan)
        high = np.full(self.shape, np.nan)
        for row, column, intervals in self.places:
            try:
                lo, hi = intervals.interval(level)
            except DPError:  # a quantile: its accuracy is a rank error
                continue
            if row is None:
                low[:, column], high[:, column] = lo, hi
            else:
                low[row, column], high[row, column] = lo[0], hi[0]
        if self.flat:
            return low[:, 0], high[:, 0]
        return low, high


def _intervals_of(result: Any) -> Intervals:
    if isinstance(result, Release):
        return result.intervals
    meta = result.attrs.get("dpframe")
    assert isinstance(meta, GroupedRelease)
    return meta.intervals


def _ordered(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


class AggFamily(Family[Agg]):
    """pandas' ``agg``: one part per (column, aggregate), assembled in pandas' shapes."""

    node_type = Agg

    def work(self, node: Agg) -> Work:
        """Nothing of its own: its parts are sized one by one."""
        return PLAIN

    def result_types(self) -> tuple[type, ...]:
        """The classes its results hold (allowed on the wire)."""
        return (CellIntervals,)

    mechanism = "composite (one part per column and aggregate)"

    def release(self, run: Released[Agg]) -> tuple[Any, str]:
        """Release every cell at its share, then assemble the table (post-processing)."""
        node = run.node
        results = [run.part(part) for part in run.parts]
        labels = [label for label, _, _, _ in node.asked]
        stats: list[str] = [str(statistic) for _, _, statistic, _ in node.asked]
        places: list[tuple[int | None, int, Intervals]] = []
        if node.layout in ("column", "row"):
            index = stats if node.layout == "column" else labels
            name = labels[0] if node.layout == "column" else stats[0]
            series = self._series(node, results, index, name, run)
            return series, f"{len(results)} aggregates"
        if node.layout == "table":
            rows, columns = _ordered(stats), _ordered(labels)
            values = np.full((len(rows), len(columns)), np.nan)
            for result, stat, label in zip(results, stats, labels, strict=True):
                i, j = rows.index(stat), columns.index(label)
                values[i, j] = float(result)
                places.append((i, j, _intervals_of(result)))
            frame = pd.DataFrame(values, index=rows, columns=columns)
        else:
            index = results[0].index
            if node.layout == "grouped_column":
                columns_index = pd.Index(stats)
            elif node.layout == "grouped_flat":
                columns_index = pd.Index(labels)
            else:
                columns_index = pd.MultiIndex.from_tuples(list(zip(labels, stats, strict=True)))
            values = np.column_stack([r.to_numpy(dtype=float) for r in results])
            places = [(None, j, _intervals_of(r)) for j, r in enumerate(results)]
            frame = pd.DataFrame(values, index=index, columns=columns_index)
        frame.attrs["dpframe"] = FrameRelease(
            frame.index,
            frame.columns,
            run.cost,
            self.mechanism,
            node.label,
            CellIntervals(tuple(places), frame.shape),
            frame.to_numpy(dtype=float),
        )
        frame.attrs["dpframe_budget_split"] = split_text(node)
        frame = as_answer(frame)
        return frame, f"{len(results)} aggregates"

    def _series(
        self,
        node: Agg,
        results: list[Any],
        keys: list[str],
        name: str,
        run: Released[Agg],
    ) -> pd.Series:
        index = pd.Index(keys)
        places = tuple((i, 0, _intervals_of(r)) for i, r in enumerate(results))
        meta = GroupedRelease(
            index,
            run.cost,
            self.mechanism,
            np.array([float(r.scale) for r in results]),
            node.label,
            CellIntervals(places, (len(results), 1), flat=True),
            run.rho,
        )
        series = grouped_series(np.array([float(r) for r in results]), meta, name)
        series.attrs["dpframe_budget_split"] = split_text(node)
        return series

    def explain(self, node: Agg, asked: Asked) -> Explanation:
        """The cost, and how it is split over the cells."""
        return dataclasses.replace(asked.cost_only(node.label), headline=split_text(node))


def split_text(node: Agg) -> str:
    """How ``agg`` splits its request, in words: each cell's share."""
    total = sum(node.weights)
    shares = ", ".join(
        f"{statistic}({label}) {weight}/{total}"
        for (label, _, statistic, _), weight in zip(node.asked, node.weights, strict=True)
    )
    return f"one charge split over {len(node.asked)} cells: {shares}"
