"""Intervals of least-squares estimates whose error is a known sum of independent noises.

Shared by :mod:`dpframe.mechanisms.tables.consistency` (grouped counts or sums
made to add up to their total) and
:mod:`dpframe.mechanisms.tables.consistent_tables` (cross tables made to agree
with their margins): each estimate's error is ``coef @ noise`` with the noises
released before, independent and of known distribution.

Privacy:
    Post-processing of public noise parameters: free (nothing read).

Accuracy:
    Each interval covers its estimate's truth with probability at least
    ``level`` (see :meth:`ConsistentIntervals.interval`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dpframe.errors import InvalidArgumentError
from dpframe.mechanisms.calibration.additive import NoiseSpec
from dpframe.mechanisms.calibration.noise_sums import half_width

__all__ = ["ConsistentIntervals"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class ConsistentIntervals:
    """Intervals of least-squares cells: their error is ``coef @ noise`` (the module docstring).

    Attributes:
        center: the unclipped estimates x̂.
        coef: (cells, noises) coefficients of each independent noise in each cell's error.
        noises: the noise of each measurement, in ``coef``'s column order.
        nonnegative: the truth is ≥ 0 (counts), so intervals are clipped at 0.
        statistic: ``count`` or ``sum`` (counts show as whole numbers).
    """

    center: FloatArray
    coef: FloatArray
    noises: tuple[NoiseSpec, ...]
    nonnegative: bool
    statistic: str

    def interval(self, level: float) -> tuple[FloatArray, FloatArray]:
        """(low, high) per cell, each covering its cell with probability ≥ ``level``.

        A Chernoff bound on the cell's error ``Σ_j c_j e_j``: for every λ > 0,
        ``P(|Σ c_j e_j| > t) ≤ 2 exp(−λt) Π_j E[exp(λ c_j e_j)]`` (the noises
        are independent and symmetric), with the discrete Laplace's exact
        moment generating function and the discrete Gaussian's sub-Gaussian
        bound ``exp(λ²σ²/2)`` (Canonne, Kamath, Steinke 2020); ``t`` is the
        smallest over λ for which the bound is ``1 − level``.  Each noise's
        rounding adds ``|c_j| · rounding_j``.  Two other valid bounds are
        computed and the smallest is used: a union bound (each term bounded
        except with probability ``α_j``, the ``α_j`` in proportion to the
        terms' weighted scales; exact for a cell whose error is one noise) and,
        for up to :data:`CONVOLVED_TERMS` terms, the exact distribution of the
        sum with every term rounded *up* to a fine grid (``S_up ≥ S``, so
        ``P(S > t) ≤ P(S_up > t)``; tails beyond 10⁻¹⁵ counted as failures).
        """
        if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
            raise InvalidArgumentError("level must be a number strictly between 0 and 1.")
        found: dict[tuple[tuple[float, NoiseSpec], ...], float] = {}
        half = np.zeros(len(self.center))
        for i, row in enumerate(self.coef):
            # cells with the same terms (up to order) share their bound: computed once
            key = tuple(
                sorted(
                    ((abs(float(c)), n) for c, n in zip(row, self.noises, strict=True) if c != 0),
                    key=repr,
                )
            )
            if key not in found:
                found[key] = half_width(row, self.noises, 1 - level)
            half[i] = found[key]
        low, high = self.center - half, self.center + half
        if self.nonnegative:
            low, high = np.maximum(low, 0.0), np.maximum(high, 0.0)
        return low, high
