"""Tests of the vectorized exact samplers and of coarsen_up.

Sample sizes: 20,000 draws per fast statistical test (the minimum for a
predicted power >= 1 - 1e-6 against the 30%-off alternatives at alpha = 1e-7
is about 5,800 for Bernoulli(exp(-0.3)), 3,300 for discrete Laplace and 1,900
for the discrete Gaussian); 1,000,000 draws in the slow tests, which makes the
null test sensitive to biases of a few tenths of a percent in a bin.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import partial

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpframe.noise import (
    NoiseParameterError,
    SecureRandom,
    bernoulli_exp_array,
    coarsen_up,
    discrete_gaussian_array,
    discrete_laplace_array,
)
from dpframe.noise import _kernels as kern
from tests.noise._support import (
    ALPHA,
    MIN_POWER,
    bernoulli_ref,
    check_sampler,
    chi2_pvalue,
    gauss_ref,
    laplace_ref,
    normal_bins,
    power_from_probs,
)

FAST_N = 20_000
SLOW_N = 1_000_000

# -- coarsen_up --------------------------------------------------------------------


def odd_part(n: int) -> int:
    while n % 2 == 0:
        n //= 2
    return n


@given(
    st.fractions(min_value=Fraction(1, 10**12), max_value=Fraction(10**15)),
    st.integers(1, 40),
)
def test_coarsen_up_properties(x: Fraction, bits: int) -> None:
    c = coarsen_up(x, bits)
    assert c >= x
    assert c.denominator & (c.denominator - 1) == 0  # a power of two
    assert odd_part(c.numerator) < 2 ** (bits + 1)
    assert c < x * (1 + Fraction(1, 2**bits))
    # Minimal: with k chosen so that x * 2**k lies in [2**bits, 2**(bits+1)), c * 2**k
    # is the ceiling of x * 2**k.
    k = 0
    while x * Fraction(2) ** k >= 2 ** (bits + 1):
        k -= 1
    while x * Fraction(2) ** k < 2**bits:
        k += 1
    assert c * Fraction(2) ** k == math.ceil(x * Fraction(2) ** k)


def test_coarsen_up_examples() -> None:
    assert coarsen_up(1000) == 1000
    assert coarsen_up(10**6) == 10**6
    assert coarsen_up(Fraction(1, 3), 4) == Fraction(11, 32)
    assert coarsen_up(2**30 + 1, 20) == 2**30 + 2**10  # k < 0: t * 2**10
    assert coarsen_up(Fraction(2**22 - 1, 2**22), 20) == 1  # t = 2**21 rolls over
    assert coarsen_up(Fraction(2**21 - 1, 2**21), 20) == Fraction(2**21 - 1, 2**21)
    assert coarsen_up(0.1) >= Fraction(0.1)
    assert coarsen_up(1e300).numerator.bit_length() > 900


@pytest.mark.parametrize(
    ("x", "bits", "match"),
    [
        (0, 20, "x must be > 0, got 0"),
        (-1, 20, "x must be > 0, got -1"),
        (float("nan"), 20, "x must be finite, got nan"),
        (float("inf"), 20, "x must be finite, got inf"),
        (1, 0, "bits must be >= 1, got 0"),
        ("1", 20, r"x must be an int or a fractions\.Fraction, got str"),
    ],
)
def test_coarsen_up_validation(x: object, bits: int, match: str) -> None:
    with pytest.raises(NoiseParameterError, match=match):
        coarsen_up(x, bits)  # type: ignore[arg-type]


# -- bernoulli_exp_array ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("num", "den", "match"),
    [
        (np.array([-1, 2]), 3, r"need num_i >= 0 and den_i >= 1 \(gamma = num/den >= 0\)"),
        (np.array([1, 2]), 0, r"need num_i >= 0 and den_i >= 1 \(gamma = num/den >= 0\)"),
        (
            np.array([1, 2]),
            np.array([3, 0]),
            r"need num_i >= 0 and den_i >= 1 \(gamma = num/den >= 0\)",
        ),
        (
            np.array([1, 2]),
            np.array([3, 3, 3]),
            r"den must be an int or have the shape of num \(2,\), got \(3,\)",
        ),
        (np.array([0.5, 1.0]), 3, "num must have an integer dtype, got float64"),
        (np.array([1, "a"], dtype=object), 3, "num must contain integers only"),
        (np.array([1, 2]), 2.5, "den must be an integer, got float"),
    ],
)
def test_bernoulli_exp_array_validation(num: np.ndarray, den: object, match: str) -> None:
    with pytest.raises(NoiseParameterError, match=match):
        bernoulli_exp_array(num, den, SecureRandom())  # type: ignore[arg-type]


def test_bernoulli_exp_array_shapes_and_extremes(rng: SecureRandom) -> None:
    out = bernoulli_exp_array(np.zeros((3, 4), dtype=np.int64), 7, rng)
    assert out.shape == (3, 4)
    assert out.dtype == np.bool_
    assert out.all()
    assert not bernoulli_exp_array(np.full(100, 10**9), 1, rng).any()
    assert bernoulli_exp_array(np.zeros(0, dtype=np.int64), 1, rng).shape == (0,)
    big = np.array([0, 10**40], dtype=object)
    assert bernoulli_exp_array(big, np.array([10**30, 1], dtype=object), rng).tolist() == [
        True,
        False,
    ]


def test_bern_ratio_obj_tie_is_finished_exactly() -> None:
    # word 0 == floor(p * 2**62) = 0 for p = 1 / (3 * 2**62): the tie is resolved by
    # Bernoulli(frac(p * 2**62)) = Bernoulli(1/3), which a zero source makes True.
    zero = SecureRandom(lambda n: b"\x00" * n)
    num = np.array([1, 0], dtype=object)
    den = np.array([3 << 62, 3 << 62], dtype=object)
    assert kern.bern_ratio_obj(num, den, zero).tolist() == [True, False]


def test_bexp_one_continues_after_the_mixed_radix_digits() -> None:
    # A zero word means U_2 = ... = U_12 = 0; Algorithm 1 then continues with
    # K = 13, 14, ... drawing one byte each.
    def source(chunks: list[bytes]) -> SecureRandom:
        return SecureRandom(lambda n: chunks.pop(0))

    assert kern.bexp_one(1, source([bytes(4), b"\x01"])).tolist() == [True]  # K = 13
    assert kern.bexp_one(1, source([bytes(4), b"\x00", b"\x01"])).tolist() == [False]  # K = 14


@pytest.mark.parametrize(
    ("num", "den"),
    [(3, 10), (1, 1), (27, 10), (27 * 10**30 + 1, 10**31), (3 * 2**61, 2**62)],
)
def test_bernoulli_exp_array_fits(rng: SecureRandom, num: int, den: int) -> None:
    g = num / den
    nums = np.full(FAST_N, num, dtype=object if num > 2**62 else np.int64)
    check_sampler(
        lambda n: bernoulli_exp_array(nums[:n], den, rng).astype(np.int64),
        FAST_N,
        bernoulli_ref(math.exp(-g)),
        [bernoulli_ref(math.exp(-0.7 * g)), bernoulli_ref(math.exp(-1.3 * g))],
    )


def head(values: np.ndarray, n: int) -> np.ndarray:
    return values[:n]


def test_bernoulli_exp_array_mixed_parameters(rng: SecureRandom) -> None:
    # Each cell has its own gamma; the int64 and object paths share one call.
    gammas = [(3, 10), (27, 10), (10**30 + 1, 10**30)]
    num = np.array([g[0] for g in gammas] * FAST_N, dtype=object)
    den = np.array([g[1] for g in gammas] * FAST_N, dtype=object)
    out = bernoulli_exp_array(num, den, rng)
    for i, (a, b) in enumerate(gammas):
        g = a / b
        group = out[i :: len(gammas)].astype(np.int64)
        check_sampler(
            partial(head, group),
            FAST_N,
            bernoulli_ref(math.exp(-g)),
            [bernoulli_ref(math.exp(-0.7 * g)), bernoulli_ref(math.exp(-1.3 * g))],
        )


# -- discrete Laplace ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("scale", "match"),
    [
        (0, "scale must be > 0, got 0"),
        (-1, "scale must be > 0, got -1"),
        (1.5, r"scale must be an int or a fractions\.Fraction, got the float 1\.5"),
        (2**53, r"scale must be <= 2\*\*52 for int64 output"),
        ("3", r"scale must be an int or a fractions\.Fraction, got str"),
    ],
)
def test_discrete_laplace_array_validation(scale: object, match: str) -> None:
    with pytest.raises(NoiseParameterError, match=match):
        discrete_laplace_array(scale, 10, SecureRandom())  # type: ignore[arg-type]


def test_discrete_laplace_array_basics(rng: SecureRandom) -> None:
    assert discrete_laplace_array(3, 0, rng).shape == (0,)
    out = discrete_laplace_array(3, 1000, rng)
    assert out.dtype == np.int64
    assert out.shape == (1000,)
    assert (discrete_laplace_array(Fraction(1, 100), 1000, rng) == 0).all()
    with pytest.raises(NoiseParameterError, match="size must be >= 0"):
        discrete_laplace_array(3, -1, rng)


LAPLACE_SCALES = [Fraction(1, 2), Fraction(3), Fraction(1000), coarsen_up(Fraction(1000, 3))]


@pytest.mark.parametrize("scale", LAPLACE_SCALES)
def test_discrete_laplace_array_fits(rng: SecureRandom, scale: Fraction) -> None:
    s = float(scale)
    check_sampler(
        lambda n: discrete_laplace_array(scale, n, rng),
        FAST_N,
        laplace_ref(s),
        [laplace_ref(0.7 * s), laplace_ref(1.3 * s)],
    )


def test_discrete_laplace_array_big_integer_fallback(rng: SecureRandom) -> None:
    scale = Fraction(2**70 + 1, 2**69)  # numerator and denominator beyond 2**62
    s = float(scale)
    check_sampler(
        lambda n: discrete_laplace_array(scale, n, rng),
        8_000,
        laplace_ref(s),
        [laplace_ref(0.7 * s), laplace_ref(1.3 * s)],
    )


def test_discrete_laplace_array_near_int64_limit(rng: SecureRandom) -> None:
    # t = 2**62 - 1: X = U + t V overflows the int64 bound for V >= 2, so those
    # elements take the Python-int path.
    scale = Fraction(2**62 - 1, 2**61 + 1)
    s = float(scale)
    check_sampler(
        lambda n: discrete_laplace_array(scale, n, rng),
        FAST_N,
        laplace_ref(s),
        [laplace_ref(0.7 * s), laplace_ref(1.3 * s)],
    )


@pytest.mark.slow
@pytest.mark.parametrize("scale", LAPLACE_SCALES)
def test_discrete_laplace_array_fits_large_sample(rng: SecureRandom, scale: Fraction) -> None:
    s = float(scale)
    check_sampler(
        lambda n: discrete_laplace_array(scale, n, rng),
        SLOW_N,
        laplace_ref(s),
        [laplace_ref(0.7 * s), laplace_ref(1.3 * s)],
    )


# -- discrete Gaussian ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("sigma2", "match"),
    [
        (0, "sigma2 must be > 0, got 0"),
        (-1, "sigma2 must be > 0, got -1"),
        (4.0, r"sigma2 must be an int or a fractions\.Fraction, got the float 4\.0"),
        (2**106, r"sigma2 must be < 2\*\*104 for int64 output"),
        ("4", r"sigma2 must be an int or a fractions\.Fraction, got str"),
    ],
)
def test_discrete_gaussian_array_validation(sigma2: object, match: str) -> None:
    with pytest.raises(NoiseParameterError, match=match):
        discrete_gaussian_array(sigma2, 10, SecureRandom())  # type: ignore[arg-type]


def test_discrete_gaussian_array_basics(rng: SecureRandom) -> None:
    assert discrete_gaussian_array(4, 0, rng).shape == (0,)
    out = discrete_gaussian_array(4, 1000, rng)
    assert out.dtype == np.int64
    assert out.shape == (1000,)
    assert (discrete_gaussian_array(Fraction(1, 10_000), 1000, rng) == 0).all()


# 1e9 mixes the int64 and object acceptance paths (|Y| T - n > 2**31 beyond ~3 sigma);
# 1e10 (coarsened) takes the object-array path everywhere (2 n d T^2 > 2**62).
GAUSS_SIGMA2 = [
    Fraction(1, 4),
    Fraction(4),
    Fraction(10**6),
    Fraction(7, 3),
    Fraction(10**9),
    coarsen_up(10**10),
]


@pytest.mark.parametrize("sigma2", GAUSS_SIGMA2)
def test_discrete_gaussian_array_fits(rng: SecureRandom, sigma2: Fraction) -> None:
    v = float(sigma2)
    check_sampler(
        lambda n: discrete_gaussian_array(sigma2, n, rng),
        FAST_N,
        gauss_ref(v),
        [gauss_ref(0.7**2 * v), gauss_ref(1.3**2 * v)],  # sigma 30% off
    )


@pytest.mark.parametrize("sigma2", [Fraction(10**25 + 7, 3), Fraction(2**100 + 1, 2**9)])
def test_discrete_gaussian_array_huge_variance(rng: SecureRandom, sigma2: Fraction) -> None:
    # Integers far beyond int64 (object-array path); the reference is the
    # continuity-corrected normal cdf, exact to ~1e-20 at these sigmas.
    sigma = math.sqrt(float(sigma2))
    samples = discrete_gaussian_array(sigma2, FAST_N, rng)
    null_bins, _ = normal_bins(sigma, sigma)
    assert chi2_pvalue(samples, null_bins) >= ALPHA
    for factor in (0.7, 1.3):
        alt_bins, true_probs = normal_bins(factor * sigma, sigma)
        assert power_from_probs(FAST_N, alt_bins, true_probs) >= MIN_POWER
        assert chi2_pvalue(samples, alt_bins) < ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", GAUSS_SIGMA2)
def test_discrete_gaussian_array_fits_large_sample(rng: SecureRandom, sigma2: Fraction) -> None:
    v = float(sigma2)
    check_sampler(
        lambda n: discrete_gaussian_array(sigma2, n, rng),
        SLOW_N,
        gauss_ref(v),
        [gauss_ref(0.7**2 * v), gauss_ref(1.3**2 * v)],
    )


def test_vectorized_draws_are_fresh(rng: SecureRandom) -> None:
    a = discrete_laplace_array(1000, 50, rng)
    b = discrete_laplace_array(1000, 50, rng)
    assert not np.array_equal(a, b)
