"""Private kernel density estimation with Gaussian-process noise (Hall, Rinaldo, Wasserman 2013).

The Gaussian kernel density estimate f(x) = (1/n) Σ_i φ_h(x − X_i), with
φ_h(t) = (2πh²)^{-1/2}·exp(−t²/(2h²)), lies in the reproducing-kernel Hilbert
space H of K(x, y) = exp(−(x − y)²/(2h²)).  Hall, Rinaldo and Wasserman
(2013, "Differential privacy for functions and functional data", JMLR)
release f + c·G, with G a Gaussian process of covariance K: the released
curve is as smooth as the estimate itself.  Their classical calibration is

    c = sqrt(2·log(2/δ))·Δ/ε,   Δ = sqrt(2)/(n·(2πh²)^{1/2})   (ε ≤ 1),

where Δ is the RKHS sensitivity of f when one row is *replaced*.

What dpframe does (neighbours differ by adding or removing a row):

* it releases the unnormalised sum S(x) = Σ_i φ_h(x − X_i), whose RKHS
  sensitivity is exactly ‖φ_h(· − X)‖_H = (2πh²)^{-1/2} per row (times the
  rows per privacy unit), and divides by a noisy count ñ (post-processing);
  so the noise on f is (2πh²)^{-1/2}/ñ per unit of σ, 1/sqrt(2) of the
  replace-one constant above;
* it calibrates through zCDP (the analytic route, valid for every ε): on a
  grid x_1..x_k, the vector S(x) + c·G(x) is the Gaussian mechanism in the
  Mahalanobis norm of K, whose sensitivity ((S − S')ᵀK⁻¹(S − S'))^{1/2} is at
  most the RKHS norm of S − S' (Hall et al. 2013), so c = Δ/sqrt(2ρ)
  gives ρ-zCDP (Bun & Steinke 2016); with ρ from (ε, δ) by
  ρ = (sqrt(ln(1/δ) + ε) − sqrt(ln(1/δ)))² this is (ε, δ)-DP for all ε;
* it samples G exactly: with L the Cholesky factor of K + τI (τ = 10⁻⁶;
  a jitter only adds noise), it releases u = L⁻¹S by the discrete Gaussian
  vector mechanism (ℓ2 sensitivity ≤ Δ, since (K + τI)⁻¹ ≼ K⁻¹) and returns
  L·ũ = S + L·noise, a Gaussian process with covariance c²(K + τI) on the grid
  (plus rounding well below the noise).  The sensitivity is widened by 1%
  to cover floating-point error in L⁻¹.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.errors import InvalidArgumentError
from dpframe.mechanisms.calibration.gaussian_vector import (
    VectorNoise,
    gaussian_vector,
    vector_noise,
)
from dpframe.noise import SecureRandom

__all__ = [
    "JITTER",
    "MAX_GRID",
    "KDENoise",
    "KernelSums",
    "check_bandwidth",
    "classical_multiplier",
    "kde_noise",
    "kernel_sums",
    "release_kernel_sums",
]

JITTER = 1e-6
MAX_GRID = 2048
_SAFETY = 1.01
_CHUNK = 4096


def check_bandwidth(bandwidth: object) -> float:
    """The bandwidth h as a positive finite float, or an error."""
    try:
        h = float(bandwidth)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidArgumentError("bandwidth must be a positive number.") from None
    if not h > 0 or not math.isfinite(h):
        raise InvalidArgumentError(f"bandwidth must be a positive number, got {bandwidth!r}.")
    return h


def kernel_sums(
    values: npt.NDArray[np.float64], grid: npt.NDArray[np.float64], bandwidth: float
) -> npt.NDArray[np.float64]:
    """S(x_j) = Σ_i φ_h(x_j − X_i) on the grid (exact, non-private); NaN values add nothing."""
    present = values[~np.isnan(values)]
    norm = 1.0 / math.sqrt(2 * math.pi * bandwidth**2)
    total = np.zeros(len(grid))
    for start in range(0, len(present), _CHUNK):
        chunk = present[start : start + _CHUNK]
        diff = (grid[:, None] - chunk[None, :]) / bandwidth
        total += np.exp(-0.5 * diff * diff).sum(axis=1)
    return np.asarray(total * norm, dtype=np.float64)


def _cholesky(grid: npt.NDArray[np.float64], bandwidth: float) -> npt.NDArray[np.float64]:
    diff = (grid[:, None] - grid[None, :]) / bandwidth
    kernel = np.exp(-0.5 * diff * diff) + JITTER * np.eye(len(grid))
    return np.asarray(np.linalg.cholesky(kernel), dtype=np.float64)


@dataclass(frozen=True)
class KDENoise:
    """The Gaussian-process noise of one release of kernel sums.

    Attributes:
        sensitivity: the RKHS sensitivity Δ of the kernel sum (with the 1% widening).
        sigma: the process's standard deviation c (in kernel-sum units).
        vector: the discrete Gaussian vector noise on the whitened sums.
    """

    sensitivity: float
    sigma: float
    vector: VectorNoise


def kde_noise(bandwidth: float, rows_per_unit: int, size: int, rho: Fraction) -> KDENoise:
    """The noise for kernel sums on ``size`` grid points under ρ-zCDP (public inputs only)."""
    sens = rows_per_unit / math.sqrt(2 * math.pi * bandwidth**2) * _SAFETY
    vector = vector_noise(sens, size, rho)
    return KDENoise(sens, vector.sigma, vector)


def classical_multiplier(epsilon: float, delta: float) -> float:
    """sqrt(2·log(2/δ))/ε: Hall et al.'s c/Δ for ε ≤ 1 (shown for comparison)."""
    return math.sqrt(2 * math.log(2 / delta)) / epsilon


def release_kernel_sums(
    sums: npt.NDArray[np.float64],
    grid: npt.NDArray[np.float64],
    bandwidth: float,
    rows_per_unit: int,
    rho: Fraction,
    rng: SecureRandom,
) -> tuple[npt.NDArray[np.float64], KDENoise]:
    """Kernel sums on a grid plus Gaussian-process noise of covariance c²·(K + τI).

    Privacy:
        ρ-zCDP for adding or removing one row (a unit of ``rows_per_unit``
        rows): RKHS sensitivity (2πh²)^{-1/2} per row; see the module
        docstring (Hall, Rinaldo, Wasserman 2013; Canonne, Kamath, Steinke 2020).

    Accuracy:
        At every grid point the noise has standard deviation about
        c·sqrt(1 + τ), c = Δ/sqrt(2ρ); neighbouring grid points' errors are
        correlated as the kernel (the curve stays smooth).

    Returns:
        The noisy sums and the noise used.
    """
    from scipy.linalg import solve_triangular  # imported where first needed (import time)

    factor = _cholesky(grid, bandwidth)
    whitened = solve_triangular(factor, sums, lower=True)
    noise = kde_noise(bandwidth, rows_per_unit, len(grid), rho)
    released, _ = gaussian_vector(whitened, noise.sensitivity, rho, rng)
    return factor @ released, noise


@dataclass(frozen=True)
class KernelSums:
    """Kernel sums on a grid of the clamped present values, and their count.

    ``partial`` gives ``(n, S)`` with n the present values and
    S(x_j) = Σ_i φ_h(x_j − clamp(X_i)) (:func:`kernel_sums`).
    """

    points: tuple[float, ...]
    bandwidth: float
    bounds: tuple[float, float]

    def partial(self, columns: Sequence[npt.NDArray[np.float64]]) -> tuple[Any, ...]:
        """``(count, kernel sums)`` of one block."""
        (values,) = columns
        present = values[~np.isnan(values)]
        clamped = np.clip(present, self.bounds[0], self.bounds[1])
        grid = np.asarray(self.points, dtype=np.float64)
        return len(clamped), kernel_sums(clamped, grid, self.bandwidth)
