"""``describe()``: a summary of every described column in one charge.

count, mean, std and quartiles per bounded column; with ``include="all"``
also count, unique, top and freq per categorical column.

Privacy:
    The request is split evenly over the node's parts (per numeric column a
    ``var`` release and a quartiles release; per categorical column one
    histogram over its declared keys), so the parts compose to exactly the
    request (sequential composition).  Everything shown is post-processing of
    those releases: count and mean come from the variance release's noisy
    count and its sum around the centre it chose privately
    (:mod:`dpframe.mechanisms.moments.variance`); a categorical column's count is
    the sum of its noisy counts, top the key with the largest noisy count
    (argmax of released values: free), freq that count, and unique the
    number of declared keys whose noisy count clears :func:`unique_threshold`.
    The columns declared not null share one count row: the inverse-variance
    weighted average of their variance releases' noisy counts (each estimates
    the frame's rows), again post-processing (:class:`RowCount`).

Accuracy:
    As :meth:`PrivateSeries.var` and :meth:`PrivateSeries.quantile` at their
    shares.  unique counts a declared key with no rows with probability at
    most 5% (the threshold is the count noise's one-sided 95% quantile) and
    misses a key with many more rows than that threshold rarely; top is the
    report-noisy-max of the histogram.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpframe.mechanisms.answers.results import FrameRelease, as_answer
from dpframe.mechanisms.calibration.additive import NoiseSpec
from dpframe.mechanisms.calibration.noise_sums import half_width
from dpframe.mechanisms.core.family import Family, Released
from dpframe.mechanisms.core.work import PLAIN, Work
from dpframe.mechanisms.quantiles.quantile_intervals import INTERVAL_LEVEL
from dpframe.plan.releases import Describe

__all__ = ["DescribeFamily", "DescribeIntervals", "KeyCounts", "split_text", "unique_threshold"]

NUMERIC_ROWS = ("count", "mean", "std", "25%", "50%", "75%")
ALL_ROWS = ("count", "unique", "top", "freq", "mean", "std", "25%", "50%", "75%")
#: unique counts a key when its noisy count is above this quantile of the count noise.
UNIQUE_LEVEL = 0.95


def unique_threshold(histogram: pd.Series) -> float:
    """The noisy count a declared key must exceed to be counted in ``unique``.

    The one-sided 95% quantile of the histogram's count noise (public: the
    noise parameters): a key with no rows is counted with probability ≤ 5%.
    """
    noise = histogram.attrs["dpframe"].intervals.noise[0]
    return float(noise.abs_quantile(1 - 2 * (1 - UNIQUE_LEVEL)) + noise.rounding)


class DescribeFamily(Family[Describe]):
    """describe(): one charge, its parts in the node, the table as post-processing."""

    node_type = Describe

    def work(self, node: Describe) -> Work:
        """Nothing of its own: its parts are sized one by one."""
        return PLAIN

    def result_types(self) -> tuple[type, ...]:
        """The classes its results hold (allowed on the wire)."""
        return (DescribeIntervals, RowCount, KeyCounts)

    mechanism = "composite (variance + quartiles per column)"

    def release(self, run: Released[Describe]) -> tuple[Any, str]:
        """Release every part at its share, then assemble the table (post-processing)."""
        node = run.node
        parts = run.parts
        wide = bool(node.categorical)
        rows = ALL_ROWS if wide else NUMERIC_ROWS
        table: dict[str, list[Any]] = {}
        models: list[Any] = []
        quartile_ends: list[tuple[tuple[float, ...], tuple[float, ...]]] = []
        whole_quartiles: list[bool] = []
        for i, (name, _, bounds) in enumerate(node.columns):
            var = run.part(parts[2 * i])
            quarts = run.part(parts[2 * i + 1])
            noisy = var.intervals.noisy
            low, high = bounds
            count = float(noisy[0][0])
            # The variance release's centre ĉ (private, adaptive) and Σ(x − ĉ): the mean is free.
            center = (low + high) / 2 if var.intervals.center is None else var.intervals.center[0]
            mean = float(np.clip(center + noisy[1][0] / max(count, 1.0), low, high))
            # Sorting the released quartiles is free post-processing and keeps 25% <= 50% <= 75%.
            quartiles = sorted(quarts.tolist())
            quartile_ends.append(_quartile_ends(quarts, quartiles))
            whole_quartiles.append(
                bool(getattr(quarts.attrs["dpframe"].intervals, "integer", False))
            )
            middle = [np.nan] * 3 if wide else []
            table[name] = [count, *middle, mean, float(var) ** 0.5, *quartiles]
            models.append(var.intervals)
        shared = _row_count(node, models)
        if shared is not None:  # columns declared not null: one row count in each (free)
            for i in shared.columns:
                table[node.columns[i][0]][0] = shared.value
        first_key = 2 * len(node.columns)
        key_counts: list[KeyCounts] = []
        for j, key in enumerate(node.categorical):
            histogram = run.part(parts[first_key + j])
            counts = histogram.to_numpy(dtype=float)
            top = int(np.argmax(counts))
            unique = int((counts > unique_threshold(histogram)).sum())
            # Counts as whole numbers (rounding is post-processing): the column also holds
            # text (top), so it is not a dp column and would show 49996.0.
            total, freq = round(float(counts.sum())), round(float(counts[top]))
            column: list[Any] = [total, unique, key.categories[top], freq]
            table[key.name] = column + [np.nan] * (len(rows) - 4)
            noise = histogram.attrs["dpframe"].intervals.noise[0]
            shift = (abs(total - float(counts.sum())), abs(freq - float(counts[top])))
            key_counts.append(KeyCounts(len(table) - 1, noise, len(counts), total, freq, shift))
        result: pd.DataFrame = pd.DataFrame(table, index=list(rows))
        result.attrs["dpframe_budget_split"] = split_text(node)
        result.attrs["dpframe"] = FrameRelease(
            result.index,
            result.columns,
            run.cost,
            self.mechanism,
            node.label,
            DescribeIntervals(
                tuple(models),
                len(rows),
                len(result.columns),
                wide,
                tuple(quartile_ends),
                tuple(whole_quartiles),
                shared,
                tuple(key_counts),
            ),
            result.to_numpy(dtype=object),
        )
        result = as_answer(result)
        return result, f"{len(result.columns)} columns"


@dataclass(frozen=True)
class DescribeIntervals:
    """Per-cell intervals of ``describe()``, from each column's variance release (free).

    count, mean and std are functions of the variance release's three noisy
    sums (count, sum and sum of squares around its centre ĉ), so their intervals are
    that release's: the count's alone, the mean's from the count and the sum,
    the std's from all three (each with its own Bonferroni split).  Quartiles:
    the 95% intervals released with them (NaN above 95%: they were chosen for
    that level).  A categorical column's count and freq: :class:`KeyCounts`;
    its unique and top: NaN (a number of keys above a threshold, a key).

    Shown as whole numbers (:meth:`whole_cells`): the count row, unique and
    freq, and the quartiles of a column whose candidates were whole numbers
    (an integer column's); means and deviations keep their decimals.
    """

    models: tuple[Any, ...]  # one IntervalModel (statistic "var") per numeric column
    rows: int = len(NUMERIC_ROWS)
    columns: int = 0
    wide: bool = False
    quartiles: tuple[tuple[tuple[float, ...], tuple[float, ...]], ...] = ()
    whole_quartiles: tuple[bool, ...] = ()  # per numeric column: quartiles among integers
    row_count: RowCount | None = None  # the columns declared not null: one row count
    key_counts: tuple[KeyCounts, ...] = ()  # the categorical columns' count and freq

    def whole_cells(self, column: int) -> np.ndarray:
        """Which rows of the table's ``column`` are whole numbers (shown without decimals)."""
        names = ALL_ROWS if self.wide else NUMERIC_ROWS
        whole = np.array([name in ("count", "unique", "freq") for name in names])
        if column < len(self.whole_quartiles) and self.whole_quartiles[column]:
            whole[-3:] = True  # the 25%, 50% and 75% rows are the last three
        return whole

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """(low, high), each of the table's shape."""
        shape = (self.rows, max(self.columns, len(self.models)))
        low, high = np.full(shape, np.nan), np.full(shape, np.nan)
        positions = (0, 4, 5) if self.wide else (0, 1, 2)  # count, mean, std
        for j, model in enumerate(self.models):
            count = dataclasses.replace(
                model, statistic="count", noisy=model.noisy[:1], noise=model.noise[:1]
            )
            mean = dataclasses.replace(
                model, statistic="mean", noisy=model.noisy[:2], noise=model.noise[:2]
            )
            std = dataclasses.replace(model, statistic="std")
            for row, part in zip(positions, (count, mean, std), strict=True):
                lo, hi = part.interval(level)
                low[row, j], high[row, j] = float(lo[0]), float(hi[0])
        if self.row_count is not None:
            lo_count, hi_count = self.row_count.interval(level)
            for j in self.row_count.columns:
                low[0, j], high[0, j] = lo_count, hi_count
        for cells in self.key_counts:  # rows 0 and 3 of the wide table: count and freq
            (
                (low[0, cells.column], high[0, cells.column]),
                (low[3, cells.column], high[3, cells.column]),
            ) = cells.intervals(level)
        if level <= INTERVAL_LEVEL + 1e-12:
            first = self.rows - 3  # the 25%, 50% and 75% rows are the last three
            for j, (lows, highs) in enumerate(self.quartiles):
                low[first:, j], high[first:, j] = lows, highs
        return low, high


@dataclass(frozen=True)
class KeyCounts:
    """A categorical column's count and freq in ``describe()``, from its noisy histogram (free).

    count is the sum of the k declared keys' noisy counts: its interval is the
    exact one of the sum of their k independent noises
    (:func:`~dpframe.mechanisms.calibration.noise_sums.half_width`).  freq is the
    noisy count of the key with the largest one; the same noise chose that key,
    so its interval is one that holds for all k keys at once (each at
    1 − (1 − level)/k, Bonferroni), whichever key was chosen.  Both are shown
    as whole numbers: their ends widen by what that rounding moved them
    (nothing when the noisy counts are whole, as they are on a count's grid).
    """

    column: int  # the column's position in the table
    noise: NoiseSpec  # every key's count noise
    keys: int  # k, the declared keys
    count: float  # as shown (rounded)
    freq: float  # as shown (rounded)
    rounded: tuple[float, float] = (0.0, 0.0)  # |shown − released| of count and freq

    def intervals(self, level: float) -> tuple[tuple[float, float], tuple[float, float]]:
        """((low, high) of count, (low, high) of freq), each with coverage ≥ ``level``."""
        alpha = 1 - level
        total = half_width(np.ones(self.keys), (self.noise,) * self.keys, alpha) + self.rounded[0]
        each = self.noise.abs_quantile(1 - alpha / self.keys) + self.noise.rounding
        each = float(each) + self.rounded[1]
        return (self.count - total, self.count + total), (self.freq - each, self.freq + each)


@dataclass(frozen=True)
class RowCount:
    """One row count for the columns declared not null, from their counts (free).

    A column declared not null holds a value in every row, so each of its
    variance release's noisy counts estimates the same number, the rows of the
    frame.  Their inverse-variance weighted average (public weights: the noises'
    variances) is shown in every such column's count row; its interval is the
    exact one of the weighted sum of their independent noises
    (:func:`~dpframe.mechanisms.calibration.noise_sums.half_width`).
    """

    columns: tuple[int, ...]  # the positions of the not-null columns in the table
    weights: tuple[float, ...]
    noises: tuple[NoiseSpec, ...]
    value: float

    def interval(self, level: float) -> tuple[float, float]:
        """(low, high) containing the row count with probability ≥ ``level``."""
        half = half_width(np.array(self.weights), self.noises, 1 - level)
        return self.value - half, self.value + half


def _row_count(node: Describe, models: list[Any]) -> RowCount | None:
    """The combined row count of ``node``'s not-null columns (None: no such column)."""
    positions = tuple(i for i, (name, _, _) in enumerate(node.columns) if name in node.not_null)
    if not positions:
        return None
    noises = tuple(models[i].noise[0] for i in positions)
    counts = np.array([float(models[i].noisy[0][0]) for i in positions])
    precision = np.array([1 / noise.std**2 for noise in noises])
    weights = precision / precision.sum()
    value = float(np.dot(weights, counts))
    return RowCount(positions, tuple(float(w) for w in weights), noises, value)


def _quartile_ends(
    quarts: pd.Series, shown: list[float]
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Each quartile's released 95% interval, widened to the value shown in its row.

    The shown values are the released ones sorted (free); an interval covers
    its level's true quantile whatever value sits beside it, and widening it
    to include that value keeps the coverage.
    """
    lows, highs = quarts.attrs["dpframe"].intervals.interval(INTERVAL_LEVEL)
    low = np.minimum(lows, shown)
    high = np.maximum(highs, shown)
    return tuple(float(v) for v in low), tuple(float(v) for v in high)


def split_text(node: Describe) -> str:
    """How describe() splits its request, in words."""
    n, c = len(node.columns), len(node.categorical)
    parts = 2 * n + c
    text = f"{n} numeric columns x (moments + quartiles)"
    if c:
        text += f" + {c} categorical columns x (one histogram)"
    return f"{text}: {parts} parts, each 1/{parts} of the request"
