"""Additive noise on a public grid: the discrete Laplace and discrete Gaussian mechanisms.

Both mechanisms release integer-valued sums (counts, or clamped values
quantized to a public power-of-two quantum) with integer noise, on a public
power-of-two grid chosen from the noise scale only.  Every output is an
integer times a public power of two, so it is an exact float and its
low-order bits carry nothing about the input (Mironov 2012, "On significance
of the least significant bits for differential privacy").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpframe.errors import InvalidArgumentError, InvalidBudgetError
from dpframe.mechanisms.calibration.gdp_curves import discrete_gaussian_rho
from dpframe.mechanisms.calibration.recorded import current
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.noise import (
    SecureRandom,
    coarsen_up,
    discrete_gaussian_abs_quantile,
    discrete_gaussian_array,
    discrete_gaussian_variance,
    discrete_laplace_abs_quantile,
    discrete_laplace_array,
    discrete_laplace_variance,
)

__all__ = ["GRID_BITS", "NoiseSpec", "exact_int64", "noise_for", "release_integer_sums"]

#: The grid is the largest power of two at most ``min(scale, sensitivity) / 2**GRID_BITS``,
#: so rounding to it widens the sensitivity (and the noise) by at most one part in 1024.
GRID_BITS = 10
_MAX_SCALE = 2**52  # the samplers' limit (int64 outputs)


def exact_int64(values: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """Exact totals in quanta as int64: integer totals as they are, float ones rounded.

    A backend returns float64 totals while they are within 2^53 (exact there)
    and int64 beyond (the Dask backend past 2^53); going through float64 would
    round the latter.
    """
    integers = values if np.issubdtype(values.dtype, np.integer) else np.rint(values)
    out: npt.NDArray[np.int64] = integers.astype(np.int64)
    return out


@dataclass(frozen=True)
class NoiseSpec:
    """The noise that was actually added, in public terms.

    Attributes:
        kind: ``laplace`` (P(k) ∝ exp(−|k|/parameter)) or ``gaussian``
            (P(k) ∝ exp(−k²/(2·parameter))), over integers k in grid units.
        parameter: the discrete Laplace scale, or the discrete Gaussian σ², in grid units.
        grid: the value of one grid unit (a power of two).
        rounding: the largest change rounding the exact answer to the grid
            can make (half a grid unit, or 0 when no rounding is needed).
    """

    kind: Literal["laplace", "gaussian"]
    parameter: Fraction
    grid: float
    rounding: float = 0.0

    @property
    def scale(self) -> float:
        """The Laplace scale b, or the Gaussian σ, in value units."""
        if self.kind == "laplace":
            return float(self.parameter) * self.grid
        return math.sqrt(float(self.parameter)) * self.grid

    @property
    def std(self) -> float:
        """Standard deviation of the noise in value units."""
        if self.kind == "laplace":
            variance = discrete_laplace_variance(float(self.parameter))
        else:
            variance = discrete_gaussian_variance(float(self.parameter))
        return math.sqrt(variance) * self.grid

    def abs_quantile(self, level: float) -> float:
        """The smallest a on the grid with P(|noise| <= a) >= level, in value units.

        Add :attr:`rounding` for an interval around the exact (unrounded) answer.
        """
        if self.kind == "laplace":
            units = discrete_laplace_abs_quantile(float(self.parameter), level)
        else:
            units = discrete_gaussian_abs_quantile(float(self.parameter), level)
        return units * self.grid

    @property
    def name(self) -> str:
        """Human-readable mechanism name."""
        return "discrete Laplace" if self.kind == "laplace" else "discrete Gaussian"


def _grid_quanta(scale_quanta: float, sensitivity: int) -> int:
    """The grid in quanta: a power of two ≥ 1, about min(scale, Δ) / 2**GRID_BITS."""
    reference = min(scale_quanta, float(sensitivity))
    if reference < 2 ** (GRID_BITS + 1):
        return 1
    return 1 << (math.floor(math.log2(reference)) - GRID_BITS)


_TOO_SMALL = (
    "The privacy parameter is so small that the noise would exceed 2**52 grid units; "
    "ask for a larger epsilon (or rho)."
)


def noise_for(
    sensitivity: int, quantum: float, allocation: NoiseAllocation, spread: int = 1
) -> tuple[int, int, NoiseSpec]:
    """The grid (in quanta), the sensitivity in grid units, and the noise, from public inputs only.

    Used both to release and to explain a query before it runs.

    ``spread`` is the most cells one neighbour's change can reach: 1 for a
    scalar or for one row; min(k, cells) for a privacy unit of k rows in a
    grouped release.  Each cell is rounded to the grid on its own, so each
    reached cell can move by one more grid unit than its exact change: the
    integer change over all cells is at most ⌊Δ/g⌋ + spread units (L1, hence
    also L2), which is the sensitivity the noise is calibrated to.
    """
    if isinstance(spread, bool) or not isinstance(spread, int) or spread < 1:
        raise InvalidArgumentError("spread must be an integer >= 1.")
    sensitivity = max(int(sensitivity), 1)
    # GDP currency: the grid is chosen from the allocation's ρ (public), and the
    # noise from the ρ′ that keeps the *discrete* Gaussian at the widened Δ_u
    # within μ = sqrt(2ρ) (discrete_gaussian_rho at Δ_u, below).
    gdp = allocation.kind == "gaussian" and allocation.currency == "gdp"
    rho = allocation.parameter  # zCDP: the discrete Gaussian is exactly ρ-zCDP (CKS 2020)
    if rho <= 0:
        raise InvalidBudgetError(_TOO_SMALL)
    try:
        if allocation.kind == "laplace":
            scale_quanta = sensitivity / float(allocation.parameter)
        else:
            scale_quanta = sensitivity / math.sqrt(2.0 * float(rho))
    except OverflowError:  # a parameter beyond float range (say ε = 10**400): no noise
        scale_quanta = 0.0
    except ZeroDivisionError:  # a parameter below float range (say ε = 10**-400)
        raise InvalidBudgetError(_TOO_SMALL) from None
    grid_q = _grid_quanta(scale_quanta, sensitivity)
    sensitivity_units = sensitivity if grid_q == 1 else sensitivity // grid_q + spread
    if allocation.kind == "laplace":
        parameter = coarsen_up(Fraction(sensitivity_units) / allocation.parameter)
    else:
        if gdp:
            rho = discrete_gaussian_rho(allocation.parameter, sensitivity_units)
            if rho <= 0:
                raise InvalidBudgetError(_TOO_SMALL)
        parameter = coarsen_up(Fraction(sensitivity_units**2) / (2 * rho))
    too_wide = parameter > _MAX_SCALE if allocation.kind == "laplace" else parameter > _MAX_SCALE**2
    if too_wide:
        raise InvalidBudgetError(_TOO_SMALL)
    grid = float(grid_q) * quantum
    rounding = 0.0 if grid_q == 1 else grid / 2
    noted = current()
    if noted is not None:  # a release is recording its calibrations for the ledger
        noted.append(
            {
                "kind": allocation.kind,
                "allocation": str(allocation.parameter),
                "currency": allocation.currency,
                "sensitivity": sensitivity,
                "quantum": quantum,
                "spread": spread,
                "parameter": str(parameter),
                "grid": grid,
            }
        )
    return grid_q, sensitivity_units, NoiseSpec(allocation.kind, parameter, grid, rounding)


def release_integer_sums(
    exact: npt.NDArray[np.float64] | npt.NDArray[np.int64],
    sensitivity: int,
    quantum: float,
    allocation: NoiseAllocation,
    rng: SecureRandom,
    planned: tuple[int, int, NoiseSpec] | None = None,
    spread: int = 1,
) -> tuple[npt.NDArray[np.float64], NoiseSpec]:
    """Add discrete Laplace or discrete Gaussian noise to integer-valued sums.

    Each cell of ``exact`` holds an integer (in units of ``quantum``) whose
    value on neighbouring datasets differs by at most ``sensitivity``; cells
    are disjoint groups, so one row changes one cell (parallel composition).

    Privacy:
        The exact sums are rounded to a public grid of ``g`` quanta (a power
        of two chosen from the noise scale), which widens the sensitivity to
        Δ_u = floor(Δ/g) + 1 grid units (Δ_u = Δ when g = 1).  Laplace: noise
        from the discrete Laplace distribution with scale t ≥ Δ_u/ε gives ε-DP
        (Canonne, Kamath, Steinke 2020, Thm 7 / the geometric mechanism of
        Ghosh, Roughgarden, Sundararajan 2009).  Gaussian: the discrete
        Gaussian with σ² ≥ Δ_u²/(2ρ) gives ρ-zCDP (CKS 2020, Thm 4); under a
        GDP allocation (``currency="gdp"``) ρ is first lowered to ρ′ =
        ``discrete_gaussian_rho(ρ, Δ_u)`` so that the discrete Gaussian at
        the integer Δ_u is sqrt(2ρ)-GDP (docs/proofs/gdp_accounting.md).  The
        scale is rounded *up* to a 21-bit rational (never less noise).
        Multiplying by the public grid value is post-processing.

    Accuracy:
        Each cell's error is the rounding (at most half a grid unit) plus the
        noise, whose scale is at most (1 + 2⁻¹⁰)·Δ/ε (or σ ≤ (1 + 2⁻¹⁰)·Δ/sqrt(2ρ)):
        variance 2·a/(1−a)² with a = exp(−1/t) for Laplace
        (≈ 2t²), and at most σ² for the Gaussian, times the grid squared;
        ``NoiseSpec.abs_quantile`` gives exact two-sided intervals.

    Args:
        exact: integer-valued sums, one per cell (float64 below 2**53, or int64).
        sensitivity: Δ in quanta (a positive integer).
        quantum: the value of one unit of ``exact`` (a power of two).
        allocation: the noise and its privacy parameter (ε or ρ).
        rng: the secure random source.
        planned: ``noise_for(sensitivity, quantum, allocation, spread)`` when the
            caller already computed it (before the charge); computed here otherwise.
        spread: the most cells one neighbour reaches (see :func:`noise_for`).

    Returns:
        The noisy values (exact floats on the public grid) and the noise used.
    """
    grid_q, _, spec = planned or noise_for(sensitivity, quantum, allocation, spread)
    if grid_q == 1:
        units = exact.astype(np.int64)
    elif exact.dtype == np.int64:  # exact integer rounding to the grid (half up)
        units = np.floor_divide(exact + grid_q // 2, grid_q)
    else:
        units = np.rint(exact / grid_q).astype(np.int64)
    if spec.kind == "laplace":
        noise = discrete_laplace_array(spec.parameter, len(units), rng)
    else:
        noise = discrete_gaussian_array(spec.parameter, len(units), rng)
    values = (units + noise).astype(np.float64) * spec.grid
    return values, spec
