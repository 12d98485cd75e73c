"""Counts, sums, means, variances and standard deviations, per group or overall.

Each statistic is a fixed set of *measures* (exact integer-valued sums
computed by the backend), each released with :func:`release_integer_sums`,
then combined by post-processing.  Neighbouring datasets differ by adding
or removing one row.

Privacy:
    A row count and a non-null count have sensitivity 1.  A clamped sum over
    bounds [L, U] has sensitivity max(|L|, |U|); a centred sum (values minus
    the midpoint c) has (U − L)/2; a centred sum of squares ((U − L)/2)².
    Missing values (NaN, None) add nothing and are not counted; ±inf is
    clamped like any other value, so one row of any kind moves each measure
    by at most its sensitivity.  Values are quantized to a public power-of-two
    quantum before summing (sensitivity computed on the quantized bounds), so
    sums are exact integers, never wrapped or rounded by float addition.
    A statistic with k measures splits its budget k ways (ε or ρ adds up), and
    disjoint groups compose in parallel, so one charge covers all groups.
    A mean, a variance and a standard deviation instead spend their budget
    in passes with a privately chosen centre ĉ per cell (see
    :mod:`dpframe.mechanisms.moments.mean` and :mod:`dpframe.mechanisms.moments.variance`).

Accuracy:
    count and sum: the noise of one measure (see ``NoiseSpec``).  mean:
    ĉ + S/max(N, 1) clamped to [L, U]; var: Q/N − (S/N)² clamped to
    [0, ((U − L)/2)²] with S and Q centred at ĉ; std: its square root.  Intervals for the derived
    statistics are conservative: each measure's interval at level
    1 − (1 − level)/k (Bonferroni) pushed through the formula by interval
    arithmetic, so coverage is at least ``level``.  Quantizing adds at most
    2⁻²³·max(|L|, |U|) per row.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.backends.base import MAX_ROWS
from dpframe.errors import InvalidArgumentError, SchemaError
from dpframe.mechanisms.calibration.additive import NoiseSpec, noise_for, release_integer_sums
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.moments.mean import mean_noise_plan, release_mean
from dpframe.mechanisms.moments.undeclared import UndeclaredNoise, first_spread, plan_undeclared
from dpframe.mechanisms.moments.variance import (
    ADAPTIVE_WEIGHTS,
    release_variance,
    variance_noise_plan,
)
from dpframe.noise import SecureRandom
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, unit_rows

__all__ = [
    "MAX_CELLS",
    "AggregateNoise",
    "AggregateResult",
    "IntervalModel",
    "aggregate_noise",
    "measures_for",
    "noise_plan",
    "release_aggregate",
    "reordered",
    "spread_of",
    "spreads_of",
]

#: The most cells (groups, or key combinations) one release may have; a
#: larger request is refused before anything is charged or computed.
MAX_CELLS = 2**24

_QUANTUM_BITS = 22
_MIN_QUANTUM_EXPONENT = -1000
FloatArray = npt.NDArray[np.float64]


def _sum_measure(agg: Aggregate, center: float, power: int) -> tuple[Measure, int]:
    assert agg.bounds is not None
    assert agg.expr is not None
    low, high = agg.bounds
    # Python floats, not numpy (this runs several times per release): the same
    # IEEE operations as the backend's transform, and round() is round-half-even
    # like np.rint.  A square that overflows is inf, refused just below.
    ends = [float(low) - center, float(high) - center]
    if power == 2:
        ends = [end * end for end in ends]
    magnitude = max(abs(end) for end in ends)
    if not math.isfinite(magnitude * MAX_ROWS):
        # A sum of up to MAX_ROWS such values could overflow float64: refuse, never wrap.
        raise SchemaError(
            f"The bounds {agg.bounds} are too wide for {agg.statistic}(): sums could overflow; "
            "use narrower bounds."
        )
    exponent = math.ceil(math.log2(magnitude)) - _QUANTUM_BITS if magnitude > 0 else 0
    quantum = 2.0 ** max(exponent, _MIN_QUANTUM_EXPONENT)
    measure = Measure("sum", agg.expr, low, high, center, 2 if power == 2 else 1, quantum)
    # The transform is monotone in |value - center|, so the extremes are at the bounds.
    sensitivity = max(abs(round(end * (1.0 / quantum))) for end in ends)
    return measure, max(sensitivity, 1)


def _row_measures(agg: Aggregate) -> tuple[tuple[Measure, ...], tuple[int, ...]]:
    """The measures of a statistic and their per-row sensitivities (in quanta)."""
    if agg.statistic == "count":
        if agg.expr is None:
            return (Measure("rows"),), (1,)
        return (Measure("nonnull", agg.expr),), (1,)
    if agg.statistic == "sum":
        measure, sens = _sum_measure(agg, 0.0, 1)
        return (measure,), (sens,)
    assert agg.bounds is not None
    center = (agg.bounds[0] + agg.bounds[1]) / 2
    count = Measure("nonnull", agg.expr)
    first, sens1 = _sum_measure(agg, center, 1)
    if agg.statistic == "mean":
        return (count, first), (1, sens1)
    second, sens2 = _sum_measure(agg, center, 2)
    return (count, first, second), (1, sens1, sens2)


def measures_for(agg: Aggregate) -> tuple[tuple[Measure, ...], tuple[int, ...]]:
    """The measures of a statistic and their sensitivities (in quanta).

    A privacy unit contributing up to k rows moves each measure by at most k
    times a row's sensitivity (and, over disjoint groups, the L1 and L2 norms
    of the change by at most k times it), so sensitivities are scaled by k.
    """
    if agg.n_groups > MAX_CELLS:
        raise SchemaError(
            f"This release would have {agg.n_groups} cells (the product of the numbers of "
            f"keys); dpframe releases at most {MAX_CELLS} at once. Group by fewer columns "
            "or declare fewer keys."
        )
    measures, sensitivities = _row_measures(agg)
    k = unit_rows(agg.plan)
    return measures, tuple(s * k for s in sensitivities)


def _moment_weights(agg: Aggregate) -> tuple[int, ...]:
    """The variance's adaptive shares: the node's own (describe sets them) or the default."""
    return agg.moment_weights or ADAPTIVE_WEIGHTS


def noise_plan(
    agg: Aggregate, allocation: NoiseAllocation
) -> list[tuple[str, int, float, NoiseAllocation]]:
    """Every noisy release ``agg`` may make: (name, sensitivity in quanta, quantum, share).

    Public inputs only: used to explain a query and to check its parameters
    before anything is charged.  A mean's second sum is listed with its
    worst-case sensitivity (its actual one is known only after the first
    pass).
    """
    measures, sensitivities = measures_for(agg)
    if agg.statistic == "mean":
        return mean_noise_plan(measures, sensitivities, allocation)
    if agg.statistic in _CENTRED:
        return variance_noise_plan(
            measures, sensitivities, allocation, spread_of(agg), _moment_weights(agg)
        )
    parts = allocation.split(tuple(1 for _ in measures))
    plan = []
    for measure, sens, part in zip(measures, sensitivities, parts, strict=True):
        if measure.kind == "sum":
            name = "sum of squares" if measure.power == 2 else "sum"
            name = f"centred {name}" if measure.center else name
        else:
            name = _MEASURE_NAMES[measure.kind]
        plan.append((name, sens, measure.quantum, part))
    return plan


_MEASURE_NAMES = {"rows": "row count", "nonnull": "non-missing count"}
_CENTRED = (
    "var",
    "std",
)  # released around a privately chosen centre (mechanisms/moments/variance.py)


@dataclass(frozen=True)
class AggregateNoise:
    """The privacy map of an aggregate for one allocation, computed once per release.

    Attributes:
        measures: the exact quantities the backend computes.
        sensitivities: their sensitivities in quanta (scaled by the unit's rows).
        noise: for count and sum, ``noise_for`` of the measure
            (grid, sensitivity in grid units, noise); empty for a mean, a var
            and a std, whose second pass depends on released values.
        undeclared: the noise of the undeclared cell (None: the release has none;
            see :mod:`dpframe.mechanisms.moments.undeclared`).
    """

    measures: tuple[Measure, ...]
    sensitivities: tuple[int, ...]
    noise: tuple[tuple[int, int, NoiseSpec], ...]
    undeclared: UndeclaredNoise | None = None


def spread_of(agg: Aggregate) -> int:
    """The most cells one neighbour reaches: min(rows per unit, cells) (1 for one row)."""
    return max(1, min(unit_rows(agg.plan), agg.n_groups))


def spreads_of(agg: Aggregate, count: int) -> tuple[int, ...]:
    """The spread of each of ``count`` releases: the first may also reach the undeclared cell."""
    spread = spread_of(agg)
    return tuple(first_spread(agg) if i == 0 else spread for i in range(count))


def aggregate_noise(agg: Aggregate, allocation: NoiseAllocation) -> AggregateNoise:
    """Every measure and its noise under ``allocation``; raises for unusable parameters.

    Public inputs only.  A mean's, a var's and a std's possible releases are all
    checked (:func:`~dpframe.mechanisms.moments.mean.mean_noise_plan`,
    :func:`~dpframe.mechanisms.moments.variance.variance_noise_plan`), their noise is
    chosen as they go.
    The undeclared cell's noise (when ``agg.undeclared``) is planned here too.
    """
    measures, sensitivities = measures_for(agg)
    if agg.statistic == "mean" or agg.statistic in _CENTRED:
        planned = noise_plan(agg, allocation)
        for (_, sens, quantum, part), spread in zip(
            planned, spreads_of(agg, len(planned)), strict=True
        ):
            noise_for(sens, quantum, part, spread)
        _, count_sens, count_quantum, count_share = planned[0]
        extra = plan_undeclared(agg, allocation, count_sens, count_quantum, count_share)
        return AggregateNoise(measures, sensitivities, (), extra)
    parts = allocation.split(tuple(1 for _ in measures))
    noise = tuple(
        noise_for(sens, m.quantum, part, spread)
        for m, sens, part, spread in zip(
            measures, sensitivities, parts, spreads_of(agg, len(measures)), strict=True
        )
    )
    extra = plan_undeclared(agg, allocation, sensitivities[0], measures[0].quantum, parts[0])
    return AggregateNoise(measures, sensitivities, noise, extra)


@dataclass(frozen=True)
class IntervalModel:
    """Everything needed to compute confidence intervals of a release, free of privacy cost."""

    statistic: str
    noisy: tuple[FloatArray, ...]
    noise: tuple[NoiseSpec, ...]
    bounds: tuple[float, float] | None
    center: FloatArray | None = None  # the centre ĉ per cell (mean, var, std); None: midpoint
    #: The count noises cells carry when they differ by cell (a mean's adaptive cells
    #: divide by the first count, its small cells by a second one); ``()``: ``noise[0]``.
    count_noises: tuple[NoiseSpec, ...] = ()
    #: Per cell, the index in ``count_noises`` of its count's noise (with ``count_noises``).
    count_paths: npt.NDArray[np.int64] | None = None

    def count_quantile(self, level: float) -> FloatArray | float:
        """Per cell, the ``level`` quantile of its count noise's absolute value, plus rounding.

        One number when every cell's count carries ``noise[0]``; else one per
        cell, from the noise that cell's count was released with.
        """
        if not self.count_noises or self.count_paths is None:
            spec = self.noise[0]
            return float(spec.abs_quantile(level) + spec.rounding)
        each = np.array([s.abs_quantile(level) + s.rounding for s in self.count_noises])
        found: FloatArray = each[self.count_paths]
        return found

    def interval(self, level: float) -> tuple[FloatArray, FloatArray]:
        """Lower and upper ends per cell; coverage at least ``level``."""
        if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
            raise InvalidArgumentError("level must be a number strictly between 0 and 1.")
        k = len(self.noise)
        per = 1 - (1 - level) / k
        half: list[Any] = [spec.abs_quantile(per) + spec.rounding for spec in self.noise]
        half[0] = self.count_quantile(per)
        if self.statistic in ("count", "sum"):
            return self.noisy[0] - half[0], self.noisy[0] + half[0]
        assert self.bounds is not None
        low, high = self.bounds
        center = (low + high) / 2 if self.center is None else self.center
        n_lo = np.maximum(self.noisy[0] - half[0], 1.0)
        n_hi = np.maximum(self.noisy[0] + half[0], 1.0)
        s_lo, s_hi = self.noisy[1] - half[1], self.noisy[1] + half[1]
        ratios = [s_lo / n_lo, s_lo / n_hi, s_hi / n_lo, s_hi / n_hi]
        m_lo = np.minimum.reduce(ratios)
        m_hi = np.maximum.reduce(ratios)
        if self.statistic == "mean":
            return np.clip(center + m_lo, low, high), np.clip(center + m_hi, low, high)
        q_lo, q_hi = self.noisy[2] - half[2], self.noisy[2] + half[2]
        q_ratios = [q_lo / n_lo, q_lo / n_hi, q_hi / n_lo, q_hi / n_hi]
        sq_hi = np.maximum(m_lo**2, m_hi**2)
        sq_lo = np.where((m_lo <= 0) & (m_hi >= 0), 0.0, np.minimum(m_lo**2, m_hi**2))
        top = ((high - low) / 2) ** 2
        var_lo = np.clip(np.minimum.reduce(q_ratios) - sq_hi, 0.0, top)
        var_hi = np.clip(np.maximum.reduce(q_ratios) - sq_lo, 0.0, top)
        if self.statistic == "var":
            return var_lo, var_hi
        return np.sqrt(var_lo), np.sqrt(var_hi)


@dataclass(frozen=True)
class AggregateResult:
    """Noisy values per cell, the noise used, and approximate error scales."""

    values: FloatArray
    scales: FloatArray
    noise: tuple[NoiseSpec, ...]
    intervals: IntervalModel

    @property
    def mechanism(self) -> str:
        """Name of the noise distribution."""
        return self.noise[0].name


def _std(var: FloatArray, var_scales: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The standard deviation and its scale by the delta method (dv / (2 sqrt(v)))."""
    std = np.sqrt(var)
    # At v = 0 the delta method fails: use sqrt(scale).
    safe = np.where(std > 0, std, 1.0)
    return std, np.where(std > 0, var_scales / (2 * safe), np.sqrt(var_scales))


def release_aggregate(
    agg: Aggregate,
    exact: list[FloatArray],
    allocation: NoiseAllocation,
    rng: SecureRandom,
    planned: AggregateNoise | None = None,
) -> AggregateResult:
    """Add noise to the exact measures of ``agg`` and post-process them.

    Args:
        agg: the aggregate query (its statistic fixes the measures).
        exact: the backend's exact measures, in the order of :func:`measures_for`.
        allocation: the query's whole noise allocation, split evenly over measures.
        rng: the secure random source.
        planned: the query's :func:`aggregate_noise` (computed before the charge);
            computed here when None.

    Returns:
        The released values per cell with their intervals.
    """
    if planned is None:
        planned = aggregate_noise(agg, allocation)
    measures, sensitivities = planned.measures, planned.sensitivities
    if agg.statistic == "mean":
        assert agg.bounds is not None
        mean = release_mean(
            measures,
            sensitivities,
            exact,
            agg.bounds,
            allocation,
            rng,
            spread_of(agg),
            count_spread=first_spread(agg),
        )
        model = IntervalModel(
            "mean",
            (mean.count, mean.total),
            mean.kept,
            agg.bounds,
            mean.center,
            *mean.count_noise,
        )
        return AggregateResult(mean.values, mean.scales, mean.used, model)
    if agg.statistic in _CENTRED:
        assert agg.bounds is not None
        var = release_variance(
            measures,
            sensitivities,
            exact,
            agg.bounds,
            allocation,
            rng,
            spread_of(agg),
            count_spread=first_spread(agg),
            weights=_moment_weights(agg),
        )
        measured = (var.count, var.total, var.squares)
        model = IntervalModel(
            agg.statistic, measured, var.kept, agg.bounds, var.center, *var.count_noise
        )
        values, scales = (var.values, var.scales)
        if agg.statistic == "std":
            values, scales = _std(var.values, var.scales)
        return AggregateResult(values, scales, var.used, model)
    parts = allocation.split(tuple(1 for _ in measures))
    noisy: list[FloatArray] = []
    noise: list[NoiseSpec] = []
    for measure, sens, part, values, noise_plan_ in zip(
        measures, sensitivities, parts, exact, planned.noise, strict=False
    ):
        released, spec = release_integer_sums(values, sens, measure.quantum, part, rng, noise_plan_)
        noisy.append(released)
        noise.append(spec)
    values, scales = noisy[0], np.full(len(noisy[0]), noise[0].scale)
    model = IntervalModel(agg.statistic, tuple(noisy), tuple(noise), agg.bounds)
    return AggregateResult(values, scales, tuple(noise), model)


def reordered(meta: Any, order: npt.NDArray[np.intp]) -> Any:
    """A grouped release's metadata with its cells in a new order (post-processing)."""
    model = meta.intervals
    if isinstance(model, IntervalModel):
        center = None if model.center is None else model.center[order]
        model = dataclasses.replace(
            model, noisy=tuple(a[order] for a in model.noisy), center=center
        )
    values = None if meta.values is None else meta.values[order]
    return dataclasses.replace(
        meta, index=meta.index[order], scales=meta.scales[order], intervals=model, values=values
    )
