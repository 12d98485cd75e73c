"""Statistical tests of the undeclared cell's noise, end to end through the session.

A group-by has one undeclared cell, so each test makes N = 10,000 releases
(about 0.4 ms each on a 30-row frame) and tests the N noisy counts of the
20 undeclared rows.  Each test accepts the stated noise and must reject a
scale 30% off (0.7x and 1.3x), at significance ALPHA = 1e-7 per test.
The expected scales are computed here from first principles (the cell's
share is the whole ε or ρ for one row per person; a count's noise scaled by
k for a unit of k rows), not read from the library.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.moments.aggregates import aggregate_noise
from dpframe.mechanisms.moments.undeclared import release_undeclared
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, GroupKey, Source
from tests.stats_helpers import ALPHA, chi2_pvalue, dgauss_pmf, dlaplace_pmf, ks_pvalue

N = 10_000  # releases per test
OUTSIDE = 20  # undeclared rows


def _frame() -> pd.DataFrame:
    keys = ["a"] * 6 + ["b"] * 4 + ["A"] * 12 + ["zz"] * 8  # 20 rows outside {"a", "b"}
    frame: pd.DataFrame = pd.DataFrame(
        {"g": keys, "x": np.linspace(0, 10, len(keys)), "person": np.arange(len(keys))}
    )
    return frame


def _noise(release: Callable[[], pd.Series]) -> np.ndarray:
    draws = np.empty(N, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # 20 rows are often "clearly there"
        for i in range(N):
            draws[i] = round(float(release().dp.undeclared)) - OUTSIDE
    return draws


def _assert_fits(pvalue_at: dict[float, float]) -> None:
    assert pvalue_at[1.0] > ALPHA, f"true scale rejected: {pvalue_at}"
    assert pvalue_at[0.7] < ALPHA, f"scale 0.7x not rejected: {pvalue_at}"
    assert pvalue_at[1.3] < ALPHA, f"scale 1.3x not rejected: {pvalue_at}"


@pytest.mark.fresh_releases
@pytest.mark.slow
def test_in_a_sum_the_cell_is_a_count_with_laplace_noise_at_the_whole_epsilon() -> None:
    epsilon = 0.5
    session = dp.Session(epsilon=1e9, ledger=":memory:")
    pf = session.private_frame(_frame(), bounds={"x": (0, 10)}, categories={"g": ["a", "b"]})
    noise = _noise(lambda: pf.groupby("g")["x"].sum(epsilon=epsilon))
    scale = 1 / epsilon  # sensitivity 1 (a row), the whole ε (not the sum's Δ = 10)
    _assert_fits({f: chi2_pvalue(noise, dlaplace_pmf(scale * f)) for f in (0.7, 1.0, 1.3)})


@pytest.mark.fresh_releases
@pytest.mark.slow
def test_in_a_mean_under_zcdp_the_cell_is_a_discrete_gaussian_at_the_whole_rho() -> None:
    rho = 0.02
    session = dp.Session(epsilon=1e6, delta=1e-6, ledger=":memory:", accounting="zcdp")
    pf = session.private_frame(_frame(), bounds={"x": (0, 10)}, categories={"g": ["a", "b"]})
    noise = _noise(lambda: pf.groupby("g")["x"].mean(rho=rho))
    sigma = 1 / math.sqrt(2 * rho)  # the whole ρ, not the mean's first count's 1/20
    _assert_fits({f: chi2_pvalue(noise, dgauss_pmf((sigma * f) ** 2)) for f in (0.7, 1.0, 1.3)})


@pytest.mark.fresh_releases
@pytest.mark.slow
def test_with_units_of_three_rows_the_cell_has_the_counts_noise() -> None:
    epsilon = 1.0
    session = dp.Session(epsilon=1e9, ledger=":memory:")
    pf = session.private_frame(
        _frame(),
        bounds={"x": (0, 10)},
        categories={"g": ["a", "b"]},
        privacy_unit="person",
        max_rows_per_unit=3,
    )
    noise = _noise(lambda: pf.groupby("g").size(epsilon=epsilon))
    scale = 3 / epsilon  # one more cell of the row count: sensitivity k = 3
    _assert_fits({f: chi2_pvalue(noise, dlaplace_pmf(scale * f)) for f in (0.7, 1.0, 1.3)})


def test_with_units_in_a_sum_the_cell_is_a_cell_of_the_sum() -> None:
    """k = 2: the cell is the sum's noise over the per-row weight; many cells, one draw each."""
    key = GroupKey("g", Col("g"), ("a", "b"))
    agg = Aggregate(Source("d", unit_rows=2), "sum", Col("x"), (0.0, 10.0), (key,), "q")
    agg = Aggregate(agg.plan, "sum", agg.expr, agg.bounds, agg.by, "q", undeclared=True)
    epsilon = Fraction(1, 2)
    planned = aggregate_noise(agg, NoiseAllocation("laplace", epsilon)).undeclared
    assert planned is not None and planned.shared
    grid, _, spec = planned.noise
    per_row = planned.weight * planned.quantum
    assert per_row == 10.0  # a row at the bound: the sum's per-row sensitivity
    noisy, in_rows = release_undeclared(planned, np.full(N, float(OUTSIDE)), SecureRandom())
    units = np.rint((noisy - OUTSIDE) * per_row / spec.grid).astype(np.int64)
    assert np.allclose(units * spec.grid / per_row, noisy - OUTSIDE)  # on the noise's grid
    # In grid units the noise is discrete Laplace of scale Δ_u/ε, Δ_u = ⌊2w/g⌋ + 2.
    scale = (2 * (planned.sensitivity // 2) // grid + 2) / float(epsilon)
    # Thousands of grid units: a Kolmogorov-Smirnov test on the exact discrete cdf.
    cdf = {f: stats.dlaplace(1 / (scale * f)).cdf for f in (0.7, 1.0, 1.3)}
    _assert_fits({f: ks_pvalue(units.astype(np.float64), cdf[f]) for f in cdf})
    assert in_rows.scale == pytest.approx(scale * spec.grid / per_row)
