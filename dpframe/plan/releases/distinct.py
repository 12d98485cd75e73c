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
from fractions import Fraction

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.nodes import Aggregate, GroupKey
from dpframe.plan.releases.base import ReleaseNode, scaled
from dpframe.plan.releases.summaries import Describe
from dpframe.plan.schema import Schema, keys_fit

__all__ = ["DistinctCount", "FrameDistinct"]

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
        keys_fit(self.by, schema)  # a key over no column was charged, then failed (the fuzzer)


@dataclass(frozen=True, eq=False, kw_only=True)
class FrameDistinct(ReleaseNode):
    """``pf.nunique()``: every column's distinct count, in one charge split evenly over columns.

    The columns with public keys share one :class:`Describe` histogram part
    (its unique counts: the keys whose noisy count clears the noise); each
    other column is a :class:`DistinctCount` part.  ``columns`` is the
    result's order.
    """

    columns: tuple[str, ...]
    keyed: tuple[GroupKey, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.columns:
            raise SchemaError("nunique() needs at least one column.")
        names = {key.name for key in self.keyed}
        if not names <= set(self.columns):
            raise SchemaError("nunique(): every keyed column is one of the columns.")

    def _what(self) -> str:
        return f"nunique({', '.join(self.columns)})"

    def keyless(self) -> tuple[str, ...]:
        """The columns counted by a distinct count of their own."""
        names = {key.name for key in self.keyed}
        return tuple(c for c in self.columns if c not in names)

    def parts(self) -> tuple[Aggregate | ReleaseNode, ...]:
        """The keyed columns' histogram part, then one distinct count per other column."""
        share = Fraction(1, len(self.columns))
        found: list[Aggregate | ReleaseNode] = []
        if self.keyed:
            part = share * len(self.keyed)
            privacy = scaled(self.privacy, part, self.privacy.delta * part)
            found.append(
                Describe(plan=self.plan, privacy=privacy, columns=(), categorical=self.keyed)
            )
        for column in self.keyless():
            privacy = scaled(self.privacy, share, self.privacy.delta * share)
            found.append(DistinctCount(plan=self.plan, privacy=privacy, column=column))
        return tuple(found)

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return tuple(Col(c) for c in self.columns)

    def check(self, schema: Schema) -> None:  # noqa: D102
        for column in self.columns:
            schema.get(column)
        keys_fit(self.keyed, schema)
