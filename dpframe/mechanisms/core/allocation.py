"""The noise a mechanism must add, as the accountant allocates it; conversions between units.

A :class:`NoiseAllocation` is the contract between the accountant (which
produces it from a privacy request, :mod:`dpframe.accounting.accountants`) and
the mechanisms (which turn it into a noise plan): discrete Laplace with a
pure-DP ε, or discrete Gaussian with a zCDP ρ, or (``currency="gdp"``) a
Gaussian-DP budget μ written as ρ = μ²/2 (both add under composition).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from dpframe.mechanisms.calibration.gdp_curves import discrete_gaussian_rho, epsilon_of_mu

__all__ = ["NoiseAllocation", "gaussian_rho", "pure_epsilon", "rdp_rho", "zcdp_epsilon"]


@dataclass(frozen=True)
class NoiseAllocation:
    """The noise a mechanism must add: ``laplace`` with ``epsilon`` or ``gaussian`` with ``rho``.

    ``split(weights)`` divides the allocation among the parts of a composite
    query (a mean is a count and a sum); the parts compose back to the whole
    (ε adds under pure DP, ρ adds under zCDP, μ² = 2ρ adds under GDP).

    ``currency`` says what a Gaussian ``parameter`` promises: ``zcdp`` (the
    release must be ρ-zCDP) or ``gdp`` (it must be sqrt(2ρ)-GDP: Gaussian
    noise is calibrated with :func:`gaussian_rho`, which corrects for the
    discrete sampler, and ε-DP parts use :func:`pure_epsilon`).
    ``rdp_rho``: under ``gdp``, a ρ that mechanisms analysed only in Rényi
    DP may use instead (the approx accountant's ρ-zCDP conversion of the
    same (ε, δ); in a GDP session, for a release with a δ of its own, the ρ
    whose conversion at that δ is within the ε that fits μ); None where they
    must refuse (a GDP session's release without a δ of its own).
    """

    kind: Literal["laplace", "gaussian"]
    parameter: Fraction
    currency: Literal["zcdp", "gdp"] = "zcdp"
    rdp_rho: Fraction | None = None

    def split(self, weights: tuple[int, ...]) -> tuple[NoiseAllocation, ...]:
        """Divide the allocation in proportion to positive integer ``weights``."""
        if len(weights) == 1:
            return (self,)  # the whole allocation, exactly (no Fraction arithmetic)
        total = sum(weights)
        return tuple(self.scaled(Fraction(w, total)) for w in weights)

    def scaled(self, share: Fraction) -> NoiseAllocation:
        """The allocation times ``share`` (0 < share ≤ 1), in the same currency."""
        rdp = None if self.rdp_rho is None else self.rdp_rho * share
        return NoiseAllocation(self.kind, self.parameter * share, self.currency, rdp)


def gaussian_rho(allocation: NoiseAllocation) -> Fraction:
    """The ρ to calibrate discrete Gaussian noise with: σ² ≥ Δ²/(2ρ) for integer Δ.

    zCDP: the allocation's ρ (the discrete Gaussian is exactly ρ-zCDP at that
    σ: Canonne, Kamath, Steinke 2020, Thm 4).  GDP: the smaller ρ′ of
    :func:`~dpframe.mechanisms.calibration.gdp_curves.discrete_gaussian_rho`, so that the
    discrete Gaussian (scalar, or per coordinate of a vector with integer
    shifts) is sqrt(2ρ)-GDP for every integer sensitivity.
    """
    if allocation.currency == "gdp":
        return discrete_gaussian_rho(allocation.parameter)
    return allocation.parameter


def rdp_rho(allocation: NoiseAllocation) -> Fraction | None:
    """The ρ a mechanism analysed only in Rényi DP / zCDP may spend; None if it must refuse."""
    if allocation.currency == "gdp":
        return allocation.rdp_rho
    return allocation.parameter


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

    Under ``currency="gdp"`` the factor does not apply: the ε returned is the
    largest with μ(ε) = −2Φ⁻¹(1/(1 + e^ε)) ≤ sqrt(2ρ), since every ε-DP
    mechanism is μ(ε)-GDP (Dong, Roth & Su 2019).
    """
    if allocation.kind == "laplace":
        return allocation.parameter
    if allocation.currency == "gdp":
        return epsilon_of_mu(_sqrt_down(2 * allocation.parameter))
    ratio = allocation.parameter / zcdp_factor
    # sqrt(n/d) = sqrt(n·d)/d: an integer square root gives an exact lower bound
    # (never 0 for ρ > 0, no float underflow, no search loop).
    n, d = ratio.numerator, ratio.denominator
    root = Fraction(math.isqrt(n * d * 4**64), d * 2**64)
    coarse = Fraction(math.floor(root * 2**40), 2**40)  # a small denominator, still <= root
    return coarse if coarse >= Fraction(1, 2**20) else root


def _sqrt_down(value: Fraction) -> Fraction:
    """A rational lower bound on sqrt(value), within 2⁻⁶⁴ relative."""
    n, d = value.numerator, value.denominator
    return Fraction(math.isqrt(n * d * 4**64), d * 2**64)
