"""Releases that find what is there: sparse vector, key discovery, discovery then aggregate."""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction

from dpframe.errors import InvalidArgumentError, SchemaError
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.nodes import Aggregate, GroupKey, Statistic, describe_plan
from dpframe.plan.releases.base import Bounds, ReleaseNode, scaled
from dpframe.plan.schema import Schema, check_node_bounds, infer_column, value_fits

_HALF = Fraction(1, 2)


@dataclass(frozen=True, eq=False, kw_only=True)
class SparseVector(ReleaseNode):
    """Which row conditions hold for more than ``threshold`` rows (sparse vector technique)."""

    conditions: tuple[tuple[str, Expr], ...]
    threshold: float
    max_hits: int = 1
    numeric: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.conditions:
            raise SchemaError("above_threshold() needs at least one query.")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)):
            raise SchemaError("threshold must be a number.")
        if not math.isfinite(self.threshold):
            raise SchemaError("threshold must be a finite number.")
        if abs(self.threshold) >= 2**53:
            raise SchemaError("threshold must be below 2**53 in absolute value.")
        if isinstance(self.max_hits, bool) or not isinstance(self.max_hits, int):
            raise SchemaError("max_hits must be an integer >= 1.")
        if self.max_hits < 1:
            raise SchemaError("max_hits must be an integer >= 1.")

    def _what(self) -> str:
        return (
            f"above_threshold({len(self.conditions)} queries, threshold={self.threshold:g}, "
            f"max_hits={self.max_hits}{', numeric' if self.numeric else ''})"
        )

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return tuple(expr for _, expr in self.conditions)

    def cells(self) -> int:  # noqa: D102
        return len(self.conditions)

    def check(self, schema: Schema) -> None:  # noqa: D102
        for name, expr in self.conditions:
            if infer_column(name, expr, schema).kind != "boolean":
                raise SchemaError(
                    f"Query {name!r} is not a row condition (comparison, isin, &, |, ~)."
                )


@dataclass(frozen=True, eq=False, kw_only=True)
class DiscoverKeys(ReleaseNode):
    """Noisy counts of the keys of ``column`` that clear a private threshold (needs δ > 0)."""

    column: str

    def _what(self) -> str:
        return f"discover keys of {self.column}"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (Col(self.column),)

    def check(self, schema: Schema) -> None:  # noqa: D102
        schema.get(self.column)


@dataclass(frozen=True, eq=False, kw_only=True)
class DiscoverThenAggregate(ReleaseNode):
    """A group-by over keys found privately: discovery, then an aggregate over the keys found.

    The split is part of the node: ``weights[0]`` of ε (or ρ) and all of δ
    discover the keys, ``weights[1]`` of ε (or ρ) releases the aggregate.
    """

    column: str
    statistic: Statistic
    value: Expr | None = None
    bounds: Bounds | None = None
    weights: tuple[Fraction, Fraction] = (_HALF, _HALF)

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.weights) != 2 or sum(self.weights) != 1 or min(self.weights) <= 0:
            raise InvalidArgumentError("weights must be two positive fractions adding to 1.")
        if self.statistic != "count" and self.value is None:
            raise SchemaError(f"Select a column first: grouped['column'].{self.statistic}(...).")
        if self.statistic != "count":
            check_node_bounds(self.bounds, f"{self.statistic}()")

    def _what(self) -> str:
        what = "" if self.value is None else str(self.value)
        return f"{self.statistic}({what}) by {self.column}, keys discovered privately"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (Col(self.column), self.value)

    def check(self, schema: Schema) -> None:  # noqa: D102
        schema.get(self.column)
        if self.value is not None:
            value_fits(self.value, schema, self.statistic)

    def parts(self) -> tuple[Aggregate | ReleaseNode, ...]:
        """The discovery, and the aggregate with no keys yet (they come from the discovery)."""
        discover = DiscoverKeys(
            plan=self.plan,
            privacy=scaled(self.privacy, self.weights[0], self.privacy.delta),
            column=self.column,
        )
        return (discover, self.aggregate(()))

    def templates(self) -> frozenset[int]:
        """The aggregate part gets its keys from the discovery."""
        return frozenset({1})

    def aggregate(self, keys: tuple[Hashable, ...]) -> Aggregate:
        """The aggregate part over ``keys`` (found by the discovery part)."""
        from dpframe.plan.expressions import Col

        by = (GroupKey(self.column, Col(self.column), keys),)
        what = "count()" if self.value is None else f"{self.statistic}({self.value})"
        label = f"{what} by {self.column}{describe_plan(self.plan)}"
        privacy = scaled(self.privacy, self.weights[1], Fraction(0))
        expr = self.value
        return Aggregate(self.plan, self.statistic, expr, self.bounds, by, label, privacy)
