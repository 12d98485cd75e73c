"""Sanitized copies by input perturbation: randomized response and the Laplace copy.

Each row's value is perturbed on its own (local differential privacy), so the
perturbed column can be released as an ordinary table.  This module holds the
per-row randomizers and the unbiased frequency estimator; the session glue
(:mod:`dpframe.mechanisms.copies.copy_family`) hides the number of rows and charges the budget.

Source: the seed texts of issue 8 (randomized response with m + 1 categories,
p ≥ (1 − δ)/(m + e^ε); the Laplace copy with b = diam/(ε − ln(1 − δ))); Warner
1965 and Kairouz, Oh, Viswanath 2016 for k-ary randomized response; Dwork,
McSherry, Nissim, Smith 2006 for the Laplace mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpframe.errors import InvalidBudgetError, SchemaError
from dpframe.noise import SecureRandom, coarsen_up, discrete_laplace_array

__all__ = [
    "RR_DENOMINATOR_BITS",
    "LaplaceCopySpec",
    "RandomizedResponseSpec",
    "laplace_copy_scale",
    "laplace_copy_spec",
    "laplace_perturb",
    "randomized_response",
    "rr_estimate",
    "rr_probabilities",
    "rr_spec",
]

#: Probabilities of randomized response are multiples of 2**-RR_DENOMINATOR_BITS.
RR_DENOMINATOR_BITS = 48
#: The Laplace copy's values are multiples of a power of two about diam / 2**COPY_GRID_BITS.
COPY_GRID_BITS = 20


def _check(epsilon: float, delta: float) -> tuple[float, float]:
    eps, dlt = float(epsilon), float(delta)
    if not eps > 0 or not math.isfinite(eps):
        raise InvalidBudgetError(f"epsilon must be a positive finite number, got {epsilon!r}.")
    if not 0 <= dlt < 1:
        raise InvalidBudgetError(f"delta must be in [0, 1), got {delta!r}.")
    return eps, dlt


def rr_probabilities(epsilon: float, delta: float, m: int) -> tuple[float, float]:
    """(keep, other): P(report the true value) and P(report one given other category).

    With m + 1 categories, p = (1 − δ)/(m + e^ε) and keep = 1 − m·p; for
    δ = 0 this is k-ary randomized response (keep = e^ε/(m + e^ε)), and for
    two categories keep = e^ε/(1 + e^ε).
    """
    eps, dlt = _check(epsilon, delta)
    if m < 1:
        raise SchemaError("Randomized response needs at least two declared categories.")
    if eps > _EXP_LIMIT:  # e^ε overflows a float: (1 − δ)·e^−ε / (1 + m·e^−ε), maybe 0.0
        tail = math.exp(-eps)
        other = (1 - dlt) * tail / (1 + m * tail)
    else:
        other = (1 - dlt) / (m + math.exp(eps))
    return 1 - m * other, other


#: Above this ε, e^ε is computed as 1/e^−ε (math.exp overflows past about 709.78).
_EXP_LIMIT = 700.0


@dataclass(frozen=True)
class RandomizedResponseSpec:
    """The randomizer actually used: probabilities are exact multiples of 1/denominator.

    Attributes:
        categories: number of categories, m + 1.
        other_units: P(each other category) = other_units / denominator.
        denominator: a power of two.
        epsilon: the ε each row enjoys.
        delta: the δ each row enjoys.
    """

    categories: int
    other_units: int
    denominator: int
    epsilon: float
    delta: float

    @property
    def other(self) -> float:
        """P(report a given other category)."""
        return self.other_units / self.denominator

    @property
    def keep(self) -> float:
        """P(report the true category)."""
        return 1 - (self.categories - 1) * self.other


def rr_spec(epsilon: float, delta: float, categories: int) -> RandomizedResponseSpec:
    """The exact randomizer for ``categories`` = m + 1 values: p rounded *up* to 2**-48.

    Rounding p up moves the output towards uniform, so the ratio between any
    two inputs' output probabilities only shrinks (never less private).
    """
    m = int(categories) - 1
    _, other = rr_probabilities(epsilon, delta, m)
    denominator = 1 << RR_DENOMINATOR_BITS
    # At least one unit: the true p is never 0 (a p that underflowed rounds up to 2**-48).
    units = max(1, math.ceil(other * denominator * (1 + 1e-12)))
    units = min(units, denominator // (m + 1))  # never beyond uniform
    return RandomizedResponseSpec(m + 1, units, denominator, float(epsilon), float(delta))


def randomized_response(
    codes: npt.NDArray[np.int64], spec: RandomizedResponseSpec, rng: SecureRandom
) -> npt.NDArray[np.int64]:
    """Perturb category codes (0..m) one row at a time; a code of −1 reports a uniform category.

    Privacy:
        (ε, δ)-local DP per row (Warner 1965; the δ form of the seed text):
        the output is the true value with probability 1 − m·p and each other
        value with probability p ≥ (1 − δ)/(m + e^ε), so for every output o and
        inputs x, x', P(o | x) ≤ e^ε·P(o | x') + δ.  With δ > 0 the randomizer
        is the mixture (1 − δ)·RR_ε + δ·(report the truth).  A row whose value
        is missing or not declared (code −1) reports a uniform category, the
        average of RR over all inputs, which is as close to every RR output.

    Accuracy:
        Each report is correct with probability keep = 1 − m·p; counts are
        debiased by :func:`rr_estimate` (variance per category about
        n·p(1 − p)/(keep − p)² when most rows hold other values).

    Args:
        codes: the true categories (0..m), or −1 for missing/undeclared.
        spec: the randomizer (:func:`rr_spec`).
        rng: the secure random source.

    Returns:
        The reported codes (0..m), one per row.
    """
    size = len(codes)
    cats = spec.categories
    m = cats - 1
    keep_units = spec.denominator - m * spec.other_units
    draw = rng.uniform_below(spec.denominator, size)
    kept = draw < keep_units
    # Among the other m categories, each has exactly other_units of the draws.
    j = np.where(kept, 0, (draw - keep_units) // max(spec.other_units, 1))
    codes64 = codes.astype(np.int64)
    shifted = np.where(j >= codes64, j + 1, j)
    out = np.where(kept, codes64, shifted)
    missing = codes64 < 0
    if missing.any():
        out[missing] = rng.uniform_below(cats, int(missing.sum()))
    return out.astype(np.int64)


def rr_estimate(
    reported: npt.NDArray[np.int64], categories: int, keep: float, other: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Unbiased counts per category from randomized-response reports, and their std.

    With N reports, count_c = #(reports of c): E[count_c] = n_c·keep + (N − n_c)·p,
    so n̂_c = (count_c − N·p)/(keep − p) is unbiased for n_c (rows that report a
    uniform category — missing values, padding — count 1/(m + 1) towards each).
    Var(n̂_c) = (n_c·keep(1−keep) + (N − n_c)·p(1−p))/(keep − p)², estimated by
    plugging in n̂_c clipped to [0, N].  Post-processing: free.

    Args:
        reported: the reported codes (0..m).
        categories: m + 1.
        keep: P(report the true category).
        other: P(report one given other category).

    Returns:
        (estimates, standard deviations), one per category.
    """
    total = len(reported)
    counts = np.bincount(reported, minlength=categories).astype(np.float64)
    gap = keep - other
    if gap <= 0:
        raise SchemaError(
            "These reports are uniform (epsilon too small): nothing can be estimated."
        )
    estimate = (counts - total * other) / gap
    plug = np.clip(estimate, 0, total)
    var = (plug * keep * (1 - keep) + (total - plug) * other * (1 - other)) / gap**2
    return estimate, np.sqrt(var)


def laplace_copy_scale(diameter: float, epsilon: float, delta: float) -> float:
    """B = diam/(ε − ln(1 − δ)), the Laplace scale of the seed text's copy."""
    eps, dlt = _check(epsilon, delta)
    return float(diameter) / (eps - math.log1p(-dlt))


@dataclass(frozen=True)
class LaplaceCopySpec:
    """The noise actually added to each value of a Laplace copy.

    Attributes:
        grid: the public power-of-two grid of the values.
        sensitivity_units: the width of the clamped range in grid units (plus one for rounding).
        scale_units: the discrete Laplace scale in grid units.
        epsilon: the ε the copy was asked for.
        delta: the δ the copy was asked for.
    """

    grid: float
    sensitivity_units: int
    scale_units: Fraction
    epsilon: float
    delta: float

    @property
    def scale(self) -> float:
        """The Laplace scale b in value units."""
        return float(self.scale_units) * self.grid

    @property
    def std(self) -> float:
        """The standard deviation of the noise in value units (about sqrt(2)·b)."""
        a = math.exp(-1 / float(self.scale_units))
        return math.sqrt(2 * a) / (1 - a) * self.grid


def laplace_copy_spec(low: float, high: float, epsilon: float, delta: float) -> LaplaceCopySpec:
    """The grid and discrete Laplace scale for a copy of values clamped to [low, high]."""
    diameter = float(high) - float(low)
    if not diameter > 0:
        raise SchemaError("A Laplace copy needs bounds with low < high.")
    eps_prime = float(epsilon) - math.log1p(-float(delta))
    _check(epsilon, delta)
    grid = 2.0 ** (math.floor(math.log2(diameter)) - COPY_GRID_BITS)
    sens = math.floor(diameter / grid) + 1
    scale = coarsen_up(Fraction(sens) / Fraction(eps_prime))
    return LaplaceCopySpec(grid, sens, scale, float(epsilon), float(delta))


def laplace_perturb(
    values: npt.NDArray[np.float64],
    low: float,
    high: float,
    spec: LaplaceCopySpec,
    rng: SecureRandom,
) -> npt.NDArray[np.float64]:
    """Each value clamped to [low, high] plus Laplace noise, on a public power-of-two grid.

    Privacy:
        (ε, δ)-local DP per row.  Clamped values are rounded to the grid g
        (about diam·2⁻²⁰), so two inputs differ by at most Δ_u = floor(diam/g) + 1
        grid units, and discrete Laplace noise (Canonne, Kamath, Steinke 2020)
        of scale t ≥ Δ_u/ε' with ε' = ε − ln(1 − δ) makes each report ε'-DP.
        Any ε'-DP mechanism is (ε, δ)-DP for δ = 1 − e^{ε − ε'} (its hockey-stick
        divergence is at most (e^{ε'} − e^ε)/(1 + e^{ε'}) ≤ 1 − e^{ε−ε'}),
        which is the seed text's b = diam/(ε − ln(1 − δ)).  Sampling the
        discrete Laplace on a fine grid stands in for the continuous Laplace
        (whose floating-point samples leak through their low bits; Mironov 2012).
        Missing values are replaced by the midpoint before the noise.

    Accuracy:
        Unbiased for the clamped value up to rounding (≤ g/2); noise scale
        b·(1 + 2⁻²⁰), standard deviation about sqrt(2)·b.
    """
    mid = (low + high) / 2
    clean = np.where(np.isnan(values), mid, np.clip(values, low, high))
    units = np.rint(clean / spec.grid).astype(np.int64)
    noise = discrete_laplace_array(spec.scale_units, len(units), rng)
    return (units + noise).astype(np.float64) * spec.grid
