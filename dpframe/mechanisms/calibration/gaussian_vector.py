"""The Gaussian mechanism for a real vector, with exact discrete Gaussian noise on a grid.

Used by the kernel density estimate and the regressions: a vector with
bounded ℓ2 sensitivity is rounded to a public power-of-two grid and gets
independent discrete Gaussian noise per coordinate (the multivariate discrete
Gaussian of Canonne, Kamath, Steinke 2020), so every released coordinate is
an exact float on the grid and no floating-point sampler is involved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpframe.errors import InvalidBudgetError, QueryFailedError
from dpframe.noise import SecureRandom, coarsen_up, discrete_gaussian_array

__all__ = ["GRID_BITS", "VectorNoise", "gaussian_vector", "vector_noise"]

#: Rounding to the grid adds at most 2**-GRID_BITS to the ℓ2 sensitivity.
GRID_BITS = 10
_MAX_UNITS = 2**52


@dataclass(frozen=True)
class VectorNoise:
    """The noise of one vector release, in public terms.

    Attributes:
        grid: the grid (a power of two) of the released coordinates.
        sigma2_units: the discrete Gaussian variance parameter, in grid units².
        sensitivity_units: the ℓ2 sensitivity after rounding, in grid units.
    """

    grid: float
    sigma2_units: Fraction
    sensitivity_units: int

    @property
    def sigma(self) -> float:
        """The noise σ per coordinate in value units (the variance is at most σ²)."""
        return math.sqrt(float(self.sigma2_units)) * self.grid


def vector_noise(sensitivity: float, size: int, rho: Fraction) -> VectorNoise:
    """The grid and noise for a vector of ``size`` coordinates with ℓ2 ``sensitivity`` under ρ-zCDP.

    Raises:
        InvalidBudgetError: if the noise would exceed the sampler's range.
    """
    if not sensitivity > 0 or not math.isfinite(sensitivity) or size < 1:
        raise InvalidBudgetError("A vector release needs a positive sensitivity and size.")
    if rho <= 0:
        raise InvalidBudgetError("rho must be > 0.")
    grid = 2.0 ** math.floor(math.log2(sensitivity / (math.sqrt(size) * 2**GRID_BITS)))
    sens_units = math.ceil((sensitivity / grid + math.sqrt(size)) * (1 + 1e-12))
    sigma2 = coarsen_up(Fraction(sens_units * sens_units) / (2 * rho))
    if sigma2 > Fraction(_MAX_UNITS) ** 2:
        raise InvalidBudgetError(
            "The privacy parameter is so small that the noise would exceed the sampler's "
            "range; ask for a larger epsilon."
        )
    return VectorNoise(grid, sigma2, sens_units)


def gaussian_vector(
    values: npt.NDArray[np.float64], sensitivity: float, rho: Fraction, rng: SecureRandom
) -> tuple[npt.NDArray[np.float64], VectorNoise]:
    """Release a real vector with ℓ2 sensitivity ``sensitivity`` under ρ-zCDP.

    Privacy:
        The vector is rounded to the grid g (a power of two at most
        Δ/(sqrt(k)·2¹⁰) for k coordinates), which moves the ℓ2 sensitivity to
        at most Δ/g + sqrt(k) grid units; independent discrete Gaussian noise
        with σ² ≥ (Δ/g + sqrt(k))²/(2ρ) per coordinate is then ρ-zCDP
        (Canonne, Kamath, Steinke 2020: the multivariate discrete Gaussian,
        whose Rényi divergence at integer shifts is at most α‖shift‖²/(2σ²)).

    Accuracy:
        Each coordinate's error is the rounding (≤ g/2) plus noise of
        standard deviation at most σ ≈ (1 + 2⁻¹⁰)·Δ/sqrt(2ρ).

    Args:
        values: the exact vector.
        sensitivity: its ℓ2 sensitivity Δ.
        rho: the zCDP parameter ρ.
        rng: the secure random source.

    Returns:
        The noisy vector (on the grid) and the noise used.
    """
    spec = vector_noise(sensitivity, len(values), rho)
    scaled = values / spec.grid
    if not np.all(np.isfinite(scaled)) or np.abs(scaled).max(initial=0) > _MAX_UNITS:
        raise QueryFailedError(
            "The exact vector is too large for the noise grid; its charge stands. "
            "Use narrower bounds or a larger bandwidth."
        )
    units = np.rint(scaled).astype(np.int64)
    noise = discrete_gaussian_array(spec.sigma2_units, len(units), rng)
    return (units + noise).astype(np.float64) * spec.grid, spec
