"""Tail bounds of sums of independent discrete noises: ``|Σ_j c_j e_j|`` at a failure probability.

Used wherever an interval combines released noises (consistent tables, the
``dp`` dtype's affine forms, table margins).  Three valid bounds, the
smallest kept: the exact convolution of the pmfs (up to
:data:`CONVOLVED_TERMS` terms, every term rounded up), a Chernoff bound
from the moment generating functions, and a union bound.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from dpframe.mechanisms.calibration.additive import NoiseSpec

__all__ = ["CONVOLVED_TERMS", "half_width", "sum_half_width"]

FloatArray = npt.NDArray[np.float64]


def _log_mgf(noise: NoiseSpec, u: float) -> float:
    """Log E[exp(u · e)] for one noise in value units (inf where it does not exist)."""
    step = u * noise.grid
    if noise.kind == "gaussian":
        return float(noise.parameter) * step * step / 2  # sub-Gaussian with variance proxy σ²
    rate = 1 / float(noise.parameter)  # -log(a), without log(0) when a underflows (tiny noise)
    a = math.exp(-rate)
    if abs(step) >= rate:
        return math.inf
    return 2 * math.log1p(-a) - math.log1p(-a * math.exp(step)) - math.log1p(-a * math.exp(-step))


def _chernoff(row: FloatArray, noises: tuple[NoiseSpec, ...], alpha: float) -> float:
    """The smallest two-sided Chernoff bound ``t`` on ``|Σ row_j e_j|`` at failure ``alpha``."""
    terms = [(abs(float(c)), n) for c, n in zip(row, noises, strict=True) if c != 0]
    rounding = sum(c * n.rounding for c, n in terms)
    limit = min(
        (1 / (float(n.parameter) * n.grid * c) for c, n in terms if n.kind == "laplace"),
        default=math.inf,
    )
    spread = math.sqrt(sum((c * n.std) ** 2 for c, n in terms)) or 1.0

    def bound(lam: float) -> float:
        total = sum(_log_mgf(n, lam * c) for c, n in terms)
        return (total + math.log(2 / alpha)) / lam

    top = min(limit * (1 - 1e-9), 50 / spread)
    from scipy import optimize  # imported where first needed (import time)

    best = optimize.minimize_scalar(bound, bounds=(top * 1e-6, top), method="bounded")
    return float(min(bound(float(best.x)), bound(top * 0.5))) + rounding


#: The most noise terms whose sum is convolved exactly (beyond: Chernoff and union bounds).
CONVOLVED_TERMS = 24
_GRID_POINTS = 256  # grid steps per combined standard deviation (each term adds ≤ 1 step)
_TAIL = 1e-15
_MAX_CELLS = 1 << 22  # the widest term's reach in convolution cells (beyond: not convolved)


def half_width(row: FloatArray, noises: tuple[NoiseSpec, ...], alpha: float) -> float:
    """The smallest of the valid bounds on ``|Σ row_j e_j|`` at failure probability ``alpha``.

    ``e_j`` are independent draws of ``noises[j]`` (in value units, with their
    grid rounding); the bounds are the exact convolution (up to
    :data:`CONVOLVED_TERMS` terms), a Chernoff bound and a union bound.
    A function of public parameters only, so it is remembered (the same
    margins of a table are asked for by its display, its "too thin" check
    and ``dp.ci``: a 3 × 2 crosstab's margins took 0.16 s each time).
    """
    key = tuple(float(c) for c in np.asarray(row, dtype=float).ravel())
    return _remembered_half_width(key, tuple(noises), float(alpha))


@functools.lru_cache(maxsize=4096)
def _remembered_half_width(
    row: tuple[float, ...], noises: tuple[NoiseSpec, ...], alpha: float
) -> float:
    """:func:`half_width` of the row as a tuple (hashable: its cache key)."""
    coefficients = np.array(row)
    found = [_chernoff(coefficients, noises, alpha), _union(coefficients, noises, alpha)]
    if 1 < np.count_nonzero(coefficients) <= CONVOLVED_TERMS:
        found.append(_convolved(coefficients, noises, alpha))
    return min(found)


def sum_half_width(count: int, noise: NoiseSpec, alpha: float) -> float:
    """A valid bound on ``|e_1 + ... + e_count|`` (independent copies of ``noise``) at ``alpha``."""
    return half_width(np.ones(count), (noise,) * count, alpha)


def _pmf(noise: NoiseSpec) -> tuple[FloatArray, int, float]:
    """A noise's pmf on its integer grid units: (probabilities of −K..K, K, mass beyond K)."""
    if noise.kind == "laplace":
        a = math.exp(-1 / float(noise.parameter))
        # P(|Y| > K) = 2 a^(K+1) / (1 + a) <= _TAIL
        # a underflows to 0 for a tiny noise (ε of 10⁵ on a count): all mass at 0
        reach = 1 if a == 0 else max(1, math.ceil(math.log(_TAIL * (1 + a) / 2) / math.log(a)))
        ks = np.arange(-reach, reach + 1)
        p = (1 - a) / (1 + a) * a ** np.abs(ks)
    else:
        sigma = math.sqrt(float(noise.parameter))
        reach = max(1, math.ceil(sigma * 8.3 + 1))  # Gaussian tail beyond 8.3σ < 1e-16
        ks = np.arange(-reach, reach + 1)
        weights = np.exp(-(ks.astype(float) ** 2) / (2 * sigma * sigma))
        p = weights / weights.sum()  # over ±reach: the normalizer misses < 1e-16
    return p, reach, max(0.0, 1.0 - float(p.sum()))


def _convolved(row: FloatArray, noises: tuple[NoiseSpec, ...], alpha: float) -> float:
    """``t`` with ``P(Σ c_j e_j > t) ≤ alpha/2`` from the exact pmfs, every term rounded up."""
    terms = [(abs(float(c)), n) for c, n in zip(row, noises, strict=True) if c != 0]
    spread = math.sqrt(sum((c * n.std) ** 2 for c, n in terms))
    if spread == 0:  # every noise is too small to move a grid step: only the rounding
        return sum(c * n.rounding for c, n in terms)
    step = spread / _GRID_POINTS
    total: FloatArray = np.ones(1)
    offset, lost = 0, 0.0
    for c, noise in terms:
        p, reach, beyond = _pmf(noise)
        lost += beyond
        if c * noise.grid * reach / step > _MAX_CELLS:
            # a term whose grid steps are far apart against the sum's spread (a noise of
            # almost no width next to wider ones): no grid to convolve on; the other bounds hold
            return math.inf
        values = c * noise.grid * np.arange(-reach, reach + 1)
        cells = np.ceil(values / step).astype(np.int64)  # rounded up: S_up >= S
        low = int(cells[0])
        dense = np.zeros(int(cells[-1]) - low + 1)
        np.add.at(dense, cells - low, p)
        size = len(total) + len(dense) - 1
        padded = 1 << (size - 1).bit_length()  # a power of two: pocketfft is slow on primes
        fft = np.fft.rfft(total, padded) * np.fft.rfft(dense, padded)
        total = np.clip(np.fft.irfft(fft, padded)[:size], 0.0, None)
        offset += low
    budget = alpha / 2 - lost - 1e-12 * len(terms)  # FFT rounding, generously
    if budget <= 0:
        return math.inf
    above = np.cumsum(total[::-1])[::-1]  # above[i] = P(S_up >= offset + i)
    index = int(np.argmax(above <= budget))  # first grid point with P(S_up >= it) <= budget
    if above[index] > budget:
        return math.inf
    rounding = sum(c * n.rounding for c, n in terms)
    return (offset + index) * step + step + rounding


def _union(row: FloatArray, noises: tuple[NoiseSpec, ...], alpha: float) -> float:
    """``Σ_j |c_j| q_j`` with ``P(|e_j| > q_j) ≤ α_j``, the ``α_j`` summing to ``alpha``."""
    terms = [(abs(float(c)), n) for c, n in zip(row, noises, strict=True) if c != 0]
    weights = [c * n.scale for c, n in terms]
    whole = sum(weights)
    return sum(
        c * (n.abs_quantile(1 - alpha * w / whole) + n.rounding)
        for (c, n), w in zip(terms, weights, strict=True)
    )
