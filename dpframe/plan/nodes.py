"""Query plans: immutable trees of frozen dataclasses.

A plan is the non-private part of a query: a source, then filters and
derived columns.  An :class:`Aggregate` puts a statistic on top, with the
public clamping bounds and group keys it needs, so the whole query can be
validated, costed and serialized before any data is read.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from dpframe.accounting.budget import PrivacyRequest
from dpframe.plan.expressions import Expr

__all__ = [
    "Aggregate",
    "Assign",
    "Filter",
    "GroupKey",
    "Plan",
    "Source",
    "Statistic",
    "lineage",
    "unit_rows",
]

Statistic = Literal["count", "sum", "mean", "var", "std"]


@dataclass(frozen=True)
class Source:
    """The rows of one registered dataset, identified by its fingerprint.

    ``unit_rows`` is the most rows one privacy unit can contribute (1 when
    each row is a person); every sensitivity is multiplied by it.  ``view``
    names a contribution-bounded copy of the dataset (empty: the data as
    loaded); the budget is always charged to ``dataset``.  ``unit_column``
    and ``unit_groups`` (0: no limit beyond ``unit_rows``) bound how many
    keys one unit may add when keys are discovered privately.
    """

    dataset: str
    unit_rows: int = 1
    view: str = ""
    unit_column: str = ""
    unit_groups: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "node": "source",
            "dataset": self.dataset,
            "unit_rows": self.unit_rows,
            "view": self.view,
            "unit_column": self.unit_column,
            "unit_groups": self.unit_groups,
        }


@dataclass(frozen=True)
class Filter:
    """Keep the rows where ``predicate`` is true (missing counts as false)."""

    child: Plan
    predicate: Expr

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "node": "filter",
            "child": self.child.to_dict(),
            "predicate": self.predicate.to_dict(),
        }


@dataclass(frozen=True)
class Assign:
    """Add (or replace) the column ``name`` computed row by row from ``expr``."""

    child: Plan
    name: str
    expr: Expr

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "node": "assign",
            "child": self.child.to_dict(),
            "name": self.name,
            "expr": self.expr.to_dict(),
        }


Plan: TypeAlias = Source | Filter | Assign


def unit_rows(plan: Plan) -> int:
    """The most rows one privacy unit contributes to ``plan`` (the sensitivity multiplier)."""
    return lineage(plan)[0].unit_rows


def lineage(plan: Plan) -> tuple[Source, tuple[Filter | Assign, ...]]:
    """The source and the steps applied to it, in order."""
    steps: list[Filter | Assign] = []
    node: Plan = plan
    while not isinstance(node, Source):
        steps.append(node)
        node = node.child
    return node, tuple(reversed(steps))


@dataclass(frozen=True)
class GroupKey:
    """A group-by key: an expression and its declared (public) categories."""

    name: str
    expr: Expr
    categories: tuple[Hashable, ...]


@dataclass(frozen=True)
class Aggregate:
    """A statistic of a plan, optionally per group of public keys.

    Attributes:
        plan: the rows to aggregate.
        statistic: count, sum, mean, var or std.
        expr: the value expression (None for a row count).
        bounds: the public clamping bounds of ``expr`` (None for a row count).
        by: group keys; empty for a scalar release.
        label: a human-readable description for the ledger.
        privacy: the privacy cost requested (None: a query used inside another
            release, e.g. argmax's utilities, never released on its own).
    """

    plan: Plan
    statistic: Statistic
    expr: Expr | None
    bounds: tuple[float, float] | None
    by: tuple[GroupKey, ...]
    label: str
    privacy: PrivacyRequest | None = None

    @property
    def n_groups(self) -> int:
        """Number of cells released (product of key cardinalities)."""
        size = 1
        for key in self.by:
            size *= len(key.categories)
        return size
