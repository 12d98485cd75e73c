"""Intervals of corr()/cov() entries: a Bonferroni box over the noisy moments."""

from __future__ import annotations

import dataclasses
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS
from dpframe.mechanisms.moments.moments_family import MomentIntervals, thin_correlation_warning

NAMES = ["wage", "education", "experience"]
BOUNDS = {name: CPS1988_BOUNDS[name] for name in NAMES}
RUNS = 120


def _truth(cps: pd.DataFrame, statistic: str, names: list[str] = NAMES) -> pd.DataFrame:
    clipped = pd.DataFrame({n: cps[n].clip(*BOUNDS[n]) for n in names})
    matrix: pd.DataFrame = clipped.corr() if statistic == "corr" else clipped.cov()
    return matrix


@pytest.mark.fresh_releases  # repeats one request to sample its noise: new releases
@pytest.mark.parametrize(("statistic", "epsilon"), [("corr", 1.0), ("cov", 1.0), ("corr", 10.0)])
def test_every_entry_covers_the_clamped_truth(
    cps: pd.DataFrame, statistic: str, epsilon: float
) -> None:
    # Two columns of 3,000 rows (six noisy moments): small enough for many runs, thin
    # enough at ε = 1 that the box is far from trivial.
    names = ["wage", "experience"]
    data = cps[names].sample(3_000, random_state=1)
    session = dp.Session(epsilon=RUNS * epsilon, ledger=":memory:")
    pf = session.private_frame(data, bounds={n: BOUNDS[n] for n in names})
    truth = _truth(data, statistic, names).to_numpy()
    missed = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the "too thin" warning at ε = 0.3
        for _ in range(RUNS):
            result = getattr(pf[names], statistic)(epsilon=epsilon)
            low, high = result.attrs["dpframe"].intervals.interval(0.95)
            inside = (low <= truth + 1e-9 * abs(truth)) & (truth - 1e-9 * abs(truth) <= high)
            missed += int(not inside.all())
    # A 95% box for the whole matrix at once: at most 5% of the runs miss any entry
    # (binomial slack for a false failure below 1e-6: about 5.3 sd).
    slack = 5.3 * math.sqrt(0.05 * 0.95 / RUNS)
    assert missed / RUNS <= 0.05 + slack, missed


def test_the_box_is_informative_at_a_large_epsilon(cps: pd.DataFrame) -> None:
    pf = dp.Session(epsilon=10, ledger=":memory:").private_frame(cps[NAMES], bounds=BOUNDS)
    result = pf[NAMES].corr(epsilon=5)
    low, high = dp.ci(result).xs("low", axis=1, level=1), dp.ci(result).xs("high", axis=1, level=1)
    width = (high - low).to_numpy()
    assert np.all(width[~np.eye(3, dtype=bool)] < 0.1)
    assert np.all(np.diag(width) == 0)  # the unit diagonal is exact
    truth = _truth(cps, "corr").to_numpy()
    assert np.all(np.abs(result.to_numpy(dtype=float) - truth) < width + 1e-12)


def test_the_interval_uses_released_values_and_public_noise_only(cps: pd.DataFrame) -> None:
    pf = dp.Session(epsilon=10, ledger=":memory:").private_frame(cps[NAMES], bounds=BOUNDS)
    meta = pf[NAMES].cov(epsilon=1).attrs["dpframe"].intervals
    again = MomentIntervals(meta.noisy, meta.scales, meta.noise, meta.halves, meta.statistic)
    for got, expected in zip(again.interval(0.9), meta.interval(0.9), strict=True):
        np.testing.assert_array_equal(got, expected)
    # Wider at a higher level, and a noisier count widens every entry.
    low90, high90 = meta.interval(0.9)
    low99, high99 = meta.interval(0.99)
    assert np.all(high99 - low99 >= high90 - low90)
    narrow = meta.boxes(0.95, 2.0)
    wide = meta.boxes(0.95, 1.0)
    assert np.all(narrow[1] - narrow[0] <= wide[1] - wide[0])


def test_a_thin_correlation_warns_and_an_informative_one_does_not(cps: pd.DataFrame) -> None:
    pf = dp.Session(epsilon=10, ledger=":memory:").private_frame(cps[NAMES], bounds=BOUNDS)
    with pytest.warns(UserWarning, match=r"Too thin to read: a correlation's 95% interval spans"):
        pf[NAMES].corr(epsilon=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        pf[NAMES].corr(epsilon=3)  # informative: no warning


def test_the_advised_epsilon_is_the_least_that_brings_the_widest_under_half(
    cps: pd.DataFrame,
) -> None:
    # The noisy moments of an informative release, with noise 40 times wider: the same
    # released values, so the advice depends on the noise alone (deterministic here).
    pf = dp.Session(epsilon=10, ledger=":memory:").private_frame(cps[NAMES], bounds=BOUNDS)
    meta = pf[NAMES].corr(epsilon=5).attrs["dpframe"].intervals
    wide = tuple(
        dataclasses.replace(spec, parameter=spec.parameter * 40)  # Laplace scale × 40
        for spec in meta.noise
    )
    thin = MomentIntervals(meta.noisy, meta.scales, wide, meta.halves, "corr")
    message = thin_correlation_warning(thin, 5 / 40)
    assert message is not None
    found = re.search(r"about ε=([0-9.e+-]+) would bring it under half", message)
    assert found is not None, message
    advised = float(found.group(1))
    assert 5 / 40 < advised < 5
    factor = advised / (5 / 40)

    def width(f: float) -> float:
        low, high = thin.boxes(0.95, f)
        return float(np.max(high - low))

    assert width(factor * 1.05) <= 1.0 < width(factor * 0.9)


def test_an_old_release_without_noise_says_how_to_get_one() -> None:
    with pytest.raises(dp.DPError, match="release it again for one"):
        MomentIntervals((1.0,), (1.0,)).interval(0.95)
