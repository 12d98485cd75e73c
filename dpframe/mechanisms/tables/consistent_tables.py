"""Consistent cross tables for free: cells, row and column margins and total made to agree.

A cross table's cells ``y_ij = x_ij + e_ij`` (``dp.crosstab``) and margins of
the same rows released on their own (``groupby(row key).size``,
``groupby(column key).size``, a total ``count``) disagree by their noise.
:func:`consistent_table` returns the generalised least-squares estimate of
the cells from every measurement, each weighted by the inverse of its noise
variance (known, public)::

    x̂ = (Aᵀ W A)⁻¹ Aᵀ W y,   W = diag(1/v)

(A maps the cells to the measurements: identity for the cells, row sums,
column sums, the grand total), and shows margins that are the sums of the
shown cells, so the table adds up exactly.  Counts are never negative: the
shown cells are the non-negative least-squares solution (the same weighted
criterion with x ≥ 0; Lawson and Hanson 1974, bounded-variable least squares)
and the margins their sums.

Privacy:
    Post-processing of released values with public noise parameters: free
    (no charge, nothing read).  The result's cost is the sum of the costs of
    the releases it combines.

Accuracy:
    The unconstrained estimate's error is ``C e`` with ``C = (AᵀWA)⁻¹AᵀW``
    and ``e`` the independent noises: each cell's variance is
    ``(C V Cᵀ)_ii`` ≤ its own noise variance (a margin's likewise, from the
    sum of its cells' rows of C).  Intervals: the Chernoff / union / exact
    convolution bound of :class:`~dpframe.mechanisms.tables.intervals.ConsistentIntervals`
    on each cell's and margin's ``C e`` (coefficients rounded *up* in
    magnitude to 9 significant digits, which only widens the bound), clipped
    at 0 for counts, then widened to contain the shown (non-negative) value:
    a superset of a valid interval keeps its coverage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.answers.results import FrameRelease, GroupedRelease, Release, as_answer
from dpframe.mechanisms.calibration.additive import NoiseSpec
from dpframe.mechanisms.tables.intervals import ConsistentIntervals

__all__ = ["MAX_TABLE_CELLS", "ConsistentTableIntervals", "consistent_table", "table_estimator"]

#: The most cells a cross table made consistent may have (the estimator is dense).
MAX_TABLE_CELLS = 1024

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ConsistentTableIntervals:
    """Intervals of a consistent cross table with its margins (rows + 1, columns + 1).

    Attributes:
        inner: the least-squares intervals, flat: cells (row-major), then the
            row margins, the column margins and the total.
        shown: the values shown, of the full table's shape.
        statistic: ``count`` (shown as whole numbers).
    """

    inner: ConsistentIntervals
    shown: FloatArray
    statistic: str = "count"

    def interval(self, level: float) -> tuple[FloatArray, FloatArray]:
        """(low, high) of every shown cell and margin, each covering the truth at ``level``."""
        rows, cols = self.shown.shape[0] - 1, self.shown.shape[1] - 1
        low, high = self.inner.interval(level)
        full_low, full_high = np.empty(self.shown.shape), np.empty(self.shown.shape)
        for target, flat in ((full_low, low), (full_high, high)):
            cells = rows * cols
            target[:rows, :cols] = flat[:cells].reshape(rows, cols)
            target[:rows, cols] = flat[cells : cells + rows]
            target[rows, :cols] = flat[cells + rows : cells + rows + cols]
            target[rows, cols] = flat[-1]
        # The shown values are non-negative least squares: widen to contain them (a superset).
        return np.minimum(full_low, self.shown), np.maximum(full_high, self.shown)


def table_estimator(
    shape: tuple[int, int], variances: tuple[float, float | None, float | None, float | None]
) -> tuple[FloatArray, FloatArray]:
    """The design matrix A and the estimator C = (AᵀWA)⁻¹AᵀW of a table's cells.

    Args:
        shape: (rows, columns) of the cells.
        variances: the noise variance of a cell, a row margin, a column margin
            and the total (None: that measurement is absent).

    Returns:
        A (measurements × cells) and C (cells × measurements); the
        measurements are the cells (row-major), then the row margins, the
        column margins and the total, those present.
    """
    rows, cols = shape
    blocks: list[FloatArray] = [np.eye(rows * cols)]
    if variances[1] is not None:
        blocks.append(np.kron(np.eye(rows), np.ones((1, cols))).astype(np.float64))
    if variances[2] is not None:
        blocks.append(np.kron(np.ones((1, rows)), np.eye(cols)).astype(np.float64))
    if variances[3] is not None:
        blocks.append(np.ones((1, rows * cols)))
    design = np.vstack(blocks)
    weights = 1 / _variance_vector(shape, variances)
    normal = design.T @ (design * weights[:, None])
    estimator = np.linalg.solve(normal, design.T * weights[None, :])
    return design, estimator


def _variance_vector(
    shape: tuple[int, int], variances: tuple[float, float | None, float | None, float | None]
) -> FloatArray:
    rows, cols = shape
    parts = [np.full(rows * cols, variances[0])]
    for count, variance in ((rows, variances[1]), (cols, variances[2]), (1, variances[3])):
        if variance is not None:
            parts.append(np.full(count, variance))
    return np.concatenate(parts)


def _rounded_up(coef: FloatArray) -> FloatArray:
    """|c| rounded up to 9 significant digits (sign kept): equal cells share one bound."""
    magnitude = np.abs(coef)
    safe = np.where(magnitude > 0, magnitude, 1.0)
    scale = 10.0 ** (8 - np.floor(np.log10(safe)))
    up = np.ceil(magnitude * scale * (1 + 1e-12)) / scale
    return np.where(magnitude > 0, np.sign(coef) * np.maximum(up, magnitude), 0.0)


def _table_meta(table: pd.DataFrame) -> tuple[FrameRelease, Any, tuple[int, int]]:
    meta = table.attrs.get("dpframe") if isinstance(table, pd.DataFrame) else None
    if not isinstance(meta, FrameRelease) or not meta.matches(table):
        raise DPError(
            "consistent() needs a cross table exactly as dp.crosstab released it "
            "(transform the consistent result instead)."
        )
    intervals = meta.intervals
    shape = getattr(intervals, "shape", None)
    cells = getattr(intervals, "cells", None)
    if (
        shape is None
        or getattr(intervals, "normalize", "") is not None
        or getattr(cells, "statistic", None) != "count"
    ):
        raise DPError(
            "consistent() works on cross tables of counts (dp.crosstab without normalize=); "
            f"{meta.query} is not one."
        )
    rows, cols = int(shape[0]), int(shape[1])
    if rows * cols > MAX_TABLE_CELLS:
        raise DPError(
            f"consistent() handles cross tables of up to {MAX_TABLE_CELLS} cells; "
            f"this one has {rows * cols}."
        )
    return meta, intervals, (rows, cols)


def _margin(series: Any, keys: list[Any], what: str) -> tuple[FloatArray, NoiseSpec, Any]:
    meta = series.attrs.get("dpframe") if isinstance(series, pd.Series) else None
    if not isinstance(meta, GroupedRelease) or not meta.matches(series):
        raise DPError(f"{what}= must be a grouped count exactly as dpframe released it.")
    noises: tuple[NoiseSpec, ...] = tuple(getattr(meta.intervals, "noise", ()))
    if getattr(meta.intervals, "statistic", None) != "count" or len(noises) != 1:
        raise DPError(f"{what}= must be a grouped count (one noisy count per key).")
    if list(series.index) != keys:
        raise DPError(
            f"{what}= must have the table's {what} keys, in the same order "
            "(group by the same key column)."
        )
    return series.to_numpy(dtype=float), noises[0], meta.cost


def consistent_table(
    table: pd.DataFrame,
    total: Release | None = None,
    *,
    rows: pd.Series | None = None,
    columns: pd.Series | None = None,
    nonnegative: bool = True,
) -> pd.DataFrame:
    """A cross table made to agree with its margins by least squares; counts never negative.

    Args:
        table: a cross table of counts as ``dp.crosstab`` released it (with or
            without ``margins=True``).
        total: the count of the same rows, released on its own.
        rows: the counts per row key (``pf.groupby(index key).size(...)``), released on their own.
        columns: the counts per column key, released on their own.
        nonnegative: show the non-negative least-squares cells (default True).

    Margins must count the same rows as the table: rows whose two keys are
    both declared (filter the others out first when the data have missing or
    undeclared keys).

    Returns:
        The table with its margins (row and column ``All``), adding up exactly;
        ``dp.ci`` gives every cell's and margin's interval.

    Privacy: post-processing, free (see the module docstring).

    Accuracy: see the module docstring; every cell's variance is at most its
    own noise variance, and a margin's at most its released margin's.

    Example:
        >>> table = dp.crosstab(pf["region"], pf["smsa"], epsilon=0.5)  # doctest: +SKIP
        >>> rows = pf.groupby("region").size(epsilon=0.5)  # doctest: +SKIP
        >>> dp.consistent(table, pf.count(epsilon=0.5), rows=rows)  # doctest: +SKIP
    """
    meta, intervals, (n_rows, n_cols) = _table_meta(table)
    cell_noise: NoiseSpec = intervals.noise
    values = table.to_numpy(dtype=float)[:n_rows, :n_cols]
    row_keys, col_keys = list(table.index[:n_rows]), list(table.columns[:n_cols])
    margins_name = table.index[-1] if getattr(intervals, "margins", False) else "All"
    y, noises, cost = [values.ravel()], [cell_noise] * (n_rows * n_cols), meta.cost
    variances: list[float | None] = [cell_noise.std**2, None, None, None]
    for slot, given, keys, what in ((1, rows, row_keys, "rows"), (2, columns, col_keys, "columns")):
        if given is not None:
            margin, noise, part_cost = _margin(given, keys, what)
            y.append(margin)
            noises += [noise] * len(margin)
            variances[slot] = noise.std**2
            cost = cost + part_cost
    if total is not None:
        statistic = (
            getattr(total.intervals, "statistic", None) if isinstance(total, Release) else None
        )
        if statistic != "count":
            raise DPError("total= must be the count of the same rows, released on its own.")
        noise = total.intervals.noise[0]  # type: ignore[attr-defined]
        y.append(np.array([float(total.value)]))
        noises.append(noise)
        variances[3] = noise.std**2
        cost = cost + total.cost
    observed = np.concatenate(y)
    shape = (n_rows, n_cols)
    design, estimator = table_estimator(shape, (variances[0], *variances[1:]))  # type: ignore[arg-type]
    center = estimator @ observed
    if nonnegative:
        from scipy import optimize  # imported where first needed (import time)

        weights = 1 / np.sqrt(_variance_vector(shape, tuple(variances)))  # type: ignore[arg-type]
        fit = optimize.lsq_linear(
            design * weights[:, None], observed * weights, bounds=(0, np.inf), method="bvls"
        )
        cells = np.maximum(fit.x, 0.0).reshape(shape)
    else:
        cells = center.reshape(shape)
    shown = _with_margins(cells)
    grid = center.reshape(shape)
    coef_grid = estimator.reshape(n_rows, n_cols, -1)
    flat_center = np.concatenate([center, grid.sum(axis=1), grid.sum(axis=0), [grid.sum()]])
    coef = np.vstack(
        [estimator, coef_grid.sum(axis=1), coef_grid.sum(axis=0), coef_grid.sum(axis=(0, 1))[None]]
    )
    inner = ConsistentIntervals(flat_center, _rounded_up(coef), tuple(noises), nonnegative, "count")
    frame: pd.DataFrame = pd.DataFrame(
        shown,
        index=pd.Index([*row_keys, margins_name], name=table.index.name),
        columns=pd.Index([*col_keys, margins_name], name=table.columns.name),
    )
    frame.attrs["dpframe"] = FrameRelease(
        frame.index,
        frame.columns,
        cost,
        f"{meta.mechanism} + least-squares consistency",
        f"consistent({meta.query})",
        ConsistentTableIntervals(inner, shown),
        frame.to_numpy(dtype=object),
    )
    return as_answer(frame)  # type: ignore[no-any-return]


def _with_margins(cells: FloatArray) -> FloatArray:
    """The cells with a margin column, a margin row and the total (their sums)."""
    rows, cols = cells.shape
    full = np.zeros((rows + 1, cols + 1))
    full[:rows, :cols] = cells
    full[:rows, cols] = cells.sum(axis=1)
    full[rows, :] = full[:rows, :].sum(axis=0)
    if not math.isfinite(float(full[rows, cols])):
        raise DPError("consistent(): the table's values are not finite.")
    return full
