"""Selection releases: the most frequent category and group argmax.

Each family's privacy map is computed from public inputs before the charge;
its release reads exact counts (or sums) from the backend and selects with
permute-and-flip (the exponential mechanism's report-noisy-max form).
Quantiles are in :mod:`dpframe.mechanisms.quantiles.quantile_family`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from dpframe.backends.base import Backend
from dpframe.errors import SchemaError
from dpframe.mechanisms.answers.winner import ChosenKey
from dpframe.mechanisms.core.allocation import NoiseAllocation, pure_epsilon
from dpframe.mechanisms.core.explanations import Explanation, explain_aggregate, plain_number
from dpframe.mechanisms.core.family import Asked, Family, Released
from dpframe.mechanisms.core.work import PLAIN, Work
from dpframe.mechanisms.moments.aggregates import (
    MAX_CELLS,
    AggregateNoise,
    aggregate_noise,
    measures_for,
    release_aggregate,
)
from dpframe.mechanisms.selection.selection import permute_and_flip
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, GroupKey, unit_rows
from dpframe.plan.releases import ArgMax, Mode

__all__ = ["ArgMaxFamily", "ModeFamily", "winner_gap"]

_EM = "exponential mechanism (permute-and-flip)"
# Every ε-DP mechanism is ε²/2-zCDP. The tighter ε²/8 of bounded-range mechanisms needs
# utility changes of spread at most Δ, which not every use guarantees; stay safe.
_EM_ZCDP = Fraction(1, 2)


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


#: The probability that a selection's guarantee fails (the statement is "at 95%").
_BETA = 0.05


def winner_gap(epsilon: float, sensitivity: float, candidates: int, beta: float = _BETA) -> float:
    """How far below the best the chosen candidate's score can be, with probability 1 − β.

    Permute-and-flip (and the exponential mechanism) at ε with scores of
    sensitivity Δ over k candidates picks, with probability at least 1 − β, a
    candidate whose score is within (2Δ/ε)·ln(k/β) of the largest (McKenna &
    Sheldon 2020, Thm 2; Dwork & Roth 2014, Thm 3.11).  Public inputs only.
    """
    return 2 * sensitivity / epsilon * math.log(max(candidates, 1) / beta)


def _winner_headline(what: str, gap: float, candidates: int) -> str:
    return (
        f"a key whose {what} is within {plain_number(gap)} of the largest {what} at 95% "
        f"(among {candidates:,} declared keys; the key alone is released, not its {what})"
    )


class ModeFamily(Family[Mode]):
    """The most frequent declared category: permute-and-flip on the counts (sensitivity 1)."""

    node_type = Mode

    mechanism = _EM

    def work(self, node: Mode) -> Work:
        """One evaluation; a utility per declared key (its cells)."""
        return PLAIN

    def privacy_map(self, node: Mode, allocation: NoiseAllocation) -> None:
        """Checks the number of candidates."""
        _key_index((node.group,))

    def result_types(self) -> tuple[type, ...]:
        """``mode()``'s Series carries how sure its key is (a :class:`ChosenKey`)."""
        return (ChosenKey,)

    def explain(self, node: Mode, asked: Asked) -> Explanation:
        """How sure the winner is: its count's gap to the largest, at 95% (no data read)."""
        candidates = len(_key_index((node.group,)))
        eps = float(pure_epsilon(asked.allocation, _EM_ZCDP))
        gap = winner_gap(eps, unit_rows(node.plan), candidates)
        headline = _winner_headline("count", gap, candidates)
        return dataclasses.replace(asked.cost_only(node.label), headline=headline)

    def release(self, run: Released[Mode]) -> tuple[Any, str]:
        """Exact counts per category, then one selection."""
        node = run.node
        counts = run.backend.compute(node.plan, (Measure("rows"),), (node.group,))[0]
        return _select(run, (node.group,), counts.astype(np.int64), unit_rows(node.plan))


class ArgMaxFamily(Family[ArgMax]):
    """The key whose count, sum or mean is largest; only the key is released.

    Privacy:
        count and sum: ε-DP by permute-and-flip on the exact per-key values
        (sensitivity 1 row, or the sum's clamped range, times the unit's row
        limit).  mean: the noisy per-key means of :func:`release_aggregate`
        (a noisy count and a noisy centred sum per key, the mean mechanism's
        privacy, over disjoint keys), of which only the argmax is shown: the
        choice is post-processing.

    Accuracy:
        count and sum: with probability 1 − β the chosen key's value is within
        (2Δ/ε)·ln(k/β) of the largest, for k keys.  mean: each key's mean has the
        error of ``groupby(...).mean(epsilon)`` (about (U − L)/(ε·n_key) for a key
        of n_key rows), so keys whose means differ by more than a few of those
        are told apart; a selection over means with the worst-case sensitivity
        U − L (as before) could not tell 654 from 615 at ε = 10^4.
    """

    node_type = ArgMax

    mechanism = _EM

    def work(self, node: ArgMax) -> Work:
        """One evaluation; a utility per declared key (its cells)."""
        return PLAIN

    def mechanism_of(self, node: ArgMax, allocation: NoiseAllocation) -> str:
        """Permute-and-flip for count and sum; noisy means for mean."""
        if node.agg == "mean":
            noise = "discrete Laplace" if allocation.kind == "laplace" else "discrete Gaussian"
            return f"noisy means ({noise} count and sum per key), then argmax"
        return _EM

    def privacy_map(self, node: ArgMax, allocation: NoiseAllocation) -> AggregateNoise | None:
        """Checks the number of candidates; for a mean, the noisy means' privacy map."""
        _key_index(node.keys)
        if node.agg == "mean":
            return aggregate_noise(_means(node), allocation)
        return None

    def explain(self, node: ArgMax, asked: Asked) -> Explanation:
        """How sure the winner is (count, sum), or each key's mean noise (mean); no data read."""
        candidates = len(_key_index(node.keys))
        if node.agg == "mean":
            told = explain_aggregate(_means(node), asked)
            headline = f"the key of the largest noisy mean; each mean {told.headline}"
            return dataclasses.replace(told, query=node.label, headline=headline)
        if node.agg == "count":
            sensitivity: float = unit_rows(node.plan)
        else:
            query = Aggregate(node.plan, node.agg, node.expr, node.bounds, node.keys, node.label)
            measures, found = measures_for(query)
            sensitivity = float(found[0]) * measures[0].quantum  # in the column's units
        eps = float(pure_epsilon(asked.allocation, _EM_ZCDP))
        gap = winner_gap(eps, sensitivity, candidates)
        headline = _winner_headline(node.agg, gap, candidates)
        return dataclasses.replace(asked.cost_only(node.label), headline=headline)

    def release(self, run: Released[ArgMax]) -> tuple[Any, str]:
        """Exact utilities per key and one selection, or the argmax of the noisy means."""
        node = run.node
        if node.agg == "mean":
            query = _means(node)
            planned: AggregateNoise = run.noise
            exact = run.backend.compute(node.plan, planned.measures, node.keys)
            means = release_aggregate(query, exact, run.allocation, run.rng, planned).values
            chosen: Hashable = _key_index(node.keys)[int(np.argmax(means))]
            return chosen, repr(chosen)
        utilities, sensitivity = _argmax_utilities(node, run.backend)
        return _select(run, node.keys, utilities, sensitivity)


def _means(node: ArgMax) -> Aggregate:
    """The grouped mean whose noisy values an argmax over means compares."""
    return Aggregate(node.plan, "mean", node.expr, node.bounds, node.keys, node.label, node.privacy)


def _argmax_utilities(node: ArgMax, backend: Backend) -> tuple[np.ndarray, int]:
    plan, keys, expr = node.plan, node.keys, node.expr
    if node.agg == "count":
        measure = Measure("rows") if expr is None else Measure("nonnull", expr)
        counts = backend.compute(plan, (measure,), keys)[0].astype(np.int64)
        return counts, unit_rows(plan)
    query = Aggregate(plan, node.agg, expr, node.bounds, keys, node.label)
    measures, sensitivities = measures_for(query)
    exact = backend.compute(plan, measures, keys)
    return exact[0].astype(np.int64), sensitivities[0]
