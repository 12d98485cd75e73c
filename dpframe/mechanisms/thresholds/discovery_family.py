"""Thresholded releases: the sparse vector technique and private key discovery.

Each family's privacy map checks its parameters from public inputs before
the charge; :class:`DiscoverThenAggregateFamily` is a composite (keys found
with part of the budget, then an aggregate over them, one charge).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from dpframe.mechanisms.answers.results import GroupedRelease, NoInterval, grouped_series
from dpframe.mechanisms.core.allocation import NoiseAllocation, pure_epsilon
from dpframe.mechanisms.core.family import Family, Released
from dpframe.mechanisms.core.work import Units, Work
from dpframe.mechanisms.thresholds.partition_selection import (
    check_partition_parameters,
    select_partitions,
)
from dpframe.mechanisms.thresholds.sparse_vector import check_sparse_vector, sparse_vector
from dpframe.plan.expressions import Col
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Filter, lineage, unit_rows
from dpframe.plan.releases import DiscoverKeys, DiscoverThenAggregate, SparseVector

__all__ = [
    "DISCOVERY_NOTE",
    "DiscoverKeysFamily",
    "DiscoverThenAggregateFamily",
    "SparseVectorFamily",
    "discovery_note",
    "discovery_notes",
]

_PURE_ZCDP = Fraction(1, 2)  # every ε-DP mechanism is ε²/2-zCDP
_DISCOVERY_REASON = (
    "Counts of discovered keys passed a threshold on the same noise, so an interval "
    "for them would be biased; declare the keys (with_categories) and count again."
)
#: How every note of a release over privately found keys begins (the facade's warning finds it).
DISCOVERY_NOTE = "keys found privately"
#: The note of discovered counts' missing interval (said once, with the release).
_NO_INTERVAL_NOTE = (
    "counts without an interval: a key is shown only when its noisy count passed the "
    "threshold, so an interval would be biased"
)


def discovery_notes(notes: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The notes among ``notes`` that a release over privately found keys carries."""
    return tuple(
        note
        for note in notes
        if isinstance(note, str) and (note.startswith(DISCOVERY_NOTE) or note == _NO_INTERVAL_NOTE)
    )


def discovery_note(column: str, threshold: int) -> str:
    """The note of a release over keys of ``column`` found privately (public values only).

    ``threshold`` is the public bar a noisy count must reach (from ε, δ and the
    privacy unit alone): a key with fewer rows is left out, and so are its rows.
    """
    rows = "row" if threshold == 1 else "rows"
    return (
        f"{DISCOVERY_NOTE} ({column!r} has no declared keys): a key with fewer than about "
        f"{threshold:,} {rows} is not shown, and its rows are in no group"
    )


class SparseVectorFamily(Family[SparseVector]):
    """Lyu, Su, Li 2017, Alg. 1: ε in total however many conditions are asked."""

    node_type = SparseVector

    def work(self, node: SparseVector) -> Work:
        """The plan is evaluated again for each query."""
        return Work(evaluations=len(node.conditions))  # the plan again for each query

    def mechanism_of(self, node: SparseVector, allocation: NoiseAllocation) -> str:
        """``sparse vector`` (or its numeric variant)."""
        return "sparse vector (numeric)" if node.numeric else "sparse vector"

    def privacy_map(self, node: SparseVector, allocation: NoiseAllocation) -> Fraction:
        """The ε of the Δ=1 mechanism: a unit of k rows moves counts by k, so ε/k."""
        epsilon = pure_epsilon(allocation, _PURE_ZCDP) / unit_rows(node.plan)
        check_sparse_vector(epsilon, node.max_hits, node.numeric)
        return epsilon

    def release(self, run: Released[SparseVector]) -> tuple[Any, str]:
        """Exact counts of every condition, then the sparse vector."""
        node = run.node
        counts = np.array(
            [
                int(run.backend.compute(Filter(node.plan, expr), (Measure("rows"),), ())[0][0])
                for _, expr in node.conditions
            ],
            dtype=np.int64,
        )
        result = sparse_vector(
            counts, float(node.threshold), run.noise, node.max_hits, run.rng, numeric=node.numeric
        )
        names = [node.conditions[i][0] for i in result.hits]
        if not node.numeric:
            return names, repr(names)
        assert result.answers is not None
        answers = pd.Series(list(result.answers), index=pd.Index(names, dtype=object), name="count")
        return answers, repr(names)


class DiscoverKeysFamily(Family[DiscoverKeys]):
    """Noisy counts per key above a threshold (Korolova et al. 2009; needs δ > 0)."""

    node_type = DiscoverKeys

    mechanism = "partition selection"
    mechanism_delta = True

    def work(self, node: DiscoverKeys) -> Work:
        """A key per row at most, each counted, noised and thresholded."""
        return Work(per_row=Units(keys=1))

    def privacy_map(self, node: DiscoverKeys, allocation: NoiseAllocation) -> Fraction:
        """The pure ε; checks (ε/k, δ/g) for a unit of k rows in at most g keys."""
        source = lineage(node.plan)[0]
        rows, groups = source.unit_rows, max(source.unit_groups, 1)
        epsilon = pure_epsilon(allocation, _PURE_ZCDP)
        check_partition_parameters(epsilon / rows, node.privacy.delta / groups)
        return epsilon

    def release(self, run: Released[DiscoverKeys]) -> tuple[Any, str]:
        """Exact counts per present key, noise, threshold; sorted keys with their counts."""
        node = run.node
        source = lineage(node.plan)[0]
        rows, groups = source.unit_rows, max(source.unit_groups, 1)
        keys, counts = run.backend.key_counts(
            node.plan,
            Col(node.column),
            source.unit_column,
            source.unit_groups if rows > 1 else 0,
            run.rng,
        )
        # A unit moves the counts by at most `rows` in total (L1), so noise of scale
        # rows/ε; it can add at most `groups` new keys, each with a count of at most
        # `rows`, so each must clear a threshold that such a key passes w.p. δ/groups.
        selection = select_partitions(
            counts, run.noise / rows, node.privacy.delta / groups, run.rng
        )
        threshold = selection.threshold + rows - 1  # public: from ε, δ and the unit alone
        passed = selection.noisy_counts >= threshold
        kept = [keys[i] for i in selection.kept[passed]]
        noisy = np.asarray(selection.noisy_counts, dtype=np.float64)[passed]
        order = sorted(range(len(kept)), key=lambda i: (str(type(kept[i])), kept[i]))
        index = pd.Index([kept[i] for i in order], dtype=object, name=node.column)
        meta = GroupedRelease(
            index,
            run.cost,
            "discrete Laplace + threshold",
            np.full(len(order), selection.scale),
            node.label,
            NoInterval(_DISCOVERY_REASON),
            run.rho,
            notes=(discovery_note(node.column, threshold), _NO_INTERVAL_NOTE),
        )
        return grouped_series(noisy[order], meta, "count"), f"{len(order)} keys"


class DiscoverThenAggregateFamily(Family[DiscoverThenAggregate]):
    """A group-by over privately found keys: discovery, then the aggregate (one charge)."""

    node_type = DiscoverThenAggregate

    mechanism = "partition selection, then an aggregate"
    mechanism_delta = True

    def work(self, node: DiscoverThenAggregate) -> Work:
        """A key per row at most (its parts, the discovery and the aggregate, add theirs)."""
        return Work(per_row=Units(keys=1))

    def release(self, run: Released[DiscoverThenAggregate]) -> tuple[Any, str]:
        """Discover the keys with the first part, then aggregate over them.

        The result's notes say first that its keys were found privately (the
        discovery's public threshold), then the aggregate's own.
        """
        node = run.node
        counts = run.part(run.parts[0])
        keys = tuple(counts.index)
        found = getattr(counts.attrs.get("dpframe"), "notes", ())
        discovered = tuple(note for note in found if note.startswith(DISCOVERY_NOTE))
        if not keys:  # nothing passed the threshold: an empty release that says why
            meta = GroupedRelease(
                pd.Index([], dtype=object, name=node.column),
                run.cost,
                f"partition selection, then {node.statistic}",
                np.zeros(0),
                node.label,
                NoInterval("No key passed the discovery's threshold: there is no value."),
                run.rho,
                notes=discovered,
            )
            return grouped_series(np.zeros(0), meta, node.statistic), "0 keys"
        result = run.part(node.aggregate(keys))
        meta = result.attrs.get("dpframe")
        if isinstance(meta, GroupedRelease):  # the release's cost is the whole charge
            result.attrs["dpframe"] = dataclasses.replace(
                meta,
                cost=run.cost,
                rho=run.rho,
                query=node.label,
                mechanism=f"partition selection, then {meta.mechanism}",
                notes=discovered + meta.notes,
            )
        return result, f"{len(keys)} keys"
