"""Accuracy floors: errors that no differentially private mechanism can beat.

Two-point arguments (the seed texts of issue 8): take two neighbouring
datasets whose answers differ by Δ.  For any (ε, δ)-DP mechanism M and the
event A = {outputs closer to the first answer}, P₂(A) ≥ e^{−ε}(P₁(A) − δ),
and balancing the two datasets' expected errors gives

* a bounded value (answers Δ = diam apart):
  max expected |error| ≥ (1 − δ)·diam / (2(1 + e^ε));
* a discrete attribute with m + 1 values pairwise κ apart:
  max expected error ≥ (1 − δ)·κ·m / (m + e^ε),
  which randomized response attains exactly.

A ρ-zCDP release is (ε(δ'), δ')-DP for every δ' (ε(δ') = ρ + 2·sqrt(ρ·ln(1/δ'))),
so its floor is the largest of these bounds over δ'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpframe.mechanisms.core.allocation import zcdp_epsilon

__all__ = [
    "AccuracyFloor",
    "floor_bounded",
    "floor_discrete",
    "floor_zcdp",
]


@dataclass(frozen=True)
class AccuracyFloor:
    """A release's expected error next to the smallest any mechanism with its guarantee can have.

    Attributes:
        expected_error: the release's expected absolute error (noise only).
        floor: no mechanism with the release's privacy guarantee has a smaller
            expected error on every dataset.
        note: which bound and which quantity.
    """

    expected_error: float
    floor: float
    note: str

    def __str__(self) -> str:
        if self.floor > 0:
            ratio = self.expected_error / self.floor
        else:  # a huge ε: both are 0, nothing to gain
            ratio = 1.0 if self.expected_error == 0 else math.inf
        return (
            f"expected |error| {self.expected_error:.4g}; no mechanism with this guarantee "
            f"can beat {self.floor:.4g} on every dataset ({ratio:.3g}x the floor; {self.note})"
        )


def floor_bounded(diameter: float, epsilon: float, delta: float = 0.0) -> float:
    """(1 − δ)·diam/(2(1 + e^ε)): the floor for a value that neighbours can move by ``diameter``."""
    shrink = math.exp(-epsilon)  # e^-ε: no overflow for a huge ε (the floor goes to 0)
    return (1 - delta) * diameter * shrink / (2 * (shrink + 1))


def floor_discrete(m: int, kappa: float, epsilon: float, delta: float = 0.0) -> float:
    """(1 − δ)·κ·m/(m + e^ε): the floor for an attribute with m + 1 values κ apart."""
    shrink = math.exp(-epsilon)  # e^-ε: no overflow for a huge ε
    return (1 - delta) * kappa * m * shrink / (m * shrink + 1)


def floor_zcdp(diameter: float, rho: float) -> float:
    """The bounded-value floor of a ρ-zCDP release: the best over δ' of its (ε(δ'), δ') views."""
    best = 0.0
    for log_delta in np.linspace(-40, math.log(0.999), 400):
        dlt = math.exp(float(log_delta))
        best = max(best, floor_bounded(diameter, zcdp_epsilon(rho, dlt), dlt))
    return best
