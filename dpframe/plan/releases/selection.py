"""Selection releases: quantiles, the most frequent category, group argmax."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar, Literal

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import GroupKey
from dpframe.plan.releases.base import QUANTILE_BINS, Bounds, ReleaseNode
from dpframe.plan.schema import Schema, check_keys, check_node_bounds, keys_fit, numeric, value_fits


@dataclass(frozen=True, eq=False, kw_only=True)
class Quantile(ReleaseNode):
    """Quantiles of a bounded column by the exponential mechanism (one or several levels q)."""

    expr: Expr
    bounds: Bounds
    levels: tuple[Fraction, ...]
    scalar: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_node_bounds(self.bounds, "quantile()")
        if not self.levels:
            raise SchemaError("quantile() needs at least one level q in [0, 1].")
        if not all(isinstance(q, Fraction) and 0 <= q <= 1 for q in self.levels):
            raise SchemaError("Quantile levels must be exact numbers in [0, 1].")
        if self.scalar and len(self.levels) != 1:
            raise SchemaError("A scalar quantile has exactly one level.")

    def _what(self) -> str:
        shown = ", ".join(f"{float(q):g}" for q in self.levels)
        return f"quantile({self.expr}, q=[{shown}])"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.expr,)

    def cells(self) -> int:  # noqa: D102
        return QUANTILE_BINS + 1

    def check(self, schema: Schema) -> None:  # noqa: D102
        numeric(self.expr, schema, "quantile")


@dataclass(frozen=True, eq=False, kw_only=True)
class Mode(ReleaseNode):
    """The most frequent declared category (report noisy max); only the key is released."""

    group: GroupKey

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.group.categories:
            raise SchemaError(f"mode() needs the public categories of {self.group.name!r}.")
        check_keys(self.group.name, self.group.categories)

    def _what(self) -> str:
        return f"mode({self.group.expr})"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.group.expr,)

    def cells(self) -> int:  # noqa: D102
        return len(self.group.categories)

    def check(self, schema: Schema) -> None:  # noqa: D102
        keys_fit((self.group,), schema)


@dataclass(frozen=True, eq=False, kw_only=True)
class ArgMax(ReleaseNode):
    """The group of public keys whose count, sum or mean is largest; only the key is released."""

    tag: ClassVar[str] = "argmax"  # its name on the wire

    keys: tuple[GroupKey, ...]
    agg: Literal["count", "sum", "mean"]
    expr: Expr | None = None
    column: str | None = None
    bounds: Bounds | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.agg not in ("count", "sum", "mean"):
            raise SchemaError("argmax(agg=...) must be 'count', 'sum' or 'mean'.")
        if not self.keys or not all(k.categories for k in self.keys):
            raise SchemaError("argmax needs declared keys for every group-by column.")
        for key in self.keys:
            check_keys(key.name, key.categories)
        if self.agg != "count":
            if self.expr is None:
                raise SchemaError(
                    f"argmax('{self.agg}') needs a column: argmax('{self.agg}', column='...')."
                )
            check_node_bounds(self.bounds, f"argmax('{self.agg}')")

    def _what(self) -> str:
        by = ", ".join(k.name for k in self.keys)
        return f"argmax {self.agg}({self.column or ''}) by {by}"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.expr, *(k.expr for k in self.keys))

    def cells(self) -> int:  # noqa: D102
        return math.prod(len(k.categories) for k in self.keys)

    def check(self, schema: Schema) -> None:  # noqa: D102
        keys_fit(self.keys, schema)
        if self.expr is not None:
            what = "count" if self.agg == "count" else f"argmax('{self.agg}')"
            value_fits(self.expr, schema, what)
