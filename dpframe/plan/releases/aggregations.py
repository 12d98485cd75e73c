"""Several aggregates in one call (pandas' ``agg``), released in one charge."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import Aggregate, GroupKey, describe_plan
from dpframe.plan.releases.base import QUANTILE_BINS, ReleaseNode, scaled
from dpframe.plan.releases.selection import Quantile
from dpframe.plan.schema import Schema, check_node_bounds, keys_fit, numeric, value_fits

__all__ = ["AGGREGATES", "Agg", "AggCell", "Layout"]

#: The aggregate names ``agg`` accepts (pandas' names); ``median`` is a quantile.
AGGREGATES = ("count", "sum", "mean", "var", "std", "median")

Statistic = Literal["count", "sum", "mean", "var", "std", "median"]
#: One cell: (column label, expression, statistic, clamping bounds or None).
AggCell = tuple[str, Expr, Statistic, tuple[float, float] | None]
#: The result's shape, as pandas gives it:
#: ``column``  ungrouped, one column, a list     -> Series indexed by aggregate;
#: ``row``     ungrouped, frame, one name        -> Series indexed by column;
#: ``table``   ungrouped, a dict                 -> DataFrame aggregates x columns;
#: ``grouped_column`` grouped, one column, list  -> DataFrame keys x aggregates;
#: ``grouped_table``  grouped, dict with a list  -> DataFrame keys x (column, aggregate);
#: ``grouped_flat``   grouped, dict of names     -> DataFrame keys x columns.
Layout = Literal["column", "row", "table", "grouped_column", "grouped_table", "grouped_flat"]


@dataclass(frozen=True, eq=False, kw_only=True)
class Agg(ReleaseNode):
    """Aggregates of one or more columns, overall or per group of public keys, in one charge.

    Each (column, aggregate) cell is a part released with its share of the
    request: ``weights[i] / sum(weights)`` of ε (or ρ) and of δ, so the parts
    compose back to exactly the request (sequential composition; per group,
    the cells of one part are disjoint).
    """

    asked: tuple[AggCell, ...]
    by: tuple[GroupKey, ...] = ()
    weights: tuple[int, ...] = ()
    layout: Layout = "table"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.asked:
            raise SchemaError("agg() needs at least one (column, aggregate).")
        if len({(c[0], c[2]) for c in self.asked}) != len(self.asked):
            raise SchemaError("agg() asks for the same (column, aggregate) twice.")
        for label, _, statistic, bounds in self.asked:
            if statistic not in AGGREGATES:
                raise SchemaError(
                    f"agg(): unknown aggregate {statistic!r} for {label!r}; "
                    f"use one of {', '.join(AGGREGATES)}."
                )
            if statistic != "count":
                if bounds is None:
                    raise SchemaError(
                        f"agg(): {statistic} of {label!r} needs public bounds "
                        "(declare bounds={...} when loading, or with_bounds)."
                    )
                check_node_bounds(bounds, f"agg() {statistic} of {label!r}")
            if statistic == "median" and self.by:
                raise SchemaError(
                    "agg(): a median per group is not available yet; take the median of "
                    "each group's filtered frame, pf[pf[key] == k][column].median(epsilon=...)."
                )
        weights = self.weights or (1,) * len(self.asked)
        if len(weights) != len(self.asked) or not all(
            isinstance(w, int) and not isinstance(w, bool) and w > 0 for w in weights
        ):
            raise SchemaError(
                f"agg(): weights= needs {len(self.asked)} positive integers, one per "
                "(column, aggregate), in order."
            )
        object.__setattr__(self, "weights", tuple(weights))
        grouped = self.layout.startswith("grouped")
        if grouped != bool(self.by):
            raise SchemaError("agg(): a grouped layout needs group keys, and only it does.")

    def _what(self) -> str:
        shown = ", ".join(f"{s}({label})" for label, _, s, _ in self.asked)
        by = f" by {', '.join(k.name for k in self.by)}" if self.by else ""
        return f"agg({shown}){by}"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return tuple(expr for _, expr, _, _ in self.asked) + tuple(k.expr for k in self.by)

    def cells(self) -> int:
        """Output cells: one per (column, aggregate) and group; a median's candidates."""
        groups = 1
        for key in self.by:
            groups *= len(key.categories) if key.categories else 1
        medians = sum(1 for c in self.asked if c[2] == "median")
        return len(self.asked) * groups + medians * QUANTILE_BINS

    def check(self, schema: Schema) -> None:  # noqa: D102
        keys_fit(self.by, schema)
        for _, expr, statistic, _ in self.asked:
            if statistic == "count":
                value_fits(expr, schema, "count")
            else:
                numeric(expr, schema, statistic)

    def share(self, index: int) -> Fraction:
        """Part ``index``'s share of the request."""
        return Fraction(self.weights[index], sum(self.weights))

    def parts(self) -> tuple[Aggregate | ReleaseNode, ...]:
        """One part per cell, with its share of the request."""
        found: list[Aggregate | ReleaseNode] = []
        for i, (label, expr, statistic, bounds) in enumerate(self.asked):
            share = self.share(i)
            privacy = scaled(self.privacy, share, self.privacy.delta * share)
            if statistic == "median":
                assert bounds is not None
                found.append(
                    Quantile(
                        plan=self.plan,
                        privacy=privacy,
                        expr=expr,
                        bounds=bounds,
                        levels=(Fraction(1, 2),),
                    )
                )
                continue
            by = f" by {', '.join(k.name for k in self.by)}" if self.by else ""
            name = f"{statistic}({label}){by}{describe_plan(self.plan)}"
            found.append(Aggregate(self.plan, statistic, expr, bounds, self.by, name, privacy))
        return tuple(found)
