"""``corr()`` and ``cov()``: a covariance matrix from noisy moments, in one charge.

Privacy:
    ε-DP (or ρ-zCDP) by sequential composition of m = 1 + k + k(k+1)/2
    parts, each an equal share ε/m of the request: the row count
    (sensitivity 1), the sums of ``clip(x_i) - c_i`` (sensitivity h_i, the
    half-width of x_i's bounds, c_i their middle) and the sums of products
    ``(clip(x_i) - c_i)(clip(x_j) - c_j)`` (sensitivity h_i·h_j; squares h_i²),
    each with the discrete Laplace (Gaussian) noise of a clamped sum
    (:mod:`dpframe.mechanisms.aggregates`).  Adding or removing one row changes
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
    noisy moments and their noise; ``ci()`` has no interval for this release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.explanations import Explanation
from dpframe.mechanisms.family import Asked, Family, Released
from dpframe.mechanisms.results import FrameRelease, as_answer
from dpframe.plan.releases import Moments

__all__ = ["MomentIntervals", "MomentsFamily", "covariance"]


@dataclass(frozen=True)
class MomentIntervals:
    """The noisy moments behind a ``corr()``/``cov()`` release, and their noise (public).

    Attributes:
        noisy: the released count, centred sums and product sums, in the
            order of :meth:`dpframe.plan.releases.Moments.parts`.
        scales: the noise scale (Laplace b or Gaussian σ) of each, in value units.
    """

    noisy: tuple[float, ...]
    scales: tuple[float, ...]

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """No interval: raise, saying where the accuracy is stated."""
        raise DPError(
            "corr()/cov() have no interval: the Accuracy section of their docstring (and "
            "explain) gives each entry's error; the noisy moments are in .intervals.noisy."
        )


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

    def result_types(self) -> tuple[type, ...]:
        """The classes its results hold (allowed on the wire)."""
        return (MomentIntervals,)

    def release(self, run: Released[Moments]) -> tuple[Any, str]:
        """Release every part at its share, then assemble the matrix (post-processing)."""
        node = run.node
        released = [run.part(p) for p in run.parts]
        noisy = tuple(float(r) for r in released)
        scales = tuple(float(r.scale) for r in released)
        k = len(node.columns)
        sums = np.array(noisy[1 : 1 + k])
        products = np.zeros((k, k))
        for (i, j), value in zip(node.pairs(), noisy[1 + k :], strict=True):
            products[i, j] = products[j, i] = value
        halves = np.array([(high - low) / 2 for _, _, (low, high) in node.columns])
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
            MomentIntervals(noisy, scales),
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
