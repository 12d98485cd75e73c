"""Exact vectorized samplers: many independent noise draws at once.

Same distributions as :mod:`dpframe.noise.exact` (Canonne, Kamath and Steinke
2020, Algorithms 1-3), but each step acts on a whole numpy array; Python loops
run over *rounds* of rejection sampling (the set of still-undecided elements
shrinks geometrically), never over elements.  Arithmetic is exact: int64 where
the integers provably fit (every product is bound-checked first), Python-int
object arrays for the elements where they do not, and the scalar exact
samplers for parameters whose numerator or denominator exceeds ``2**62``.

For speed, callers should round a scale or variance *up* to a coarse dyadic
grid with :func:`coarsen_up` first (a larger noise scale only strengthens the
privacy guarantee); the int64 fast path then always applies.

Reference: C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
Differential Privacy", NeurIPS 2020 (arXiv:2004.00010).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.noise import _kernels as kern
from dpframe.noise import exact
from dpframe.noise._checks import (
    INT64_SAFE,
    NoiseParameterError,
    check_size,
    to_fraction,
    to_int,
)
from dpframe.noise.random_source import SecureRandom

__all__ = [
    "bernoulli_exp_array",
    "coarsen_up",
    "discrete_gaussian_array",
    "discrete_laplace_array",
]

_INT64_MAX = 2**63 - 1
#: Largest scale (or standard deviation) the int64 outputs support: a draw
#: beyond 2**63 would then need a deviation of 2**11 scales (probability e^-2048).
MAX_SCALE = 2**52


def coarsen_up(x: Fraction | int | float, bits: int = 20) -> Fraction:
    """Round ``x > 0`` up to the nearest number ``t * 2**-k`` with ``t < 2**(bits+1)``.

    ``k`` may be negative (the result is then the integer ``t * 2**-k``).  The
    result has at most ``bits + 1`` significant bits, so the vectorized
    samplers can keep their arithmetic in int64.  Unlike the samplers, this
    function accepts a finite float and converts it exactly first.

    Privacy:
        Rounding a noise scale or variance *up* never weakens the guarantee:
        discrete Laplace with scale ``t >= Δ/ε`` is ε-DP, and a discrete
        Gaussian with ``sigma2 >= Δ^2/(2ρ)`` is ρ-zCDP (Canonne, Kamath and
        Steinke 2020, "The Discrete Gaussian for Differential Privacy").

    Accuracy:
        The result ``c`` satisfies ``x <= c < x * (1 + 2**-bits)``.

    Args:
        x: A positive int, Fraction or finite float.
        bits: Precision, ``bits >= 1``.

    Returns:
        The smallest such dyadic number that is ``>= x``, as a Fraction.

    Raises:
        NoiseParameterError: If ``x`` is not a positive finite number or
            ``bits < 1``.

    """
    bits = to_int(bits, "bits")
    if bits < 1:
        raise NoiseParameterError(f"bits must be >= 1, got {bits}")
    if isinstance(x, float | np.floating) and not isinstance(x, bool):
        if not math.isfinite(x):
            raise NoiseParameterError(f"x must be finite, got {x!r}")
        value = Fraction(float(x))
    else:
        value = to_fraction(x, "x")
    if value <= 0:
        raise NoiseParameterError(f"x must be > 0, got {value}")
    n, d = value.numerator, value.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1  # now 2**e <= x < 2**(e+1)
    k = bits - e  # x * 2**k lies in [2**bits, 2**(bits+1))
    if k >= 0:
        t = -((-n << k) // d)
        return Fraction(t, 1 << k)
    t = -(-n // (d << -k))
    return Fraction(t << -k)


def _as_object_ints(values: Any, name: str) -> npt.NDArray[np.object_]:
    """Validate an integer array (any integer dtype, or Python ints) as a 1-D object array."""
    arr = np.asarray(values)
    if arr.dtype == np.object_:
        flat = arr.reshape(-1)
        if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in flat):
            raise NoiseParameterError(f"{name} must contain integers only")
        return np.array([int(v) for v in flat], dtype=object).reshape(arr.shape)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise NoiseParameterError(f"{name} must have an integer dtype, got {arr.dtype}")
    return arr.astype(object)


def _int64_fast_path(num: Any, den: Any) -> tuple[kern.IntArray, int | kern.IntArray] | None:
    """Return ``(num, den)`` flattened for the int64 kernel if they are valid and fit, else None."""
    if not (isinstance(num, np.ndarray) and num.dtype.kind in "iu" and num.size):
        return None
    if isinstance(den, np.ndarray):
        if den.dtype.kind not in "iu" or den.shape != num.shape:
            return None
        den_flat: int | kern.IntArray = den.reshape(-1)
        den_lo, den_hi = int(den.min()), int(den.max())
    elif isinstance(den, int | np.integer) and not isinstance(den, bool | np.bool_):
        den_flat = den_lo = den_hi = int(den)
    else:
        return None
    if int(num.min()) < 0 or int(num.max()) > INT64_SAFE or den_lo < 1 or den_hi > INT64_SAFE:
        return None  # invalid (reported by the general path) or too large for int64
    num_flat = num.reshape(-1).astype(np.int64)
    if isinstance(den_flat, np.ndarray):
        den_flat = den_flat.astype(np.int64)
    return num_flat, den_flat


def bernoulli_exp_array(
    num: npt.NDArray[Any], den: int | npt.NDArray[Any], rng: SecureRandom
) -> npt.NDArray[np.bool_]:
    """Return independent draws, element ``i`` True with probability ``exp(-num_i/den_i)``.

    CKS 2020 Algorithm 1, vectorized: the integer part of ``num_i/den_i``
    becomes that many Bernoulli(exp(-1)) draws (stopping at the first
    failure), the fractional part runs the ``K``-counting loop on the
    still-active elements.  int64 arithmetic where values are ``<= 2**62``,
    exact Python-int object arrays otherwise.

    Privacy:
        A building block (the acceptance test of the discrete Laplace and
        Gaussian samplers of Canonne, Kamath and Steinke 2020, "The Discrete
        Gaussian for Differential Privacy"); it gives no guarantee on its own.

    Accuracy:
        Exact: ``P(True) = exp(-num_i/den_i)`` with no rounding.

    Args:
        num: Integer array (any integer dtype, or object array of Python ints),
            ``num_i >= 0``.
        den: Positive int, or an integer array of the same shape as ``num``.
        rng: The random source.

    Returns:
        A bool array of the same shape as ``num``.

    Raises:
        NoiseParameterError: If a numerator is negative, a denominator is not
            positive, or the shapes disagree.

    """
    fast = _int64_fast_path(num, den)
    if fast is not None:
        return kern.bexp_int(fast[0], fast[1], rng).reshape(np.shape(num))
    num_o = _as_object_ints(num, "num")
    if isinstance(den, np.ndarray):
        den_o = _as_object_ints(den, "den")
        if den_o.shape != num_o.shape:
            raise NoiseParameterError(
                f"den must be an int or have the shape of num {num_o.shape}, got {den_o.shape}"
            )
    else:
        den_o = np.full(num_o.shape, to_int(den, "den"), dtype=object)
    if num_o.size and (bool(np.any(num_o < 0)) or bool(np.any(den_o < 1))):
        raise NoiseParameterError("need num_i >= 0 and den_i >= 1 (gamma = num/den >= 0)")
    out = kern.bexp_mixed(num_o.reshape(-1), den_o.reshape(-1), rng)
    return out.reshape(num_o.shape)


def _geometric_int(t: int, s: int, n: int, rng: SecureRandom) -> kern.IntArray:
    """Draw ``X // s`` ``n`` times, where ``P(X = x)`` is proportional to ``exp(-x/t)``.

    Needs ``t, s <= 2**62``.

    CKS 2020 Algorithm 2, steps 1-4: ``X = U + t V`` with ``U`` uniform on
    ``{0..t-1}`` accepted with probability ``exp(-U/t)`` and ``V`` the number
    of successes of Bernoulli(exp(-1)) before the first failure.
    """
    u = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        cand = rng.uniform_below(t, todo.size)
        ok = kern.bexp_le1_int(cand, t, rng)
        u[todo[ok]] = cand[ok]
        todo = todo[~ok]
    v = kern.count_exp1_successes(n, rng)
    safe = v <= (INT64_SAFE - u) // t
    y = np.empty(n, dtype=np.int64)
    y[safe] = (u[safe] + t * v[safe]) // s
    for i in np.flatnonzero(~safe):  # only reachable for t near 2**62
        y[i] = _fit_int64((int(u[i]) + t * int(v[i])) // s)
    return y


def _fit_int64(value: int) -> int:
    """Return ``value`` if it fits in int64, else raise."""
    if abs(value) > _INT64_MAX:
        raise NoiseParameterError("a noise draw does not fit in int64; use dpframe.noise.exact")
    return value


def _dlap_int(t: int, s: int, n: int, rng: SecureRandom) -> kern.IntArray:
    """Draw ``n`` discrete Laplace values with scale ``t/s`` (t, s <= 2**62), CKS Algorithm 2."""
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        y = _geometric_int(t, s, todo.size, rng)
        neg = rng.fair_bits(todo.size)
        ok = ~(neg & (y == 0))
        out[todo[ok]] = np.where(neg[ok], -y[ok], y[ok])
        todo = todo[~ok]
    return out


def discrete_laplace_array(
    scale: Fraction | int, size: int, rng: SecureRandom
) -> npt.NDArray[np.int64]:
    """Return ``size`` independent draws with ``P(Y = y)`` proportional to ``exp(-|y|/scale)``.

    CKS 2020 Algorithm 2, vectorized over the draws.  With ``scale = t/s`` in
    lowest terms the int64 path needs ``t, s <= 2**62`` (always true after
    :func:`coarsen_up`); otherwise each draw uses :func:`exact.discrete_laplace`.

    Privacy:
        Added to an integer-valued query of sensitivity ``Δ``, each draw gives
        ``(Δ/scale)``-DP (pure ε-DP with ``ε = Δ/scale``); adding one draw to
        each of ``k`` cells whose vector has L1 sensitivity ``Δ`` also gives
        ``(Δ/scale)``-DP.  Canonne, Kamath and Steinke (2020), "The Discrete
        Gaussian for Differential Privacy".

    Accuracy:
        Mean 0, variance ``2a/(1-a)^2`` with ``a = exp(-1/scale)`` (about
        ``2 scale^2``); ``P(|Y| > k) = 2 a^{k+1}/(1+a)`` for integers ``k >= 0``.

    Args:
        scale: An ``int`` or ``Fraction`` with ``0 < scale <= 2**52`` (floats
            are refused: use :func:`coarsen_up`).
        size: Number of draws.
        rng: The random source.

    Returns:
        An int64 array of shape ``(size,)``.

    Raises:
        NoiseParameterError: If ``scale`` is a float, not positive, or above ``2**52``.

    """
    scale = to_fraction(scale, "scale")
    size = check_size(size)
    if scale <= 0:
        raise NoiseParameterError(f"scale must be > 0, got {scale}")
    if scale > MAX_SCALE:
        raise NoiseParameterError("scale must be <= 2**52 for int64 output")
    t, s = scale.numerator, scale.denominator
    if max(t, s) > INT64_SAFE:
        draws = [_fit_int64(exact.discrete_laplace(scale, rng)) for _ in range(size)]
        return np.array(draws, dtype=np.int64).reshape(size)
    if rng.pool is not None:
        return rng.pool.take(("laplace", scale), size, lambda k: _dlap_int(t, s, k, rng))
    return _dlap_int(t, s, size, rng)


def _gauss_accept(ay: kern.IntArray, n: int, d: int, t: int, rng: SecureRandom) -> kern.BoolArray:
    """Bernoulli(exp(-(|y| - sigma2/t)^2 / (2 sigma2))) with ``sigma2 = n/d``, given ``|y|``.

    As one rational per element: ``(|y| d t - n)^2 / (2 n d t^2)``.
    """
    dt = d * t
    den = 2 * n * d * t * t
    m = ay.size
    fits = np.zeros(m, dtype=np.bool_)
    a = np.zeros(m, dtype=np.int64)
    if den <= INT64_SAFE:  # implies n, d*t <= 2**62
        fits = ay <= INT64_SAFE // dt
        a[fits] = ay[fits] * dt - n
        fits &= np.abs(a) <= 2**31  # so a**2 <= 2**62
    out = np.empty(m, dtype=np.bool_)
    fi = np.flatnonzero(fits)
    if fi.size:
        out[fi] = kern.bexp_int(a[fi] * a[fi], den, rng)
    bi = np.flatnonzero(~fits)
    if bi.size:
        a_obj: Any = ay[bi].astype(object) * dt - n
        den_obj = np.full(bi.size, den, dtype=object)
        out[bi] = kern.bexp_mixed(a_obj * a_obj, den_obj, rng)
    return out


def discrete_gaussian_array(
    sigma2: Fraction | int, size: int, rng: SecureRandom
) -> npt.NDArray[np.int64]:
    """Return ``size`` independent draws with ``P(Y = y)`` proportional to ``exp(-y^2/(2 sigma2))``.

    CKS 2020 Algorithm 3, vectorized: with ``T = floor(sqrt(sigma2)) + 1``
    (computed exactly with :func:`math.isqrt`), propose discrete Laplace draws
    of scale ``T`` and accept each with probability
    ``exp(-(|Y| - sigma2/T)^2 / (2 sigma2))``, one exact rational per element;
    redraw only the rejected elements.

    Privacy:
        Added to an integer-valued query of integer sensitivity ``Δ``, each
        draw gives ``Δ^2/(2 sigma2)``-zCDP; for a vector query with L2
        sensitivity ``Δ``, one draw per cell gives ``Δ^2/(2 sigma2)``-zCDP.
        Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for
        Differential Privacy", Section 2 (univariate and multivariate cases).

    Accuracy:
        Mean 0, variance below ``sigma2`` (equal to it up to relative terms of
        order ``exp(-2 pi^2 sigma2)``); ``P(|Y| >= k) <= 2 exp(-k^2/(2 sigma2))``.

    Args:
        sigma2: The variance parameter, an ``int`` or ``Fraction`` with
            ``0 < sigma2 < 2**104`` (floats are refused: use :func:`coarsen_up`).
        size: Number of draws.
        rng: The random source.

    Returns:
        An int64 array of shape ``(size,)``.

    Raises:
        NoiseParameterError: If ``sigma2`` is a float, not positive, or too large.

    """
    sigma2 = to_fraction(sigma2, "sigma2")
    size = check_size(size)
    if sigma2 <= 0:
        raise NoiseParameterError(f"sigma2 must be > 0, got {sigma2}")
    t = exact.floor_sqrt(sigma2) + 1
    if t > MAX_SCALE:
        raise NoiseParameterError("sigma2 must be < 2**104 for int64 output")
    n, d = sigma2.numerator, sigma2.denominator
    if rng.pool is not None:
        return rng.pool.take(("gaussian", sigma2), size, lambda k: _dgauss(n, d, t, k, rng))
    return _dgauss(n, d, t, size, rng)


def _dgauss(n: int, d: int, t: int, size: int, rng: SecureRandom) -> npt.NDArray[np.int64]:
    """``size`` discrete Gaussian draws with sigma2 = n/d, proposals of discrete Laplace scale t."""
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        y = _dlap_int(t, 1, todo.size, rng)
        ok = _gauss_accept(np.abs(y), n, d, t, rng)
        out[todo[ok]] = y[ok]
        todo = todo[~ok]
    return out
