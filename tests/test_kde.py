"""The private kernel density estimate (Gaussian-process noise, Hall, Rinaldo, Wasserman 2013)."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.linalg import solve_triangular

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.mechanisms.models.kde import (
    JITTER,
    _cholesky,
    classical_multiplier,
    kde_noise,
    kernel_sums,
    release_kernel_sums,
)
from dpframe.mechanisms.models.model_family import KDEInfo, plot_kde
from dpframe.noise import SecureRandom
from tests.stats_helpers import ALPHA, ks_pvalue


def _frame(tmp_path: Path, cps: pd.DataFrame, **kw: object) -> dp.PrivateFrame:
    session = dp.Session(ledger=tmp_path / "l.sqlite", **kw)  # type: ignore[arg-type]
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def test_rkhs_sensitivity_covers_adding_a_row() -> None:
    """‖L⁻¹(S_D+x − S_D)‖ ≤ Δ for the jittered kernel: the premise of the privacy proof."""
    rng = np.random.default_rng(1)  # test data only, not privacy noise
    for h, size in [(0.3, 64), (1.0, 200), (5.0, 32)]:
        grid = np.linspace(0, 20, size)
        factor = _cholesky(grid, h)
        noise = kde_noise(h, 1, size, Fraction(1, 10))
        for x in rng.uniform(-5, 25, 50):
            diff = kernel_sums(np.array([x]), grid, h)
            whitened = solve_triangular(factor, diff, lower=True)
            assert np.linalg.norm(whitened) <= noise.sensitivity
        # The bound is nearly attained on a fine grid (the widening is only 1%).
        diff = kernel_sums(np.array([10.0]), grid, h)
        whitened = np.linalg.norm(solve_triangular(factor, diff, lower=True))
        if h >= 1.0:
            assert whitened > 0.9 * noise.sensitivity / 1.01


def test_whitened_noise_is_gaussian_with_the_stated_sigma() -> None:
    grid = np.linspace(0, 10, 24)
    h, rho = 0.8, Fraction(1, 4)
    sums = kernel_sums(np.linspace(1, 9, 40), grid, h)
    factor = _cholesky(grid, h)
    exact = solve_triangular(factor, sums, lower=True)
    rng = SecureRandom()
    residuals = []
    sigma = 0.0
    for _ in range(300):
        noisy, noise = release_kernel_sums(sums, grid, h, 1, rho, rng)
        residuals.append(solve_triangular(factor, noisy, lower=True) - exact)
        sigma = noise.sigma
    sample = np.concatenate(residuals)
    assert sigma == pytest.approx(noise.sensitivity / math.sqrt(2 * float(rho)), rel=2e-3)
    assert ks_pvalue(sample, stats.norm(scale=sigma).cdf) > ALPHA
    assert ks_pvalue(sample, stats.norm(scale=1.3 * sigma).cdf) < ALPHA
    assert ks_pvalue(sample, stats.norm(scale=sigma / 1.3).cdf) < ALPHA


def test_released_curve_has_kernel_correlated_noise() -> None:
    """Neighbouring grid points' errors are correlated as K (the curve stays smooth)."""
    grid = np.linspace(0, 4, 9)
    h = 1.0
    sums = np.zeros(len(grid))
    rng = SecureRandom()
    draws = np.array(
        [release_kernel_sums(sums, grid, h, 1, Fraction(1), rng)[0] for _ in range(800)]
    )
    corr = np.corrcoef(draws[:, 4], draws[:, 5])[0, 1]
    expected = math.exp(-((grid[5] - grid[4]) ** 2) / (2 * h * h)) / (1 + JITTER)
    # Fisher z-interval at ALPHA for 800 draws.
    half = stats.norm.isf(ALPHA / 2) / math.sqrt(800 - 3)
    assert abs(math.atanh(corr) - math.atanh(expected)) < half


def test_kde_through_the_session(tmp_path: Path, cps: pd.DataFrame) -> None:
    pf = _frame(tmp_path, cps, epsilon=2.0, delta=1e-6)
    result = pf["education"].kde(1.0, epsilon=1.0, grid=81)
    info = result.attrs["dpframe_kde"]
    assert isinstance(info, KDEInfo)
    assert list(result.index) == list(np.linspace(0, 20, 81))
    x = cps["education"].clip(0, 20).to_numpy(float)
    truth = kernel_sums(x, result.index.to_numpy(float), 1.0) / len(x)
    errors = result.to_numpy() - truth
    # Pointwise error within the stated std (plus the count's relative noise).
    z = stats.norm.isf(ALPHA / (2 * 81))
    assert np.all(np.abs(errors) < z * np.asarray(info.std) + 1e-3 * truth.max())
    assert abs(info.noisy_count - len(x)) < z * info.count_scale
    ledger = pf.session.ledger
    assert (
        len(ledger) == 1 and ledger["mechanism"].iloc[0] == "Gaussian process (kernel covariance)"
    )
    assert "kde(education, h=1, 81 points)" in ledger["query"].iloc[0]
    # The classical calibration is shown only for (ε, δ) requests (not a zCDP share).
    assert info.classical_sigma is None


def test_kde_in_an_approx_session_reports_the_classical_constant(
    tmp_path: Path, cps: pd.DataFrame
) -> None:
    pf = _frame(tmp_path, cps, epsilon=2.0, delta=1e-5, accounting="approx")
    result = pf["wage"].kde(200.0, epsilon=0.5, delta=1e-6, grid=[100, 500, 1000, 2000])
    info = result.attrs["dpframe_kde"]
    assert info.classical_sigma == pytest.approx(
        classical_multiplier(0.5, 1e-6) * kde_noise(200.0, 1, 4, Fraction(1)).sensitivity
    )
    assert pf.session.spent == dp.Budget(0.5, 1e-6)


def test_kde_plot(tmp_path: Path, cps: pd.DataFrame) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    pf = _frame(tmp_path, cps, epsilon=2.0, delta=1e-6)
    result = pf["experience"].kde(3.0, epsilon=0.5, grid=50)
    ax = plot_kde(result)
    assert len(ax.lines) == 1 and len(ax.collections) == 1
    result.plot()  # an ordinary pandas Series plots too
    with pytest.raises(dp.InvalidArgumentError, match=r"takes a result of PrivateSeries\.kde\(\)"):
        plot_kde(pd.Series([1.0]))


def test_kde_bad_input_charges_nothing(tmp_path: Path, cps: pd.DataFrame) -> None:
    pf = _frame(tmp_path, cps, epsilon=2.0, delta=1e-6)
    column = pf["education"]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"bandwidth": 0}, "bandwidth must be a positive number, got 0"),
        ({"bandwidth": -1.0}, r"bandwidth must be a positive number, got -1\.0"),
        ({"bandwidth": float("nan")}, "bandwidth must be a positive number, got nan"),
        ({"bandwidth": 1.0, "grid": []}, "grid= is empty"),
        ({"bandwidth": 1.0, "grid": 0}, "grid= must be between 1 and 2048 points"),
        ({"bandwidth": 1.0, "grid": [1.0, float("inf")]}, "grid= needs 1 to 2048 finite points"),
        ({"bandwidth": 1.0, "grid": [1.0, 1.0]}, "grid= points must be distinct"),
        ({"bandwidth": 1.0, "grid": 10**6}, "grid= must be between 1 and 2048 points"),
    ]
    for kwargs, match in cases:
        with pytest.raises(dp.InvalidArgumentError, match=match):
            column.kde(epsilon=0.5, **kwargs)
    with pytest.raises(dp.DPError, match="numeric"):
        pf["region"].kde(1.0, epsilon=0.5)
    with pytest.raises(dp.DPError, match="drop delta"):
        column.kde(1.0, epsilon=0.5, delta=1e-7)  # zCDP session: delta is in rho
    assert pf.session.spent.is_zero and len(pf.session.ledger) == 0
    pure = _frame(tmp_path / "pure", cps, epsilon=2.0)
    with pytest.raises(dp.DPError, match="delta > 0"):
        pure["education"].kde(1.0, epsilon=0.5)
    assert pure.session.spent.is_zero and len(pure.session.ledger) == 0
