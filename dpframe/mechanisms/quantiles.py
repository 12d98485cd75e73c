"""Private quantiles by the exponential mechanism over a public grid of candidate values.

The bounded domain [L, U] is cut into B = 2**12 equal bins; the candidates are
the B + 1 edges.  The utility of edge e for quantile q is −|#{x < e} − q·n|,
scaled to integers by q's denominator.

Privacy:
    Adding or removing one row moves den·#{x < e} − num·n (q = num/den) by
    −num (a row at or above e) or den − num (a row below e), so each utility
    moves by at most Δ = max(num, den − num) in units of 1/den, i.e. by
    max(q, 1 − q) ≤ 1 rank (tight: both moves occur; k times it for a
    privacy unit of k rows).  Selection by permute-and-flip is ε-DP
    (:func:`~dpframe.mechanisms.selection.permute_and_flip`); several
    quantiles split ε evenly (basic composition).  Missing values are not
    counted; ±inf is clamped to the bounds like any value.

Accuracy:
    With probability at least 1 − β, the released edge's rank misses q·n by
    at most (2·max(q, 1 − q)/ε)·ln((B + 1)/β) more than the best candidate
    edge does (ties
    in the data can make every edge miss), and candidates are one bin width
    (U − L)/B apart.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpframe.errors import SchemaError
from dpframe.mechanisms.selection import exponential_utility_bound, permute_and_flip
from dpframe.noise import SecureRandom
from dpframe.plan.releases import QUANTILE_BINS

__all__ = [
    "QUANTILE_BINS",
    "bin_edges",
    "check_quantile",
    "rank_error",
    "select_quantile",
    "utility_sensitivity",
]

#: Resolution of the candidate grid.


def check_quantile(q: object) -> Fraction:
    """Validate a quantile level in [0, 1] and read it exactly (shortest decimal)."""
    if isinstance(q, bool) or not isinstance(q, (int, float, Fraction)):
        raise SchemaError(f"A quantile must be a number in [0, 1], got {q!r}.")
    if isinstance(q, float) and not math.isfinite(q):
        raise SchemaError(f"A quantile must be in [0, 1], got {q!r}.")
    value = Fraction(repr(float(q))) if isinstance(q, float) else Fraction(q)
    if not 0 <= value <= 1:
        raise SchemaError(f"A quantile must be in [0, 1], got {q!r}.")
    return value


def bin_edges(bounds: tuple[float, float]) -> npt.NDArray[np.float64]:
    """The public candidate values: B + 1 equally spaced edges over the bounds."""
    return np.linspace(bounds[0], bounds[1], QUANTILE_BINS + 1)


def select_quantile(
    below: npt.NDArray[np.int64],
    total: int,
    q: Fraction,
    epsilon: Fraction,
    rng: SecureRandom,
    unit_rows: int = 1,
) -> int:
    """Pick a candidate edge index for quantile ``q`` (see the module docstring).

    Args:
        below: #{x < e_j} for each candidate edge e_j (exact, private).
        total: the number of non-missing values (exact, private).
        q: the quantile level.
        epsilon: the privacy parameter of this selection.
        rng: the secure random source.
        unit_rows: the most rows one privacy unit contributes (scales Δ).

    Returns:
        The index of the released edge.
    """
    scaled_target = q.numerator * total
    utilities = -np.abs(below.astype(object) * q.denominator - scaled_target)
    if all(abs(int(u)) < 2**62 for u in (utilities.min(), utilities.max())):
        utilities = utilities.astype(np.int64)
    return permute_and_flip(utilities, epsilon, utility_sensitivity(q) * unit_rows, rng)


def utility_sensitivity(q: Fraction) -> int:
    """How far one row moves a utility, in units of 1/den(q): max(num, den − num) (≥ 1)."""
    return max(q.numerator, q.denominator - q.numerator)


def rank_error(
    epsilon: float, level: float, q: Fraction = Fraction(1), unit_rows: int = 1
) -> float:
    """The rank error not exceeded with probability ``level``.

    (2Δ/ε)·ln((B+1)/(1−level)) with Δ = max(q, 1 − q)·unit_rows ranks (the
    default q gives the worst case over levels, Δ = 1 rank per row).
    """
    sensitivity = float(max(q, 1 - q)) * unit_rows
    return exponential_utility_bound(epsilon, sensitivity, QUANTILE_BINS + 1, 1.0 - level)
