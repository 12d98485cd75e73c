"""A 95% value interval for every released quantile, paid for inside the quantile's own ε.

Each level's ε_q is split three ways (basic composition): ε_q/2 selects the
point (permute-and-flip, :mod:`~dpframe.mechanisms.quantiles.quantiles`),
ε_q/4 selects a lower end and ε_q/4 an upper end.  The ends are chosen by the
exponential mechanism over a *ladder* of the public candidates around the
released point (indices p, p ± 1, p ± 2, p ± 4, … clipped to the candidates),
with a public tilt that pushes the lower end down and the upper end up.

Privacy:
    Each end is the exponential mechanism (McSherry & Talwar 2007) on the
    quantile's rank utility u minus (or plus) a public term λ·j for ladder
    position j: a data-independent shift does not change the utility's
    sensitivity Δ = max(q, 1 − q)·k ranks, so each end is (ε_q/4)-DP and
    the point and both ends compose to ε_q per level (ε over the levels).
    The ladder depends only on the released point (post-processing).  It is
    sampled exactly: a uniform proposal accepted with the exact coin
    exp(−ε·gap/(2Δ)) (:func:`~dpframe.mechanisms.selection.grouped_selection.exp_coins`),
    repeated until one is accepted; the first accepted proposal has exactly
    the exponential mechanism's distribution.  Per group the same parallel
    composition as the point holds (docs/proofs/quantile_intervals.md).

Accuracy (coverage, for every data set):
    Let Q be the set of q-quantiles of the clamped, non-missing values
    ({c : #{x < c} ≤ q·n ≤ #{x ≤ c}}, an interval).  Above max Q the rank
    utility does not increase along the ladder; with m the first ladder
    position above max Q, P(lower end's position ≥ m + 1) ≤ P(position m)·
    Σ_{t≥1} e^{−ελt/(2Δ)} ≤ 1/(e^{ελ/(2Δ)} − 1) = β/2 for
    λ = (2Δ/ε)·ln(1 + 2/β).  The lower end reported is the ladder's value
    *before* the selected one (the lower bound L before the first), so it is
    at most max Q with probability ≥ 1 − β/2; the upper end mirrors it.  The
    interval [min(ends, point), max(ends, point)] then meets Q with
    probability ≥ 1 − β = 95%, whatever the data (ties and gaps included).
    Its width is about two ladder steps beyond the values within a few
    λ ranks of the quantile; the point's rank error is that of ε_q/2 (twice
    the rank error of a point given the whole ε_q).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.errors import DPError, InvalidBudgetError
from dpframe.mechanisms.selection.grouped_selection import exp_coins
from dpframe.noise import SecureRandom

__all__ = [
    "INTERVAL_LEVEL",
    "POINT_SHARE",
    "QuantileIntervals",
    "end_epsilon",
    "ladder",
    "point_epsilon",
    "quantile_ends",
    "tilt",
    "tilted_selection",
]

#: The level of every quantile's value interval.
INTERVAL_LEVEL = 0.95
#: The share of a level's ε that selects the point (each end gets half the rest).
POINT_SHARE = Fraction(1, 2)

IntpArray = npt.NDArray[np.intp]


def point_epsilon(eps_level: Fraction) -> Fraction:
    """The ε that selects a level's point."""
    return eps_level * POINT_SHARE


def end_epsilon(eps_level: Fraction) -> Fraction:
    """The ε that selects each end of a level's interval."""
    return eps_level * (1 - POINT_SHARE) / 2


@dataclass(frozen=True, eq=False)
class QuantileIntervals:
    """Each released quantile's 95% value interval (released with it: post-processing to read).

    Attributes:
        low: lower end per cell (the column's units).
        high: upper end per cell.
        level: the coverage the ends were selected for.
        integer: the candidates were whole numbers (an integer column's): the
            values and ends are shown as integers.
    """

    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]
    level: float = INTERVAL_LEVEL
    integer: bool = False

    def interval(self, level: float) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """The released ends for any level up to the one they were selected for.

        At a lower level the 95% interval is returned (it covers with
        probability ≥ 95% ≥ ``level``); a higher level needs a new release.
        """
        if level > self.level + 1e-12:
            raise DPError(
                f"A quantile's value interval is released at {self.level:.0%} only; "
                f"{level:.3g} would need ends chosen for that level. Ask for a level "
                f"of at most {self.level:.0%}."
            )
        return np.asarray(self.low, dtype=float).copy(), np.asarray(self.high, dtype=float).copy()


def ladder(points: IntpArray, candidates: int) -> tuple[IntpArray, npt.NDArray[np.bool_]]:
    """Ladder positions around each point: indices p − 2^i, …, p − 1, p, p + 1, …, p + 2^i.

    Rows are points; the indices are clipped to [0, candidates − 1] (so both
    extremes are on every ladder), and a repeat of the previous index is
    marked invalid.  Public: it depends on the released points only.

    Returns:
        (indices, valid), both of shape (len(points), width), indices non-decreasing per row.
    """
    top = max(1, math.ceil(math.log2(max(candidates, 2))))
    steps = [1 << i for i in range(top + 1)]
    offsets = np.array([-s for s in reversed(steps)] + [0] + steps, dtype=np.intp)
    indices = np.clip(np.asarray(points, dtype=np.intp)[:, None] + offsets, 0, candidates - 1)
    valid = np.ones(indices.shape, dtype=np.bool_)
    valid[:, 1:] = indices[:, 1:] != indices[:, :-1]
    return indices, valid


def tilt(epsilon: Fraction, sensitivity: int, level: float = INTERVAL_LEVEL) -> int:
    """λ in utility units, an integer ≥ (2Δ/ε)·ln(1 + 2/β), β = 1 − level (public)."""
    if epsilon <= 0:
        raise InvalidBudgetError("epsilon must be > 0.")
    beta = 1.0 - level
    exact = 2.0 * sensitivity / float(epsilon) * math.log1p(2.0 / beta)
    return math.ceil(exact * (1.0 + 1e-9)) + 1  # rounded up: the tail bound only tightens


def tilted_selection(
    weights: npt.NDArray[Any],
    valid: npt.NDArray[np.bool_],
    epsilon: Fraction,
    sensitivity: int,
    rng: SecureRandom,
) -> IntpArray:
    """The exponential mechanism in each row: position j with probability ∝ exp(ε·w_j/(2Δ)).

    Only ``valid`` positions are chosen.  Exact: proposals uniform over the
    row's positions, each accepted with the exact coin exp(−ε·(w* − w_j)/(2Δ))
    (invalid ones never); the first accepted proposal is the output.  Rows
    are drawn together, a round of ``width`` proposals per unfinished row at
    a time (each round ends a row with probability ≥ 1 − 1/e).

    Privacy:
        ε-DP per row when each utility moves by at most Δ (``sensitivity``)
        between neighbours and the rest of ``weights`` is public
        (McSherry & Talwar 2007).

    Accuracy:
        The exponential mechanism's: with probability ≥ 1 − β the selected
        weight is within (2Δ/ε)·ln(k/β) of the best of k positions.
    """
    values = np.asarray(weights)
    rows, width = values.shape
    masked = np.where(valid, values, values.min(axis=1, keepdims=True))
    best = masked.max(axis=1, keepdims=True)
    gaps = best - masked
    factor = Fraction(epsilon) / (2 * sensitivity)
    chosen = np.full(rows, -1, dtype=np.intp)
    pending = np.arange(rows)
    while pending.size:
        proposals = rng.uniform_below(width, pending.size * width).reshape(pending.size, width)
        proposals = proposals.astype(np.intp)
        picked_gaps = gaps[pending[:, None], proposals]
        coins = exp_coins(picked_gaps, factor, rng) & valid[pending[:, None], proposals]
        done = coins.any(axis=1)
        first = np.argmax(coins, axis=1)
        chosen[pending[done]] = proposals[done, first[done]]
        pending = pending[~done]
    return chosen


def quantile_ends(
    utilities: npt.NDArray[Any],
    points: IntpArray,
    candidates: npt.NDArray[np.float64],
    bounds: tuple[float, float],
    epsilon: Fraction,
    sensitivity: int,
    rng: SecureRandom,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each row's (lower, upper) value interval around its released point (module docstring).

    Args:
        utilities: the rank utilities, one row per group, one column per candidate.
        points: the released candidate index per row.
        candidates: the public candidate values (sorted).
        bounds: the column's clamping bounds (the ends beyond the ladder).
        epsilon: the ε of each end.
        sensitivity: Δ in the utilities' units.
        rng: the secure random source.
    """
    rows = np.arange(len(points))
    indices, valid = ladder(points, len(candidates))
    width = indices.shape[1]
    steps = np.arange(width, dtype=np.int64)
    lam = tilt(epsilon, sensitivity)
    ladder_utilities = np.asarray(utilities)[rows[:, None], indices]
    big = ladder_utilities.dtype == object or lam * width >= 2**62 // 4
    if big:
        ladder_utilities = ladder_utilities.astype(object)
        shift = np.array([lam * int(s) for s in steps], dtype=object)
    else:
        shift = lam * steps
    lower_at = tilted_selection(ladder_utilities - shift, valid, epsilon, sensitivity, rng)
    upper_at = tilted_selection(ladder_utilities + shift, valid, epsilon, sensitivity, rng)
    values = candidates[indices]
    # The distinct ladder value before the lower end's position (the bound L before the first)
    # and after the upper end's (U after the last): clipping repeats only the extremes.
    low = np.where(
        lower_at > 0, values[rows, np.maximum(lower_at - 1, 0)], float(bounds[0])
    ).astype(float)
    nxt = np.minimum(upper_at + 1, width - 1)
    moves = (upper_at + 1 < width) & (indices[rows, nxt] != indices[rows, upper_at])
    high = np.where(moves, values[rows, nxt], float(bounds[1])).astype(float)
    point_values = candidates[np.asarray(points, dtype=np.intp)]
    lo = np.minimum(np.minimum(low, high), point_values)
    hi = np.maximum(np.maximum(low, high), point_values)
    return lo, hi
