"""Private partition selection: release the keys (groups) found in the data, with noisy counts.

When the keys of a group-by are not declared in advance, the set of keys
present in the data is itself private: one row can create a key that no other
row has.  The mechanism adds discrete Laplace noise to the count of every key
present and releases only the keys whose noisy count reaches a threshold τ
chosen so that a key with a single row is shown with probability at most δ.

References: A. Korolova, K. Kenthapadi, N. Mishra, A. Ntoulas (2009),
"Releasing search queries and clicks privately" (WWW); S. Gopi, P. Gulhane,
J. Kulkarni, J. Shen, M. Shokouhi, S. Yekhanin (2020), "Differentially private
set union" (ICML); D. Desfontaines, J. Voss, B. Gipson, C. Mandayam (2022),
"Differentially private partition selection" (PoPETs).  The noise is the exact
discrete Laplace sampler of Canonne, Kamath and Steinke (2020).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from dpframe.errors import InvalidBudgetError, SchemaError
from dpframe.noise import SecureRandom, coarsen_up, discrete_laplace_array

__all__ = [
    "PartitionSelection",
    "check_partition_parameters",
    "release_probability",
    "select_partitions",
    "selection_threshold",
]

#: Counts must stay below 2**53 (exact as floats, and far from int64 overflow).
_MAX_COUNT = 2**53
#: Largest noise scale the int64 samplers accept.
_MAX_SCALE = 2**52
#: Relative safety margin on δ when comparing floating-point tail probabilities:
#: the computed tail is accurate to ~1e-13, so P(1 + Y ≥ τ) ≤ δ holds rigorously.
_SAFETY = 1e-9

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PartitionSelection:
    """The release of :func:`select_partitions`.

    Attributes:
        kept: indices (into the input) of the released keys, increasing (input order).
        noisy_counts: the noisy counts of the kept keys (float64, integer-valued).
        threshold: τ, the integer a noisy count must reach to be released.
        scale: the discrete Laplace scale of the noise (1/ε, rounded up).
    """

    kept: npt.NDArray[np.int64]
    noisy_counts: FloatArray
    threshold: int
    scale: float


def _exact(value: Any, name: str) -> Fraction:
    """A real number as an exact Fraction (floats converted exactly), or raise."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise InvalidBudgetError(f"{name} must be a number (an int, float or Fraction).")
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    if not math.isfinite(float(value)):
        raise InvalidBudgetError(f"{name} must be finite, got {value!r}.")
    return Fraction(float(value))


def check_partition_parameters(epsilon: Any, delta: Any) -> None:
    """Raise, as :func:`select_partitions` would, for unusable (ε, δ) (no data needed).

    Called before a release is charged, so unusable parameters charge nothing.
    """
    _parameters(epsilon, delta)


def _parameters(epsilon: Any, delta: Any) -> tuple[Fraction, float]:
    """Validate (ε, δ); return the noise scale (1/ε rounded up) and δ as a float."""
    eps = _exact(epsilon, "epsilon")
    if eps <= 0:
        raise InvalidBudgetError(f"epsilon must be > 0, got {epsilon!r}.")
    dlt = _exact(delta, "delta")
    if dlt == 0:
        raise InvalidBudgetError(
            "partition selection needs delta > 0: a key held by a single row would "
            "otherwise have to be hidden with certainty.  Pass a small delta (e.g. 1e-6), "
            "or declare the keys with categories= to count them under pure DP."
        )
    if not 0 < dlt < 1:
        raise InvalidBudgetError(f"delta must lie in (0, 1), got {delta!r}.")
    scale = coarsen_up(1 / eps)
    if scale > _MAX_SCALE:
        raise InvalidBudgetError(
            "The privacy parameter (epsilon, or rho in a zCDP session) is too small: the noise "
            "scale 1/epsilon exceeds 2**52."
        )
    return scale, float(dlt)


def _tail(scale: float, m: npt.ArrayLike) -> FloatArray:
    """P(Y ≥ m) for Y ~ DLap(scale), integer m: a^m/(1+a) for m ≥ 1, else 1 − a^(1−m)/(1+a).

    From the normalised pmf (1−a)/(1+a)·a^|k| (a = e^(−1/scale)):
    Σ_{k≥m} (1−a)/(1+a)·a^k = a^m/(1+a) for m ≥ 1, and by symmetry
    P(Y ≥ m) = 1 − P(Y ≥ 1−m) for m ≤ 0.
    """
    mm = np.asarray(m, dtype=np.float64)
    one_plus_a = 1.0 + math.exp(-1.0 / scale)
    upper = np.exp(-np.maximum(mm, 1.0) / scale) / one_plus_a
    lower = 1.0 - np.exp(-np.maximum(1.0 - mm, 1.0) / scale) / one_plus_a
    return np.where(mm >= 1, upper, lower)


def _threshold(scale: Fraction, delta: float) -> int:
    """Smallest integer τ with P(1 + Y ≥ τ) = P(Y ≥ τ − 1) ≤ δ, Y ~ DLap(scale)."""
    s = float(scale)
    target = delta * (1.0 - _SAFETY)

    def fits(m: int) -> bool:
        return float(_tail(s, m)) <= target

    # First guess from a^m/(1+a) = δ, then exact adjustment on the integer grid.
    m = max(1, math.ceil(s * (math.log(1.0 / delta) - math.log1p(math.exp(-1.0 / s)))))
    while not fits(m):
        m += 1
    while fits(m - 1):
        m -= 1
    return m + 1


def selection_threshold(epsilon: Fraction | float, delta: Fraction | float) -> int:
    """The threshold τ :func:`select_partitions` uses for (ε, δ) (public, free).

    τ is the smallest integer with P(1 + Y ≥ τ) ≤ δ for Y ~ DLap(1/ε):
    about 1 + ln(1/δ)/ε.

    Args:
        epsilon: ε > 0.
        delta: 0 < δ < 1.

    Returns:
        τ.
    """
    scale, dlt = _parameters(epsilon, delta)
    return _threshold(scale, dlt)


def select_partitions(
    counts: npt.NDArray[np.integer[Any]],
    epsilon: Fraction | float,
    delta: Fraction | float,
    rng: SecureRandom,
) -> PartitionSelection:
    """Release the keys whose noisy count reaches a threshold, with their noisy counts.

    Each count gets independent discrete Laplace noise Y of scale 1/ε; key i is
    kept when ``counts[i] + Y_i ≥ τ``, τ the smallest integer with
    P(1 + Y ≥ τ) ≤ δ (:func:`selection_threshold`; P(Y ≥ m) = a^m/(1+a) for
    m ≥ 1, a = e^(−ε)), so τ ≈ 1 + ln(1/δ)/ε.

    Privacy:
        (ε, δ)-DP under adding or removing one row, when each row belongs to
        exactly one key.  If the row's key is present in both datasets, one
        count changes by 1 and the others not at all: the noisy counts of the
        present keys are ε-DP (discrete Laplace mechanism, sensitivity 1,
        disjoint keys; Canonne, Kamath and Steinke 2020), and thresholding is
        post-processing.  Otherwise the row creates a key of count 1 present in
        only one dataset D; it is shown with probability p = P(1 + Y ≥ τ) ≤ δ,
        and when hidden, the output has exactly the distribution it has on the
        neighbour D', so P[M(D) ∈ S] ≤ P[M(D') ∈ S] + δ and
        P[M(D') ∈ S] ≤ P[M(D) ∈ S] + δ.  This is the argument of Korolova et
        al. (2009) and Desfontaines et al. (2022); it also gives
        δ-approximate ε²/2-zCDP.  The scale is rounded *up* (never less noise)
        and τ is computed for the scale actually used, with a relative safety
        margin of 1e-9 on δ against floating-point error.

        The caller must count every key present, translate ``kept`` back to key
        values, and publish them in an order that depends only on the released
        keys (e.g. sorted): positions in the input depend on which other keys
        exist, so they must never be shown.

    Accuracy:
        Each released count is the true count plus DLap(1/ε) noise (variance
        2a/(1−a)² ≈ 2/ε²).  A key with true count n is released with probability
        :func:`release_probability`: at most δ for n = 1, 1/2 or more for
        n ≥ τ, and at least 1 − β once n ≥ τ − 1 + ln(1/β)/ε (about
        (ln(1/δ) + ln(1/β))/ε), since P(Y < −j) = a^(j+1)/(1+a) ≤ e^(−(j+1)ε).
        Kept counts are biased upwards near τ (selection): only counts well
        above τ are unbiased in practice.

    Args:
        counts: exact counts, one per key present in the data (1-D, integer dtype, ≥ 0).
        epsilon: ε > 0 (Fraction or int for exactness; floats are converted exactly).
        delta: 0 < δ < 1; δ = 0 is refused.
        rng: the secure random source.

    Returns:
        A :class:`PartitionSelection`.

    Raises:
        InvalidBudgetError: ε ≤ 0, δ = 0, or δ outside (0, 1).
        SchemaError: counts not a 1-D array of non-negative integers.

    Example:
        >>> from fractions import Fraction
        >>> from dpframe.noise import SecureRandom
        >>> out = select_partitions(np.array([1, 5000, 2, 800]), Fraction(1),
        ...                         Fraction(1, 10**6), SecureRandom())
        >>> out.kept.tolist(), out.threshold
        ([1, 3], 15)
    """
    scale, dlt = _parameters(epsilon, delta)
    arr = np.asarray(counts)
    if arr.ndim != 1:
        raise SchemaError("counts must be a 1-D array with one count per key.")
    if arr.size and (arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer)):
        raise SchemaError(f"counts must have an integer dtype, got {arr.dtype}.")
    # No value of the (private) counts appears in these messages.
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= _MAX_COUNT):
        raise SchemaError("counts must be non-negative integers below 2**53.")
    tau = _threshold(scale, dlt)
    noisy = arr.astype(np.int64) + discrete_laplace_array(scale, arr.size, rng)
    kept = np.flatnonzero(noisy >= tau).astype(np.int64)
    return PartitionSelection(kept, noisy[kept].astype(np.float64), tau, float(scale))


@overload
def release_probability(true_count: int, epsilon: float, delta: float) -> float: ...
@overload
def release_probability(
    true_count: npt.NDArray[np.integer[Any]], epsilon: float, delta: float
) -> FloatArray: ...
def release_probability(
    true_count: int | npt.NDArray[np.integer[Any]], epsilon: float, delta: float
) -> float | FloatArray:
    """P(a key is released | its true count) under :func:`select_partitions` (public, free).

    P(n + Y ≥ τ) = P(Y ≥ τ − n) for Y ~ DLap(1/ε) and the τ of
    :func:`selection_threshold`, with the same rounded-up scale as the
    mechanism.  Increasing in n; at most δ for n = 1; tends to 1.

    Args:
        true_count: a count or an integer array of counts.
        epsilon: ε > 0.
        delta: 0 < δ < 1.

    Returns:
        A float for a scalar count, else a float64 array of the same shape.
    """
    scale, dlt = _parameters(epsilon, delta)
    arr = np.asarray(true_count)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise SchemaError("true_count must be an integer or an integer array.")
    tau = _threshold(scale, dlt)
    probs = _tail(float(scale), tau - arr.astype(np.float64))
    if arr.ndim == 0:
        return float(probs)
    return probs
