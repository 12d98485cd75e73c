"""Public facts about the noise distributions: pmf, cdf, quantiles, variance.

These functions describe the distributions drawn by :mod:`dpframe.noise.exact`
and :mod:`dpframe.noise.vectorized`; they are used for confidence intervals
and accuracy statements.  They only use public parameters, so floating point
is fine here (this is post-processing, not noise generation).

* Discrete Laplace with scale ``s``: ``P(Y = k) = (1-a)/(1+a) a^|k|`` with
  ``a = exp(-1/s)``; closed forms throughout, computed in log space with
  ``expm1``/``tanh`` so that tiny (0.01) and huge (1e6+) scales are accurate.
* Discrete Gaussian with variance parameter ``sigma2``:
  ``P(Y = k) = exp(-k^2/(2 sigma2)) / Z``.  For ``sigma <= 1000`` everything
  is summed exactly over ``|k| <= 40 sigma + 10`` (the rest has mass below
  ``e^-800``).  For larger ``sigma``, ``Z = sqrt(2 pi) sigma`` (Poisson
  summation; the correction is ``exp(-2 pi^2 sigma2)``), the variance is
  ``sigma2`` to double precision, and the cdf uses the midpoint Euler-Maclaurin
  formula with two correction terms (error far below ``1e-15``).

Reference: C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020.
"""

from __future__ import annotations

import math
import numbers
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.noise._checks import NoiseParameterError

__all__ = [
    "discrete_gaussian_abs_quantile",
    "discrete_gaussian_cdf",
    "discrete_gaussian_pmf",
    "discrete_gaussian_variance",
    "discrete_laplace_abs_quantile",
    "discrete_laplace_cdf",
    "discrete_laplace_pmf",
    "discrete_laplace_variance",
]

FloatArray = npt.NDArray[np.float64]

#: Above this standard deviation the discrete Gaussian uses asymptotic formulas.
_SIGMA_TABLE_MAX = 1000.0


def _special() -> Any:
    """scipy.special, imported on first use (it costs ~0.3 s at import time)."""
    from scipy import special

    return special


def _positive(value: Any, name: str) -> float:
    """Return ``value`` as a positive finite float or raise."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise NoiseParameterError(f"{name} must be a positive real number")
    out = float(value)
    if not (math.isfinite(out) and out > 0):
        raise NoiseParameterError(f"{name} must be positive and finite, got {value!r}")
    return out


def _level(level: Any) -> float:
    """Return ``level`` as a float in the open interval (0, 1) or raise."""
    if isinstance(level, bool | np.bool_) or not isinstance(level, numbers.Real):
        raise NoiseParameterError("level must be a real number in (0, 1)")
    out = float(level)
    if not 0 < out < 1:
        raise NoiseParameterError(f"level must satisfy 0 < level < 1, got {level!r}")
    return out


def _ks(k: Any) -> FloatArray:
    """Return ``k`` as a float array."""
    return np.asarray(k, dtype=np.float64)


def _smallest_a(tail: Any, guess: int, target: float) -> int:
    """Smallest integer ``a >= 0`` with ``tail(a) <= target`` (``tail`` is non-increasing).

    An exponential search from ``guess`` brackets the answer, then a bisection
    finds it: O(log) calls of ``tail`` however far the guess is (a linear walk
    took minutes for a tiny ε, whose tail is flat in floating point).
    """
    a = max(0, int(guess))
    if tail(a) <= target:  # search down: tail(hi) <= target
        hi, step = a, 1
        while hi - step >= 0 and tail(hi - step) <= target:
            hi -= step
            step *= 2
        lo = hi - step  # tail(lo) > target, or lo < 0
    else:  # search up: tail(lo) > target
        lo, step = a, max(1, a)
        hi = a + step
        while tail(hi) > target:
            lo, step = hi, step * 2
            hi = a + step
    lo = max(lo, -1)
    while hi - lo > 1:  # invariant: tail(hi) <= target < tail(lo) (lo = -1: none below)
        mid = (lo + hi) // 2
        if tail(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


# -- discrete Laplace ------------------------------------------------------------


def discrete_laplace_pmf(scale: float, k: npt.ArrayLike) -> FloatArray:
    """Return ``P(Y = k)`` for the discrete Laplace distribution with the given scale.

    Args:
        scale: The scale ``s > 0``; ``P(Y = k)`` is proportional to ``exp(-|k|/s)``.
        k: Points (array-like); non-integers have probability 0.

    Returns:
        A float array with the shape of ``k``.

    """
    s = _positive(scale, "scale")
    kf = _ks(k)
    out = math.tanh(0.5 / s) * np.exp(-np.abs(kf) / s)
    return np.where(kf == np.floor(kf), out, 0.0)


def discrete_laplace_cdf(scale: float, k: npt.ArrayLike) -> FloatArray:
    """Return ``P(Y <= k)`` for the discrete Laplace distribution with the given scale.

    Args:
        scale: The scale ``s > 0``.
        k: Points (array-like, need not be integers).

    Returns:
        A float array with the shape of ``k``.

    """
    s = _positive(scale, "scale")
    kf = np.floor(_ks(k))
    one_plus_a = 1.0 + math.exp(-1.0 / s)
    with np.errstate(invalid="ignore"):
        lower = np.exp(-np.abs(kf) / s) / one_plus_a  # P(Y <= k) for k < 0
        upper = np.exp(-np.maximum(kf + 1.0, 0.0) / s) / one_plus_a  # P(Y > k) for k >= 0
    return np.where(kf < 0, lower, 1.0 - upper)


def _laplace_tail(s: float, a: int) -> float:
    """``P(|Y| > a)`` for integer ``a >= 0``."""
    return 2.0 * math.exp(-(a + 1) / s) / (1.0 + math.exp(-1.0 / s))


@lru_cache(maxsize=1024, typed=True)  # public parameters only: every interval asks again
def discrete_laplace_abs_quantile(scale: float, level: float) -> int:
    """Return the smallest integer ``a >= 0`` with ``P(|Y| <= a) >= level``.

    ``[-a, a]`` is then the shortest symmetric interval holding the noise with
    probability at least ``level``: a confidence interval for a noisy count is
    ``noisy +- a``.

    Args:
        scale: The scale ``s > 0``.
        level: The coverage probability, ``0 < level < 1``.

    Returns:
        The half-width ``a``.

    """
    s = _positive(scale, "scale")
    target = 1.0 - _level(level)
    log_ratio = math.log(2.0 / ((1.0 + math.exp(-1.0 / s)) * target))
    guess = math.ceil(s * log_ratio - 1.0) if s * log_ratio < 1e18 else 10**18
    return _smallest_a(lambda a: _laplace_tail(s, a), guess, target)


def discrete_laplace_variance(scale: float) -> float:
    """Return the variance ``2a/(1-a)^2`` (``a = exp(-1/scale)``), about ``2 scale^2``.

    Args:
        scale: The scale ``s > 0``.

    Returns:
        The variance.

    """
    s = _positive(scale, "scale")
    return 2.0 * math.exp(-1.0 / s) / math.expm1(-1.0 / s) ** 2


# -- discrete Gaussian -----------------------------------------------------------


@lru_cache(maxsize=16)
def _gauss_table(sigma2: float) -> tuple[int, FloatArray, FloatArray, float]:
    """Exact sums for ``sigma <= 1000``: (M, pmf on [-M, M], cdf on [-M, M], variance)."""
    big_m = int(40.0 * math.sqrt(sigma2) + 10.0)
    ks = np.arange(-big_m, big_m + 1, dtype=np.float64)
    f = np.exp(-(ks * ks) / (2.0 * sigma2))
    pmf = f / f.sum()
    cdf = np.cumsum(pmf)
    var = float(np.sum(ks * ks * pmf))
    pmf.flags.writeable = False
    cdf.flags.writeable = False
    return big_m, pmf, cdf, var


def _gauss_lower(sigma2: float, kf: FloatArray) -> FloatArray:
    """``P(Y <= k)`` for integer-valued ``k <= -1`` (accurate in the lower tail)."""
    sigma = math.sqrt(sigma2)
    if sigma <= _SIGMA_TABLE_MAX:
        big_m, _, cdf, _ = _gauss_table(sigma2)
        idx = np.clip(kf, -big_m - 1, big_m) + big_m
        vals = cdf[np.clip(idx, 0, 2 * big_m).astype(np.intp)]
        return np.where(idx < 0, 0.0, vals)
    # Midpoint Euler-Maclaurin: sum_{y<=k} f(y) = int_{-inf}^{u} f - f'(u)/24 + 7 f'''(u)/5760,
    # u = k + 1/2, with f(x) = exp(-x^2/(2 sigma2)) and Z = sqrt(2 pi) sigma.
    u = kf + 0.5
    z = u / sigma
    corr = u / (24.0 * sigma2) + 7.0 / 5760.0 * (3.0 * u / sigma2**2 - u**3 / sigma2**3)
    return np.asarray(
        _special().ndtr(z) + corr * np.exp(-0.5 * z * z) / (sigma * math.sqrt(2 * math.pi))
    )


def discrete_gaussian_pmf(sigma2: float, k: npt.ArrayLike) -> FloatArray:
    """Return ``P(Y = k)`` for the discrete Gaussian with variance parameter ``sigma2``.

    Args:
        sigma2: ``sigma2 > 0``; ``P(Y = k)`` is proportional to ``exp(-k^2/(2 sigma2))``.
        k: Points (array-like); non-integers have probability 0.

    Returns:
        A float array with the shape of ``k``.

    """
    v = _positive(sigma2, "sigma2")
    kf = _ks(k)
    sigma = math.sqrt(v)
    if sigma <= _SIGMA_TABLE_MAX:
        big_m, pmf, _, _ = _gauss_table(v)
        log_z = math.log(pmf[big_m])  # pmf[M] = 1/Z
        out = np.exp(log_z - kf * kf / (2.0 * v))
    else:
        out = np.exp(-kf * kf / (2.0 * v)) / (sigma * math.sqrt(2.0 * math.pi))
    return np.where(kf == np.floor(kf), out, 0.0)


def discrete_gaussian_cdf(sigma2: float, k: npt.ArrayLike) -> FloatArray:
    """Return ``P(Y <= k)`` for the discrete Gaussian with variance parameter ``sigma2``.

    Args:
        sigma2: ``sigma2 > 0``.
        k: Points (array-like, need not be integers).

    Returns:
        A float array with the shape of ``k``.

    """
    v = _positive(sigma2, "sigma2")
    kf = np.floor(_ks(k))
    neg = np.where(kf < 0, kf, -kf - 1.0)  # the lower-tail point for each k
    lower = _gauss_lower(v, neg)
    return np.where(kf < 0, lower, 1.0 - lower)


@lru_cache(maxsize=1024, typed=True)  # public parameters only: every interval asks again
def discrete_gaussian_abs_quantile(sigma2: float, level: float) -> int:
    """Return the smallest integer ``a >= 0`` with ``P(|Y| <= a) >= level``.

    Args:
        sigma2: ``sigma2 > 0``.
        level: The coverage probability, ``0 < level < 1``.

    Returns:
        The half-width ``a`` of the shortest symmetric interval with that coverage.

    """
    v = _positive(sigma2, "sigma2")
    target = 1.0 - _level(level)
    z = -float(_special().ndtri(target / 2.0))
    guess = math.floor(math.sqrt(v) * z) - 1

    def tail(a: int) -> float:
        return 2.0 * float(_gauss_lower(v, np.array([-a - 1.0]))[0])

    return _smallest_a(tail, guess, target)


def discrete_gaussian_variance(sigma2: float) -> float:
    """Return the variance of the discrete Gaussian (slightly below ``sigma2``).

    Args:
        sigma2: ``sigma2 > 0``.

    Returns:
        The variance, summed exactly for ``sigma <= 1000`` and equal to
        ``sigma2`` beyond (the difference is below ``sigma2 * exp(-2 pi^2 10^6)``).

    """
    v = _positive(sigma2, "sigma2")
    if math.sqrt(v) <= _SIGMA_TABLE_MAX:
        return _gauss_table(v)[3]
    return v
