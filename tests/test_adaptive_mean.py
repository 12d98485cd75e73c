"""The scalar mean with a privately chosen centre (dpframe/mechanisms/mean.py)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.accounting import NoiseAllocation
from dpframe.mechanisms import additive
from dpframe.mechanisms.mean import MeanRelease, _levels, release_mean
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Col
from dpframe.plan.measures import Measure
from tests.stats_helpers import ALPHA, chi2_pvalue, dlaplace_pmf

EPS = Fraction(1)
BOUNDS = (0.0, 20.0)  # midpoint 10; quantum 1: sensitivity 10 quanta, grid 1
MEASURES = (Measure("nonnull", Col("x")), Measure("sum", Col("x"), 0.0, 20.0, 10.0, 1, 1.0))
SENS = (1, 10)


def _release(n: float, centred_sum: float) -> MeanRelease:
    exact = [np.array([n]), np.array([centred_sum])]
    return release_mean(
        MEASURES, SENS, exact, BOUNDS, NoiseAllocation("laplace", EPS), SecureRandom()
    )


def test_second_sum_has_discrete_laplace_noise_for_its_actual_sensitivity() -> None:
    # 10^7 values averaging 1: the first pass puts the centre at 1 (offset -9
    # quanta) in every draw, so the second sum's sensitivity is 10 + 9 quanta.
    n, offset = 10_000_000, -9
    noise, parameters = [], set()
    for _ in range(5000):
        mean = _release(float(n), float(n * offset))
        assert mean.center.tolist() == [1.0]
        noise.append(int(mean.total[0]))  # the exact second sum, Σ(x − centre), is 0
        parameters.add(mean.kept[1].parameter)
    (parameter,) = parameters
    assert parameter >= Fraction(19) / (EPS * Fraction(18, 20))  # exact calibration
    samples = np.array(noise, dtype=np.int64)
    assert chi2_pvalue(samples, dlaplace_pmf(float(parameter))) > ALPHA
    assert chi2_pvalue(samples, dlaplace_pmf(0.7 * float(parameter))) < ALPHA  # 30% narrower
    assert chi2_pvalue(samples, dlaplace_pmf(1.3 * float(parameter))) < ALPHA  # 30% wider


def test_small_counts_fall_back_to_the_midpoint_with_a_second_count() -> None:
    for _ in range(50):
        mean = _release(5.0, -45.0)
        assert mean.center.tolist() == [10.0]  # the midpoint: count below 10 noise SDs
        assert len(mean.used) == 3 and mean.kept[0] is mean.used[1]
        assert mean.kept[0].parameter >= 1 / (EPS * Fraction(9, 20))
        assert mean.kept[1].parameter >= 10 / (EPS * Fraction(10, 20))
        assert mean.count.shape == (1,)


def test_int64_sums_round_to_the_grid_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    # Sums beyond 2**53 (a second pass over 2**31 rows can reach 2**54) are
    # rounded to the grid in integer arithmetic; with the noise set to zero the
    # released units must be the exact rounding.
    monkeypatch.setattr(
        additive, "discrete_laplace_array", lambda t, size, rng: np.zeros(size, dtype=np.int64)
    )
    exact = np.array([2**60 + 2**20 + 3, -(2**58) - 5, 2**53 + 1], dtype=np.int64)
    allocation = NoiseAllocation("laplace", Fraction(1))
    values, spec = additive.release_integer_sums(exact, 2**40, 1.0, allocation, SecureRandom())
    grid = int(spec.grid)
    assert grid == 2**30
    assert [int(v) for v in values] == [(int(e) + grid // 2) // grid * grid for e in exact]


@pytest.fixture(scope="module")
def skewed() -> tuple[dp.PrivateFrame, float]:
    rng = np.random.default_rng(5)
    values = rng.lognormal(10.5, 0.8, 3000)  # mean about 50,000 in bounds [0, 10^6]
    session = dp.Session(epsilon=10**6, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"income": values}), bounds={"income": (0, 1e6)})
    return pf, float(np.clip(values, 0, 1e6).mean())


def test_error_near_a_bound_beats_the_midpoint_estimator(
    skewed: tuple[dp.PrivateFrame, float],
) -> None:
    # In units of (U - L)/(ε n): the midpoint estimator's MAE is 1.40 here (the
    # count's noise times |mean - midpoint|), the adaptive one's about 1.1.
    pf, exact = skewed
    unit = 1e6 / 3000
    errors = np.array([abs(pf["income"].mean(epsilon=1).value - exact) for _ in range(1500)])
    ratio = errors.mean() / unit
    sem = errors.std(ddof=1) / np.sqrt(len(errors)) / unit
    assert sem < 0.03
    assert ratio < 1.25, (ratio, sem)  # > 5 SEM from 1.40 and from the expected 1.1


def test_interval_uses_the_chosen_centre(skewed: tuple[dp.PrivateFrame, float]) -> None:
    pf, exact = skewed
    release = pf["income"].mean(epsilon=1)
    model = release.intervals
    assert model.center is not None and model.center != 5e5
    low, high = release.ci(0.99)
    assert low <= release.value <= high
    misses = sum(
        not (lo <= exact <= hi)
        for lo, hi in (pf["income"].mean(epsilon=1).ci(0.9) for _ in range(300))
    )
    assert misses <= 60  # coverage >= 90% (conservative); P(> 60 misses) < 1e-7 at 10%


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10**6), st.lists(st.integers(0, 10**6), min_size=1, max_size=60))
def test_sensitivity_levels_round_up_by_at_most_a_sixteenth(base: int, extra: list[int]) -> None:
    sens = np.array([base + min(e, base) for e in extra], dtype=np.int64)  # within [K, 2K]
    levels = _levels(sens, base)
    assert (levels >= sens).all()
    assert (levels - sens <= -(-base // 16)).all()
    assert len(np.unique(levels)) <= 17


def test_grouped_means_take_their_own_paths_and_centres() -> None:
    # 300 cells: 150 with 5,000 values near 1 (adaptive), 150 with 2 values (fallback).
    n = np.array([5000.0] * 150 + [2.0] * 150)
    exact = [n, n * -9.0]
    mean = release_mean(
        MEASURES, SENS, exact, BOUNDS, NoiseAllocation("laplace", EPS), SecureRandom()
    )
    assert (mean.center[150:] == 10.0).all()  # fallback: the midpoint
    assert (np.abs(mean.center[:150] - 1.0) <= 2.0).all()  # near the data
    assert (np.abs(mean.values[:150] - 1.0) < 0.5).all()
    # Intervals use the widest noise of any cell: the fallback's midpoint sum here.
    assert mean.kept[1].parameter >= 10 / (EPS * Fraction(10, 20))


def test_grouped_mean_intervals_cover() -> None:
    rng = np.random.default_rng(9)
    values = [rng.uniform(0, 100, 2000), rng.uniform(400, 600, 2000), np.array([5.0, 7.0, 9.0])]
    df = pd.DataFrame(
        {
            "g": np.repeat(["low", "mid", "tiny"], [2000, 2000, 3]),
            "x": np.concatenate(values),
        }
    )
    exact = df.groupby("g")["x"].mean()
    session = dp.Session(epsilon=10**6, ledger=":memory:")
    pf = session.private_frame(
        df, bounds={"x": (0, 1000)}, categories={"g": ["low", "mid", "tiny"]}
    )
    misses = 0
    for _ in range(100):
        release = pf.groupby("g")["x"].mean(epsilon=1)
        table = dp.ci(release, level=0.9)
        misses += int(((table["low"] > exact) | (table["high"] < exact)).sum())
    assert misses <= 60  # 300 intervals at >= 90% coverage: P(> 60 misses) < 1e-7
