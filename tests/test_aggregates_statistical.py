"""Statistical tests of every aggregate, end to end through the session.

One grouped release over K identical groups gives K independent noise draws.
Each test accepts the stated noise scale and must reject a scale 30% off
(0.7x and 1.3x), at significance ALPHA = 1e-7 per test.
Expected scales are computed here from first principles, not read from the library.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.accounting import rho_from_epsilon_delta
from dpframe.mechanisms.calibration.gdp_curves import discrete_gaussian_rho, mu_from_epsilon_delta
from tests.stats_helpers import ALPHA, chi2_pvalue, dgauss_pmf, dlaplace_pmf, ks2_pvalue, ks_pvalue

K = 40_000  # groups: 40,000 draws per release
ROWS = 20  # rows per group: ten 3.0s and ten 7.0s, bounds (0, 10)


@pytest.fixture(scope="module")
def groups_df() -> pd.DataFrame:
    keys = np.repeat(np.arange(K), ROWS)
    values = np.tile(np.array([3.0] * 10 + [7.0] * 10), K)
    frame: pd.DataFrame = pd.DataFrame({"g": keys, "x": values})
    return frame


def _frame(df: pd.DataFrame, **session_kwargs: object) -> dp.PrivateFrame:
    session = dp.Session(ledger=":memory:", **session_kwargs)  # type: ignore[arg-type]
    return session.private_frame(df, bounds={"x": (0, 10)}, categories={"g": list(range(K))})


def _assert_fits(pvalue_at: dict[float, float]) -> None:
    assert pvalue_at[1.0] > ALPHA, f"true scale rejected: {pvalue_at}"
    assert pvalue_at[0.7] < ALPHA, f"scale 0.7x not rejected: {pvalue_at}"
    assert pvalue_at[1.3] < ALPHA, f"scale 1.3x not rejected: {pvalue_at}"


@pytest.mark.parametrize("epsilon", [0.3, 1.0])
def test_count_is_discrete_laplace(groups_df: pd.DataFrame, epsilon: float) -> None:
    counts = _frame(groups_df, epsilon=epsilon).groupby("g").count(epsilon=epsilon)
    noise = counts.to_numpy().astype(np.int64) - ROWS
    scale = 1 / epsilon
    _assert_fits({f: chi2_pvalue(noise, dlaplace_pmf(scale * f)) for f in (0.7, 1.0, 1.3)})


def test_count_is_discrete_gaussian_under_zcdp(groups_df: pd.DataFrame) -> None:
    pf = _frame(groups_df, epsilon=1.0, delta=1e-6, accounting="zcdp")
    counts = pf.groupby("g").count(epsilon=0.5)
    noise = counts.to_numpy().astype(np.int64) - ROWS
    rho = float(rho_from_epsilon_delta(dp.Budget(1).epsilon, dp.Budget(0, 1e-6).delta)) * 0.5
    sigma = 1 / math.sqrt(2 * rho)
    _assert_fits({f: chi2_pvalue(noise, dgauss_pmf((sigma * f) ** 2)) for f in (0.7, 1.0, 1.3)})


def test_count_with_rho_argument(groups_df: pd.DataFrame) -> None:
    pf = _frame(groups_df, epsilon=1.0, delta=1e-6, accounting="zcdp")
    counts = pf.groupby("g").count(rho=0.005)
    noise = counts.to_numpy().astype(np.int64) - ROWS
    sigma = 1 / math.sqrt(2 * 0.005)
    _assert_fits({f: chi2_pvalue(noise, dgauss_pmf((sigma * f) ** 2)) for f in (0.7, 1.0, 1.3)})


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_sum_is_laplace_at_bound_over_epsilon(groups_df: pd.DataFrame, epsilon: float) -> None:
    sums = _frame(groups_df, epsilon=epsilon).groupby("g")["x"].sum(epsilon=epsilon)
    noise = sums.to_numpy() - 100.0
    scale = 10 / epsilon  # sensitivity max(|0|, |10|) = 10
    _assert_fits({f: ks_pvalue(noise, stats.laplace(scale=scale * f).cdf) for f in (0.7, 1.0, 1.3)})


def test_sum_is_gaussian_under_approx_with_delta(groups_df: pd.DataFrame) -> None:
    pf = _frame(groups_df, epsilon=2.0, delta=1e-5, accounting="approx")
    sums = pf.groupby("g")["x"].sum(epsilon=1.0, delta=1e-6)
    noise = sums.to_numpy() - 100.0
    # The analytic Gaussian in GDP form (μ with δ_μ(1) = 1e-6), corrected for the discrete
    # sampler (docs/proofs/gdp_accounting.md): σ ≈ 4.2345·Δ (the zCDP route gave 5.35·Δ).
    mu = mu_from_epsilon_delta(Fraction(1), Fraction(1, 10**6))
    rho = float(discrete_gaussian_rho(mu * mu / 2))
    sigma = 10 / math.sqrt(2 * rho)
    _assert_fits({f: ks_pvalue(noise, stats.norm(scale=sigma * f).cdf) for f in (0.7, 1.0, 1.3)})


def _simulate(statistic: str, epsilon: float, factor: float, size: int) -> np.ndarray:
    """The released statistic simulated from its definition (count, centred sums, Laplace).

    20 rows per group is far below the adaptive centre's threshold, so the
    mean, var and std take their fallback (midpoint) path: a second count, the
    centred sum and (var, std) the centred sum of squares, each at 19/60 of ε
    for var and std (mechanisms/moments/variance.py) and about ε/2 for the mean.
    """
    gen = np.random.default_rng(12345 + int(factor * 100))
    eps = epsilon / 2 if statistic == "mean" else epsilon * 19 / 60
    n = ROWS + stats.dlaplace.rvs(eps / factor, size=size, random_state=gen)
    s = 0.0 + gen.laplace(scale=factor * 5 / eps, size=size)  # centred sum: (±2) x 10 = 0
    n_safe = np.maximum(n, 1)
    if statistic == "mean":
        return np.asarray(np.clip(5 + s / n_safe, 0, 10), dtype=float)
    q = 80.0 + gen.laplace(scale=factor * 25 / eps, size=size)  # centred squares: 20 x 4
    var = np.clip(q / n_safe - (s / n_safe) ** 2, 0, 25)
    return np.asarray(var if statistic == "var" else np.sqrt(var), dtype=float)


@pytest.mark.parametrize("statistic", ["mean", "var", "std"])
def test_mean_var_std_match_their_definition(groups_df: pd.DataFrame, statistic: str) -> None:
    epsilon = 3.0
    grouped = _frame(groups_df, epsilon=epsilon).groupby("g")["x"]
    result = getattr(grouped, statistic)(epsilon=epsilon)
    # Every group's released value: groups too thin to show are missing in the Series
    # (post-processing), and the distribution tested is the mechanism's, before that.
    meta = result.attrs["dpframe"]
    released = result.to_numpy(dtype=float) if meta.released is None else meta.released
    assert np.array_equal(result.to_numpy(dtype=float), meta.values, equal_nan=True)
    _assert_fits(
        {f: ks2_pvalue(released, _simulate(statistic, epsilon, f, K)) for f in (0.7, 1.0, 1.3)}
    )


@pytest.mark.parametrize("statistic", ["count", "sum", "mean", "var", "std"])
def test_intervals_cover_the_truth(groups_df: pd.DataFrame, statistic: str) -> None:
    truth = {"count": ROWS, "sum": 100.0, "mean": 5.0, "var": 4.0, "std": 2.0}[statistic]
    grouped = _frame(groups_df, epsilon=1.0).groupby("g")
    target = grouped if statistic == "count" else grouped["x"]
    released = getattr(target, statistic)(epsilon=1.0)
    for level in (0.5, 0.9):
        bounds = dp.ci(released, level)
        covered = float(((bounds["low"] <= truth) & (truth <= bounds["high"])).mean())
        # Coverage must be at least the level (binomial slack at 1e-7: about 5.3 sd).
        slack = 5.3 * math.sqrt(level * (1 - level) / K)
        assert covered >= level - slack, (statistic, level, covered)
        if statistic == "sum":
            # An exact interval of one near-continuous measure: coverage is close to the
            # level, not just above (counts are discrete, so their coverage jumps).
            assert covered <= level + 0.05 + slack, (statistic, level, covered)
