"""Consistent answers for free: grouped counts (or sums) that add up to their released total.

Two releases of the same rows — per-group counts ``y_i = x_i + e_i`` and a
total ``t = Σ x_i + e_0`` — disagree by their noise.  :func:`consistent`
returns the weighted least-squares estimate of the cells under the one
linear constraint, the cells' (and the group-by's undeclared cell's)
variances ``v_i`` and the total's ``v_0`` known from the noise that was
drawn::

    r = t − Σ y_i,   V = v_0 + Σ v_i,   x̂_i = y_i + v_i · r / V

so ``Σ x̂_i`` is the combined estimate of the total, each cell's variance
falls from ``v_i`` to ``v_i (1 − v_i / V)``, and — for counts — cells below
zero are set to zero (the truth never is negative).

Privacy:
    Post-processing of released values with public noise parameters: free
    (no charge, nothing read).  The result's cost is the two releases' costs
    together, since it depends on both.

Accuracy:
    Each cell's error is a known linear combination ``Σ_j c_ij e_j`` of the
    independent noises; its interval is a Chernoff bound on that sum (see
    :meth:`~dpframe.mechanisms.tables.intervals.ConsistentIntervals.interval`):
    valid for each cell at ``level``, conservative by a few percent against
    the exact quantile.  Clipping at
    zero keeps it valid (``[max(lo, 0), max(hi, 0)]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.answers.results import GroupedRelease, Release, grouped_series
from dpframe.mechanisms.calibration.additive import NoiseSpec
from dpframe.mechanisms.tables.consistent_tables import consistent_table
from dpframe.mechanisms.tables.intervals import ConsistentIntervals

__all__ = ["ConsistentIntervals", "consistent"]


def _meta(cells: pd.Series) -> GroupedRelease:
    meta = cells.attrs.get("dpframe") if isinstance(cells, pd.Series) else None
    if not isinstance(meta, GroupedRelease) or not meta.matches(cells):
        raise DPError(
            "consistent() needs a grouped count or sum exactly as dpframe released it "
            "(transform the consistent result instead)."
        )
    statistic = getattr(meta.intervals, "statistic", None)
    noises = getattr(meta.intervals, "noise", ())
    if statistic not in ("count", "sum") or len(noises) != 1:
        raise DPError(
            "consistent() works on grouped counts and sums (one noisy measure per cell); "
            f"{meta.query} is not one."
        )
    return meta


def consistent(
    cells: pd.Series | pd.DataFrame,
    total: Release | None = None,
    *,
    rows: pd.Series | None = None,
    columns: pd.Series | None = None,
    nonnegative: bool | None = None,
) -> Any:
    """Grouped counts (or sums) made to add up to their total, and counts never negative.

    Example:
        >>> counts = pf.groupby("region").size(epsilon=0.5)  # doctest: +SKIP
        >>> dp.consistent(counts, pf.count(epsilon=0.5))  # doctest: +SKIP

    A cross table (``dp.crosstab``) is made to agree with its margins instead:
    see :func:`~dpframe.mechanisms.tables.consistent_tables.consistent_table`
    (``rows=`` and ``columns=`` are its separately released margins).

    Args:
        cells: a grouped count or sum as released (``pf.groupby(k).size(...)``,
            ``value_counts``, ``hist``, ``groupby(k)[c].sum(...)``), or a cross
            table of counts.  A grouped release's
            undeclared cell, when the group-by measured one, is one more term
            of the total.
        rows: a cross table's counts per row key, released on their own.
        columns: a cross table's counts per column key, released on their own.
        total: the count or sum of the same rows released on its own
            (e.g. ``pf[pf[k].notna()].count(epsilon=...)``: rows with a missing
            key are in no cell).  None: only clip negative counts.
        nonnegative: set negative cells to 0 (default: True for counts,
            False for sums).

    Returns:
        A Series like ``cells`` whose ``dp.ci`` gives simultaneous intervals.

    Privacy: post-processing, free (see the module docstring).

    Accuracy: each cell's variance falls from v_i to v_i (1 − v_i / V).
    """
    if isinstance(cells, pd.DataFrame):
        clip = True if nonnegative is None else bool(nonnegative)
        return consistent_table(cells, total, rows=rows, columns=columns, nonnegative=clip)
    if rows is not None or columns is not None:
        raise DPError("rows= and columns= are the margins of a cross table (dp.crosstab).")
    meta = _meta(cells)
    statistic = str(getattr(meta.intervals, "statistic", ""))
    clip = statistic == "count" if nonnegative is None else bool(nonnegative)
    cell_noise: NoiseSpec = meta.intervals.noise[0]  # type: ignore[attr-defined]
    y = cells.to_numpy(dtype=float)
    noises = [cell_noise] * len(y)
    extra = meta.undeclared.count if meta.undeclared is not None else None
    if extra is not None:
        y = np.append(y, float(extra.value))
        noises.append(extra.intervals.noise[0])  # type: ignore[attr-defined]
    n = len(y)
    v = np.array([s.std**2 for s in noises])
    if total is None:
        center, coef = y.copy(), np.eye(n)
        cost = meta.cost
        variance = v
    else:
        if not isinstance(total, Release) or getattr(total.intervals, "statistic", None) != (
            statistic
        ):
            raise DPError(f"total= must be the {statistic} of the same rows, released on its own.")
        total_noise: NoiseSpec = total.intervals.noise[0]  # type: ignore[attr-defined]
        v0 = total_noise.std**2
        whole = v0 + v.sum()
        center = y + v * (float(total.value) - y.sum()) / whole
        # error of x̂_i = e_i + (v_i / V)(e_0 − Σ_j e_j): columns are e_1..e_n, then e_0
        coef = np.eye(n) - np.outer(v, np.ones(n)) / whole
        coef = np.column_stack([coef, v / whole])
        noises.append(total_noise)
        cost = meta.cost + total.cost
        variance = v * (1 - v / whole)
    shown = np.maximum(center, 0.0) if clip else center
    keep = len(cells)  # the undeclared cell, if any, is estimated but not a key
    result_meta = GroupedRelease(
        meta.index,
        cost,
        f"{meta.mechanism} + least-squares consistency",
        np.sqrt(variance[:keep]),
        f"consistent({meta.query})",
        ConsistentIntervals(center[:keep], coef[:keep], tuple(noises), clip, statistic),
        meta.rho,
    )
    return grouped_series(shown[:keep], result_meta, cells.name)
