"""Quantiles, overall (:class:`Quantile`) or per group of declared keys (:class:`GroupedQuantile`).

Both read one histogram of the column over the public candidates from the
backend (per group: one compute with the group keys and the bin key) and
select each level by the exponential mechanism in its permute-and-flip form
(:mod:`dpframe.mechanisms.quantiles.quantiles`).

Privacy:
    Overall: ε-DP (ε²/2-zCDP under a ρ allocation), the levels splitting ε
    evenly (basic composition); each selection's utility moves by at most
    max(q, 1 − q)·k ranks for a privacy unit of k rows (k = 1: one row).

    Per group: every group's selections get the whole ε (split over the
    levels): a row is in one group, and a group's selections read only its
    rows (parallel composition).  With a privacy unit of k rows spread over
    several groups (at most ``max_groups`` of them, and k rows in all), each
    group's utilities are calibrated to k rows, and a selection calibrated to
    kΔ whose utilities move by k_g·Δ is (k_g/k)·ε-DP (permute-and-flip
    depends on ε/Δ only), so the unit's total loss is Σ_g (k_g/k)·ε ≤ ε — the
    same L1 argument as the grouped aggregates' noise, whose sensitivity is k
    rows per cell and k rows in all.  Under zCDP the losses are (k_g ε/k)²/2,
    whose sum is at most ε²/2.  The rows whose key is not declared are counted
    in one more disjoint cell, a noisy count at the whole allocation calibrated
    to k rows (:mod:`dpframe.mechanisms.moments.undeclared`; its loss is (k_u/k)·ε too,
    so the sum stays within ε).  Proof note: docs/proofs/grouped_quantiles.md.

Accuracy:
    In each group (or overall), with probability at least 1 − β the released
    candidate's rank misses q·n by at most (2·max(q, 1 − q)·k/ε_q)·ln(C/β)
    more than the best of the C candidates does, ε_q = ε/(number of levels)
    (``scale`` holds the 95% figure).  A group with few rows is close to a
    uniform choice among the candidates.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import InvalidBudgetError, SchemaError
from dpframe.mechanisms.answers.results import GroupedRelease, Release, grouped_series
from dpframe.mechanisms.calibration.additive import noise_for
from dpframe.mechanisms.core.allocation import NoiseAllocation, pure_epsilon
from dpframe.mechanisms.core.explanations import Explanation, plain_number
from dpframe.mechanisms.core.family import Asked, Family, Released
from dpframe.mechanisms.core.work import PLAIN, Work
from dpframe.mechanisms.moments.aggregate_family import undeclared_release
from dpframe.mechanisms.moments.aggregates import MAX_CELLS
from dpframe.mechanisms.moments.undeclared import FALSE_ALARM, UndeclaredNoise
from dpframe.mechanisms.quantiles.quantile_intervals import (
    QuantileIntervals,
    end_epsilon,
    point_epsilon,
    quantile_ends,
)
from dpframe.mechanisms.quantiles.quantiles import (
    CandidateBins,
    below_candidates,
    candidate_bins,
    candidate_values,
    quantile_utilities,
    rank_error,
    utility_sensitivity,
)
from dpframe.mechanisms.selection.grouped_selection import permute_and_flip_rows
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Bucket
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, GroupKey, unit_rows
from dpframe.plan.releases import QUANTILE_BINS, GroupedQuantile, Quantile

__all__ = ["GroupedQuantileFamily", "GroupedQuantileNoise", "QuantileFamily"]

_EM = "exponential mechanism (permute-and-flip)"
# Every ε-DP mechanism is ε²/2-zCDP. The tighter ε²/8 of bounded-range mechanisms needs
# utility changes of spread at most Δ, which not every use guarantees; stay safe.
_EM_ZCDP = Fraction(1, 2)


def _level_epsilon(levels: int, allocation: NoiseAllocation, candidates: int) -> Fraction:
    """The ε of each level; refused when its rank error would exceed 2**52 ranks."""
    eps_each = pure_epsilon(allocation, _EM_ZCDP) / levels
    if (
        not float(eps_each) > 0
        or rank_error(float(point_epsilon(eps_each)), 0.95, candidates=candidates) > 2**52
    ):
        raise InvalidBudgetError(
            "The privacy parameter is so small that a quantile's rank error would exceed "
            "2**52 ranks; ask for a larger epsilon (or rho), or fewer levels at once."
        )
    return eps_each


def _count(node: Quantile | GroupedQuantile) -> int:
    return len(node.candidates) if node.candidates else QUANTILE_BINS + 1


def _among(node: Quantile | GroupedQuantile) -> str:
    if node.candidates:
        return f"among {len(node.candidates):,} public candidates"
    return "on the 4,097-point public grid"


def _bins(
    node: Quantile | GroupedQuantile, candidates: np.ndarray
) -> tuple[CandidateBins, GroupKey]:
    """The candidates' bins (explicit candidates tell ties apart) and their group key."""
    bins = candidate_bins(candidates, node.bounds, ties=bool(node.candidates))
    bucket = Bucket(node.expr, tuple(float(e) for e in bins.edges), clamp=True)
    return bins, GroupKey("_bin", bucket, tuple(range(bins.bins)))


def _select_levels(
    node: Quantile | GroupedQuantile,
    below: np.ndarray,
    upto: np.ndarray,
    totals: np.ndarray,
    candidates: np.ndarray,
    eps_level: Fraction,
    rng: SecureRandom,
    rows: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group and level: the point's candidate index and its interval's ends.

    Each level's ε: half to the point (permute-and-flip), a quarter to each
    end (:func:`~dpframe.mechanisms.quantiles.quantile_intervals.quantile_ends`).

    Returns:
        (points, lows, highs), each of shape (groups, levels).
    """
    points, lows, highs = [], [], []
    for q in node.levels:
        utilities = quantile_utilities(below, upto, totals, q)
        sensitivity = utility_sensitivity(q) * rows
        picked = permute_and_flip_rows(utilities, point_epsilon(eps_level), sensitivity, rng)
        low, high = quantile_ends(
            utilities, picked, candidates, node.bounds, end_epsilon(eps_level), sensitivity, rng
        )
        points.append(picked)
        lows.append(low)
        highs.append(high)
    return np.stack(points, axis=1), np.stack(lows, axis=1), np.stack(highs, axis=1)


class QuantileFamily(Family[Quantile]):
    """Quantiles by permute-and-flip over public candidates (ε split over the levels)."""

    node_type = Quantile

    mechanism = _EM

    def result_types(self) -> tuple[type, ...]:
        """The classes its results hold (allowed on the wire)."""
        return (QuantileIntervals,)

    def work(self, node: Quantile) -> Work:
        """One evaluation; a utility per candidate and level (its cells)."""
        return PLAIN

    def privacy_map(self, node: Quantile, allocation: NoiseAllocation) -> Fraction:
        """The ε of each level; refused when its rank error would exceed 2**52 ranks."""
        return _level_epsilon(len(node.levels), allocation, _count(node))

    def explain(self, node: Quantile, asked: Asked) -> Explanation:
        """The cost, and each level's 95% rank error (public: ε, q, C and the unit's rows)."""
        eps_each = self.privacy_map(node, asked.allocation)
        rows, count = unit_rows(node.plan), _count(node)
        point = float(point_epsilon(eps_each))
        errors = [rank_error(point, 0.95, q, rows, count) for q in node.levels]
        headline = (
            f"a value whose rank is within ±{plain_number(max(errors))} rows of the true "
            f"quantile's at 95% ({_among(node)}), with a 95% interval in the column's units "
            "(half the ε picks the value, a quarter each end)"
        )
        return dataclasses.replace(asked.cost_only(node.label), headline=headline)

    def release(self, run: Released[Quantile]) -> tuple[Any, str]:
        """One histogram over the candidates, then one selection per level."""
        node = run.node
        eps_each: Fraction = run.noise
        candidates = candidate_values(node.bounds, node.candidates)
        rows = unit_rows(node.plan)
        levels = len(node.levels)
        if len(candidates) == 1:  # nothing to choose: no data is read
            picked = [float(candidates[0])] * levels
            lows, highs = np.array(picked), np.array(picked)
        else:
            bins, key = _bins(node, candidates)
            measure = Measure("nonnull", node.expr)
            counts = run.backend.compute(node.plan, (measure,), (key,))[0]
            below, upto, totals = below_candidates(counts, bins)
            picks, lows, highs = _select_levels(
                node, below, upto, totals, candidates, eps_each, run.rng, rows
            )
            picked = [float(candidates[i]) for i in picks[0]]
            lows, highs = lows[0], highs[0]
        count = len(candidates)
        point = float(point_epsilon(eps_each))
        errors = [rank_error(point, 0.95, q, rows, count) for q in node.levels]
        label = node.label
        intervals = QuantileIntervals(
            np.asarray(lows, dtype=float),
            np.asarray(highs, dtype=float),
            integer=_whole(node.candidates),
        )
        if node.scalar:
            release = Release(picked[0], run.cost, _EM, errors[0], label, intervals, run.rho)
            return release, repr(picked[0])
        index = pd.Index([float(q) for q in node.levels])  # unnamed, as pandas
        meta = GroupedRelease(index, run.cost, _EM, np.array(errors), label, intervals, run.rho)
        return grouped_series(np.array(picked), meta, str(node.expr)), str(picked)


@dataclass(frozen=True)
class GroupedQuantileNoise:
    """The privacy map of a grouped quantile (public inputs only, computed before the charge).

    Attributes:
        epsilon: each level's ε in every group.
        undeclared: the noisy count of the rows whose key is not declared.
    """

    epsilon: Fraction
    undeclared: UndeclaredNoise


def _plan_undeclared(node: GroupedQuantile, allocation: NoiseAllocation) -> UndeclaredNoise:
    """The undeclared cell: a row count at the whole allocation, calibrated to k rows.

    The grid rounding of a large noise moves the rounded count by up to
    ⌊k_u/g⌋ + 1 grid units for k_u rows; calibrating to ⌊k/g⌋ + k units
    (``spread=k``) keeps that within the fraction k_u/k of the allocation, so
    the cell and the groups' selections share one unit's loss linearly
    (docs/proofs/grouped_quantiles.md).  For k = 1 it is the group-by's usual cell.
    """
    k = unit_rows(node.plan)
    noise = noise_for(k, 1.0, allocation, k)
    spec = noise[2]
    threshold = (
        spec.rounding
        if float(spec.parameter) == 0.0
        else spec.abs_quantile(1.0 - 2.0 * FALSE_ALARM) + spec.rounding
    )
    return UndeclaredNoise(1, k, 1.0, allocation, noise, k > 1, threshold)


def _counted(node: GroupedQuantile) -> Aggregate:
    """The row count whose undeclared cell the release reports (for its label and keys)."""
    return Aggregate(node.plan, "count", node.expr, None, node.by, node.label, node.privacy, True)


def _group_index(node: GroupedQuantile) -> pd.Index:
    names = [k.name for k in node.by]
    index: pd.Index
    if node.scalar and len(node.by) == 1:
        index = pd.Index(list(node.by[0].categories), name=names[0], dtype=object)
    elif node.scalar:
        index = pd.MultiIndex.from_product([list(k.categories) for k in node.by], names=names)
    else:
        levels = [float(q) for q in node.levels]
        index = pd.MultiIndex.from_product(
            [*(list(k.categories) for k in node.by), levels], names=[*names, None]
        )
    return index


class GroupedQuantileFamily(Family[GroupedQuantile]):
    """Quantiles per group of declared keys: one histogram, one selection per group and level."""

    node_type = GroupedQuantile

    mechanism = _EM

    def result_types(self) -> tuple[type, ...]:
        """The classes its results hold (allowed on the wire)."""
        return (QuantileIntervals,)

    def work(self, node: GroupedQuantile) -> Work:
        """One evaluation; a utility per group, candidate and level (its cells)."""
        return PLAIN

    def privacy_map(
        self, node: GroupedQuantile, allocation: NoiseAllocation
    ) -> GroupedQuantileNoise:
        """Each level's ε (every group gets it whole) and the undeclared cell's noise."""
        cells = node.n_groups * (_count(node) + 1)
        if cells > MAX_CELLS:
            raise SchemaError(
                f"A quantile per group over {node.n_groups:,} groups and {_count(node):,} "
                f"candidates needs {cells:,} histogram cells; dpframe computes at most "
                f"{MAX_CELLS:,} at once. Group by fewer keys or pass fewer candidates=."
            )
        eps_each = _level_epsilon(len(node.levels), allocation, _count(node))
        return GroupedQuantileNoise(eps_each, _plan_undeclared(node, allocation))

    def explain(self, node: GroupedQuantile, asked: Asked) -> Explanation:
        """The cost, and each group's 95% rank error (the same for every group)."""
        planned = self.privacy_map(node, asked.allocation)
        rows, count = unit_rows(node.plan), _count(node)
        point = float(point_epsilon(planned.epsilon))
        errors = [rank_error(point, 0.95, q, rows, count) for q in node.levels]
        split = f", ε split over {len(node.levels)} levels" if len(node.levels) > 1 else ""
        headline = (
            f"in each of {node.n_groups:,} groups, a value whose rank in its group is within "
            f"±{plain_number(max(errors))} rows of the group's true quantile at 95% "
            f"({_among(node)}), each with a 95% interval in the column's units; one charge "
            f"for all groups (they are disjoint){split}"
        )
        return dataclasses.replace(asked.cost_only(node.label), headline=headline)

    def release(self, run: Released[GroupedQuantile]) -> tuple[Any, str]:
        """One histogram per group over the candidates, one selection per group and level."""
        node = run.node
        planned: GroupedQuantileNoise = run.noise
        candidates = candidate_values(node.bounds, node.candidates)
        groups, rows = node.n_groups, unit_rows(node.plan)
        outside = None
        levels = len(node.levels)
        if len(candidates) == 1:  # nothing to choose: no data is read
            picks = np.zeros((groups, levels), dtype=np.intp)
            lows = highs = np.full((groups, levels), float(candidates[0]))
        else:
            bins, key = _bins(node, candidates)
            # Rows whose value is missing fall in no bin, so a row count is the value count.
            exact = run.backend.compute(node.plan, (Measure("rows"),), (*node.by, key), True)
            counts, undeclared_rows = exact[0], exact[1]
            outside = undeclared_release(
                _counted(node), planned.undeclared, float(undeclared_rows[0]), run.rng
            )
            below, upto, totals = below_candidates(counts.reshape(groups, bins.bins), bins)
            picks, lows, highs = _select_levels(
                node, below, upto, totals, candidates, planned.epsilon, run.rng, rows
            )
        # Group-major order, as pandas: every level of the first group, then the next group.
        values = candidates[picks.reshape(-1)]
        point = float(point_epsilon(planned.epsilon))
        errors = [rank_error(point, 0.95, q, rows, len(candidates)) for q in node.levels]
        meta = GroupedRelease(
            _group_index(node),
            run.cost,
            _EM,
            np.tile(np.array(errors), groups),
            node.label,
            QuantileIntervals(lows.reshape(-1), highs.reshape(-1), integer=_whole(node.candidates)),
            run.rho,
            undeclared=outside,
        )
        return grouped_series(values, meta, str(node.expr)), f"{groups} groups"


def _whole(candidates: tuple[float, ...]) -> bool:
    """True when the declared candidates are all whole numbers (an integer column's)."""
    return bool(candidates) and all(float(c).is_integer() for c in candidates)
