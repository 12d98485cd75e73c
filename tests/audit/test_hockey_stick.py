"""The estimator: features, bins, exact bounds, vote levels, and the measured false-alarm rate."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.audit import Binning, clopper_pearson, features, hockey_stick_vote, vote_level
from dpframe.audit.hockey_stick import majority_false_alarm
from dpframe.noise import SecureRandom, discrete_laplace_array
from tests.stats_helpers import ALPHA


def test_features_of_each_kind_of_release() -> None:
    session = dp.Session(epsilon=100, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"x": [1.0, 2.0]}), bounds={"x": (0, 4)})
    release = pf["x"].sum(epsilon=1)
    assert features(release) == (release.value,)
    assert features(3) == (3.0,)
    assert features(["a", "b"]) == (("a", "b"),)
    assert features((1, 2.5)) == (1.0, 2.5)
    assert features("south") == ("south",)
    assert features(None) == (None,)
    assert features(np.float64(2.0)) == (2.0,)
    series = pd.Series([1.0, 2.0, 3.0, 4.0], index=["a", "b", "c", "d"])
    assert features(series, max_coords=2) == (("a", "b", "c", "d"), 1.0, 2.0)
    assert features(pd.DataFrame({"u": [1, 2]})) == (1.0, 2.0)


def test_bins_exact_values_quantiles_and_specials() -> None:
    few = Binning.fit([(0.0,), (1.0,), (1.0,), (2.0,)], bins=20)
    assert few.cell((1.0,)) == ((), (1.0,))
    assert few.cell((7.0,)) == ((), ("<unseen>",))
    many = Binning.fit([(float(v),) for v in range(1000)], bins=10)
    cells = {many.cell((float(v),)) for v in range(1000)}
    assert len(cells) == 10
    for special, key in ((math.nan, "nan"), (math.inf, "+inf"), (-math.inf, "-inf")):
        assert many.cell((special,)) == ((), (key,))
    two_axes = Binning.fit([(float(v), float(-v), "k") for v in range(1000)], bins=16)
    assert len(two_axes.axes) == 2
    assert len({two_axes.cell((float(v), float(-v), "k")) for v in range(1000)}) <= 16
    assert two_axes.cell((1.0, 2.0, "k"))[0] == ("k",)


def test_clopper_pearson_matches_closed_forms() -> None:
    low, high = clopper_pearson(0, 50, 0.01)
    assert low == 0.0 and high == pytest.approx(1 - 0.01 ** (1 / 50))
    low, high = clopper_pearson(50, 50, 0.01)
    assert high == 1.0 and low == pytest.approx(0.01 ** (1 / 50))
    low, high = clopper_pearson(30, 100, 0.001)
    assert stats.binom.sf(29, 100, low) == pytest.approx(0.001)
    assert stats.binom.cdf(30, 100, high) == pytest.approx(0.001)


@pytest.mark.parametrize("votes", [1, 3, 5, 7])
def test_vote_level_meets_the_overall_bound(votes: int) -> None:
    level = vote_level(1e-7, votes)
    assert majority_false_alarm(votes, 2 * level) <= 1e-7
    assert majority_false_alarm(votes, 2 * level * 1.01) > 1e-7
    with pytest.raises(dp.InvalidArgumentError, match="alpha must lie strictly between 0 and 1"):
        vote_level(0.0, votes)


def test_bad_audit_arguments_are_dperrors() -> None:
    def release(_: object) -> float:
        return 0.0

    with pytest.raises(
        dp.InvalidArgumentError, match=r"epsilon \(the claim to test\) must be a number >= 0"
    ):
        dp.audit.audit(release, 0, 1, epsilon=-1)
    with pytest.raises(
        dp.InvalidArgumentError, match=r"delta \(the claim to test\) must be a number in \[0, 1\)"
    ):
        dp.audit.audit(release, 0, 1, epsilon=1, delta=1.5)
    with pytest.raises(dp.InvalidArgumentError, match="samples must be an integer >= 4"):
        dp.audit.audit(release, 0, 1, epsilon=1, samples=2)
    with pytest.raises(dp.InvalidArgumentError, match=r"returned 1 release\(s\) instead of 10"):
        dp.audit.audit(lambda d, n: [0.0], 0, 1, epsilon=1, samples=10, batched=True)


def _tight_count(scale: Fraction) -> Callable[[int, int], list[float]]:
    """A count of ``data`` rows with discrete Laplace noise: ε-DP exactly at ε = 1/scale."""

    def sampler(data: int, n: int) -> list[float]:
        return list(data + discrete_laplace_array(scale, n, SecureRandom()).astype(float))

    return sampler


def test_measured_false_alarm_rate_is_within_the_bound() -> None:
    """A mechanism exactly at its claim (δ = 0 at ε = 1, tight on this pair) at a loose level.

    Each vote's direction may flag with probability at most the level; 400 votes
    at level 0.05 (800 directions) must not flag more than a binomial(800, 0.05)
    allows at α = 1e-7.
    """
    sampler = _tight_count(Fraction(1))
    flags, votes = 0, 400
    for _ in range(votes):
        p0, t0, p1, t1 = (sampler(d, 150) for d in (10, 10, 11, 11))
        vote = hockey_stick_vote(
            [(v,) for v in p0],
            [(v,) for v in p1],
            [(v,) for v in t0],
            [(v,) for v in t1],
            epsilon=1.0,
            delta=0.0,
            level=0.05,
        )
        flags += vote.forward.flagged + vote.backward.flagged
    assert stats.binom.sf(flags - 1, 2 * votes, 0.05) > ALPHA


def test_a_claim_30_percent_too_small_is_flagged() -> None:
    """The tight count is 1-DP; claiming ε = 0.7 must be found out at the default α."""
    result = dp.audit.audit(
        _tight_count(Fraction(1)), 10, 11, epsilon=0.7, samples=4000, votes=5, batched=True
    )
    assert result.violation, repr(result)
    honest = dp.audit.audit(
        _tight_count(Fraction(1)), 10, 11, epsilon=1.0, samples=4000, votes=5, batched=True
    )
    assert honest.passed, repr(honest)
    assert "passed" in repr(honest) and "vote 5" in repr(honest)
