"""Timing: the work of drawing noise does not depend on the noise drawn.

Wall-clock timings are not tested here (they are measured by
``python -m tests.audit.timing_probe`` and recorded in docs/audit.md).  These
tests check a deterministic proxy instead: the number of random bytes the
sampler reads, which tracks its loop counts.  For single draws (the scalar
releases whose timing an observer could tie to one noise value), the bytes
read must be independent of |noise|: the Spearman correlation over 3,000
draws must stay below the α = 1e-7 critical value, and the same test must
reject the loop-until-done sampler (the fixed-work block switched off).  The
fixed-work path must still draw the exact distribution (chi-square at α = 1e-7,
rejecting a scale 30% off).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpframe.noise import SecureRandom, discrete_gaussian_array, discrete_laplace_array
from dpframe.noise import _kernels as kern
from tests.stats_helpers import ALPHA, chi2_pvalue, dgauss_pmf, dlaplace_pmf

DRAWS = 3000
#: |Spearman r| beyond this has probability below ALPHA under independence (r·sqrt(n-1) ≈ N(0, 1)).
CRITICAL = stats.norm.isf(ALPHA / 2) / np.sqrt(DRAWS - 1)


class CountingSource:
    """os.urandom that counts the bytes it hands out."""

    def __init__(self) -> None:
        self.read = 0

    def __call__(self, n: int) -> bytes:
        import os

        self.read += n
        return os.urandom(n)


Draw = Callable[[SecureRandom], np.ndarray]
SAMPLERS: dict[str, Draw] = {
    "laplace_scale_3": lambda rng: discrete_laplace_array(Fraction(3), 1, rng),
    "laplace_scale_1000": lambda rng: discrete_laplace_array(Fraction(1000), 1, rng),
    "gaussian_sigma2_9": lambda rng: discrete_gaussian_array(Fraction(9), 1, rng),
}


def _correlation(draw: Draw) -> float:
    source = CountingSource()
    rng = SecureRandom(source)
    work, size = [], []
    for _ in range(DRAWS):
        before = source.read
        size.append(abs(int(draw(rng)[0])))
        work.append(source.read - before)
    return float(stats.spearmanr(work, size).statistic)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_work_of_a_single_draw_does_not_track_its_magnitude(name: str) -> None:
    assert abs(_correlation(SAMPLERS[name])) < CRITICAL


@pytest.mark.parametrize("name", ["laplace_scale_3", "laplace_scale_1000"])
def test_the_loop_until_done_sampler_is_caught(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Power: with the fixed-work block switched off, the work follows |noise|."""
    monkeypatch.setattr(kern, "FIXED_WORK_MAX_SIZE", 0)
    assert _correlation(SAMPLERS[name]) > CRITICAL


def _batches(draw: Callable[[int], np.ndarray], total: int) -> np.ndarray:
    size = kern.FIXED_WORK_MAX_SIZE
    return np.concatenate([draw(size) for _ in range(total // size)])


def test_fixed_work_laplace_has_the_exact_distribution() -> None:
    rng = SecureRandom()
    samples = _batches(lambda n: discrete_laplace_array(Fraction(3), n, rng), 40 * 1024)
    assert chi2_pvalue(samples, dlaplace_pmf(3.0)) > ALPHA
    assert chi2_pvalue(samples, dlaplace_pmf(3.0 * 1.3)) < ALPHA
    assert chi2_pvalue(samples, dlaplace_pmf(3.0 * 0.7)) < ALPHA


def test_fixed_work_gaussian_has_the_exact_distribution() -> None:
    rng = SecureRandom()
    samples = _batches(lambda n: discrete_gaussian_array(Fraction(9), n, rng), 40 * 1024)
    assert chi2_pvalue(samples, dgauss_pmf(9.0)) > ALPHA
    assert chi2_pvalue(samples, dgauss_pmf(9.0 * 1.69)) < ALPHA  # sigma 30% off
    assert chi2_pvalue(samples, dgauss_pmf(9.0 * 0.49)) < ALPHA
