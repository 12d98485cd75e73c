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
    :meth:`ConsistentIntervals.interval`): valid for each cell at ``level``,
    conservative by a few percent against the exact quantile.  Clipping at
    zero keeps it valid (``[max(lo, 0), max(hi, 0)]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.errors import DPError, InvalidArgumentError
from dpframe.mechanisms.additive import NoiseSpec
from dpframe.mechanisms.results import GroupedRelease, Release, grouped_series

__all__ = ["ConsistentIntervals", "consistent", "half_width", "sum_half_width"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ConsistentIntervals:
    """Intervals of least-squares cells: their error is ``coef @ noise`` (see the module docstring).

    Attributes:
        center: the unclipped estimates x̂.
        coef: (cells, noises) coefficients of each independent noise in each cell's error.
        noises: the noise of each measurement, in ``coef``'s column order.
        nonnegative: the truth is ≥ 0 (counts), so intervals are clipped at 0.
        statistic: ``count`` or ``sum`` (counts show as whole numbers).
    """

    center: FloatArray
    coef: FloatArray
    noises: tuple[NoiseSpec, ...]
    nonnegative: bool
    statistic: str

    def interval(self, level: float) -> tuple[FloatArray, FloatArray]:
        """(low, high) per cell, each covering its cell with probability ≥ ``level``.

        A Chernoff bound on the cell's error ``Σ_j c_j e_j``: for every λ > 0,
        ``P(|Σ c_j e_j| > t) ≤ 2 exp(−λt) Π_j E[exp(λ c_j e_j)]`` (the noises
        are independent and symmetric), with the discrete Laplace's exact
        moment generating function and the discrete Gaussian's sub-Gaussian
        bound ``exp(λ²σ²/2)`` (Canonne, Kamath, Steinke 2020); ``t`` is the
        smallest over λ for which the bound is ``1 − level``.  Each noise's
        rounding adds ``|c_j| · rounding_j``.  Two other valid bounds are
        computed and the smallest is used: a union bound (each term bounded
        except with probability ``α_j``, the ``α_j`` in proportion to the
        terms' weighted scales; exact for a cell whose error is one noise) and,
        for up to :data:`CONVOLVED_TERMS` terms, the exact distribution of the
        sum with every term rounded *up* to a fine grid (``S_up ≥ S``, so
        ``P(S > t) ≤ P(S_up > t)``; tails beyond 10⁻¹⁵ counted as failures).
        """
        if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
            raise InvalidArgumentError("level must be a number strictly between 0 and 1.")
        found: dict[tuple[tuple[float, NoiseSpec], ...], float] = {}
        half = np.zeros(len(self.center))
        for i, row in enumerate(self.coef):
            # cells with the same terms (up to order) share their bound: computed once
            key = tuple(
                sorted(
                    ((abs(float(c)), n) for c, n in zip(row, self.noises, strict=True) if c != 0),
                    key=repr,
                )
            )
            if key not in found:
                found[key] = half_width(row, self.noises, 1 - level)
            half[i] = found[key]
        low, high = self.center - half, self.center + half
        if self.nonnegative:
            low, high = np.maximum(low, 0.0), np.maximum(high, 0.0)
        return low, high


def _log_mgf(noise: NoiseSpec, u: float) -> float:
    """Log E[exp(u · e)] for one noise in value units (inf where it does not exist)."""
    step = u * noise.grid
    if noise.kind == "gaussian":
        return float(noise.parameter) * step * step / 2  # sub-Gaussian with variance proxy σ²
    a = math.exp(-1 / float(noise.parameter))
    if abs(step) >= -math.log(a):
        return math.inf
    return 2 * math.log1p(-a) - math.log1p(-a * math.exp(step)) - math.log1p(-a * math.exp(-step))


def _chernoff(row: FloatArray, noises: tuple[NoiseSpec, ...], alpha: float) -> float:
    """The smallest two-sided Chernoff bound ``t`` on ``|Σ row_j e_j|`` at failure ``alpha``."""
    terms = [(abs(float(c)), n) for c, n in zip(row, noises, strict=True) if c != 0]
    rounding = sum(c * n.rounding for c, n in terms)
    limit = min(
        (1 / (float(n.parameter) * n.grid * c) for c, n in terms if n.kind == "laplace"),
        default=math.inf,
    )
    spread = math.sqrt(sum((c * n.std) ** 2 for c, n in terms)) or 1.0

    def bound(lam: float) -> float:
        total = sum(_log_mgf(n, lam * c) for c, n in terms)
        return (total + math.log(2 / alpha)) / lam

    top = min(limit * (1 - 1e-9), 50 / spread)
    from scipy import optimize  # imported where first needed (import time)

    best = optimize.minimize_scalar(bound, bounds=(top * 1e-6, top), method="bounded")
    return float(min(bound(float(best.x)), bound(top * 0.5))) + rounding


#: The most noise terms whose sum is convolved exactly (beyond: Chernoff and union bounds).
CONVOLVED_TERMS = 24
_GRID_POINTS = 256  # grid steps per combined standard deviation (each term adds ≤ 1 step)
_TAIL = 1e-15


def half_width(row: FloatArray, noises: tuple[NoiseSpec, ...], alpha: float) -> float:
    """The smallest of the valid bounds on ``|Σ row_j e_j|`` at failure probability ``alpha``.

    ``e_j`` are independent draws of ``noises[j]`` (in value units, with their
    grid rounding); the bounds are the exact convolution (up to
    :data:`CONVOLVED_TERMS` terms), a Chernoff bound and a union bound.
    """
    found = [_chernoff(row, noises, alpha), _union(row, noises, alpha)]
    if 1 < np.count_nonzero(row) <= CONVOLVED_TERMS:
        found.append(_convolved(row, noises, alpha))
    return min(found)


def sum_half_width(count: int, noise: NoiseSpec, alpha: float) -> float:
    """A valid bound on ``|e_1 + ... + e_count|`` (independent copies of ``noise``) at ``alpha``."""
    return half_width(np.ones(count), (noise,) * count, alpha)


def _pmf(noise: NoiseSpec) -> tuple[FloatArray, int, float]:
    """A noise's pmf on its integer grid units: (probabilities of −K..K, K, mass beyond K)."""
    if noise.kind == "laplace":
        a = math.exp(-1 / float(noise.parameter))
        # P(|Y| > K) = 2 a^(K+1) / (1 + a) <= _TAIL
        reach = max(1, math.ceil(math.log(_TAIL * (1 + a) / 2) / math.log(a)))
        ks = np.arange(-reach, reach + 1)
        p = (1 - a) / (1 + a) * a ** np.abs(ks)
    else:
        sigma = math.sqrt(float(noise.parameter))
        reach = max(1, math.ceil(sigma * 8.3 + 1))  # Gaussian tail beyond 8.3σ < 1e-16
        ks = np.arange(-reach, reach + 1)
        weights = np.exp(-(ks.astype(float) ** 2) / (2 * sigma * sigma))
        p = weights / weights.sum()  # over ±reach: the normalizer misses < 1e-16
    return p, reach, max(0.0, 1.0 - float(p.sum()))


def _convolved(row: FloatArray, noises: tuple[NoiseSpec, ...], alpha: float) -> float:
    """``t`` with ``P(Σ c_j e_j > t) ≤ alpha/2`` from the exact pmfs, every term rounded up."""
    terms = [(abs(float(c)), n) for c, n in zip(row, noises, strict=True) if c != 0]
    spread = math.sqrt(sum((c * n.std) ** 2 for c, n in terms))
    step = spread / _GRID_POINTS
    total: FloatArray = np.ones(1)
    offset, lost = 0, 0.0
    for c, noise in terms:
        p, reach, beyond = _pmf(noise)
        lost += beyond
        values = c * noise.grid * np.arange(-reach, reach + 1)
        cells = np.ceil(values / step).astype(np.int64)  # rounded up: S_up >= S
        low = int(cells[0])
        dense = np.zeros(int(cells[-1]) - low + 1)
        np.add.at(dense, cells - low, p)
        size = len(total) + len(dense) - 1
        fft = np.fft.rfft(total, size) * np.fft.rfft(dense, size)
        total = np.clip(np.fft.irfft(fft, size), 0.0, None)
        offset += low
    budget = alpha / 2 - lost - 1e-12 * len(terms)  # FFT rounding, generously
    if budget <= 0:
        return math.inf
    above = np.cumsum(total[::-1])[::-1]  # above[i] = P(S_up >= offset + i)
    index = int(np.argmax(above <= budget))  # first grid point with P(S_up >= it) <= budget
    if above[index] > budget:
        return math.inf
    rounding = sum(c * n.rounding for c, n in terms)
    return (offset + index) * step + step + rounding


def _union(row: FloatArray, noises: tuple[NoiseSpec, ...], alpha: float) -> float:
    """``Σ_j |c_j| q_j`` with ``P(|e_j| > q_j) ≤ α_j``, the ``α_j`` summing to ``alpha``."""
    terms = [(abs(float(c)), n) for c, n in zip(row, noises, strict=True) if c != 0]
    weights = [c * n.scale for c, n in terms]
    whole = sum(weights)
    return sum(
        c * (n.abs_quantile(1 - alpha * w / whole) + n.rounding)
        for (c, n), w in zip(terms, weights, strict=True)
    )


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

    A cross table (``dp.crosstab``) is made to agree with its margins instead:
    see :func:`~dpframe.mechanisms.consistent_tables.consistent_table`
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

    Example:
        >>> counts = pf.groupby("region").size(epsilon=0.5)  # doctest: +SKIP
        >>> dp.consistent(counts, pf.count(epsilon=0.5))  # doctest: +SKIP
    """
    if isinstance(cells, pd.DataFrame):
        from dpframe.mechanisms.consistent_tables import consistent_table

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
