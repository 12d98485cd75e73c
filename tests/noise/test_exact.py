"""Tests of the exact scalar samplers (CKS 2020 Algorithms 1-3).

Sample sizes: the smallest sizes giving a predicted power >= 1 - 1e-6 against
the 30%-off alternatives at alpha = 1e-7 are about 13,700 (Bernoulli(0.1)),
5,800 (Bernoulli(exp(-0.3))), 2,100 (geometric), 3,300 (discrete Laplace) and
1,900 (discrete Gaussian); the fast tests use 1.5-4x those, the slow tests
100,000 draws.  ``check_sampler`` re-checks the predicted power every run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpframe.errors import DPError
from dpframe.noise import (
    NoiseParameterError,
    SecureRandom,
    bernoulli,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    geometric_exp,
)
from dpframe.noise.exact import floor_sqrt
from tests.noise._support import (
    ShakeSource,
    bernoulli_ref,
    check_sampler,
    gauss_ref,
    geometric_ref,
    laplace_ref,
)


def draws(sampler: Callable[[], int | bool]) -> Callable[[int], np.ndarray]:
    return lambda n: np.array([int(sampler()) for _ in range(n)], dtype=np.int64)


# -- validation --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("func", "arg", "match"),
    [
        (bernoulli, Fraction(3, 2), r"p must lie in \[0, 1\], got 3/2"),
        (bernoulli, -1, r"p must lie in \[0, 1\], got -1"),
        (bernoulli, 0.5, r"p must be an int or a fractions\.Fraction, got the float 0\.5"),
        (bernoulli, True, "p must be an int or a Fraction, not a bool"),
        (bernoulli, "1/2", r"p must be an int or a fractions\.Fraction, got str"),
        (bernoulli_exp, Fraction(-1, 3), "gamma must be >= 0, got -1/3"),
        (bernoulli_exp, 0.3, r"gamma must be an int or a fractions\.Fraction, got the float 0\.3"),
        (geometric_exp, 0, "x must be > 0, got 0"),
        (geometric_exp, Fraction(-1, 2), "x must be > 0, got -1/2"),
        (discrete_laplace, 0, "scale must be > 0, got 0"),
        (discrete_laplace, -3, "scale must be > 0, got -3"),
        (
            discrete_laplace,
            2.0,
            r"scale must be an int or a fractions\.Fraction, got the float 2\.0",
        ),
        (discrete_laplace, None, r"scale must be an int or a fractions\.Fraction, got NoneType"),
        (discrete_gaussian, 0, "sigma2 must be > 0, got 0"),
        (discrete_gaussian, Fraction(-1, 4), "sigma2 must be > 0, got -1/4"),
        (
            discrete_gaussian,
            4.0,
            r"sigma2 must be an int or a fractions\.Fraction, got the float 4\.0",
        ),
    ],
)
def test_validation(
    func: Callable[[object, SecureRandom], object], arg: object, match: str
) -> None:
    with pytest.raises(NoiseParameterError, match=match) as info:
        func(arg, SecureRandom())
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, DPError)


def test_float_error_explains_the_fix() -> None:
    with pytest.raises(NoiseParameterError, match=r"Fraction\(x\).*coarsen_up"):
        discrete_laplace(1.5, SecureRandom())  # type: ignore[arg-type]


def test_numpy_integers_are_accepted(rng: SecureRandom) -> None:
    assert isinstance(discrete_laplace(np.int64(3), rng), int)
    assert isinstance(discrete_gaussian(np.int32(4), rng), int)


def test_extreme_probabilities(rng: SecureRandom) -> None:
    assert not any(bernoulli(0, rng) for _ in range(200))
    assert all(bernoulli(1, rng) for _ in range(200))
    assert all(bernoulli_exp(0, rng) for _ in range(200))
    assert not any(bernoulli_exp(10**6, rng) for _ in range(50))  # P = e^-1e6


def test_huge_gamma_stops_early(source: ShakeSource) -> None:
    # floor(gamma) ~ 1.4e29 Bernoulli(exp(-1)) draws in principle; the first failure stops it.
    assert not bernoulli_exp(Fraction(10**30, 7), SecureRandom(source))
    assert source.bytes_read < 10_000


def test_tiny_and_huge_scales(rng: SecureRandom) -> None:
    assert all(discrete_laplace(Fraction(1, 100), rng) == 0 for _ in range(100))
    assert all(discrete_gaussian(Fraction(1, 10_000), rng) == 0 for _ in range(100))
    big = [discrete_laplace(10**30, rng) for _ in range(50)]
    assert max(abs(v) for v in big) > 10**29  # P(|Y| <= 1e29) ~ 0.1 per draw
    big = [discrete_gaussian(10**40, rng) for _ in range(50)]
    assert max(abs(v) for v in big) > 10**19


@given(st.integers(0, 10**40), st.integers(1, 10**20))
def test_floor_sqrt_is_exact(n: int, d: int) -> None:
    r = floor_sqrt(Fraction(n, d))
    assert r * r * d <= n < (r + 1) * (r + 1) * d


# -- statistics: fast ------------------------------------------------------------------


@pytest.mark.parametrize("p", [Fraction(1, 10), Fraction(1, 3), Fraction(2, 3)])
def test_bernoulli_fits(rng: SecureRandom, p: Fraction) -> None:
    q = float(p)
    check_sampler(
        draws(lambda: bernoulli(p, rng)),
        40_000,
        bernoulli_ref(q),
        [bernoulli_ref(0.7 * q), bernoulli_ref(min(1.0, 1.3 * q))],
    )


@pytest.mark.parametrize("gamma", [Fraction(3, 10), Fraction(1), Fraction(27, 10)])
def test_bernoulli_exp_fits(rng: SecureRandom, gamma: Fraction) -> None:
    g = float(gamma)
    check_sampler(
        draws(lambda: bernoulli_exp(gamma, rng)),
        20_000,
        bernoulli_ref(math.exp(-g)),
        [bernoulli_ref(math.exp(-0.7 * g)), bernoulli_ref(math.exp(-1.3 * g))],
    )


@pytest.mark.parametrize("x", [Fraction(1, 3), Fraction(1), Fraction(5, 2)])
def test_geometric_exp_fits(rng: SecureRandom, x: Fraction) -> None:
    f = float(x)
    check_sampler(
        draws(lambda: geometric_exp(x, rng)),
        8_000,
        geometric_ref(f),
        [geometric_ref(0.7 * f), geometric_ref(1.3 * f)],
    )


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(3), Fraction(1000)])
def test_discrete_laplace_fits(rng: SecureRandom, scale: Fraction) -> None:
    s = float(scale)
    check_sampler(
        draws(lambda: discrete_laplace(scale, rng)),
        8_000,
        laplace_ref(s),
        [laplace_ref(0.7 * s), laplace_ref(1.3 * s)],
    )


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(4), Fraction(10**6)])
def test_discrete_gaussian_fits(rng: SecureRandom, sigma2: Fraction) -> None:
    v = float(sigma2)
    check_sampler(
        draws(lambda: discrete_gaussian(sigma2, rng)),
        6_000,
        gauss_ref(v),
        [gauss_ref(0.7**2 * v), gauss_ref(1.3**2 * v)],  # sigma 30% off
    )


# -- statistics: slow (more draws, awkward parameters) ---------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(7, 3), Fraction(1000)])
def test_discrete_laplace_fits_large_sample(rng: SecureRandom, scale: Fraction) -> None:
    s = float(scale)
    check_sampler(
        draws(lambda: discrete_laplace(scale, rng)),
        100_000,
        laplace_ref(s),
        [laplace_ref(0.7 * s), laplace_ref(1.3 * s)],
    )


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(7, 3), Fraction(10**6)])
def test_discrete_gaussian_fits_large_sample(rng: SecureRandom, sigma2: Fraction) -> None:
    v = float(sigma2)
    check_sampler(
        draws(lambda: discrete_gaussian(sigma2, rng)),
        100_000,
        gauss_ref(v),
        [gauss_ref(0.7**2 * v), gauss_ref(1.3**2 * v)],
    )


@pytest.mark.slow
def test_bernoulli_exp_fits_large_sample(rng: SecureRandom) -> None:
    gamma = Fraction(10**20 + 1, 10**20)  # denominators beyond int64
    g = float(gamma)
    check_sampler(
        draws(lambda: bernoulli_exp(gamma, rng)),
        200_000,
        bernoulli_ref(math.exp(-g)),
        [bernoulli_ref(math.exp(-0.7 * g)), bernoulli_ref(math.exp(-1.3 * g))],
    )
