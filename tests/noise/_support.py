"""Test support: a deterministic byte source and goodness-of-fit helpers.

Statistical settings (shared by every statistical test):

* Each goodness-of-fit test is Pearson's chi-square on bins with expected count
  >= 5 (tails pooled) and at most ``MAX_BINS`` roughly equiprobable bins, at
  significance ``ALPHA = 1e-7``: a correct sampler fails one check with
  probability 1e-7, so fewer than 1e-6 over the ~100 checks of a full run.
* Power check: the same test against the pmf with the scale (or sigma, or the
  probability / rate) 30% off in each direction must reject.  Before sampling,
  ``check_sampler`` asserts that the sample size gives a predicted power of at
  least ``1 - 1e-6`` (noncentral chi-square with noncentrality
  ``N * sum (p_i - q_i)^2 / q_i``), so a too-small sample size fails loudly
  instead of making the power check flaky.
* The reference pmfs below are brute-force normalised sums, independent of
  ``dpframe.noise.distributions``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

ALPHA = 1e-7
MIN_POWER = 1 - 1e-6
MAX_BINS = 30
MIN_EXPECTED = 5.0

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class ShakeSource:
    """Deterministic byte stream: SHAKE-256 of (seed, block counter), as a byte source.

    Counts calls and bytes so tests can check that samplers read only from it.
    """

    _BLOCK = 1 << 16

    def __init__(self, seed: bytes | str) -> None:
        self._seed = seed.encode() if isinstance(seed, str) else seed
        self._counter = 0
        self._buf = bytearray()
        self._pos = 0
        self.calls = 0
        self.bytes_read = 0

    def __call__(self, n: int) -> bytes:
        self.calls += 1
        self.bytes_read += n
        while len(self._buf) - self._pos < n:
            del self._buf[: self._pos]
            self._pos = 0
            block = hashlib.shake_256(self._seed + self._counter.to_bytes(8, "little"))
            self._buf += block.digest(max(self._BLOCK, n))
            self._counter += 1
        out = bytes(self._buf[self._pos : self._pos + n])
        self._pos += n
        return out


# -- reference pmfs (brute force) ----------------------------------------------


def laplace_ref(scale: float, tail: float = 45.0) -> tuple[IntArray, FloatArray]:
    """Support window and pmf of the discrete Laplace, P(k) ~ exp(-|k|/scale)."""
    w = math.ceil(tail * scale) + 10
    ks = np.arange(-w, w + 1, dtype=np.int64)
    f = np.exp(-np.abs(ks) / scale)
    return ks, f / f.sum()


def gauss_ref(sigma2: float, tail: float = 12.0) -> tuple[IntArray, FloatArray]:
    """Support window and pmf of the discrete Gaussian, P(k) ~ exp(-k^2/(2 sigma2))."""
    w = math.ceil(tail * math.sqrt(sigma2)) + 10
    ks = np.arange(-w, w + 1, dtype=np.int64)
    f = np.exp(-(ks.astype(np.float64) ** 2) / (2.0 * sigma2))
    return ks, f / f.sum()


def geometric_ref(x: float, tail: float = 45.0) -> tuple[IntArray, FloatArray]:
    """Support window and pmf of P(V = k) = (1 - e^-x) e^(-x k), k >= 0."""
    w = math.ceil(tail / x) + 10
    ks = np.arange(0, w + 1, dtype=np.int64)
    f = np.exp(-x * ks)
    return ks, f / f.sum()


def bernoulli_ref(p: float) -> tuple[IntArray, FloatArray]:
    """Support {0, 1} and pmf of Bernoulli(p)."""
    return np.array([0, 1], dtype=np.int64), np.array([1.0 - p, p])


# -- binning and tests -----------------------------------------------------------


@dataclass(frozen=True)
class Bins:
    """Integer bins: bin j holds edges[j-1] < k <= edges[j] (the outer bins are open)."""

    edges: IntArray
    probs: FloatArray

    def counts(self, samples: npt.ArrayLike) -> IntArray:
        idx = np.searchsorted(self.edges, np.asarray(samples), side="left")
        return np.bincount(idx, minlength=self.probs.size).astype(np.int64)


def make_bins(ks: IntArray, pmf: FloatArray, n: int) -> Bins:
    """Bins of the null pmf: pooled tails, then roughly equiprobable interior bins.

    Every bin has expected count >= 5 under the null; interior bins also have
    probability >= 1/MAX_BINS (so there are at most about MAX_BINS + 2 bins).
    Greedy from the left, one ``searchsorted`` per bin.
    """
    tail_target = MIN_EXPECTED / n
    mid_target = max(tail_target, 1.0 / MAX_BINS)
    c = np.cumsum(pmf)
    total = float(c[-1])
    i = int(np.searchsorted(c, tail_target, side="left"))  # left tail: ks[0..i]
    j = int(np.searchsorted(c, total - tail_target, side="right"))  # right tail: ks[j..]
    if not i < j < c.size:
        raise AssertionError(f"sample size {n} too small to form two bins")
    cuts = [i]
    while True:
        nxt = int(np.searchsorted(c, c[cuts[-1]] + mid_target, side="left"))
        if nxt >= j:
            break
        cuts.append(nxt)
    if len(cuts) > 1:
        cuts[-1] = j - 1  # the leftover interior mass joins the last interior bin
    idx = np.array(cuts)
    probs = np.diff(np.concatenate([[0.0], c[idx], [total]]))
    return Bins(ks[idx].astype(np.int64), probs / total)


def chi2_pvalue(samples: npt.ArrayLike, bins: Bins) -> float:
    """Pearson chi-square p-value of samples against the binned pmf."""
    obs = bins.counts(samples)
    n = int(obs.sum())
    exp = n * bins.probs
    stat = float(np.sum((obs - exp) ** 2 / exp))
    return float(stats.chi2.sf(stat, bins.probs.size - 1))


def power_from_probs(n: int, alt: Bins, true_probs: FloatArray) -> float:
    """Predicted power (noncentral chi-square) of rejecting `alt` given the true bin probs."""
    df = alt.probs.size - 1
    if df == 0:
        return 0.0
    lam = n * float(np.sum((true_probs - alt.probs) ** 2 / alt.probs))
    crit = float(stats.chi2.isf(ALPHA, df))
    return float(stats.ncx2.sf(crit, df, lam))


def predicted_power(
    n: int, true: tuple[IntArray, FloatArray], alt: tuple[IntArray, FloatArray]
) -> float:
    """Predicted power of rejecting the pmf `alt` with n draws from the pmf `true`."""
    bins = make_bins(alt[0], alt[1], n)
    idx = np.searchsorted(bins.edges, true[0], side="left")
    true_probs = np.bincount(idx, weights=true[1], minlength=bins.probs.size).astype(np.float64)
    return power_from_probs(n, bins, true_probs)


def normal_bins(sigma: float, true_sigma: float) -> tuple[Bins, FloatArray]:
    """Equiprobable bins for a discrete Gaussian with huge sigma, and the bin probabilities
    under `true_sigma`, from the continuity-corrected normal cdf Phi((k + 1/2)/sigma)
    (for sigma > 1e3 its error is below 1e-10 of a bin's probability).
    """
    qs = stats.norm.ppf(np.arange(1, MAX_BINS) / MAX_BINS)
    edges = np.unique(np.floor(sigma * qs).astype(np.int64))

    def probs(sd: float) -> FloatArray:
        cdf = stats.norm.cdf((edges + 0.5) / sd)
        return np.diff(np.concatenate([[0.0], cdf, [1.0]]))

    return Bins(edges, probs(sigma)), probs(true_sigma)


@dataclass(frozen=True)
class FitResult:
    """p-values of the null and of each alternative."""

    p_null: float
    p_alts: tuple[float, ...]
    powers: tuple[float, ...]


def check_sampler(
    draw: Callable[[int], npt.ArrayLike],
    n: int,
    null: tuple[IntArray, FloatArray],
    alternatives: Sequence[tuple[IntArray, FloatArray]],
) -> FitResult:
    """Draw n samples; assert they fit `null` and that every alternative is rejected.

    The predicted power of each alternative is asserted before drawing, so an
    inadequate sample size is a test-design error, not a flaky failure.
    """
    powers = tuple(predicted_power(n, null, alt) for alt in alternatives)
    for power in powers:
        assert power >= MIN_POWER, f"sample size {n} too small: predicted power {power:.3g}"
    samples = np.asarray(draw(n))
    assert samples.shape == (n,)
    p_null = chi2_pvalue(samples, make_bins(null[0], null[1], n))
    p_alts = tuple(chi2_pvalue(samples, make_bins(a[0], a[1], n)) for a in alternatives)
    print(f"n={n} p_null={p_null:.3g} p_alts={[f'{p:.3g}' for p in p_alts]}")
    assert p_null >= ALPHA, f"sampler does not fit its pmf: p = {p_null:.3g}"
    for p in p_alts:
        assert p < ALPHA, f"power check failed: 30%-off pmf not rejected (p = {p:.3g})"
    return FitResult(p_null, p_alts, powers)
