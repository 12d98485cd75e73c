"""Exact scalar reference samplers (Canonne, Kamath and Steinke 2020, Algorithms 1-3).

Every sampler here draws from its distribution *exactly*: all probabilities
are rational numbers handled with :class:`fractions.Fraction`, and all
randomness comes from a :class:`~dpframe.noise.random_source.SecureRandom`.
They are simple and slow (one Python-level loop per draw); the vectorized
samplers in :mod:`dpframe.noise.vectorized` produce the same distributions for
many cells at once and fall back to these for parameters too large for int64.

Parameters must be ``int`` or :class:`fractions.Fraction` (or another exact
:class:`numbers.Rational`); floats are refused with a
:class:`~dpframe.noise.NoiseParameterError` so that no rounding happens
silently.  Use ``Fraction(x)`` for the exact binary value of a float, or
:func:`dpframe.noise.coarsen_up` to round a scale *up* (rounding a noise scale
up only strengthens the privacy guarantee).

Reference: C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020 (arXiv:2004.00010).
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpframe.noise._checks import NoiseParameterError, to_fraction
from dpframe.noise.random_source import SecureRandom

__all__ = ["bernoulli", "bernoulli_exp", "discrete_gaussian", "discrete_laplace", "geometric_exp"]


def bernoulli(p: Fraction | int, rng: SecureRandom) -> bool:
    """Return True with probability exactly ``p``.

    Draws ``U`` uniform on ``{0, ..., d-1}`` for ``p = n/d`` and returns ``U < n``.

    Privacy:
        Not a privacy mechanism by itself: a building block of the exact
        samplers of Canonne, Kamath and Steinke (2020), "The Discrete Gaussian
        for Differential Privacy".  A biased coin used as randomized response
        with ``p = e^ε / (1 + e^ε)`` is ε-DP.

    Accuracy:
        Mean ``p``, variance ``p (1 - p)``.

    Args:
        p: Probability, an ``int`` or ``Fraction`` with ``0 <= p <= 1``.
        rng: The random source.

    Returns:
        True with probability ``p``.

    Raises:
        NoiseParameterError: If ``p`` is a float or outside ``[0, 1]``.

    """
    p = to_fraction(p, "p")
    if not 0 <= p <= 1:
        raise NoiseParameterError(f"p must lie in [0, 1], got {p}")
    return rng.randbelow(p.denominator) < p.numerator


def _bexp_le1(num: int, den: int, rng: SecureRandom) -> bool:
    """CKS 2020 Algorithm 1 for ``0 <= num/den <= 1``: True with probability ``exp(-num/den)``."""
    k = 1
    while rng.randbelow(den * k) < num:  # Bernoulli(gamma / k)
        k += 1
    return k % 2 == 1


def _bexp(num: int, den: int, rng: SecureRandom) -> bool:
    """Return True with probability ``exp(-num/den)`` (integers ``num >= 0``, ``den >= 1``)."""
    whole, rest = divmod(num, den)
    for _ in range(whole):
        if not _bexp_le1(1, 1, rng):
            return False
    return _bexp_le1(rest, den, rng)


def bernoulli_exp(gamma: Fraction | int, rng: SecureRandom) -> bool:
    """Return True with probability exactly ``exp(-gamma)``.

    CKS 2020 Algorithm 1: for ``gamma <= 1``, count ``K`` = the index of the
    first failure of Bernoulli(gamma/1), Bernoulli(gamma/2), ... and return
    whether ``K`` is odd.  For ``gamma > 1``, return the AND of
    ``floor(gamma)`` draws of Bernoulli(exp(-1)) and one draw of
    Bernoulli(exp(-(gamma - floor(gamma)))), stopping at the first False.

    Privacy:
        A building block (the acceptance test of the discrete Laplace and
        discrete Gaussian samplers of Canonne, Kamath and Steinke 2020,
        "The Discrete Gaussian for Differential Privacy"); it gives no
        guarantee on its own.

    Accuracy:
        Mean ``exp(-gamma)``.  Uses ``O(1 + min(gamma, 1/(1 - e^-1)))``
        Bernoulli draws on average.

    Args:
        gamma: An ``int`` or ``Fraction``, ``gamma >= 0``.
        rng: The random source.

    Returns:
        True with probability ``exp(-gamma)``.

    Raises:
        NoiseParameterError: If ``gamma`` is a float or negative.

    """
    gamma = to_fraction(gamma, "gamma")
    if gamma < 0:
        raise NoiseParameterError(f"gamma must be >= 0, got {gamma}")
    return _bexp(gamma.numerator, gamma.denominator, rng)


def geometric_exp(x: Fraction | int, rng: SecureRandom) -> int:
    """Return ``V >= 0`` with ``P(V = k) = (1 - e^{-x}) e^{-x k}`` exactly.

    CKS 2020 Algorithm 2, steps 1-4, with ``x = s/t``: draw ``U`` uniform on
    ``{0, ..., t-1}`` until Bernoulli(exp(-U/t)) accepts; count the successes
    ``V'`` of Bernoulli(exp(-1)) before the first failure; return
    ``(U + t V') // s``.

    Privacy:
        The one-sided (non-negative) geometric distribution of Canonne, Kamath
        and Steinke (2020), "The Discrete Gaussian for Differential Privacy".
        Added to a count it does not give DP by itself (use
        :func:`discrete_laplace`); it is the magnitude of discrete Laplace noise.

    Accuracy:
        Mean ``1/(e^x - 1)``, variance ``e^x/(e^x - 1)^2``;
        ``P(V >= k) = e^{-x k}``.

    Args:
        x: Rate, an ``int`` or ``Fraction`` with ``x > 0``.
        rng: The random source.

    Returns:
        A non-negative Python int.

    Raises:
        NoiseParameterError: If ``x`` is a float or not positive.

    """
    x = to_fraction(x, "x")
    if x <= 0:
        raise NoiseParameterError(f"x must be > 0, got {x}")
    return _geometric(x.denominator, x.numerator, rng)


def _geometric(t: int, s: int, rng: SecureRandom) -> int:
    """Return ``X // s``, ``P(X = x)`` proportional to ``exp(-x/t)`` (CKS Alg. 2, steps 1-4)."""
    while True:
        u = rng.randbelow(t)
        if _bexp_le1(u, t, rng):
            break
    v = 0
    while _bexp_le1(1, 1, rng):
        v += 1
    return (u + t * v) // s


def discrete_laplace(scale: Fraction | int, rng: SecureRandom) -> int:
    """Return ``Y`` with ``P(Y = y)`` proportional to ``exp(-|y| / scale)`` exactly.

    CKS 2020 Algorithm 2: a geometric magnitude with rate ``1/scale`` and a
    fair sign, rejecting "negative zero".

    Privacy:
        Added to an integer-valued query of sensitivity ``Δ`` (the largest
        change in the query when one individual's data changes), it gives
        ``(Δ / scale)``-DP, i.e. pure ε-DP with ``ε = Δ / scale``
        (Canonne, Kamath and Steinke 2020, "The Discrete Gaussian for
        Differential Privacy"; the "geometric mechanism" of Ghosh,
        Roughgarden and Sundararajan 2009).

    Accuracy:
        Mean 0, variance ``2a / (1 - a)^2`` with ``a = exp(-1/scale)``
        (about ``2 scale^2`` for large scales);
        ``P(|Y| > k) = 2 a^{k+1} / (1 + a)`` for integers ``k >= 0``.

    Args:
        scale: An ``int`` or ``Fraction``, ``scale > 0``.
        rng: The random source.

    Returns:
        A Python int.

    Raises:
        NoiseParameterError: If ``scale`` is a float or not positive.

    """
    scale = to_fraction(scale, "scale")
    if scale <= 0:
        raise NoiseParameterError(f"scale must be > 0, got {scale}")
    return _dlap(scale.numerator, scale.denominator, rng)


def _dlap(t: int, s: int, rng: SecureRandom) -> int:
    """Discrete Laplace with scale ``t/s`` (CKS Algorithm 2)."""
    while True:
        y = _geometric(t, s, rng)
        negative = rng.randbits(1) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def floor_sqrt(q: Fraction) -> int:
    """Return ``floor(sqrt(q))`` exactly for a rational ``q >= 0``.

    Args:
        q: A non-negative Fraction.

    Returns:
        The integer part of the square root of ``q``.

    """
    n, d = q.numerator, q.denominator
    return math.isqrt(n * d) // d


def discrete_gaussian(sigma2: Fraction | int, rng: SecureRandom) -> int:
    """Return ``Y`` with ``P(Y = y)`` proportional to ``exp(-y^2 / (2 sigma2))`` exactly.

    CKS 2020 Algorithm 3: with ``T = floor(sqrt(sigma2)) + 1``, propose
    ``Y ~`` discrete Laplace with scale ``T`` and accept it with probability
    ``exp(-(|Y| - sigma2/T)^2 / (2 sigma2))``.

    Privacy:
        Added to an integer-valued query of sensitivity ``Δ`` (integer), it
        gives ``Δ^2 / (2 sigma2)``-zCDP (Canonne, Kamath and Steinke 2020,
        "The Discrete Gaussian for Differential Privacy", Section 2), hence
        also ``(ε, δ)``-DP by the zCDP-to-approximate-DP conversion given there.

    Accuracy:
        Mean 0, variance strictly below ``sigma2`` (equal to it up to
        ``exp(-2 pi^2 sigma2)`` relative terms); sub-Gaussian tails:
        ``P(|Y| >= k) <= 2 exp(-k^2 / (2 sigma2))``.

    Args:
        sigma2: The variance parameter, an ``int`` or ``Fraction``, ``sigma2 > 0``.
        rng: The random source.

    Returns:
        A Python int.

    Raises:
        NoiseParameterError: If ``sigma2`` is a float or not positive.

    """
    sigma2 = to_fraction(sigma2, "sigma2")
    if sigma2 <= 0:
        raise NoiseParameterError(f"sigma2 must be > 0, got {sigma2}")
    t = floor_sqrt(sigma2) + 1
    n, d = sigma2.numerator, sigma2.denominator
    # (|y| - sigma2/t)^2 / (2 sigma2) = (|y| d t - n)^2 / (2 n d t^2)
    dt = d * t
    den = 2 * n * d * t * t
    while True:
        y = _dlap(t, 1, rng)
        if _bexp((abs(y) * dt - n) ** 2, den, rng):
            return y
