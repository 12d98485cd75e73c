"""The number of distinct values of a column, overall or per group (``nunique``).

A column whose values are public keys has its distinct count from a
histogram (:mod:`dpframe.api.verbs.distinct`); this node counts the distinct
values of any column, keys or not (an ID column), by one noisy count per
cell: adding or removing one privacy unit changes the count by at most the
unit's row limit (each of its rows brings at most one new value; 1 for the
unit's own ID column), and a grouped count by at most that limit in total.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.nodes import GroupKey
from dpframe.plan.releases.base import ReleaseNode
from dpframe.plan.schema import Schema

__all__ = ["DistinctCount"]

#: The most groups a grouped distinct count releases (one noisy count each).
MAX_DISTINCT_GROUPS = 10_000


@dataclass(frozen=True, eq=False, kw_only=True)
class DistinctCount(ReleaseNode):
    """The distinct non-missing values of ``column`` among the kept rows, per group of ``by``.

    ``by`` holds group keys with public keys (one noisy count per key
    combination); empty: one count.
    """

    column: str
    by: tuple[GroupKey, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        cells = 1
        for key in self.by:
            if not key.categories:
                raise SchemaError(f"nunique() per group needs the public keys of {key.name!r}.")
            cells *= len(key.categories)
        if cells > MAX_DISTINCT_GROUPS:
            raise SchemaError(
                f"nunique() per group would release {cells:,} counts, more than "
                f"{MAX_DISTINCT_GROUPS:,}: group by fewer keys."
            )

    def _what(self) -> str:
        by = f" by {', '.join(k.name for k in self.by)}" if self.by else ""
        return f"nunique({self.column}){by}"

    def cells(self) -> int:  # noqa: D102
        cells = 1
        for key in self.by:
            cells *= len(key.categories)
        return cells

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (Col(self.column), *(key.expr for key in self.by))

    def check(self, schema: Schema) -> None:  # noqa: D102
        schema.get(self.column)
