"""The sparse vector technique: which of many counting queries exceed a threshold.

Implements Algorithm 1 of Lyu, Su and Li (2017), "Understanding the Sparse
Vector Technique for Differential Privacy" (PVLDB 10(6)), which is Dwork and
Roth's *Sparse* / *AboveThreshold* with one noisy threshold for the whole run,
and its numeric variant (*NumericSparse*; Dwork and Roth 2014, "The
Algorithmic Foundations of Differential Privacy", Section 3.6).  The cost is
the same however many queries are asked: only the (at most ``max_hits``)
queries reported above the threshold are paid for.

The inputs are the exact counts of a list of row predicates, computed by the
caller.  Each is a counting query: adding or removing one row changes each
count by at most Δ = 1 (and all of them in the same direction).  The noise is
integer (discrete Laplace, exact sampler of Canonne, Kamath and Steinke 2020)
and the comparison ``count + ν ≥ threshold + ρ`` is exact.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.errors import InvalidBudgetError, SchemaError
from dpframe.noise import SecureRandom, coarsen_up, discrete_laplace_array

__all__ = [
    "SparseVectorResult",
    "check_sparse_vector",
    "sparse_vector",
    "sparse_vector_accuracy",
]

#: Counts and thresholds must stay below 2**53 in absolute value (exact as floats).
_MAX_VALUE = 2**53
#: Largest noise scale the int64 samplers accept.
_MAX_SCALE = 2**52
#: Queries compared per noise draw in the first round; the block doubles each round.
_FIRST_BLOCK = 64

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class SparseVectorResult:
    """The release of :func:`sparse_vector`.

    Attributes:
        hits: indices of the queries reported above the threshold, in order.
        answers: numeric variant: the noisy counts of the hits (same order), else None.
        examined: how many queries were compared before stopping (``hits[-1] + 1``
            after ``max_hits`` hits, else all of them); public, since the stopping
            point is part of the output.
        threshold_scale: discrete Laplace scale of the threshold noise ρ.
        query_scale: discrete Laplace scale of the noise ν added to each query.
        answer_scale: numeric variant: scale of the noise on each answer, else None.
    """

    hits: tuple[int, ...]
    answers: tuple[float, ...] | None
    examined: int
    threshold_scale: float
    query_scale: float
    answer_scale: float | None


@dataclass(frozen=True)
class _Scales:
    threshold: Fraction
    query: Fraction
    answer: Fraction | None


@dataclass(frozen=True)
class _Runs:
    """Independent runs of the mechanism: row ``r`` is one run (used for simulation)."""

    hits: BoolArray  # (runs, k): query i reported above the threshold in run r
    examined: IntArray  # (runs,)
    answers: FloatArray | None  # (runs, k): noisy counts of the hits, NaN elsewhere
    scales: _Scales


def _epsilon(epsilon: Any) -> Fraction:
    """Validate ε > 0 (int, Fraction or finite float; floats are converted exactly)."""
    if isinstance(epsilon, bool | np.bool_) or not isinstance(epsilon, numbers.Real):
        raise InvalidBudgetError("epsilon must be a positive number (an int, float or Fraction).")
    if isinstance(epsilon, numbers.Rational):
        value = Fraction(int(epsilon.numerator), int(epsilon.denominator))
    else:
        if not math.isfinite(float(epsilon)):
            raise InvalidBudgetError(f"epsilon must be finite, got {epsilon!r}.")
        value = Fraction(float(epsilon))
    if value <= 0:
        raise InvalidBudgetError(f"epsilon must be > 0, got {epsilon!r}.")
    return value


def _scales(epsilon: Fraction, max_hits: int, numeric: bool) -> _Scales:
    """The noise scales of Lyu et al. Alg. 1 (Δ = 1), each rounded *up* by coarsen_up."""
    share = epsilon / (3 if numeric else 2)  # ε1 = ε2 (= ε3) = ε/2 or ε/3
    query = coarsen_up(2 * max_hits / share)  # 2cΔ/ε2
    if query > _MAX_SCALE:
        raise InvalidBudgetError(
            "The privacy parameter (epsilon, or rho in a zCDP session) is too small for this "
            "max_hits: the query noise scale 2·max_hits/ε2 would exceed 2**52; ask for more "
            "or for fewer hits."
        )
    threshold = coarsen_up(1 / share)  # Δ/ε1
    answer = coarsen_up(max_hits / share) if numeric else None  # cΔ/ε3
    return _Scales(threshold, query, answer)


def check_sparse_vector(epsilon: Any, max_hits: Any, numeric: bool) -> None:
    """Raise, as :func:`sparse_vector` would, for parameters it cannot use (no data needed).

    Called before a release is charged, so unusable parameters charge nothing.
    """
    _scales(_epsilon(epsilon), _check_max_hits(max_hits), numeric)


def _check_max_hits(max_hits: Any) -> int:
    if isinstance(max_hits, bool | np.bool_) or not isinstance(max_hits, numbers.Integral):
        raise SchemaError("max_hits must be an integer >= 1 (the number of hits to report).")
    if int(max_hits) < 1:
        raise SchemaError(f"max_hits must be >= 1, got {max_hits!r}.")
    return int(max_hits)


def _check_threshold(threshold: Any) -> int:
    """Validate the public threshold T and return ceil(T) (``z ≥ T`` iff ``z ≥ ceil(T)``)."""
    if isinstance(threshold, bool | np.bool_) or not isinstance(threshold, numbers.Real):
        raise SchemaError("threshold must be a real number.")
    value = float(threshold)
    if not math.isfinite(value):
        raise SchemaError(f"threshold must be finite, got {threshold!r}.")
    if abs(value) >= _MAX_VALUE:
        raise SchemaError("threshold must be below 2**53 in absolute value.")
    if isinstance(threshold, numbers.Integral):
        return int(threshold)
    return math.ceil(value)


def _check_counts(counts: Any) -> IntArray:
    arr = np.asarray(counts)
    if arr.ndim != 1:
        raise SchemaError("counts must be a 1-D array with one exact count per query.")
    if arr.size == 0:
        raise SchemaError("the query list is empty: pass at least one count.")
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise SchemaError(f"counts must have an integer dtype, got {arr.dtype}.")
    # No value from the (private) counts appears in the message.
    if int(arr.max()) >= _MAX_VALUE or int(arr.min()) <= -_MAX_VALUE:
        raise SchemaError("counts must be below 2**53 in absolute value.")
    return arr.astype(np.int64)


def _sparse_vector_runs(
    counts: npt.NDArray[np.integer[Any]],
    threshold: float,
    epsilon: Fraction | float,
    max_hits: int,
    rng: SecureRandom,
    runs: int,
    *,
    numeric: bool = False,
) -> _Runs:
    """``runs`` independent executions of :func:`sparse_vector` at once (vectorized).

    :func:`sparse_vector` is this function with ``runs = 1``.  More runs are
    for simulations (on public or synthetic counts) and for the statistical
    tests; every run draws its own noise, exactly as separate calls would.
    Queries are compared in blocks (64, 128, 256, ... at a time) for the runs
    that have not stopped yet; noise drawn past a run's stopping point is
    discarded unused.
    """
    c = _check_max_hits(max_hits)
    ceil_t = _check_threshold(threshold)
    exact = _check_counts(counts)
    scales = _scales(_epsilon(epsilon), c, numeric)
    k = exact.size
    gaps = ceil_t - exact  # query i is above iff ν_i − ρ ≥ ceil(T) − count_i
    rho = discrete_laplace_array(scales.threshold, runs, rng)  # one threshold per run
    hits = np.zeros((runs, k), dtype=np.bool_)
    found = np.zeros(runs, dtype=np.int64)
    examined = np.full(runs, k, dtype=np.int64)
    active = np.arange(runs)
    start, width = 0, _FIRST_BLOCK
    while active.size and start < k:
        stop = min(k, start + width)
        nu = discrete_laplace_array(scales.query, active.size * (stop - start), rng)
        above = nu.reshape(active.size, stop - start) - rho[active, None] >= gaps[None, start:stop]
        total = found[active, None] + np.cumsum(above, axis=1)
        above &= total <= c  # nothing after the c-th hit is examined
        hits[active, start:stop] = above
        done = total[:, -1] >= c
        examined[active[done]] = start + np.argmax(total[done] >= c, axis=1) + 1
        found[active] = np.minimum(total[:, -1], c)
        active = active[~done]
        start, width = stop, 2 * width
    answers = None
    if scales.answer is not None:
        rows, cols = np.nonzero(hits)
        fresh = discrete_laplace_array(scales.answer, rows.size, rng)  # one draw per hit
        answers = np.full((runs, k), np.nan)
        answers[rows, cols] = (exact[cols] + fresh).astype(np.float64)
    return _Runs(hits, examined, answers, scales)


def sparse_vector(
    counts: npt.NDArray[np.integer[Any]],
    threshold: float,
    epsilon: Fraction | float,
    max_hits: int,
    rng: SecureRandom,
    *,
    numeric: bool = False,
) -> SparseVectorResult:
    """Report which counting queries are above a threshold, stopping after ``max_hits`` hits.

    Lyu, Su and Li (2017), Algorithm 1, with c = ``max_hits`` and Δ = 1:
    draw ρ ~ DLap(Δ/ε1) once; for each query i in order, draw a fresh
    ν_i ~ DLap(2cΔ/ε2) and report i as a hit when ``count_i + ν_i ≥ T + ρ``;
    stop after c hits.  The numeric variant (NumericSparse) also releases
    ``count_i + DLap(cΔ/ε3)`` for each hit, with fresh noise.

    Budget split: ε1 = ε2 = ε/2 (threshold scale 2/ε, query scale 4c/ε); numeric
    variant: ε1 = ε2 = ε3 = ε/3 (threshold 3/ε, query 6c/ε, answers 3c/ε).  Each
    scale is rounded up to 21 significant bits (``coarsen_up``; at most a factor
    1 + 2⁻²⁰ more noise).

    Privacy:
        ε-DP under adding or removing one row, for any number of queries and
        any real threshold (Lyu et al. 2017, the proof for Alg. 1; Dwork and
        Roth 2014, AboveThreshold and Sparse): for an output with hits H, shift
        ρ by Δ and ν_i by 2Δ for i in H (|H| ≤ c); the comparisons of the
        neighbour then have the same outcome, and the pmf ratio is at most
        e^(Δ/b_ρ) · e^(c·2Δ/b_ν) = e^(ε1 + ε2).  The shifts are integers, so
        the argument holds for the discrete Laplace (its pmf ratio under a
        shift s is e^(|s|/b)).  The answers of the numeric variant are c
        Laplace releases of sensitivity Δ, ε3/c each, so ε3 in total
        (sequential composition).  Hence ε-DP, and ε²/2-zCDP (Bun and Steinke
        2016, Prop. 1.4).  The threshold, the number
        of queries and ``max_hits`` are public.

    Accuracy:
        For k queries and 0 < β < 1, with probability ≥ 1 − β every hit has
        true count ≥ T − α and every query examined but not reported has true
        count < T + α, where α = 2·b_ν·(ln k + ln(4c/β)) with b_ν the query
        scale: α = 8c(ln k + ln(4c/β))/ε (numeric: 12c(...)/ε); see
        :func:`sparse_vector_accuracy`.  Derivation (the union bound Dwork and
        Roth 2014 use for AboveThreshold and Sparse): if |ρ| ≤ α/2 and
        |ν_i| ≤ α/2 for every i, both claims follow from the comparison.  The
        discrete Laplace has P(|Y| > t) = 2a^(⌊t⌋+1)/(1+a) ≤ 2e^(−t/b)
        (a = e^(−1/b)), so
        k·2e^(−α/(2b_ν)) = β/(2c) ≤ β/2 for the queries and
        2e^(−α/(2b_ρ)) ≤ 2(β/(4ck))^(b_ν/b_ρ) ≤ β/2 for the threshold
        (b_ν ≥ b_ρ).  (The continuous-Laplace form with ln(2c/β) uses
        P(|Y| > t) ≤ e^(−t/b), which the discrete Laplace does not satisfy
        between integers, hence 4c.)  Numeric variant: with probability ≥ 1 − β
        every answer is within b_a·ln(2c/β) of its true count (b_a = 3c/ε).

    Args:
        counts: exact counts of the queries (1-D, integer dtype), in the order to examine.
        threshold: the public threshold T (a finite real number).
        epsilon: the privacy parameter ε > 0 (Fraction or int for exactness;
            a float is converted exactly).
        max_hits: c ≥ 1, the number of hits after which the mechanism stops.
        rng: the secure random source.
        numeric: also release a noisy count for each hit (NumericSparse).

    Returns:
        A :class:`SparseVectorResult`.

    Raises:
        InvalidBudgetError: ε not a positive finite number (or too small for ``max_hits``).
        SchemaError: empty or non-integer ``counts``, threshold NaN/inf, ``max_hits`` < 1.

    Example:
        >>> from fractions import Fraction
        >>> from dpframe.noise import SecureRandom
        >>> out = sparse_vector(np.array([3, 250, 7, 400]), 100.0, Fraction(1), 1,
        ...                     SecureRandom())
        >>> out.hits  # doctest: +SKIP
        (1,)
    """
    run = _sparse_vector_runs(counts, threshold, epsilon, max_hits, rng, 1, numeric=numeric)
    hits = tuple(int(i) for i in np.flatnonzero(run.hits[0]))
    answers = None
    if run.answers is not None:
        answers = tuple(float(run.answers[0, i]) for i in hits)
    scales = run.scales
    return SparseVectorResult(
        hits=hits,
        answers=answers,
        examined=int(run.examined[0]),
        threshold_scale=float(scales.threshold),
        query_scale=float(scales.query),
        answer_scale=None if scales.answer is None else float(scales.answer),
    )


def sparse_vector_accuracy(
    num_queries: int,
    epsilon: Fraction | float,
    max_hits: int,
    beta: float,
    *,
    numeric: bool = False,
) -> float:
    """The α of the accuracy statement of :func:`sparse_vector` (public inputs only, free).

    With probability ≥ 1 − β, every hit has true count ≥ T − α and every
    examined non-hit has true count < T + α, for
    α = 2·b_ν·(ln k + ln(4c/β)), b_ν the query noise scale actually used
    (4c/ε, or 6c/ε for the numeric variant, rounded up by at most 2⁻²⁰).

    Args:
        num_queries: k ≥ 1, the number of queries.
        epsilon: ε > 0.
        max_hits: c ≥ 1.
        beta: failure probability, 0 < β < 1.
        numeric: the numeric variant (ε split in thirds).

    Returns:
        α, in counts.
    """
    c = _check_max_hits(max_hits)
    k: Any = num_queries
    if isinstance(k, bool | np.bool_) or not isinstance(k, numbers.Integral):
        raise SchemaError("num_queries must be an integer >= 1.")
    if int(k) < 1:
        raise SchemaError("the query list is empty: num_queries must be >= 1.")
    b: Any = beta
    if isinstance(b, bool | np.bool_) or not isinstance(b, numbers.Real) or not 0 < float(b) < 1:
        raise SchemaError(f"beta must lie in (0, 1), got {beta!r}.")
    scales = _scales(_epsilon(epsilon), c, numeric)
    return 2.0 * float(scales.query) * (math.log(int(k)) + math.log(4 * c / beta))
