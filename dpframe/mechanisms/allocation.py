"""The noise a mechanism must add, as the accountant allocates it; conversions between units.

A :class:`NoiseAllocation` is the contract between the accountant (which
produces it from a privacy request, :mod:`dpframe.accounting.accountants`) and
the mechanisms (which turn it into a noise plan): discrete Laplace with a
pure-DP ε, or discrete Gaussian with a zCDP ρ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

__all__ = ["NoiseAllocation", "pure_epsilon", "zcdp_epsilon"]


@dataclass(frozen=True)
class NoiseAllocation:
    """The noise a mechanism must add: ``laplace`` with ``epsilon`` or ``gaussian`` with ``rho``.

    ``split(weights)`` divides the allocation among the parts of a composite
    query (a mean is a count and a sum); the parts compose back to the whole
    (ε adds under pure DP, ρ adds under zCDP).
    """

    kind: Literal["laplace", "gaussian"]
    parameter: Fraction

    def split(self, weights: tuple[int, ...]) -> tuple[NoiseAllocation, ...]:
        """Divide the allocation in proportion to positive integer ``weights``."""
        if len(weights) == 1:
            return (self,)  # the whole allocation, exactly (no Fraction arithmetic)
        total = sum(weights)
        return tuple(NoiseAllocation(self.kind, self.parameter * w / total) for w in weights)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε such that ρ-zCDP implies (ε, δ)-DP.

    ε = ρ + 2·sqrt(ρ·ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3).
    """
    if rho <= 0:
        return 0.0
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def pure_epsilon(allocation: NoiseAllocation, zcdp_factor: Fraction) -> Fraction:
    """The ε a pure-DP mechanism may use within ``allocation``.

    A Laplace allocation is already a pure ε.  A Gaussian (ρ) allocation admits
    any ε-DP mechanism that is c·ε²-zCDP with c·ε² ≤ ρ: c = 1/2 holds for every
    ε-DP mechanism (Bun & Steinke 2016, Prop. 1.4); dpframe uses it for all
    selection mechanisms.  The square root is rounded down to a rational
    (a multiple of 2⁻⁴⁰ unless it is below 2⁻²⁰), so c·ε² ≤ ρ holds exactly.
    """
    if allocation.kind == "laplace":
        return allocation.parameter
    ratio = allocation.parameter / zcdp_factor
    # sqrt(n/d) = sqrt(n·d)/d: an integer square root gives an exact lower bound
    # (never 0 for ρ > 0, no float underflow, no search loop).
    n, d = ratio.numerator, ratio.denominator
    root = Fraction(math.isqrt(n * d * 4**64), d * 2**64)
    coarse = Fraction(math.floor(root * 2**40), 2**40)  # a small denominator, still <= root
    return coarse if coarse >= Fraction(1, 2**20) else root
