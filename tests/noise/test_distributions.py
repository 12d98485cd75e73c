"""Tests of the public distribution facts against brute-force sums."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from dpframe.noise import (
    NoiseParameterError,
    discrete_gaussian_abs_quantile,
    discrete_gaussian_cdf,
    discrete_gaussian_pmf,
    discrete_gaussian_variance,
    discrete_laplace_abs_quantile,
    discrete_laplace_cdf,
    discrete_laplace_pmf,
    discrete_laplace_variance,
)
from dpframe.noise import distributions as dist
from tests.noise._support import gauss_ref, laplace_ref

LEVELS = [0.3, 0.5, 0.9, 0.95, 0.99, 0.999999]


def brute_laplace(scale: float) -> tuple[np.ndarray, np.ndarray]:
    return laplace_ref(scale, tail=60.0)


def brute_gauss(sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    return gauss_ref(sigma2, tail=40.0)


def abs_cdf(ks: np.ndarray, pmf: np.ndarray, a: int) -> float:
    return math.fsum(pmf[np.abs(ks) <= a].tolist())


# -- validation --------------------------------------------------------------------


FINITE = "positive and finite, got"
REAL = "a positive real number"


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (0, FINITE + " 0"),
        (-1.0, FINITE + " -1.0"),
        (float("nan"), FINITE + " nan"),
        (float("inf"), FINITE + " inf"),
        ("x", REAL),
        (True, REAL),
        (None, REAL),
    ],
)
def test_scale_validation(bad: object, reason: str) -> None:
    for func, name in (
        (discrete_laplace_pmf, "scale"),
        (discrete_laplace_cdf, "scale"),
        (discrete_gaussian_pmf, "sigma2"),
    ):
        with pytest.raises(NoiseParameterError, match=f"^{name} must be {re.escape(reason)}$"):
            func(bad, np.array([0]))  # type: ignore[arg-type]
    for var, name in ((discrete_laplace_variance, "scale"), (discrete_gaussian_variance, "sigma2")):
        with pytest.raises(NoiseParameterError, match=f"^{name} must be {re.escape(reason)}$"):
            var(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, 1, -0.5, 1.5, float("nan"), "0.9", False])
def test_level_validation(bad: object) -> None:
    with pytest.raises(NoiseParameterError, match="level"):
        discrete_laplace_abs_quantile(3.0, bad)
    with pytest.raises(NoiseParameterError, match="level"):
        discrete_gaussian_abs_quantile(3.0, bad)


def test_remembered_half_widths_still_refuse_what_they_refused() -> None:
    """The quantiles are remembered per (parameter, level) with their types: True is not 1."""
    assert discrete_laplace_abs_quantile(1, 0.95) == discrete_laplace_abs_quantile(1.0, 0.95)
    assert discrete_gaussian_abs_quantile(1, 0.95) == discrete_gaussian_abs_quantile(1.0, 0.95)
    with pytest.raises(NoiseParameterError, match=r"^scale must be a positive real number$"):
        discrete_laplace_abs_quantile(True, 0.95)
    with pytest.raises(NoiseParameterError, match=r"^sigma2 must be a positive real number$"):
        discrete_gaussian_abs_quantile(True, 0.95)


# -- discrete Laplace ----------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.01, 0.5, 3.0, 1000.0, 3e4])
def test_laplace_pmf_cdf_match_brute_force(scale: float) -> None:
    ks, pmf = brute_laplace(scale)
    np.testing.assert_allclose(discrete_laplace_pmf(scale, ks), pmf, rtol=1e-9, atol=1e-300)
    cdf = np.cumsum(pmf)
    sample = ks[:: max(1, ks.size // 2000)]
    got = discrete_laplace_cdf(scale, sample)
    np.testing.assert_allclose(got, cdf[sample - ks[0]], rtol=1e-9, atol=1e-12)


def test_laplace_cdf_edges() -> None:
    assert discrete_laplace_cdf(3.0, [-np.inf])[0] == 0.0
    assert discrete_laplace_cdf(3.0, [np.inf])[0] == 1.0
    np.testing.assert_allclose(
        discrete_laplace_cdf(3.0, [0.5, -0.5]), discrete_laplace_cdf(3.0, [0, -1])
    )
    assert discrete_laplace_pmf(3.0, [0.5])[0] == 0.0
    # tiny scale: everything at 0, no warnings or NaN
    assert discrete_laplace_pmf(0.01, [0, 1])[0] == 1.0
    assert discrete_laplace_pmf(1e-4, [1])[0] == 0.0
    assert discrete_laplace_variance(1e-4) == 0.0


@pytest.mark.parametrize("scale", [0.01, 0.5, 3.0, 1000.0, 3e4])
@pytest.mark.parametrize("level", LEVELS)
def test_laplace_abs_quantile(scale: float, level: float) -> None:
    ks, pmf = brute_laplace(scale)
    a = discrete_laplace_abs_quantile(scale, level)
    assert a >= 0
    assert abs_cdf(ks, pmf, a) >= level - 1e-12
    if a > 0:
        assert abs_cdf(ks, pmf, a - 1) < level + 1e-12


def test_laplace_abs_quantile_huge_scale() -> None:
    # P(|Y| > a) ~ exp(-(a+1)/s): a ~ s ln(1/(1-level)) - 1
    a = discrete_laplace_abs_quantile(1e9, 0.95)
    assert abs(a - 1e9 * math.log(20)) < 1e3
    assert discrete_laplace_abs_quantile(0.01, 0.999999) == 0


@pytest.mark.parametrize("scale", [0.01, 0.5, 3.0, 1000.0])
def test_laplace_variance_matches_brute_force(scale: float) -> None:
    ks, pmf = brute_laplace(scale)
    assert math.isclose(discrete_laplace_variance(scale), float(np.sum(ks**2 * pmf)), rel_tol=1e-9)


def test_laplace_variance_large_scale() -> None:
    s = 1e6
    assert math.isclose(discrete_laplace_variance(s), 2 * s * s - 1 / 6, rel_tol=1e-12)


# -- discrete Gaussian ---------------------------------------------------------------

GAUSS = [0.01, 0.25, 4.0, 1e4, 1e6, 1.1e6, 4e6]  # the last two use the asymptotic path


@pytest.mark.parametrize("sigma2", GAUSS)
def test_gauss_pmf_cdf_match_brute_force(sigma2: float) -> None:
    ks, pmf = brute_gauss(sigma2)
    np.testing.assert_allclose(discrete_gaussian_pmf(sigma2, ks), pmf, rtol=1e-9, atol=1e-300)
    cdf = np.cumsum(pmf)
    sample = ks[:: max(1, ks.size // 2000)]
    got = discrete_gaussian_cdf(sigma2, sample)
    np.testing.assert_allclose(got, cdf[sample - ks[0]], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("sigma2", [1e6, 1.1e6, 4e6])
def test_gauss_asymptotic_cdf_is_accurate(sigma2: float, monkeypatch: pytest.MonkeyPatch) -> None:
    ks, pmf = brute_gauss(sigma2)
    cdf = np.cumsum(pmf)
    monkeypatch.setattr(dist, "_SIGMA_TABLE_MAX", 0.0)  # force Euler-Maclaurin
    sample = ks[ks < 0][:: max(1, ks.size // 2000)]
    got = discrete_gaussian_cdf(sigma2, sample)
    np.testing.assert_allclose(got, cdf[sample - ks[0]], rtol=1e-8, atol=1e-300)


def test_gauss_tiny_and_huge() -> None:
    assert discrete_gaussian_pmf(1e-4, [0])[0] == 1.0
    assert discrete_gaussian_cdf(1e-4, [-1, 0])[0] == 0.0
    assert discrete_gaussian_cdf(1e-4, [-1, 0])[1] == 1.0
    assert discrete_gaussian_variance(1e12) == 1e12
    assert math.isclose(discrete_gaussian_pmf(1e12, [0])[0], 1 / math.sqrt(2 * math.pi * 1e12))
    a = discrete_gaussian_abs_quantile(1e12, 0.95)
    assert abs(a - 1.959963984540054e6) < 2


@pytest.mark.parametrize("sigma2", GAUSS)
@pytest.mark.parametrize("level", LEVELS)
def test_gauss_abs_quantile(sigma2: float, level: float) -> None:
    ks, pmf = brute_gauss(sigma2)
    a = discrete_gaussian_abs_quantile(sigma2, level)
    assert abs_cdf(ks, pmf, a) >= level - 1e-12
    if a > 0:
        assert abs_cdf(ks, pmf, a - 1) < level + 1e-12


@pytest.mark.parametrize("sigma2", [0.01, 0.25, 4.0, 1e4])
def test_gauss_variance_matches_brute_force(sigma2: float) -> None:
    ks, pmf = brute_gauss(sigma2)
    var = discrete_gaussian_variance(sigma2)
    assert math.isclose(var, float(np.sum(ks.astype(float) ** 2 * pmf)), rel_tol=1e-9)
    assert var <= sigma2
