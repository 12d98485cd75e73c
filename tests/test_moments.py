"""corr()/cov() (noisy moments, one charge) and isna().sum() (integer counts)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.mechanisms.moments.moments_family import correlation, covariance
from tests.stats_helpers import ALPHA

BIG = 1e7


@pytest.fixture
def pf(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=1e12, ledger=":memory:", name="moments")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def _clipped(cps: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    frame: pd.DataFrame = pd.DataFrame({n: cps[n].clip(*CPS1988_BOUNDS[n]) for n in names})
    return frame


def test_corr_and_cov_match_pandas_at_a_large_epsilon(
    pf: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    names = ["wage", "education", "experience"]
    truth = _clipped(cps, names)
    got = pf[names].corr(epsilon=BIG)
    assert list(got.index) == list(got.columns) == names
    np.testing.assert_allclose(got.to_numpy(dtype=float), truth.corr().to_numpy(), atol=1e-4)
    cov = pf[names].cov(epsilon=BIG)
    np.testing.assert_allclose(
        cov.to_numpy(dtype=float), truth.cov().to_numpy(), rtol=1e-4, atol=1e-3
    )
    one = pf["wage"].corr(pf["education"], epsilon=BIG)
    assert one == pytest.approx(truth["wage"].corr(truth["education"]), abs=1e-4)
    ledger = pf.session.ledger
    assert ledger["epsilon"].tolist() == [BIG] * 3  # one charge each
    assert ledger["query"].iloc[0].startswith("corr(wage, education, experience) where")


def test_a_moderate_epsilon_gives_a_valid_correlation_matrix(pf: dp.PrivateFrame) -> None:
    got = pf[["wage", "education", "experience"]].corr(epsilon=0.01).to_numpy(dtype=float)
    assert np.allclose(np.diag(got), 1.0) and np.allclose(got, got.T)
    assert (np.abs(got) <= 1).all() and np.linalg.eigvalsh(got).min() > -1e-9


def test_post_processing_projects_onto_valid_matrices() -> None:
    halves = np.array([1.0, 1.0])
    products = np.array([[10.0, 30.0], [30.0, -5.0]])  # noise made it impossible
    cov = covariance(100.0, np.zeros(2), products, halves)
    assert np.linalg.eigvalsh(cov).min() >= -1e-12
    assert cov[1, 1] >= 0 and cov[0, 0] <= 100 / 99
    corr = correlation(cov)
    assert (np.abs(corr) <= 1).all()
    assert np.isnan(correlation(np.zeros((2, 2)))[0, 0])  # no spread: NaN, as pandas


def test_bad_requests_are_refused_before_any_charge(pf: dp.PrivateFrame) -> None:
    with pytest.raises(dp.SchemaError, match="at least two numeric columns"):
        pf[["wage", "region"]].corr(epsilon=1)
    unbounded = pf.assign(w2=pf["wage"] / pf["education"])
    with pytest.raises(dp.SchemaError, match=r"\['w2'\] have none"):
        unbounded[["wage", "w2"]].cov(epsilon=1)
    with pytest.raises(dp.SchemaError, match="only method='pearson'"):
        pf[["wage", "education"]].corr(method="spearman", epsilon=1)
    with pytest.raises(dp.SchemaError, match="another column"):
        pf["wage"].corr(3, epsilon=1)
    assert pf.session.ledger.empty


def _tiny() -> pd.DataFrame:
    """Values 0, 1, 2 with bounds (0, 2): centred terms -1, 0, 1 lie on every grid exactly."""
    a = np.tile([0.0, 1.0, 2.0, 2.0, 1.0], 40)
    b = np.tile([2.0, 1.0, 0.0, 2.0, 2.0], 40)
    frame: pd.DataFrame = pd.DataFrame({"a": a, "b": b})
    return frame


def test_privacy_map_each_part_costs_its_share_and_no_less_noise_fits() -> None:
    """The noise of the 6 parts composes to exactly ε; 0.1% less noise would exceed it.

    Parts: count (Δ = 1), two centred sums (Δ = h = 1), three product sums
    (Δ = h² = 1); each at ε/6, so b = 6Δ/ε (the sum's power-of-two grid widens
    by at most 0.1%).  Pure DP composes as Σ Δ_p/b_p.
    """
    session = dp.Session(epsilon=10, ledger=":memory:", name="moments-map")
    frame = session.private_frame(_tiny(), bounds={"a": (0, 2), "b": (0, 2)})
    epsilon = 1.0
    result = frame.corr(epsilon=epsilon)
    scales = np.array(result.attrs["dpframe"].intervals.scales)
    sensitivities = np.ones(6)
    used = float(np.sum(sensitivities / scales))
    assert used <= epsilon * (1 + 1e-12)
    assert float(np.sum(sensitivities / (0.999 * scales))) > epsilon
    assert float(np.sum(sensitivities / (0.99 * scales))) > epsilon
    assert session.spent == dp.Budget(epsilon)
    assert len(session.ledger) == 1 and session.ledger["parts"].iloc[0].count('"name"') == 6


@pytest.mark.fresh_releases  # 2,000 draws of one request: each a new release (issue 31)
def test_product_sum_noise_has_the_stated_laplace_scale() -> None:
    """The released product sum minus the exact one is Laplace with the stated scale b = 6/ε.

    With N draws, S = Σ|noise|/b is Gamma(N, 1) distributed (|Laplace(b)| is
    exponential; the noise is discrete Laplace on a grid about b/6000 wide, which
    moves E|noise| by under 2e-4 relative: a shift of S below 0.4 against its
    standard deviation of 45, negligible).  The
    test accepts when S lies within the central 1 − 1e-7 of Gamma(N, 1): a
    correct mechanism fails with probability 1e-7.  A scale 30% off (1.3b or
    0.7b) gives S near 1.3N or 0.7N; with N = 2,000 it is accepted with
    probability below 1e-9 (normal approximation, z > 6).
    """
    draws = 2_000
    data = _tiny()
    session = dp.Session(epsilon=draws + 10, ledger=":memory:", name="moments-stat")
    frame = session.private_frame(data, bounds={"a": (0, 2), "b": (0, 2)})
    exact = float(((data["a"] - 1) * (data["b"] - 1)).sum())
    ratios = np.empty(draws)
    stated = set()
    for i in range(draws):
        intervals = frame.cov(epsilon=1.0).attrs["dpframe"].intervals
        scale = intervals.scales[4]  # parts: count, sum a, sum b, a·a, a·b, b·b
        stated.add(scale)
        ratios[i] = abs(intervals.noisy[4] - exact) / scale
    (scale,) = stated
    assert 6.0 <= scale <= 6.0 * 1.001  # b = mΔ/ε, the grid widening at most 0.1%
    total = float(ratios.sum())
    low, high = stats.gamma.ppf([ALPHA / 2, 1 - ALPHA / 2], draws)
    assert low <= total <= high
    for wrong in (1.3, 0.7):
        assert not low <= total / wrong <= high  # the same test rejects a wrong scale


def test_isna_sum_counts_missing_values_as_integers(cps: pd.DataFrame) -> None:
    data: pd.DataFrame = cps.copy()
    data.loc[data.index % 9 == 0, "wage"] = np.nan
    session = dp.Session(epsilon=1e12, ledger=":memory:", name="isna")
    frame = session.private_frame(data, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    counts = frame.isna().sum(epsilon=BIG)
    assert counts.to_dict() == pytest.approx(data.isna().sum().to_dict(), abs=1)
    assert all(float(v).is_integer() for v in counts)
    shares = frame[["wage", "education"]].notna().mean(epsilon=BIG)
    assert shares["wage"] == pytest.approx(data["wage"].notna().mean(), abs=1e-4)
    one = frame["wage"].isna().sum(epsilon=BIG)
    assert float(one).is_integer() and float(one) == pytest.approx(data["wage"].isna().sum(), abs=1)
    assert "count" in one.mechanism or one.mechanism.startswith("discrete")
    assert session.ledger["epsilon"].tolist() == [BIG] * 3
