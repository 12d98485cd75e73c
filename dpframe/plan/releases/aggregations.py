"""Several aggregates in one call (pandas' ``agg``), released in one charge."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import Aggregate, GroupKey, describe_plan
from dpframe.plan.releases.base import QUANTILE_BINS, ReleaseNode, scaled
from dpframe.plan.releases.selection import GroupedQuantile, Quantile, check_candidates
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
    the cells of one part are disjoint).  A median is a :class:`Quantile`
    (per group: a :class:`GroupedQuantile`) whose public candidates are
    ``candidates[i]`` (``()``: the default grid; empty ``candidates``: all default).
    """

    asked: tuple[AggCell, ...]
    by: tuple[GroupKey, ...] = ()
    weights: tuple[int, ...] = ()
    layout: Layout = "table"
    candidates: tuple[tuple[float, ...], ...] = ()

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
        if self.candidates:
            if len(self.candidates) != len(self.asked):
                raise SchemaError("agg(): candidates needs one entry per (column, aggregate).")
            for (label, _, statistic, bounds), chosen in zip(
                self.asked, self.candidates, strict=True
            ):
                if chosen and (statistic != "median" or bounds is None):
                    raise SchemaError(f"agg(): only a median takes candidates ({label!r}).")
                if chosen and bounds is not None:
                    check_candidates(chosen, bounds, f"agg() median of {label!r}")
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
        """Output cells: one per (column, aggregate) and group; a median's candidates per group."""
        groups = 1
        for key in self.by:
            groups *= len(key.categories) if key.categories else 1
        histogram = 0
        for i, cell in enumerate(self.asked):
            if cell[2] == "median":
                chosen = self.candidates[i] if self.candidates else ()
                histogram += groups * (len(chosen) + 1 if chosen else QUANTILE_BINS + 1)
        return len(self.asked) * groups + histogram

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
                chosen = self.candidates[i] if self.candidates else ()
                median: Quantile | GroupedQuantile
                if self.by:
                    median = GroupedQuantile(
                        plan=self.plan,
                        privacy=privacy,
                        expr=expr,
                        bounds=bounds,
                        levels=(Fraction(1, 2),),
                        by=self.by,
                        candidates=chosen,
                    )
                else:
                    median = Quantile(
                        plan=self.plan,
                        privacy=privacy,
                        expr=expr,
                        bounds=bounds,
                        levels=(Fraction(1, 2),),
                        candidates=chosen,
                    )
                found.append(median)
                continue
            by = f" by {', '.join(k.name for k in self.by)}" if self.by else ""
            name = f"{statistic}({label}){by}{describe_plan(self.plan)}"
            found.append(Aggregate(self.plan, statistic, expr, bounds, self.by, name, privacy))
        return tuple(found)
