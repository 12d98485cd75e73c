"""Sanitized copies: randomized response and the Laplace copy (local DP, input perturbation)."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.mechanisms.copies.copy_family import CopyInfo, estimate_frequencies
from dpframe.mechanisms.copies.local import (
    laplace_copy_scale,
    laplace_copy_spec,
    laplace_perturb,
    randomized_response,
    rr_estimate,
    rr_probabilities,
    rr_spec,
)
from dpframe.noise import SecureRandom
from tests.dp_check import worst_violation
from tests.sessions import local
from tests.stats_helpers import ALPHA, chi2_pvalue, dlaplace_pmf, ks_pvalue

# -- the seed texts' numbers ---------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "delta", "expected"), [(0.1, 0.1, 14589), (2, 0.5, 1112), (11, 0.7, 245)]
)
def test_laplace_copy_scale_reproduces_the_text(
    epsilon: float, delta: float, expected: int
) -> None:
    b = laplace_copy_scale(2996, epsilon, delta)
    assert round(b) == expected
    spec = laplace_copy_spec(0, 2996, epsilon, delta)
    # The noise actually used is the text's scale, rounded up by at most one part in 2**19.
    assert b <= spec.scale <= b * (1 + 2**-19)


@pytest.mark.parametrize(
    ("epsilon", "delta", "expected"), [(0.1, 0.1, 0.12), (2, 0.5, 0.57), (7, 0.6, 0.98)]
)
def test_randomized_response_keep_probability_reproduces_the_text(
    epsilon: float, delta: float, expected: float
) -> None:
    keep, other = rr_probabilities(epsilon, delta, 47)  # 48 categories
    assert round(keep, 2) == expected
    assert keep + 47 * other == pytest.approx(1.0)
    spec = rr_spec(epsilon, delta, 48)
    assert keep - 1e-12 <= spec.keep + 47 * 2**-48 and spec.keep <= keep
    assert spec.keep + 47 * spec.other == 1.0


def test_two_categories_is_warner() -> None:
    keep, _ = rr_probabilities(1.3, 0, 1)
    assert keep == pytest.approx(math.exp(1.3) / (1 + math.exp(1.3)))


# -- the randomizers' distributions -------------------------------------------


def _rr_counts(epsilon: float, delta: float, cats: int, n: int) -> np.ndarray:
    codes = np.zeros(n, dtype=np.int64)  # every row holds category 0
    reports = randomized_response(codes, rr_spec(epsilon, delta, cats), SecureRandom())
    return np.bincount(reports, minlength=cats)


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 0.0), (0.5, 0.2)])
def test_randomized_response_distribution(epsilon: float, delta: float) -> None:
    cats, n = 5, 200_000
    counts = _rr_counts(epsilon, delta, cats, n)

    def expected(eps: float) -> np.ndarray:
        keep, other = rr_probabilities(eps, delta, cats - 1)
        return n * np.array([keep] + [other] * (cats - 1))

    assert stats.chisquare(counts, expected(epsilon)).pvalue > ALPHA
    # An epsilon 30% off either way is rejected.
    assert stats.chisquare(counts, expected(epsilon * 1.3)).pvalue < ALPHA
    assert stats.chisquare(counts, expected(epsilon / 1.3)).pvalue < ALPHA


def test_missing_values_report_uniformly() -> None:
    codes = np.full(100_000, -1, dtype=np.int64)
    reports = randomized_response(codes, rr_spec(2.0, 0, 4), SecureRandom())
    counts = np.bincount(reports, minlength=4)
    assert stats.chisquare(counts).pvalue > ALPHA


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 0.0), (0.7, 0.15)])
def test_randomized_response_is_dp(epsilon: float, delta: float) -> None:
    n = 100_000
    spec = rr_spec(epsilon, delta, 3)
    rng = SecureRandom()
    out_a = randomized_response(np.zeros(n, dtype=np.int64), spec, rng).tolist()
    out_b = randomized_response(np.ones(n, dtype=np.int64), spec, rng).tolist()
    out_m = randomized_response(np.full(n, -1, dtype=np.int64), spec, rng).tolist()
    assert worst_violation(out_a, out_b, epsilon, delta) <= 0
    assert worst_violation(out_a, out_m, epsilon, delta) <= 0
    # The check has power: the same outputs violate a guarantee well below the true one.
    assert worst_violation(out_a, out_b, epsilon / 3, delta / 3) > 0


def test_laplace_perturb_noise_distribution() -> None:
    spec = laplace_copy_spec(0.0, 100.0, 1.0, 0.0)
    values = np.full(50_000, 37.25)
    out = laplace_perturb(values, 0.0, 100.0, spec, SecureRandom())
    noise = out - 37.25
    b = spec.scale
    assert ks_pvalue(noise, stats.laplace(scale=b).cdf) > ALPHA
    assert ks_pvalue(noise, stats.laplace(scale=1.3 * b).cdf) < ALPHA
    assert ks_pvalue(noise, stats.laplace(scale=b / 1.3).cdf) < ALPHA
    # Released values lie on the public power-of-two grid.
    assert np.all(out / spec.grid == np.rint(out / spec.grid))


def test_laplace_perturb_clamps_and_fills_missing() -> None:
    spec = laplace_copy_spec(0.0, 10.0, 50.0, 0.0)
    values = np.array([-1e9, 1e9, np.nan] * 20_000)
    out = laplace_perturb(values, 0.0, 10.0, spec, SecureRandom()).reshape(-1, 3)
    means = out.mean(axis=0)
    half = 6 * spec.std / math.sqrt(20_000)
    assert means == pytest.approx([0.0, 10.0, 5.0], abs=half)


def test_rr_estimate_is_unbiased() -> None:
    truth = np.repeat(np.arange(4), [5_000, 20_000, 0, 15_000])
    spec = rr_spec(1.0, 0, 4)
    reports = randomized_response(truth, spec, SecureRandom())
    estimate, std = rr_estimate(reports, 4, spec.keep, spec.other)
    z = stats.norm.isf(ALPHA / 8)
    assert np.all(np.abs(estimate - [5_000, 20_000, 0, 15_000]) < z * std)
    assert estimate.sum() == pytest.approx(len(truth))


# -- through the session -------------------------------------------------------


def _frame(tmp_path: Path, cps: pd.DataFrame, **kw: object) -> dp.PrivateFrame:
    session = dp.Session(ledger=tmp_path / "l.sqlite", **kw)  # type: ignore[arg-type]
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def test_copy_through_the_session(tmp_path: Path, cps: pd.DataFrame) -> None:
    pf = _frame(tmp_path, cps, epsilon=5.0)
    copy = pf["region"].randomized_response(epsilon=2.0)
    meta = copy.attrs["dpframe_copy"]
    assert isinstance(meta, CopyInfo)
    assert meta.epsilon == pytest.approx(1.9)  # 5% of the request hides the length
    assert meta.keep == pytest.approx(rr_probabilities(1.9, 0, 3)[0], abs=1e-12)
    assert list(copy.cat.categories) == sorted(CPS1988_CATEGORIES["region"])
    assert isinstance(copy.index, pd.RangeIndex)
    # The length is n plus discrete Laplace noise of scale 1/0.1 = 10 rows.
    assert abs(len(copy) - len(cps)) < 10 * math.log(1 / ALPHA)
    ledger = pf.session.ledger
    assert len(ledger) == 1 and ledger["epsilon"].iloc[0] == 2.0
    assert ledger["mechanism"].iloc[0] == "randomized response"
    table = estimate_frequencies(copy)
    truth = {str(k): int(v) for k, v in cps["region"].value_counts().items()}
    z = stats.norm.isf(ALPHA / 8)
    for region, row in table.iterrows():
        # The estimator is unbiased for the real rows; the length noise adds at most ~200 rows.
        assert abs(row["estimate"] - truth[str(region)]) < z * row["std"] + 200
    # A copy is public: querying it is free.
    assert copy.value_counts().sum() == len(copy)
    assert pf.session.spent == dp.Budget(2.0)


def test_laplace_copy_through_the_session(tmp_path: Path, cps: pd.DataFrame) -> None:
    pf = _frame(tmp_path, cps, epsilon=5.0)
    copy = pf["education"].laplace_copy(epsilon=1.0, length_share=0.1)
    meta = copy.attrs["dpframe_copy"]
    assert meta.kind == "Laplace copy" and meta.bounds == (0.0, 20.0)
    assert meta.scale == pytest.approx(20 / 0.9, rel=1e-5)
    clamped_mean = cps["education"].clip(0, 20).mean()
    assert (
        abs(copy.mean() - clamped_mean) < 6 * math.sqrt(2) * meta.scale / math.sqrt(len(copy)) + 0.2
    )
    assert pf.session.spent == dp.Budget(1.0)


def test_copy_with_delta_in_an_approx_session(tmp_path: Path, cps: pd.DataFrame) -> None:
    pf = _frame(tmp_path, cps, epsilon=5.0, delta=0.5, accounting="approx")
    copy = pf["region"].randomized_response(epsilon=2.0, delta=0.25)
    meta = copy.attrs["dpframe_copy"]
    assert meta.delta == 0.25
    assert meta.keep == pytest.approx(rr_probabilities(1.9, 0.25, 3)[0], abs=1e-12)
    assert pf.session.spent == dp.Budget(2.0, 0.25)
    assert pf.session.ledger["mechanism"].iloc[0] == "randomized response (with delta)"


def test_copy_in_a_zcdp_session_uses_the_pure_share(tmp_path: Path, cps: pd.DataFrame) -> None:
    pf = _frame(tmp_path, cps, epsilon=1.0, delta=1e-6, accounting="zcdp")
    copy = pf["smsa"].randomized_response(epsilon=0.5)
    meta = copy.attrs["dpframe_copy"]
    rho = float(pf.session.ledger["rho"].iloc[0])
    # The values get an ε whose ε²/2 fits in their part (95%) of ρ.
    assert meta.epsilon**2 / 2 <= 0.95 * rho * (1 + 1e-9)
    assert meta.epsilon == pytest.approx(math.sqrt(2 * 0.95 * rho), rel=1e-6)


@pytest.mark.fresh_releases
def test_copy_length_noise_distribution(tmp_path: Path) -> None:
    session = dp.Session(epsilon=10**6, ledger=":memory:")
    small = pd.DataFrame({"c": ["a", "b"] * 10})
    pf = session.private_frame(small, categories={"c": ["a", "b"]})
    # ε = 20 with a 5% share: the length has discrete Laplace noise of scale 1.
    lengths = np.array(
        [len(pf["c"].randomized_response(epsilon=20)) - 20 for _ in range(4000)], dtype=np.int64
    )
    assert chi2_pvalue(lengths, dlaplace_pmf(1.0)) > ALPHA
    assert chi2_pvalue(lengths, dlaplace_pmf(1.3)) < ALPHA


def test_units_divide_the_per_row_epsilon(tmp_path: Path, cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=5.0, ledger=tmp_path / "l.sqlite")
    data = cps.assign(person=np.arange(len(cps)) // 2)
    pf = session.private_frame(
        data, categories=CPS1988_CATEGORIES, privacy_unit="person", max_rows_per_unit=2
    )
    copy = pf["region"].randomized_response(epsilon=1.0)
    assert copy.attrs["dpframe_copy"].epsilon == pytest.approx(0.95 / 2)
    with pytest.raises(dp.InvalidBudgetError, match="this session is pure DP"):
        pf["region"].randomized_response(epsilon=1.0, delta=0.1)


# -- bad input: clear errors, nothing charged ----------------------------------


def _nothing_charged(pf: dp.PrivateFrame) -> None:
    assert pf.session.spent.is_zero
    assert len(pf.session.ledger) == 0


def test_bad_input(tmp_path: Path, cps: pd.DataFrame) -> None:
    pf = _frame(tmp_path, cps, epsilon=5.0)
    with pytest.raises(dp.DPError, match="at least two declared categories"):
        pf["wage"].randomized_response(epsilon=1.0)
    one = pf.with_categories(smsa=["yes"])
    with pytest.raises(dp.DPError, match="at least two declared categories"):
        one["smsa"].randomized_response(epsilon=1.0)
    with pytest.raises(dp.DPError, match="numeric"):
        pf["region"].laplace_copy(epsilon=1.0)
    unbounded = local(pf).private_frame(cps, categories=CPS1988_CATEGORIES)
    with pytest.raises(dp.DPError, match="bounds"):
        unbounded["wage"].laplace_copy(epsilon=1.0)
    with pytest.raises(dp.DPError, match="length_share"):
        pf["region"].randomized_response(epsilon=1.0, length_share=1.5)
    with pytest.raises(dp.InvalidBudgetError, match="a sanitized copy's noisy length"):
        pf["region"].randomized_response(epsilon=1.0, delta=0.1)  # pure session
    with pytest.raises(dp.InvalidBudgetError, match="epsilon must be > 0, got -1"):
        pf["region"].randomized_response(epsilon=-1.0)
    with pytest.raises(dp.InvalidBudgetError, match="millions of filler rows"):
        pf["wage"].laplace_copy(epsilon=1e-12)
    _nothing_charged(pf)
    with pytest.raises(dp.InvalidArgumentError, match="takes a copy returned by randomized"):
        estimate_frequencies(pd.Series(["a", "b"]))


# -- accuracy floors -----------------------------------------------------------


def test_floor_formulas() -> None:
    from dpframe.mechanisms.core.floors import floor_bounded, floor_discrete, floor_zcdp

    assert floor_bounded(2996, 0.1, 0.1) == pytest.approx(0.9 * 2996 / (2 * (1 + math.exp(0.1))))
    assert floor_discrete(47, 2.0, 2, 0.5) == pytest.approx(0.5 * 2 * 47 / (47 + math.exp(2)))
    # Randomized response attains the discrete floor exactly (κ = 1: P(wrong report)).
    for eps, dlt in [(0.1, 0.1), (2, 0.5), (7, 0.6)]:
        keep, _ = rr_probabilities(eps, dlt, 47)
        assert 1 - keep == pytest.approx(floor_discrete(47, 1.0, eps, dlt))
    # A zCDP floor is at least the floor of any one of its (ε, δ) conversions, and shrinks with ρ.
    from dpframe.mechanisms.core.allocation import zcdp_epsilon

    assert floor_zcdp(1.0, 0.01) >= floor_bounded(1.0, zcdp_epsilon(0.01, 1e-6), 1e-6)
    assert floor_zcdp(1.0, 0.01) > floor_zcdp(1.0, 0.1) > 0


def test_explain_reports_floors_and_spends_nothing(tmp_path: Path, cps: pd.DataFrame) -> None:
    from dpframe.mechanisms.core.floors import floor_bounded, floor_discrete

    pf = _frame(tmp_path, cps, epsilon=1.0)
    session = pf.session
    count = session.explain(lambda: pf.count(epsilon=0.5))
    assert count.accuracy.floor == pytest.approx(floor_bounded(1.0, 0.5))
    a = math.exp(-1 / 2)  # discrete Laplace of scale 2: E|X| = 2a/(1 − a²)
    assert count.accuracy.expected_error == pytest.approx(2 * a / (1 - a * a))
    total = session.explain(lambda: pf["wage"].sum(epsilon=0.5))
    assert total.accuracy.floor == pytest.approx(floor_bounded(5000.0, 0.5))
    assert session.explain(lambda: pf["wage"].mean(epsilon=0.5)).accuracy is None
    rr = session.explain(lambda: pf["region"].randomized_response(epsilon=1.0))
    assert rr.accuracy.expected_error == pytest.approx(rr.accuracy.floor, rel=1e-9)
    assert rr.accuracy.floor == pytest.approx(floor_discrete(3, 1.0, 0.95))
    lap = session.explain(lambda: pf["wage"].laplace_copy(epsilon=1.0))
    assert lap.accuracy.floor == pytest.approx(floor_bounded(5000.0, 0.95))
    assert lap.accuracy.expected_error == pytest.approx(5000 / 0.95, rel=1e-4)
    assert "can beat" in str(lap)
    _nothing_charged(pf)


def test_copies_refuse_a_dask_frame_before_charging_and_sums_over_rows_run(
    cps: pd.DataFrame,
) -> None:
    dd = pytest.importorskip("dask.dataframe")
    session = dp.Session(epsilon=50.0, delta=1e-6, accounting="zcdp", ledger=":memory:")
    pf = session.private_frame(
        dd.from_pandas(cps, npartitions=3), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
    )
    with pytest.raises(dp.DPError, match=r"noisy length.*pandas"):
        pf["region"].randomized_response(epsilon=1.0)
    with pytest.raises(dp.DPError, match=r"one by one.*pandas"):
        pf.linear_regression(["education"], "wage", epsilon=1.0, analysis="iteration")
    assert session.spent.is_zero and len(session.ledger) == 0
    # The density and the full-batch regression are sums over rows: per partition, added.
    density = pf["wage"].kde(200.0, epsilon=10.0, grid=32)
    assert len(density) == 32 and float(density.sum()) > 0
    model = pf.linear_regression(["education"], "wage", epsilon=10.0, steps=10, progress=False)
    assert model.coef_[0] > 0  # wages rise with education
    assert len(session.ledger) == 2


def test_a_copy_whose_length_noise_is_huge_is_refused_before_the_charge(cps: pd.DataFrame) -> None:
    """Found by the curator's fuzzing: at ε = 1e-11 the noisy length reached 2e5 rows and a
    MemoryError after the charge; now refused before it, and every length is capped."""
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    with pytest.raises(dp.InvalidBudgetError, match="noisy length could reach"):
        pf["wage"].laplace_copy(epsilon=1e-7)
    with pytest.raises(dp.InvalidBudgetError, match="noisy length could reach"):
        pf["region"].randomized_response(epsilon=1e-8)
    with pytest.raises(dp.InvalidBudgetError, match="2\\*\\*52 grid units"):
        pf["region"].randomized_response(epsilon=Fraction(1, 18446744073709551615))
    assert session.ledger.empty
