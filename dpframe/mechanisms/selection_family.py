"""Selection releases: quantiles, mode, group argmax, and describe (a composite).

Each family's privacy map is computed from public inputs before the charge;
its release reads exact counts (or sums) from the backend and selects with
permute-and-flip (the exponential mechanism's report-noisy-max form).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from dpframe.backends.base import Backend
from dpframe.errors import SchemaError
from dpframe.mechanisms.aggregates import MAX_CELLS, measures_for
from dpframe.mechanisms.allocation import NoiseAllocation, pure_epsilon
from dpframe.mechanisms.family import Family, Released
from dpframe.mechanisms.quantiles import (
    QUANTILE_BINS,
    bin_edges,
    rank_error,
    select_quantile,
)
from dpframe.mechanisms.results import GroupedRelease, NoInterval, Release, grouped_series
from dpframe.mechanisms.selection import permute_and_flip
from dpframe.plan.expressions import Bucket
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, GroupKey, unit_rows
from dpframe.plan.releases import ArgMax, Describe, Mode, Quantile

__all__ = ["ArgMaxFamily", "DescribeFamily", "ModeFamily", "QuantileFamily"]

_EM = "exponential mechanism (permute-and-flip)"
# Every ε-DP mechanism is ε²/2-zCDP. The tighter ε²/8 of bounded-range mechanisms needs
# utility changes of spread at most Δ, which not every use guarantees; stay safe.
_EM_ZCDP = Fraction(1, 2)
_MEAN_GRID_BITS = 20
_QUANTILE_REASON = (
    "Quantiles come from the exponential mechanism, whose error is a rank, not an "
    "additive noise: with probability 1-β the released value's rank is within "
    "(2/ε_q)·ln(4097/β) of q·n (see Release.scale)."
)


class QuantileFamily(Family[Quantile]):
    """Quantiles by permute-and-flip over 4,097 public candidates (ε split over the levels)."""

    mechanism = _EM

    def privacy_map(self, node: Quantile, allocation: NoiseAllocation) -> Fraction:
        """The ε of each level."""
        return pure_epsilon(allocation, _EM_ZCDP) / len(node.levels)

    def release(self, run: Released[Quantile]) -> tuple[Any, str]:
        """One histogram over the candidates, then one selection per level."""
        node = run.node
        eps_each: Fraction = run.noise
        edges = bin_edges(node.bounds)
        key = GroupKey(
            "_bin",
            Bucket(node.expr, tuple(float(e) for e in edges), clamp=True),
            tuple(range(QUANTILE_BINS)),
        )
        counts = run.backend.compute(node.plan, (Measure("nonnull", node.expr),), (key,))[0]
        below = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        total = int(below[-1])
        rows = unit_rows(node.plan)
        picked = [
            float(edges[select_quantile(below, total, q, eps_each, run.rng, rows)])
            for q in node.levels
        ]
        errors = [rank_error(float(eps_each), 0.95, q, rows) for q in node.levels]
        label = node.label
        if node.scalar:
            release = Release(
                picked[0], run.cost, _EM, errors[0], label, NoInterval(_QUANTILE_REASON), run.rho
            )
            return release, repr(picked[0])
        index = pd.Index([float(q) for q in node.levels], name="q")
        meta = GroupedRelease(
            index,
            run.cost,
            _EM,
            np.array(errors),
            label,
            NoInterval(_QUANTILE_REASON),
            run.rho,
        )
        return grouped_series(np.array(picked), meta, str(node.expr)), str(picked)


def _key_index(keys: tuple[GroupKey, ...]) -> pd.Index:
    if math.prod(len(k.categories) for k in keys) > MAX_CELLS:
        raise SchemaError(f"Choosing among more than {MAX_CELLS} keys at once is not supported.")
    index: pd.Index = (
        pd.MultiIndex.from_product([list(k.categories) for k in keys])
        if len(keys) > 1
        else pd.Index(list(keys[0].categories), dtype=object)
    )
    return index


def _select(
    run: Released[Any], keys: tuple[GroupKey, ...], utilities: Any, sens: int
) -> tuple[Any, str]:
    index = _key_index(keys)
    eps = pure_epsilon(run.allocation, _EM_ZCDP)
    chosen: Hashable = index[permute_and_flip(utilities, eps, sens, run.rng)]
    return chosen, repr(chosen)


class ModeFamily(Family[Mode]):
    """The most frequent declared category: permute-and-flip on the counts (sensitivity 1)."""

    mechanism = _EM

    def privacy_map(self, node: Mode, allocation: NoiseAllocation) -> None:
        """Checks the number of candidates."""
        _key_index((node.group,))

    def release(self, run: Released[Mode]) -> tuple[Any, str]:
        """Exact counts per category, then one selection."""
        node = run.node
        counts = run.backend.compute(node.plan, (Measure("rows"),), (node.group,))[0]
        return _select(run, (node.group,), counts.astype(np.int64), unit_rows(node.plan))


class ArgMaxFamily(Family[ArgMax]):
    """The key whose count, sum or mean is largest (permute-and-flip); only the key."""

    mechanism = _EM

    def privacy_map(self, node: ArgMax, allocation: NoiseAllocation) -> None:
        """Checks the number of candidates."""
        _key_index(node.keys)

    def release(self, run: Released[ArgMax]) -> tuple[Any, str]:
        """Exact utilities per key, then one selection."""
        utilities, sensitivity = _argmax_utilities(run.node, run.backend)
        return _select(run, run.node.keys, utilities, sensitivity)


def _argmax_utilities(node: ArgMax, backend: Backend) -> tuple[np.ndarray, int]:
    plan, keys, expr = node.plan, node.keys, node.expr
    if node.agg == "count":
        measure = Measure("rows") if expr is None else Measure("nonnull", expr)
        counts = backend.compute(plan, (measure,), keys)[0].astype(np.int64)
        return counts, unit_rows(plan)
    query = Aggregate(plan, node.agg, expr, node.bounds, keys, node.label)
    measures, sensitivities = measures_for(query)
    exact = backend.compute(plan, measures, keys)
    if node.agg == "sum":
        return exact[0].astype(np.int64), sensitivities[0]
    assert node.bounds is not None
    low, high = node.bounds
    sums = exact[1] * measures[1].quantum
    means = np.clip((low + high) / 2 + sums / np.maximum(exact[0], 1), low, high)
    width = (high - low) or 1.0
    grid = np.floor((means - low) / width * 2**_MEAN_GRID_BITS).astype(np.int64)
    # A mean moves by at most U - L, i.e. 2**bits grid units, plus one for the floor.
    return grid, 2**_MEAN_GRID_BITS + 1


class DescribeFamily(Family[Describe]):
    """count, mean, std and quartiles per bounded column: one charge, parts in the node."""

    mechanism = "composite (variance + quartiles per column)"

    def release(self, run: Released[Describe]) -> tuple[Any, str]:
        """Release every part at its share, then assemble the table (post-processing)."""
        node = run.node
        parts = run.parts
        table = {}
        for i, (name, _, bounds) in enumerate(node.columns):
            var = run.part(parts[2 * i])
            quarts = run.part(parts[2 * i + 1])
            noisy = var.intervals.noisy
            low, high = bounds
            count = float(noisy[0][0])
            mean = float(np.clip((low + high) / 2 + noisy[1][0] / max(count, 1.0), low, high))
            # Sorting the released quartiles is free post-processing and keeps 25% <= 50% <= 75%.
            table[name] = [count, mean, float(var) ** 0.5, *sorted(quarts.tolist())]
        result: pd.DataFrame = pd.DataFrame(
            table, index=["count", "mean", "std", "25%", "50%", "75%"]
        )
        result.attrs["dpframe_budget_split"] = split_text(node)
        return result, f"{len(node.columns)} columns"


def split_text(node: Describe) -> str:
    """How describe() splits its request, in words."""
    n = len(node.columns)
    return f"{n} columns x (1/2 moments + 1/2 quartiles), each 1/{2 * n} of the request"
