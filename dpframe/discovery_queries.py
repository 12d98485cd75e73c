"""Thresholded queries on private frames: the sparse vector technique and private key discovery.

Each function validates its arguments first, then hands one unit of work to
the session's release path (charge before any data is read).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dpframe.accounting.accountants import NoiseAllocation, pure_epsilon
from dpframe.accounting.budget import Budget, Number, to_fraction
from dpframe.backends.base import Backend, Measure
from dpframe.errors import SchemaError
from dpframe.frame import _to_expr, describe_plan
from dpframe.mechanisms.partition_selection import check_partition_parameters, select_partitions
from dpframe.mechanisms.sparse_vector import check_sparse_vector, sparse_vector
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.nodes import Filter, lineage, unit_rows
from dpframe.plan.schema import infer_column
from dpframe.release import GroupedRelease, NoInterval, grouped_series

if TYPE_CHECKING:
    from dpframe.frame import PrivateFrame

__all__ = ["above_threshold", "discover_keys", "discovered_counts"]

_PURE_ZCDP = Fraction(1, 2)  # every ε-DP mechanism is ε²/2-zCDP
Budget3 = tuple[Number | None, Number | None, Number | None]


def _named_conditions(frame: PrivateFrame, queries: object) -> list[tuple[str, Expr]]:
    if isinstance(queries, Mapping):
        items = [(str(name), cond) for name, cond in queries.items()]
    elif isinstance(queries, Sequence) and not isinstance(queries, (str, bytes)):
        items = [(str(_to_expr(cond, frame)), cond) for cond in queries]
    else:
        raise SchemaError(
            "above_threshold() needs a dict {name: condition} or a list of conditions."
        )
    if not items:
        raise SchemaError("above_threshold() needs at least one query.")
    named = []
    for name, cond in items:
        expr = _to_expr(cond, frame)
        if infer_column(name, expr, frame._schema).kind != "boolean":
            raise SchemaError(f"Query {name!r} is not a row condition (comparison, isin, &, |, ~).")
        named.append((name, expr))
    return named


def above_threshold(
    frame: PrivateFrame,
    queries: object,
    threshold: float,
    max_hits: int,
    numeric: bool,
    budget: Budget3,
) -> Any:
    """The names of the queries whose counts are found above ``threshold`` (sparse vector)."""
    named = _named_conditions(frame, queries)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise SchemaError("threshold must be a number.")
    if not math.isfinite(threshold):
        raise SchemaError("threshold must be a finite number.")
    if isinstance(max_hits, bool) or not isinstance(max_hits, int) or max_hits < 1:
        raise SchemaError("max_hits must be an integer >= 1.")
    label = (
        f"above_threshold({len(named)} queries, threshold={threshold:g}, max_hits={max_hits}"
        f"{', numeric' if numeric else ''}){describe_plan(frame._plan)}"
    )
    mechanism = "sparse vector (numeric)" if numeric else "sparse vector"

    def work(
        backend: Backend, allocation: NoiseAllocation, cost: Budget, rho: Fraction | None
    ) -> tuple[Any, str]:
        counts = np.array(
            [
                int(backend.compute(Filter(frame._plan, expr), (Measure("rows"),), ())[0][0])
                for _, expr in named
            ],
            dtype=np.int64,
        )
        # Counts move by up to k for a unit of k rows: running the Δ=1 mechanism at
        # ε/k is ε-DP for them (its noise scales are all proportional to 1/ε).
        epsilon = pure_epsilon(allocation, _PURE_ZCDP) / unit_rows(frame._plan)
        result = sparse_vector(
            counts, float(threshold), epsilon, max_hits, frame._session._rng, numeric=numeric
        )
        names = [named[i][0] for i in result.hits]
        if not numeric:
            return names, repr(names)
        assert result.answers is not None
        answers = pd.Series(list(result.answers), index=pd.Index(names, dtype=object), name="count")
        return answers, repr(names)

    def precheck(allocation: NoiseAllocation) -> None:
        epsilon = pure_epsilon(allocation, _PURE_ZCDP) / unit_rows(frame._plan)
        check_sparse_vector(epsilon, max_hits, numeric)

    return frame._session._run(
        label, lineage(frame._plan)[0], budget, mechanism, work, precheck=precheck
    )


def discovered_counts(frame: PrivateFrame, name: str, budget: Budget3) -> pd.Series:
    """Noisy counts of the keys of ``name`` that clear the partition-selection threshold."""
    info = frame._schema.get(name)
    source = lineage(frame._plan)[0]
    rows, groups = source.unit_rows, max(source.unit_groups, 1)
    expr = Col(name)
    label = f"discover keys of {name}{describe_plan(frame._plan)}"
    reason = (
        "Counts of discovered keys passed a threshold on the same noise, so an interval "
        "for them would be biased; declare the keys (with_categories) and count again."
    )

    def work(
        backend: Backend, allocation: NoiseAllocation, cost: Budget, rho: Fraction | None
    ) -> tuple[pd.Series, str]:
        rng = frame._session._rng
        keys, counts = backend.key_counts(
            frame._plan, expr, source.unit_column, source.unit_groups if rows > 1 else 0, rng
        )
        epsilon = pure_epsilon(allocation, _PURE_ZCDP)
        delta = to_fraction(budget[1], "delta")
        # A unit moves the counts by at most `rows` in total (L1), so noise of scale
        # rows/ε; it can add at most `groups` new keys, each with a count of at most
        # `rows`, so each must clear a threshold that such a key passes w.p. δ/groups.
        selection = select_partitions(counts, epsilon / rows, delta / groups, rng)
        passed = selection.noisy_counts >= selection.threshold + rows - 1
        kept = [keys[i] for i in selection.kept[passed]]
        noisy = np.asarray(selection.noisy_counts, dtype=np.float64)[passed]
        order = sorted(range(len(kept)), key=lambda i: (str(type(kept[i])), kept[i]))
        index = pd.Index([kept[i] for i in order], dtype=object, name=info.name)
        values = noisy[order]
        meta = GroupedRelease(
            index,
            cost,
            "discrete Laplace + threshold",
            np.full(len(order), selection.scale),
            label,
            NoInterval(reason),
            rho,
        )
        return grouped_series(values, meta, "count"), f"{len(order)} keys"

    def precheck(allocation: NoiseAllocation) -> None:
        delta = to_fraction(budget[1], "delta")
        check_partition_parameters(pure_epsilon(allocation, _PURE_ZCDP) / rows, delta / groups)

    return frame._session._run(
        label,
        lineage(frame._plan)[0],
        budget,
        "partition selection",
        work,
        mechanism_delta=True,
        precheck=precheck,
    )


def discover_keys(frame: PrivateFrame, name: str, budget: Budget3) -> list[Hashable]:
    """The keys of ``name`` released by private partition selection, in sorted order."""
    counts: Any = discovered_counts(frame, name, budget)
    if not isinstance(counts, pd.Series):
        return counts  # type: ignore[no-any-return]  # an Explanation, inside session.explain()
    return list(counts.index)


def _half(value: Number | None) -> Number | None:
    return None if value is None else to_fraction(value, "budget") / 2


def grouped_with_discovery(
    frame: PrivateFrame, name: str, statistic: str, column: str | None, budget: Budget3
) -> pd.Series:
    """A group-by over keys found privately: half the budget (and all of δ) finds them."""
    epsilon, delta, rho = budget
    if statistic == "count" and column is None:
        return discovered_counts(frame, name, budget)
    if frame._session._explaining:
        label = f"{statistic}({column or ''}) by {name}, keys discovered privately"
        return frame._session._explain_request(  # type: ignore[no-any-return]
            label, epsilon, delta, rho, mechanism_delta=True
        )
    frame._session._check_affordable(epsilon, delta, rho, mechanism_delta=True)
    keys = discover_keys(frame, name, (_half(epsilon), delta, _half(rho)))
    declared = frame.with_categories(**{name: keys}) if keys else None
    if declared is None:
        return pd.Series([], dtype=float, name=statistic, index=pd.Index([], name=name))
    grouped = declared.groupby(name)
    target = grouped if column is None else grouped[column]
    result: pd.Series = getattr(target, statistic)(epsilon=_half(epsilon), rho=_half(rho))
    return result
