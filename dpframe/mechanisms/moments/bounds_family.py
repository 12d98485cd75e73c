"""Suggested bounds without peeking: a noisy histogram over fixed log-scale bins, then a rule.

Sums, means and quantiles need public clamping bounds, and choosing them by
looking at the data would leak.  ``approx_bounds`` releases a count per public
bin ±2^k (:func:`~dpframe.plan.releases.bounds_edges`) and keeps the outermost
bins whose noisy count clears a threshold that an empty bin crosses with
probability at most β/m (m bins), so with probability at least 1 − β no empty
bin widens the suggestion.  The same idea as Google's ApproxBounds and Tumult
Analytics' ``get_bounds``; the bins and the rule here are dpframe's own.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.core.explanations import Explanation, explain_aggregate, plain_number
from dpframe.mechanisms.core.family import Asked, Family, Released
from dpframe.mechanisms.core.work import PLAIN, Work
from dpframe.mechanisms.moments.aggregates import AggregateNoise, aggregate_noise, release_aggregate
from dpframe.plan.releases import ApproxBounds, bounds_edges
from dpframe.plan.releases.summaries import BOUNDS_POWERS

__all__ = ["BETA", "FALLBACK", "ApproxBoundsFamily", "BoundsNoise", "select_bounds"]

#: The chance that some empty bin widens the suggestion is at most this.
BETA = 0.05
#: The suggestion when no bin clears the threshold (too few rows for this ε).
FALLBACK = (-(2.0 ** BOUNDS_POWERS[1]), 2.0 ** BOUNDS_POWERS[1])


@dataclass(frozen=True)
class BoundsNoise:
    """The privacy map of an approx_bounds release: the histogram's noise and the threshold.

    Attributes:
        noise: the histogram's aggregate noise (one count per bin).
        threshold: the noisy count a bin must exceed to count as occupied.
    """

    noise: AggregateNoise
    threshold: float


def select_bounds(
    counts: npt.NDArray[np.float64], threshold: float, edges: tuple[float, ...]
) -> tuple[float, float] | None:
    """The suggestion from noisy bin counts: the outermost bins above ``threshold``.

    ``low`` is the lower edge of the lowest such bin and ``high`` the upper
    edge of the highest; an end at the zero bin [-2^-10, 2^-10) becomes 0 (its
    values move by less than 2^-10 when clamped), unless the zero bin is the
    only one.  None when no bin clears the threshold.  Post-processing only.
    """
    passing = np.flatnonzero(np.asarray(counts) > threshold)
    if passing.size == 0:
        return None
    lowest, highest = int(passing[0]), int(passing[-1])
    zero = len(edges) // 2 - 1  # the bin between -2^-10 and 2^-10
    low, high = edges[lowest], edges[highest + 1]
    if lowest == zero and highest > zero:
        low = 0.0
    if highest == zero and lowest < zero:
        high = 0.0
    return float(low), float(high)


class ApproxBoundsFamily(Family[ApproxBounds]):
    """Suggested clamping bounds of a numeric column from a noisy log-scale histogram.

    Privacy:
        The counts of one histogram over disjoint public bins, each present
        value in exactly one bin (values beyond ±2^40 fold into the end bins):
        the privacy of a count aggregate by one key (discrete Laplace for ε-DP,
        discrete Gaussian for zCDP), sensitivity 1 per row, or the unit's row
        limit under a privacy unit.  The rule reads only the noisy counts and a
        threshold computed from public inputs, so it is post-processing.

    Accuracy:
        With probability at least 1 − β (β = 0.05) no empty bin clears the
        threshold, so the suggestion lies within the outermost occupied bins,
        each at most a factor 2 wider than the data's extremes (or 2^-10 at
        zero).  A bin holding c values clears the threshold τ (the noise's
        1 − 2β/m quantile of |noise|, m = 101 bins) when c − τ exceeds the
        noise; bins with fewer than about τ values (rare extremes) are cut off,
        and their values are clamped by the suggestion.
    """

    node_type = ApproxBounds

    mechanism = "noisy histogram over log-scale bins (threshold rule)"

    def work(self, node: ApproxBounds) -> Work:
        """One histogram over public bins: a draw per bin (its cells)."""
        return PLAIN

    def privacy_map(self, node: ApproxBounds, allocation: NoiseAllocation) -> BoundsNoise:
        """The histogram's noise and the threshold an empty bin exceeds with chance ≤ β/m."""
        histogram = node.histogram()
        noise = aggregate_noise(histogram, allocation)
        _, _, spec = noise.noise[0]
        level = 1.0 - 2.0 * BETA / histogram.n_groups
        return BoundsNoise(noise, spec.abs_quantile(level) + spec.rounding)

    def release(self, run: Released[ApproxBounds]) -> tuple[Any, str]:
        """Exact counts per bin, noise, then :func:`select_bounds` (post-processing)."""
        histogram = run.node.histogram()
        planned: BoundsNoise = run.noise
        exact = run.backend.compute(histogram.plan, planned.noise.measures, histogram.by)
        noisy = release_aggregate(histogram, exact, run.allocation, run.rng, planned.noise)
        found = select_bounds(noisy.values, planned.threshold, bounds_edges())
        if found is None:
            warnings.warn(
                f"approx_bounds({run.node.expr}): no bin cleared the noise threshold "
                f"({planned.threshold:.3g}); returned the fixed fallback {FALLBACK}. "
                "Too few rows for this budget: spend more on it, or choose bounds from "
                "public knowledge.",
                UserWarning,
                stacklevel=2,
            )
            found = FALLBACK
        return found, f"({found[0]:g}, {found[1]:g})"

    def explain(self, node: ApproxBounds, asked: Asked) -> Explanation:
        """The histogram's noise per bin (the rule adds no cost)."""
        histogram = explain_aggregate(node.histogram(), asked)
        width = histogram.measures[0].half_width_95 if histogram.measures else 0.0
        headline = (
            f"a (low, high) suggestion from {histogram.cells} public log-scale bins "
            f"(each bin's count within ±{plain_number(width)} at 95%)"
        )
        return dataclasses.replace(histogram, headline=headline)
