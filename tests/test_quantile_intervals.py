"""Quantile value intervals: exact tilted exponential mechanism, coverage on hard data, privacy.

The interval's proof (docs/proofs/quantile_intervals.md) holds for every data
set; these tests check it where a weaker construction fails: ties at the
quantile, a gap at the quantile (every value between two clusters is a
median), very few rows, explicit candidates with equality bins, and groups.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.mechanisms.quantiles.quantile_intervals import (
    QuantileIntervals,
    ladder,
    quantile_ends,
    tilt,
    tilted_selection,
)
from dpframe.mechanisms.quantiles.quantiles import (
    below_candidates,
    candidate_bins,
    candidate_values,
    quantile_utilities,
    utility_sensitivity,
)
from dpframe.noise import SecureRandom
from tests.stats_helpers import ALPHA, pooled_pvalue

BOUNDS = (0.0, 100.0)


def _exact_em(
    weights: npt.NDArray[np.float64], factor: float, valid: npt.NDArray[np.bool_]
) -> npt.NDArray[np.float64]:
    p = np.where(valid, np.exp(factor * (weights - weights[valid].max())), 0.0)
    return np.asarray(p / p.sum(), dtype=np.float64)


def test_tilted_selection_is_the_exponential_mechanism_and_rejects_30_percent_off() -> None:
    """20,000 rows of one selection: the counts fit exp(ε·w/2Δ) over the valid positions
    and not the distribution at 0.7ε or 1.3ε (probabilities worked out here, not sampled)."""
    weights = np.array([0, -1, -2, -3, -3, -5, -8, 0], dtype=np.int64)
    valid = np.array([True, True, True, True, True, True, True, False])
    rows = 20_000
    epsilon, sensitivity = Fraction(1), 1  # factor ε/(2Δ) = 1/2
    chosen = tilted_selection(
        np.tile(weights, (rows, 1)), np.tile(valid, (rows, 1)), epsilon, sensitivity, SecureRandom()
    )
    assert not (chosen == 7).any()  # an invalid position is never chosen
    counts = np.bincount(chosen, minlength=8)[:7]
    for scale, accepted in ((1.0, True), (0.7, False), (1.3, False)):
        expected = _exact_em(weights.astype(float), 0.5 * scale, valid)[:7] * rows
        assert (pooled_pvalue(counts, expected) > ALPHA) is accepted, scale


def test_ladder_holds_both_extremes_and_marks_repeats() -> None:
    indices, valid = ladder(np.array([0, 2048, 4096]), 4097)
    for row, ok in zip(indices, valid, strict=True):
        assert row[0] == 0 and row[-1] == 4096
        assert (np.diff(row) >= 0).all()
        assert len(set(row.tolist())) == ok.sum()  # one valid position per distinct index
    assert 2049 in indices[1] and 2047 in indices[1] and 3072 in indices[1]


def test_tilt_makes_the_tail_at_most_half_of_beta() -> None:
    for epsilon, delta in ((Fraction(1, 4), 1), (Fraction(3), 7), (Fraction(1, 100), 2)):
        lam = tilt(epsilon, delta)
        tail = 1.0 / math.expm1(float(epsilon) * lam / (2 * delta))
        assert tail <= 0.025
        assert tilt(epsilon, delta) - 2 <= 2 * delta / float(epsilon) * math.log(41) + 1


def _quantile_set(values: npt.NDArray[np.float64], q: float) -> tuple[float, float]:
    """[min Q, max Q]: the c with #{x < c} ≤ q·n ≤ #{x ≤ c} (clamped values)."""
    x = np.sort(np.clip(values, *BOUNDS))
    n = len(x)
    target = q * n
    low = x[max(math.ceil(target) - 1, 0)]
    high = x[math.floor(target)] if math.floor(target) < n else BOUNDS[1]
    return float(low), float(high)


def _ends(
    values: npt.NDArray[np.float64],
    q: Fraction,
    epsilon: Fraction,
    trials: int,
    candidates: tuple[float, ...] = (),
    centred: bool = False,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``trials`` independent intervals on the same data (one row each), each end at ``epsilon``.

    The ladder is centred on a uniformly random candidate (coverage holds for any point),
    or with ``centred`` on the best one (as a good point release would be).
    """
    grid = candidate_values(BOUNDS, candidates)
    bins = candidate_bins(grid, BOUNDS, ties=bool(candidates))
    counts = np.histogram(np.clip(values, *BOUNDS), bins.edges)[0].astype(float)
    below, upto, totals = below_candidates(np.tile(counts, (trials, 1)), bins)
    utilities = quantile_utilities(below, upto, totals, q)
    rng = SecureRandom()
    points = rng.uniform_below(len(grid), trials).astype(np.intp)  # any point: the proof's case
    if centred:
        points[:] = int(np.argmax(utilities[0]))
    return quantile_ends(utilities, points, grid, BOUNDS, epsilon, utility_sensitivity(q), rng)


#: The most misses a 95% interval may have in 3,000 trials (binomial tail below ALPHA).
MISSES = int(stats.binom.isf(ALPHA, 3000, 0.05))

HARD = {
    "ties on a grid point": np.concatenate([np.full(600, 50.0), np.linspace(0, 100, 400)]),
    "ties between grid points": np.concatenate([np.full(600, 50.01), np.linspace(0, 100, 400)]),
    "a gap at the median": np.concatenate([np.full(500, 10.0), np.full(500, 90.0)]),
    "twenty rows": np.random.default_rng(3).uniform(0, 100, 20),
    "skewed": np.random.default_rng(4).exponential(3.0, 5000),
}


@pytest.mark.parametrize("name", list(HARD))
@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 10), Fraction(9, 10)])
def test_intervals_cover_on_hard_data(name: str, q: Fraction) -> None:
    values = HARD[name]
    low, high = _quantile_set(values, float(q))
    for epsilon in (Fraction(1, 20), Fraction(1)):
        lo, hi = _ends(values, q, epsilon, 3000)
        assert (lo <= hi).all()
        misses = int(((lo > high) | (hi < low)).sum())
        assert misses <= MISSES, (name, float(q), float(epsilon), misses)


def test_intervals_cover_with_explicit_candidates_and_ties() -> None:
    values = np.repeat([3.0, 4.0, 5.0, 9.0], [10, 40, 10, 40])
    candidates = tuple(float(c) for c in range(11))
    q = Fraction(1, 2)
    low, high = _quantile_set(values, 0.5)
    lo, hi = _ends(values, q, Fraction(1, 2), 3000, candidates)
    assert int(((lo > high) | (hi < low)).sum()) <= MISSES
    assert set(np.unique(lo)) <= {0.0, *candidates}


def test_intervals_are_informative_when_the_data_allow() -> None:
    """Not the bounds: at ε = 1 per end on 5,000 normal values the median's interval is
    within a few units (σ = 10) of it."""
    values = np.random.default_rng(5).normal(50, 10, 5000)
    lo, hi = _ends(values, Fraction(1, 2), Fraction(1), 200, centred=True)
    assert float(np.median(hi - lo)) < 3.0


def test_each_end_is_epsilon_dp_on_neighbours() -> None:
    """Exact output distributions of the lower end on a data set and each neighbour (one row
    added anywhere, or one removed): the privacy loss never exceeds the end's ε."""
    values = np.array([1.0, 2.0, 2.0, 6.0, 7.0, 7.0, 7.0, 9.0])
    candidates = tuple(float(c) for c in range(11))
    grid = candidate_values(BOUNDS, candidates)
    bins = candidate_bins(grid, BOUNDS, ties=True)
    q, epsilon = Fraction(1, 2), Fraction(1, 2)
    delta = utility_sensitivity(q)
    lam = tilt(epsilon, delta)
    indices, valid = ladder(np.array([5]), len(grid))

    def distribution(data: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        counts = np.histogram(data, bins.edges)[0].astype(float)[None, :]
        below, upto, totals = below_candidates(counts, bins)
        u = quantile_utilities(below, upto, totals, q)[0][indices[0]].astype(float)
        weights = u - lam * np.arange(len(u))
        return _exact_em(weights, float(epsilon) / (2 * delta), valid[0])

    base = distribution(values)
    worst = 0.0
    for c in np.arange(0, 11, 0.5):
        other = distribution(np.append(values, c))
        worst = max(worst, float(np.max(np.abs(np.log(other[valid[0]] / base[valid[0]])))))
    for i in range(len(values)):
        other = distribution(np.delete(values, i))
        worst = max(worst, float(np.max(np.abs(np.log(other[valid[0]] / base[valid[0]])))))
    assert worst <= float(epsilon) * (1 + 1e-9)
    assert worst >= 0.5 * float(epsilon)  # the 2Δ of the calibration is needed


def test_intervals_from_a_release_and_its_level() -> None:
    intervals = QuantileIntervals(np.array([1.0]), np.array([3.0]))
    low, high = intervals.interval(0.9)  # the 95% interval covers at 90% too
    assert (low[0], high[0]) == (1.0, 3.0)
    with pytest.raises(dp.DPError, match="released at 95% only"):
        intervals.interval(0.99)


def test_grouped_medians_cover_a_gap_in_every_group() -> None:
    """2,000 groups, each half at 10 and half at 90 (every value between is a median):
    at most the binomial bound of groups miss, end to end through the release."""
    groups = [f"g{i}" for i in range(2000)]
    frame = pd.DataFrame(
        {"g": np.repeat(groups, 20), "x": np.tile(np.repeat([10.0, 90.0], 10), len(groups))}
    )
    session = dp.Session(epsilon=10, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"x": BOUNDS}, categories={"g": groups})
    released = pf.groupby("g")["x"].median(epsilon=0.5)
    intervals = dp.ci(released)
    low, high = intervals["low"].to_numpy(), intervals["high"].to_numpy()
    misses = int(((low > 90.0) | (high < 10.0)).sum())
    assert misses <= int(stats.binom.isf(ALPHA, 2000, 0.05))
    values = released.to_numpy(dtype=float)
    assert ((low <= values) & (values <= high)).all()
