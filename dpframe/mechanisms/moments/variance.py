"""The variance (and standard deviation) of clamped values around a centre chosen privately.

The midpoint estimator Q/N − (S/N)², with Q = Σ(x − c)², S = Σ(x − c), c the
midpoint of the bounds [L, U] and the budget split three ways, pays for the
far side of the bounds three times: its error is about
(Δ_Q + 2|m − c|·Δ_S + |v − (m − c)²|·Δ_N)·3/(ε·n) (linearised; m the mean,
v the variance), and on data near one bound (incomes in [0, 5000] with a
mean of 600) the middle term dominates.  Here, as for the mean
(:mod:`dpframe.mechanisms.moments.mean`), the count is released first with a small
share, then:

* **adaptive path** (the noisy count is at least
  :data:`~dpframe.mechanisms.moments.mean.ADAPT_AT_STDS` noise standard deviations):
  a midpoint-centred sum, also with a small share, gives a rough mean ĉ
  (snapped to the sum's quantum q); then Σ(x − ĉ) with a small share and
  Σ(x − ĉ)² with most of the budget.  The variance is R/N − (S₂/N)², in
  which the count's and the sum's noise are multiplied by about v/n and
  2|m − ĉ|/n, both small: the error is about max(U − ĉ, ĉ − L)²/(0.7·ε·n),
  the sensitivity of the one quantity that matters, Σ((x − m)² − v)
  (see docs/proofs/adaptive_mean.md, "Variance").
* **fallback path** (small or empty data): a second count, the midpoint sum
  and the midpoint sum of squares share the rest, as the midpoint estimator.

Privacy:
    Neighbouring datasets differ by adding or removing one row (or a privacy
    unit's up to k rows: every sensitivity is scaled by k).  Every release is
    of an exact integer function of the backend's exact measures: the
    non-null count n (sensitivity 1), T = Σ rint((clip(x) − c)/q)
    (sensitivity K, the largest |term|), Q = Σ rint((clip(x) − c)²/q₂) (the
    midpoint squares), and on the adaptive path, for the integer j computed
    from released values only (ĉ = c + j·q), T − j·n (sensitivity K + |j|) and
    R = 2^s·Q − 2j·T + j²·n in units of q² (2^s = q₂/q², exact in Python
    integers), whose per-row term differs from (v − j)² (v = (clip(x) − c)/q)
    by at most 2^(s−1) + |j|, so its sensitivity is
    max((v_max − j)², (v_min − j)²) + 2^(s−1) + |j| (computed exactly in
    rationals, :func:`squares_sensitivity`).  The noise of each is calibrated
    to that sensitivity after j is known (rounded *up* to one of a few levels
    when cells are many).  Shares: 1 : 1 : 4 : 14 (count, first sum, sum
    around ĉ, squares around ĉ) or 3 : 19 : 19 : 19 (count, second count,
    midpoint sum, midpoint squares); either path spends the whole allocation
    (adaptive sequential composition; the path and j are post-processing of
    earlier releases), so the release is ε-DP (or ρ-zCDP) for the
    allocation.  Cells compose in parallel as for the mean.

Accuracy:
    On the adaptive path the error is about max(U − ĉ, ĉ − L)²·√2/(0.7·ε·n)
    (Laplace) plus a bias of order (noise of S₂/n)² (second order, below the
    noise); for the bundled CPS wages (bounds 0–5,000, n = 28,155) the RMSE
    over 200 releases is 0.69 (ε = 0.1) and 0.80 (ε = 1) times the midpoint
    estimator's, 0.78–0.80 for the variance by region.  The squares'
    sensitivity grows as ĉ leaves the midpoint (up to 4·((U − L)/2)²), so
    the gain is largest for data in the middle of their bounds.  The mean
    this release implies (ĉ + S₂/N, what ``describe()`` shows) has only 4/20
    of the budget: on the CPS wages its RMSE is 2.2–2.5 times the midpoint
    estimator's (use ``mean()`` for an accurate mean).  The fallback path's
    error is about 5% above the midpoint estimator's.  ``ci()`` is
    conservative: Bonferroni over the count, the final sum and the final
    sum of squares, pushed through the formula by interval arithmetic (per
    group, with the widest noise any cell used).

Example:
    >>> pf["wage"].var(epsilon=0.5)  # doctest: +SKIP
    >>> pf.groupby("region")["wage"].std(epsilon=0.5)  # doctest: +SKIP

Reference: the centre chosen as for the mean (docs/proofs/adaptive_mean.md);
the discrete Laplace and Gaussian mechanisms of Canonne, Kamath and Steinke
(2020); the rough-then-refine idea of Biswas, Dong, Kamath and Ullman,
"CoinPress" (NeurIPS 2020).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpframe.backends.base import MAX_ROWS
from dpframe.mechanisms.calibration.additive import (
    NoiseSpec,
    exact_int64,
    noise_for,
    release_integer_sums,
)
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.moments.mean import ADAPT_AT_STDS, count_paths, sensitivity_levels
from dpframe.noise import SecureRandom
from dpframe.plan.measures import Measure

__all__ = [
    "ADAPTIVE_WEIGHTS",
    "FALLBACK_WEIGHTS",
    "SquaresGeometry",
    "VarianceRelease",
    "fallback_weights",
    "release_variance",
    "squares_geometry",
    "squares_sensitivity",
    "variance_noise_plan",
]

#: Shares on the adaptive path: first count, midpoint sum, sum around ĉ, squares around ĉ.
ADAPTIVE_WEIGHTS = (1, 1, 4, 14)
#: Shares on the fallback path: first count, second count, midpoint sum, midpoint squares.
FALLBACK_WEIGHTS = (3, 19, 19, 19)  # the first count is 1/20 on both paths


def fallback_weights(weights: tuple[int, ...]) -> tuple[int, ...]:
    """The fallback path's shares for an adaptive split ``weights``.

    The first count is drawn before the path is chosen, so it keeps its share
    ``weights[0] / sum(weights)`` on both paths; the rest is split equally over
    the second count, the midpoint sum and the midpoint squares
    (:data:`FALLBACK_WEIGHTS` for :data:`ADAPTIVE_WEIGHTS`).
    """
    first, total = weights[0], sum(weights)
    rest = total - first
    return (3 * first, rest, rest, rest)


_INT64_ROOM = 2**62

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SquaresGeometry:
    """The public facts that fix the squares around a centre c + j·q, in units of q².

    Attributes:
        shift: s with 2^s = q₂/q² (q the linear sum's quantum, q₂ the squares').
        low, high: (L − c)/q and (U − c)/q, exactly (the clamped value's range in quanta).
        quantum: q² (the value of one unit of the squares around ĉ).
    """

    shift: int
    low: Fraction
    high: Fraction
    quantum: float


def squares_geometry(measures: tuple[Measure, ...]) -> SquaresGeometry | None:
    """The geometry of the squares around a moving centre; None when the bounds do not allow it.

    None (public: a function of the bounds) for bounds so narrow or so wide
    that q² is not a normal float, or that sums of squares around a centre
    near a bound (up to 4 times the midpoint's) could overflow: such a
    variance always takes the fallback (midpoint) path.
    """
    first, squares = measures[1], measures[2]
    q, q2 = first.quantum, squares.quantum
    exp_q, exp_q2 = math.frexp(q)[1] - 1, math.frexp(q2)[1] - 1
    shift = exp_q2 - 2 * exp_q
    reach = max(abs(first.upper - first.center), abs(first.lower - first.center))
    if not (-500 < exp_q < 500 and 0 <= shift <= 60):
        return None
    if not math.isfinite(8.0 * reach * reach * MAX_ROWS):
        return None
    center = Fraction(first.center)
    low = (Fraction(first.lower) - center) / Fraction(q)
    high = (Fraction(first.upper) - center) / Fraction(q)
    return SquaresGeometry(shift, low, high, q * q)


def squares_sensitivity(geometry: SquaresGeometry, step: int) -> int:
    """The most one row moves R = Σ (2^s·rint(u²/q₂) − 2j·rint(u/q) + j²), in units of q².

    u = clip(x) − c ranges over [low·q, high·q]; per row the term is within
    2^(s−1) + |j| of (u/q − j)², whose largest value on the range is at an
    end.  Rounded up to an integer.
    """
    far = max((geometry.high - step) ** 2, (geometry.low - step) ** 2)
    return math.ceil(far + Fraction(2) ** (geometry.shift - 1) + abs(step))


def _steps_range(geometry: SquaresGeometry) -> tuple[int, int]:
    """The smallest and largest centre offsets j the first pass can give."""
    return round(geometry.low), round(geometry.high)


def _worst_squares(geometry: SquaresGeometry) -> int:
    return max(squares_sensitivity(geometry, j) for j in _steps_range(geometry))


def _adaptive_fits(
    geometry: SquaresGeometry | None, unit: int, part: NoiseAllocation, spread: int
) -> bool:
    """Whether every cell's R, rounded to its grid, fits int64 (public inputs only)."""
    if geometry is None:
        return False
    base = unit * squares_sensitivity(geometry, 0)
    grid, _, _ = noise_for(base, geometry.quantum, part, spread)
    per_row = _worst_squares(geometry)
    return unit * per_row < _INT64_ROOM and MAX_ROWS * per_row // grid + 1 < _INT64_ROOM


def variance_noise_plan(
    measures: tuple[Measure, ...],
    sensitivities: tuple[int, ...],
    allocation: NoiseAllocation,
    spread: int = 1,
    weights: tuple[int, ...] = ADAPTIVE_WEIGHTS,
) -> list[tuple[str, int, float, NoiseAllocation]]:
    """Every release the variance may make: (name, worst-case sensitivity, quantum, share).

    From public inputs only; used to explain a query and to check its
    parameters before anything is charged.  ``weights``: the adaptive path's
    four shares (see :func:`fallback_weights` for the fallback path's).
    """
    count_sens, sum_sens, squares_sens = sensitivities
    quantum, squares_quantum = measures[1].quantum, measures[2].quantum
    if weights[0] == 0:  # the midpoint only (describe): count, sum and squares, no first pass
        shares = allocation.split(tuple(weights[1:]))
        return [
            ("non-missing count", count_sens, 1.0, shares[0]),
            ("centred sum", sum_sens, quantum, shares[1]),
            ("centred sum of squares", squares_sens, squares_quantum, shares[2]),
        ]
    first = allocation.split(weights)
    fallback = allocation.split(fallback_weights(weights))
    plan = [("non-missing count", count_sens, 1.0, first[0])]
    geometry = squares_geometry(measures)
    if _adaptive_fits(geometry, count_sens, first[3], spread):
        assert geometry is not None
        plan += [
            ("centred sum (first pass)", sum_sens, quantum, first[1]),
            ("sum around the first-pass mean (worst case)", 2 * sum_sens, quantum, first[2]),
            (
                "sum of squares around the first-pass mean (worst case)",
                count_sens * _worst_squares(geometry),
                geometry.quantum,
                first[3],
            ),
        ]
    plan += [
        ("second count (small data only)", count_sens, 1.0, fallback[1]),
        ("centred sum (small data only)", sum_sens, quantum, fallback[2]),
        ("centred sum of squares (small data only)", squares_sens, squares_quantum, fallback[3]),
    ]
    return plan


@dataclass(frozen=True)
class VarianceRelease:
    """A variance per cell and the released values it was computed from.

    Attributes:
        values: the variances, clamped to [0, ((U − L)/2)²].
        scales: per cell, the final sum of squares' noise scale over the noisy count.
        center: per cell, the centre ĉ (the midpoint on the fallback path).
        count: per cell, the noisy count used as the denominator.
        total: per cell, the noisy Σ(x − center).
        squares: per cell, the noisy Σ(x − center)².
        used: every noise that was drawn and used.
        kept: the noise of ``count``, ``total`` and ``squares`` (the widest over cells).
        count_noise: when cells took both paths, the two count noises and per
            cell the index of its count's (:func:`~dpframe.mechanisms.moments.mean.count_paths`).
    """

    values: FloatArray
    scales: FloatArray
    center: FloatArray
    count: FloatArray
    total: FloatArray
    squares: FloatArray
    used: tuple[NoiseSpec, ...]
    kept: tuple[NoiseSpec, NoiseSpec, NoiseSpec]
    count_noise: tuple[()] | tuple[tuple[NoiseSpec, ...], npt.NDArray[np.int64]] = ()


def release_variance(
    measures: tuple[Measure, ...],
    sensitivities: tuple[int, ...],
    exact: list[FloatArray],
    bounds: tuple[float, float],
    allocation: NoiseAllocation,
    rng: SecureRandom,
    spread: int = 1,
    count_spread: int | None = None,
    weights: tuple[int, ...] = ADAPTIVE_WEIGHTS,
) -> VarianceRelease:
    """Release a variance per cell (see the module docstring for the mechanism).

    Args:
        measures: the non-null count, the midpoint sum and the midpoint squares.
        sensitivities: their sensitivities in quanta (already scaled by k).
        exact: the backend's exact values of the three measures, per cell.
        bounds: the public clamping bounds (L, U).
        allocation: the whole noise allocation of the release.
        rng: the secure random source.
        spread: the most cells one neighbour reaches (min(rows per unit, cells)).
        count_spread: the same for the first count (None: ``spread``); one more
            cell when the undeclared cell is a cell of the first count.
        weights: the adaptive path's four shares (:data:`ADAPTIVE_WEIGHTS`).
    """
    count_sens, sum_sens, squares_sens = sensitivities
    quantum = measures[1].quantum
    low, high = bounds
    mid = (low + high) / 2
    if weights[0] == 0:
        return _release_midpoint(
            measures,
            sensitivities,
            exact,
            bounds,
            allocation.split(tuple(weights[1:])),
            rng,
            spread,
        )
    parts = allocation.split(weights)
    first_reach = spread if count_spread is None else count_spread
    count, count_spec = release_integer_sums(
        exact[0], count_sens, 1.0, parts[0], rng, spread=first_reach
    )
    geometry = squares_geometry(measures)
    fits = _adaptive_fits(geometry, count_sens, parts[3], spread)
    adaptive = fits & (count >= ADAPT_AT_STDS * count_spec.std)  # public: released counts
    cells = len(count)
    center, total, squares = np.full(cells, mid), np.zeros(cells), np.zeros(cells)
    scale = np.zeros(cells)  # per cell, the noise scale of its final squares
    used: list[NoiseSpec] = [count_spec]
    kept: tuple[list[NoiseSpec], list[NoiseSpec], list[NoiseSpec]] = ([count_spec], [], [])
    if not adaptive.all():
        rest = allocation.split(fallback_weights(weights))
        small = np.flatnonzero(~adaptive)
        specs = []
        for i, (sens, q) in enumerate(
            ((count_sens, 1.0), (sum_sens, quantum), (squares_sens, measures[2].quantum))
        ):
            noisy, spec = release_integer_sums(
                exact[i][small], sens, q, rest[i + 1], rng, spread=spread
            )
            specs.append(spec)
            if i == 0:
                count = count.copy()
                count[small] = noisy
            elif i == 1:
                total[small] = noisy
            else:
                squares[small], scale[small] = noisy, spec.scale
        used += specs
        for bucket, spec in zip(kept, specs, strict=True):
            bucket.append(spec)
        if not adaptive.any():
            kept[0].remove(count_spec)
    big = np.flatnonzero(adaptive)
    if big.size:
        assert geometry is not None
        first, first_spec = release_integer_sums(
            exact[1][big], sum_sens, quantum, parts[1], rng, spread=spread
        )
        used.append(first_spec)
        offset = np.clip(first / np.maximum(count[big], 1.0), low - mid, high - mid)
        steps = np.rint(offset / quantum).astype(np.int64)  # each centre's offset in quanta
        n = exact_int64(exact[0][big])
        t = exact_int64(exact[1][big])
        # Σ(x − ĉ) in quanta, exact in int64, as for the mean.
        shifted = t - steps * n
        sums_sens = sensitivity_levels(sum_sens + np.abs(steps) * count_sens, sum_sens)
        for level in np.unique(sums_sens):
            chosen = np.flatnonzero(sums_sens == level)
            noisy, spec = release_integer_sums(
                shifted[chosen], int(level), quantum, parts[2], rng, spread=spread
            )
            total[big[chosen]] = noisy
            used.append(spec)
            kept[1].append(spec)
        exact_squares = _squares_around(exact[2][big], t, n, steps, geometry.shift)
        row_sens = np.array(
            [count_sens * squares_sensitivity(geometry, int(j)) for j in steps], dtype=np.int64
        )
        base = count_sens * squares_sensitivity(geometry, 0)
        squares_level = sensitivity_levels(row_sens, base)
        for level in np.unique(squares_level):
            chosen = np.flatnonzero(squares_level == level)
            noisy, spec = _release_big(
                exact_squares[chosen], int(level), geometry.quantum, parts[3], rng, spread
            )
            squares[big[chosen]], scale[big[chosen]] = noisy, spec.scale
            used.append(spec)
            kept[2].append(spec)
        center[big] = mid + steps * quantum
    denominator = np.maximum(count, 1.0)
    top = ((high - low) / 2) ** 2
    values = np.clip(squares / denominator - (total / denominator) ** 2, 0.0, top)
    widest = tuple(max(bucket, key=lambda spec: spec.scale) for bucket in kept)
    return VarianceRelease(
        values,
        scale / denominator,
        center,
        count,
        total,
        squares,
        tuple(used),
        (widest[0], widest[1], widest[2]),
        count_paths(kept[0], adaptive),
    )


def _release_midpoint(
    measures: tuple[Measure, ...],
    sensitivities: tuple[int, ...],
    exact: list[FloatArray],
    bounds: tuple[float, float],
    parts: tuple[NoiseAllocation, ...],
    rng: SecureRandom,
    spread: int,
) -> VarianceRelease:
    """The variance around the bounds' midpoint: three noisy sums, no first pass.

    Privacy: the three releases compose to the shares in ``parts`` (the
    midpoint sums' sensitivities are the ones :func:`measures_for` states).
    """
    low, high = bounds
    noisy: list[FloatArray] = []
    specs: list[NoiseSpec] = []
    quanta = (1.0, measures[1].quantum, measures[2].quantum)
    for values, sens, q, part in zip(exact, sensitivities, quanta, parts, strict=True):
        released, spec = release_integer_sums(values, sens, q, part, rng, spread=spread)
        noisy.append(released)
        specs.append(spec)
    count, total, squares = noisy
    denominator = np.maximum(count, 1.0)
    top = ((high - low) / 2) ** 2
    values = np.clip(squares / denominator - (total / denominator) ** 2, 0.0, top)
    return VarianceRelease(
        values,
        np.full(len(count), specs[2].scale) / denominator,
        np.full(len(count), (low + high) / 2),
        count,
        total,
        squares,
        tuple(specs),
        (specs[0], specs[1], specs[2]),
    )


def _squares_around(
    squares: FloatArray, sums: IntArray, counts: IntArray, steps: IntArray, shift: int
) -> npt.NDArray[np.object_]:
    """R = 2^s·Q − 2j·T + j²·n per cell, in Python integers (exact, no overflow)."""
    out = np.empty(len(steps), dtype=object)
    for i, (q, t, n, j) in enumerate(zip(squares.tolist(), sums, counts, steps, strict=True)):
        jj = int(j)
        out[i] = (int(q) << shift) - 2 * jj * int(t) + jj * jj * int(n)
    return out


def _release_big(
    exact: npt.NDArray[np.object_],
    sensitivity: int,
    quantum: float,
    part: NoiseAllocation,
    rng: SecureRandom,
    spread: int,
) -> tuple[FloatArray, NoiseSpec]:
    """:func:`release_integer_sums` for Python-integer sums: rounded to the grid here, exactly."""
    planned = noise_for(sensitivity, quantum, part, spread)
    grid, units_sens, spec = planned
    units = np.array([(int(v) + grid // 2) // grid for v in exact], dtype=np.int64)  # half up
    return release_integer_sums(units, sensitivity, quantum, part, rng, (1, units_sens, spec))
