"""``corr()`` and ``cov()``: a covariance matrix from noisy moments, in one charge.

Privacy:
    ε-DP (or ρ-zCDP) by sequential composition of m = 1 + k + k(k+1)/2
    parts, each an equal share ε/m of the request: the row count
    (sensitivity 1), the sums of ``clip(x_i) - c_i`` (sensitivity h_i, the
    half-width of x_i's bounds, c_i their middle) and the sums of products
    ``(clip(x_i) - c_i)(clip(x_j) - c_j)`` (sensitivity h_i·h_j; squares h_i²),
    each with the discrete Laplace (Gaussian) noise of a clamped sum
    (:mod:`dpframe.mechanisms.moments.aggregates`).  Adding or removing one row changes
    each part by at most its sensitivity, so the parts compose to exactly
    the request.  Everything after is post-processing: with ñ, S̃_i and P̃_ij
    the noisy count, sums and product sums, cov_ij = (P̃_ij − S̃_i·S̃_j/ñ)/(ñ − 1)
    (pandas' ddof=1; centring does not change a covariance), variances
    clamped to [0, h_i²·ñ/(ñ − 1)], the matrix projected onto the positive
    semi-definite cone (eigenvalues below 0 set to 0), and corr_ij =
    cov_ij / sqrt(cov_ii·cov_jj) clipped to [−1, 1] with a unit diagonal.
    This is the sufficient-statistics perturbation of Dwork, Talwar,
    Thakurta and Zhang, "Analyze Gauss" (STOC 2014), with Laplace noise per
    entry instead of a Gaussian matrix.

Accuracy:
    Each product sum has noise scale b_ij = m·h_i·h_j/ε, so a covariance is
    off by about sqrt(2)·b_ij/n (plus smaller terms from the sums and the
    count), and a correlation by about sqrt(2)·m·h_i·h_j/(ε·n·σ_i·σ_j):
    tight bounds (h close to the spread of the data) and many rows matter.
    For two columns m = 6.  ``result.attrs["dpframe"].intervals`` holds the
    noisy moments and their noise.  Each entry's interval (``dp.ci``, the
    ``±`` shown) is a box: every part's noise within its two-sided
    1 − (1 − level)/m quantile (Bonferroni over the m parts), then interval
    arithmetic through the formulas above.  It covers the clamped data's
    covariance or correlation with probability at least ``level`` for every
    data set (conservative: often much wider than the error itself); it
    uses released values and public noise only.  When a correlation's
    interval spans more than half of [−1, 1], a warning says so, with the
    ε at which it would not (about: widths scale as 1/ε for large counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.answers.results import FrameRelease, as_answer
from dpframe.mechanisms.calibration.additive import NoiseSpec
from dpframe.mechanisms.core.explanations import Explanation
from dpframe.mechanisms.core.family import Asked, Family, Released
from dpframe.mechanisms.core.work import PLAIN, Work
from dpframe.plan.releases import Moments

__all__ = ["MomentIntervals", "MomentsFamily", "covariance"]


@dataclass(frozen=True)
class MomentIntervals:
    """The noisy moments behind a ``corr()``/``cov()`` release, and their noise (public).

    Attributes:
        noisy: the released count, centred sums and product sums, in the
            order of :meth:`dpframe.plan.releases.Moments.parts`.
        scales: the noise scale (Laplace b or Gaussian σ) of each, in value units.
        noise: each part's noise (empty: an older release without them).
        halves: the half-widths of the columns' bounds.
        statistic: ``"corr"`` or ``"cov"``.
    """

    noisy: tuple[float, ...]
    scales: tuple[float, ...]
    noise: tuple[NoiseSpec, ...] = ()
    halves: tuple[float, ...] = ()
    statistic: str = "cov"

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """Per-entry (low, high) covering the clamped data's matrix with probability ≥ ``level``.

        A box (module docstring): every part within its Bonferroni quantile,
        then interval arithmetic.  A noisy count whose low end is at most 1
        bounds nothing: (−inf, inf) for a covariance, [−1, 1] for a correlation.
        """
        return self.boxes(level, 1.0)

    def boxes(self, level: float, factor: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`interval` with every noise's quantile divided by ``factor`` (ε × factor)."""
        if not self.noise:
            raise DPError(
                "This corr()/cov() release has no interval (made before intervals were kept): "
                "release it again for one."
            )
        k = len(self.halves)
        per = 1.0 - (1.0 - level) / len(self.noise)
        half = np.array([spec.abs_quantile(per) + spec.rounding for spec in self.noise]) / factor
        noisy = np.asarray(self.noisy, dtype=float)
        low_all, high_all = noisy - half, noisy + half
        n_low, n_high = max(low_all[0], 0.0), high_all[0]
        sums = list(zip(low_all[1 : 1 + k], high_all[1 : 1 + k], strict=True))
        low = np.full((k, k), -np.inf)
        high = np.full((k, k), np.inf)
        if n_low > 1:
            pairs = [(i, j) for i in range(k) for j in range(i, k)]
            for (i, j), p_low, p_high in zip(
                pairs, low_all[1 + k :], high_all[1 + k :], strict=True
            ):
                box = _cov_box(sums[i], sums[j], (p_low, p_high), (n_low, n_high), i == j)
                if i == j:
                    top = self.halves[i] ** 2 * n_high / (n_high - 1) if n_high > 1 else math.inf
                    top = max(top, self.halves[i] ** 2 * n_low / (n_low - 1))
                    box = (max(box[0], 0.0), min(box[1], top))
                low[i, j] = low[j, i] = box[0]
                high[i, j] = high[j, i] = box[1]
        if self.statistic == "corr":
            return _corr_box(low, high)
        return low, high


def _product_box(a: tuple[float, float], b: tuple[float, float], same: bool) -> tuple[float, float]:
    """The range of x·y for x in ``a``, y in ``b`` (x² when ``same``)."""
    if same:
        squares = (a[0] ** 2, a[1] ** 2)
        least = 0.0 if a[0] <= 0 <= a[1] else min(squares)
        return least, max(squares)
    ends = [x * y for x in a for y in b]
    return min(ends), max(ends)


def _cov_box(
    s_i: tuple[float, float],
    s_j: tuple[float, float],
    product: tuple[float, float],
    n: tuple[float, float],
    same: bool,
) -> tuple[float, float]:
    """The range of (P − S_i·S_j/n)/(n − 1) over the boxes (n > 1 throughout)."""
    t_low, t_high = _product_box(s_i, s_j, same)
    ratio = [t / m for t in (t_low, t_high) for m in n]
    num = (product[0] - max(ratio), product[1] - min(ratio))
    ends = [x / (m - 1) for x in num for m in n]
    return min(ends), max(ends)


def _corr_box(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Correlation boxes from covariance boxes: cov/sqrt(var_i·var_j), within [−1, 1]."""
    k = low.shape[0]
    c_low, c_high = np.full((k, k), -1.0), np.full((k, k), 1.0)
    for i in range(k):
        c_low[i, i] = c_high[i, i] = 1.0
        for j in range(i + 1, k):
            v_low = low[i, i] * low[j, j]
            v_high = high[i, i] * high[j, j]
            if not (v_low > 0 and math.isfinite(v_high) and math.isfinite(low[i, j])):
                continue
            ends = [c / math.sqrt(v) for c in (low[i, j], high[i, j]) for v in (v_low, v_high)]
            c_low[i, j] = c_low[j, i] = max(-1.0, min(ends))
            c_high[i, j] = c_high[j, i] = min(1.0, max(ends))
    return c_low, c_high


def thin_correlation_warning(intervals: MomentIntervals, epsilon: float | None) -> str | None:
    """A one-line warning when some correlation's 95% interval spans over half of [−1, 1].

    The advice is the ε at which the same noisy moments would give intervals
    no wider than 1 (noise scales as 1/ε): about, since new draws move them.
    """
    width = _widest(intervals, 1.0)
    if width <= 1.0:
        return None
    advice = ""
    if epsilon is not None:
        factor = _factor_for_width(intervals)
        advice = (
            f"; about ε={epsilon * factor:.2g} would bring it under half"
            if factor is not None
            else "; a larger ε (widths shrink about as 1/ε), fewer columns or tighter bounds "
            "would narrow it"
        )
    return (
        f"Too thin to read: a correlation's 95% interval spans {width:.2f} of [−1, 1] at this "
        f"ε{advice} (dp.ci gives every entry's interval)."
    )


def _widest(intervals: MomentIntervals, factor: float) -> float:
    """The widest 95% correlation interval with every noise divided by ``factor``."""
    low, high = intervals.boxes(0.95, factor)
    return float(np.max(high - low))


def _factor_for_width(intervals: MomentIntervals, most: float = 1e4) -> float | None:
    """The least ε multiplier (within ``most``) at which the widest interval is at most 1."""
    low, high = 1.0, 2.0
    while _widest(intervals, high) > 1.0:
        low, high = high, high * 2
        if high > most:
            return None
    for _ in range(12):
        middle = (low + high) / 2
        low, high = (low, middle) if _widest(intervals, middle) <= 1.0 else (middle, high)
    return high


def covariance(
    count: float, sums: np.ndarray, products: np.ndarray, halves: np.ndarray
) -> np.ndarray:
    """The covariance matrix (ddof=1) from noisy moments, as the module states (post-processing).

    Args:
        count: the noisy row count.
        sums: the k noisy centred sums.
        products: the k×k symmetric matrix of noisy centred product sums.
        halves: the k half-widths of the bounds.
    """
    n = max(float(count), 2.0)
    cov = (products - np.outer(sums, sums) / n) / (n - 1)
    cov = (cov + cov.T) / 2
    limit = halves**2 * n / (n - 1)
    np.fill_diagonal(cov, np.clip(np.diag(cov), 0.0, limit))
    values, vectors = np.linalg.eigh(cov)
    if values.min() < 0:
        cov = (vectors * np.clip(values, 0.0, None)) @ vectors.T
        cov = (cov + cov.T) / 2
    return np.asarray(cov, dtype=np.float64)


def correlation(cov: np.ndarray) -> np.ndarray:
    """The correlation matrix of ``cov`` (a column with no spread: NaN, as pandas)."""
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = cov / np.outer(sd, sd)
    corr = np.clip(corr, -1.0, 1.0)
    np.fill_diagonal(corr, np.where(sd > 0, 1.0, np.nan))
    return np.asarray(corr, dtype=np.float64)


class MomentsFamily(Family[Moments]):
    """corr()/cov(): one charge, its parts in the node, the matrix as post-processing."""

    node_type = Moments

    def work(self, node: Moments) -> Work:
        """Nothing of its own: its parts are sized one by one."""
        return PLAIN

    def result_types(self) -> tuple[type, ...]:
        """The classes its results hold (allowed on the wire)."""
        return (MomentIntervals,)

    def release(self, run: Released[Moments]) -> tuple[Any, str]:
        """Release every part at its share, then assemble the matrix (post-processing)."""
        node = run.node
        released = [run.part(p) for p in run.parts]
        noisy = tuple(float(r) for r in released)
        scales = tuple(float(r.scale) for r in released)
        noise = tuple(r.intervals.noise[0] for r in released)
        k = len(node.columns)
        sums = np.array(noisy[1 : 1 + k])
        products = np.zeros((k, k))
        for (i, j), value in zip(node.pairs(), noisy[1 + k :], strict=True):
            products[i, j] = products[j, i] = value
        halves = np.array([(high - low) / 2 for _, _, (low, high) in node.columns])
        intervals = MomentIntervals(
            noisy, scales, noise, tuple(float(h) for h in halves), node.statistic
        )
        matrix = covariance(noisy[0], sums, products, halves)
        if node.statistic == "corr":
            matrix = correlation(matrix)
        names = pd.Index([name for name, _, _ in node.columns])
        result = pd.DataFrame(matrix, index=names, columns=names)
        result.attrs["dpframe_budget_split"] = (
            f"{node.part_count} parts (count, {k} sums, {k * (k + 1) // 2} product sums), "
            f"each 1/{node.part_count} of the request"
        )
        result.attrs["dpframe"] = FrameRelease(
            result.index,
            result.columns,
            run.cost,
            self.mechanism_of(node, run.allocation),
            node.label,
            intervals,
            result.to_numpy(dtype=object),
        )
        result = as_answer(result)
        return result, f"{k}x{k} {node.statistic}"

    def explain(self, node: Moments, asked: Asked) -> Explanation:
        """The cost, and each part's share (no data read)."""
        return asked.cost_only(
            f"{node.label}: {node.part_count} parts (count, sums, product sums), "
            f"each 1/{node.part_count} of the request"
        )
