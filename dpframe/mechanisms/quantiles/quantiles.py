"""Private quantiles by the exponential mechanism over public candidate values.

By default the bounded domain [L, U] is cut into B = 2**12 equal bins and the
candidates are the B + 1 edges; ``candidates=`` gives others (sorted, within
the bounds, at most :data:`MAX_CANDIDATES`), and a column declared
``"integer"`` uses the integers within the bounds (:func:`integer_candidates`).
The utility of candidate c for quantile q is minus the distance from q·n to
[#{x < c}, #{x ≤ c}] (values clamped to the bounds), scaled to integers by
q's denominator: 0 for a candidate that is a q-quantile of the data, even
when many values equal it (an integer column's median).  On the default grid
values equal to a grid point count as above it, and at c = U every value
counts as below.

Privacy:
    Adding or removing one row moves den·#{x < c} − num·n (q = num/den) by
    −num or den − num, and num·n − den·#{x ≤ c} by num or num − den, so each
    of the terms of the utility −max(·, ·, 0), hence the utility, moves by at
    most Δ = max(num, den − num) in units of 1/den, i.e. by max(q, 1 − q) ≤ 1
    rank (tight: both moves occur; k times it for a privacy unit of k rows).
    Selection by permute-and-flip is ε-DP
    (:func:`~dpframe.mechanisms.selection.selection.permute_and_flip`); several
    quantiles split ε evenly (basic composition).  Missing values are not
    counted; ±inf is clamped to the bounds like any value.

Accuracy:
    With probability at least 1 − β, the released candidate's rank misses q·n by
    at most (2·max(q, 1 − q)/ε)·ln(C/β) more than the best candidate does,
    for C candidates (C = B + 1 = 4,097 by default; ties in the data can make
    every candidate miss), and default candidates are one bin width
    (U − L)/B apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.errors import SchemaError
from dpframe.mechanisms.selection.selection import exponential_utility_bound, permute_and_flip
from dpframe.noise import SecureRandom
from dpframe.plan.releases import MAX_CANDIDATES, QUANTILE_BINS

__all__ = [
    "MAX_CANDIDATES",
    "QUANTILE_BINS",
    "CandidateBins",
    "below_candidates",
    "bin_edges",
    "candidate_bins",
    "candidate_values",
    "check_quantile",
    "integer_candidates",
    "quantile_utilities",
    "rank_error",
    "select_quantile",
    "utility_sensitivity",
]

IntArray = npt.NDArray[np.int64]


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
    """The default public candidate values: B + 1 equally spaced edges over the bounds."""
    return np.linspace(bounds[0], bounds[1], QUANTILE_BINS + 1)


def candidate_values(
    bounds: tuple[float, float], candidates: tuple[float, ...] = ()
) -> npt.NDArray[np.float64]:
    """The public candidates: ``candidates``, or the default grid (one value when L = U)."""
    if candidates:
        return np.asarray(candidates, dtype=np.float64)
    if bounds[0] == bounds[1]:
        return np.array([float(bounds[0])])
    return bin_edges(bounds)


def integer_candidates(bounds: tuple[float, float]) -> tuple[float, ...]:
    """The candidates of a column declared integer: whole numbers only (public: the bounds).

    The integers in [L, U] when at most :data:`MAX_CANDIDATES` fit; else
    :data:`MAX_CANDIDATES` integers equally spaced over them (rounded grid
    points, more than one apart so all distinct); ``()`` (the default grid)
    when no integer lies within the bounds.
    """
    low, high = math.ceil(bounds[0]), math.floor(bounds[1])
    if high < low:
        return ()
    if high - low + 1 <= MAX_CANDIDATES:
        return tuple(float(v) for v in range(low, high + 1))
    grid = np.round(np.linspace(float(low), float(high), MAX_CANDIDATES))
    return tuple(float(v) for v in np.unique(grid))


@dataclass(frozen=True)
class CandidateBins:
    """The bins whose counts give, per candidate c, #{x < c} and #{x ≤ c}.

    Attributes:
        edges: the bin edges (strictly increasing; the last bin is closed).
        below: per candidate, the number of bins before c's (their counts sum to #{x < c}).
        upto: per candidate, the number of bins up to c's equality bin (#{x ≤ c});
            equal to ``below`` for the default grid, which has no equality bins.
    """

    edges: npt.NDArray[np.float64]
    below: npt.NDArray[np.intp]
    upto: npt.NDArray[np.intp]

    @property
    def bins(self) -> int:
        """The number of bins."""
        return len(self.edges) - 1


def candidate_bins(
    candidates: npt.NDArray[np.float64], bounds: tuple[float, float], ties: bool
) -> CandidateBins:
    """Bin edges for the candidates' counts (values are clamped into the bounds).

    Without ``ties`` (the default grid) the edges are the candidates, with the
    lower bound before them and the upper bound after them when they are not
    candidates themselves.  With ``ties`` (explicit candidates: given, or
    integers) every candidate c also gets an equality bin [c, next float
    after c), so values equal to c are told apart from values above it.
    Needs two candidates, or one candidate with distinct bounds.
    """
    low, high = float(bounds[0]), float(bounds[1])
    before = candidates[0] > low
    if not ties:
        edges = candidates
        if before:
            edges = np.concatenate(([low], edges))
        if candidates[-1] < high:
            edges = np.concatenate((edges, [high]))
        positions = np.arange(len(candidates), dtype=np.intp) + int(before)
        return CandidateBins(edges, positions, positions)
    after = np.nextafter(candidates, np.inf)
    listed: list[float] = [low] if before else []
    below: list[int] = []
    for c, c_up, nxt in zip(candidates, after, [*candidates[1:], np.inf], strict=True):
        below.append(len(listed))
        listed.append(float(c))
        if c_up < nxt:
            listed.append(float(c_up))
    last_up = float(after[-1])
    if candidates[-1] < high:  # a bin for the values above the last candidate
        listed.append(high if last_up < high else float(np.nextafter(high, np.inf)))
    edges = np.asarray(listed, dtype=np.float64)
    positions = np.asarray(below, dtype=np.intp)
    return CandidateBins(edges, positions, positions + 1)


def below_candidates(
    counts: npt.NDArray[np.float64], bins: CandidateBins
) -> tuple[IntArray, IntArray, IntArray]:
    """#{x < c} and #{x ≤ c} per candidate and the number of values, per row of ``counts``.

    ``counts`` has one row per group and one column per bin of
    :func:`candidate_bins` (exact integers).  Without equality bins
    #{x ≤ c} is taken as #{x < c}, and at the top bound every value counts
    as below (the default grid's convention).
    """
    rows = np.asarray(counts).reshape(-1, np.shape(counts)[-1]).astype(np.int64)
    cumulative = np.zeros((rows.shape[0], rows.shape[1] + 1), dtype=np.int64)
    np.cumsum(rows, axis=1, out=cumulative[:, 1:])
    positions = bins.below
    if positions.size and np.array_equal(positions, np.arange(positions[0], positions[-1] + 1)):
        below = cumulative[:, positions[0] : positions[-1] + 1]  # a view: no copy
    else:
        below = cumulative[:, positions]
    upto = below if bins.upto is bins.below else cumulative[:, bins.upto]
    return below, upto, cumulative[:, -1].copy()


def quantile_utilities(
    below: IntArray, upto: IntArray, totals: IntArray, q: Fraction
) -> npt.NDArray[Any]:
    """−(distance from q·n to [#{x < c}, #{x ≤ c}]) per candidate c, in units of 1/den(q).

    That is −max(den·#{x < c} − num·n, num·n − den·#{x ≤ c}, 0): 0 for every
    candidate that is a q-quantile of the data, −|den·#{x < c} − num·n| when
    no value equals c.  Rows are groups; int64, or Python ints if large.
    """
    low, high = np.atleast_2d(below), np.atleast_2d(upto)
    n = np.asarray(totals).reshape(-1, 1)
    num, den = q.numerator, q.denominator
    small = den < 2**31 and num < 2**31  # |terms| < 2**31 · 2**31: int64
    if high is low and small:  # no equality bins: −|den·#{x < c} − num·n|, in place
        utilities: npt.NDArray[Any] = low * np.int64(den)
        utilities -= n * np.int64(num)
        np.abs(utilities, out=utilities)
        np.negative(utilities, out=utilities)
        return utilities
    if small:
        target = n * np.int64(num)
        over = low * np.int64(den) - target
        under = target - high * np.int64(den)
    else:
        target = n.astype(object) * num
        over = low.astype(object) * den - target
        under = target - high.astype(object) * den
    return np.asarray(-np.maximum(np.maximum(over, under), 0))


def select_quantile(
    below: npt.NDArray[np.int64],
    total: int,
    q: Fraction,
    epsilon: Fraction,
    rng: SecureRandom,
    unit_rows: int = 1,
    upto: npt.NDArray[np.int64] | None = None,
) -> int:
    """Pick a candidate index for quantile ``q`` (see the module docstring).

    Args:
        below: #{x < c_j} for each candidate c_j (exact, private).
        total: the number of non-missing values (exact, private).
        q: the quantile level.
        epsilon: the privacy parameter of this selection.
        rng: the secure random source.
        unit_rows: the most rows one privacy unit contributes (scales Δ).
        upto: #{x ≤ c_j} for each candidate (default: ``below``, no ties at candidates).

    Returns:
        The index of the released candidate.
    """
    high = below if upto is None else upto
    utilities = quantile_utilities(below, high, np.array([total], dtype=np.int64), q)[0]
    return permute_and_flip(utilities, epsilon, utility_sensitivity(q) * unit_rows, rng)


def utility_sensitivity(q: Fraction) -> int:
    """How far one row moves a utility, in units of 1/den(q): max(num, den − num) (≥ 1)."""
    return max(q.numerator, q.denominator - q.numerator)


def rank_error(
    epsilon: float,
    level: float,
    q: Fraction = Fraction(1),
    unit_rows: int = 1,
    candidates: int = QUANTILE_BINS + 1,
) -> float:
    """The rank error not exceeded with probability ``level``.

    (2Δ/ε)·ln(C/(1−level)) with Δ = max(q, 1 − q)·unit_rows ranks for C
    candidates (the default q gives the worst case over levels, Δ = 1 rank
    per row; the default C is the 4,097-point grid).
    """
    sensitivity = float(max(q, 1 - q)) * unit_rows
    return exponential_utility_bound(epsilon, sensitivity, candidates, 1.0 - level)
