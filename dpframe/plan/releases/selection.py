"""Selection releases: quantiles (overall or per group), the most frequent category, argmax."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar, Literal

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import GroupKey
from dpframe.plan.releases.base import QUANTILE_BINS, Bounds, ReleaseNode
from dpframe.plan.schema import Schema, check_keys, check_node_bounds, keys_fit, numeric, value_fits

#: The most public candidates one quantile chooses among (the default grid's 4,097).
MAX_CANDIDATES = QUANTILE_BINS + 1


def check_candidates(candidates: object, bounds: Bounds, what: str) -> None:
    """Public quantile candidates: finite floats, strictly increasing, within the bounds.

    ``()`` means the default grid.  At most :data:`MAX_CANDIDATES`.
    """
    if not isinstance(candidates, tuple):
        raise SchemaError(f"{what}: candidates must be a tuple of numbers.")
    if not candidates:
        return
    if len(candidates) > MAX_CANDIDATES:
        raise SchemaError(
            f"{what}: at most {MAX_CANDIDATES:,} candidates, got {len(candidates):,}; "
            "choose fewer (the rank error grows with their number only as its logarithm)."
        )
    if not all(
        isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c)
        for c in candidates
    ):
        raise SchemaError(f"{what}: candidates must be finite numbers.")
    if any(b <= a for a, b in itertools.pairwise(candidates)):
        raise SchemaError(f"{what}: candidates must be sorted in increasing order, no repeats.")
    low, high = bounds
    if candidates[0] < low or candidates[-1] > high:
        raise SchemaError(
            f"{what}: candidates must lie within the column's bounds [{low:g}, {high:g}]; "
            "a value outside is never the answer (values are clamped to the bounds)."
        )


def _check_levels(levels: object, scalar: bool) -> None:
    if not isinstance(levels, tuple) or not levels:
        raise SchemaError("quantile() needs at least one level q in [0, 1].")
    if not all(isinstance(q, Fraction) and 0 <= q <= 1 for q in levels):
        raise SchemaError("Quantile levels must be exact numbers in [0, 1].")
    if scalar and len(levels) != 1:
        raise SchemaError("A scalar quantile has exactly one level.")


def _shown(node: Quantile | GroupedQuantile) -> str:
    levels = ", ".join(f"{float(q):g}" for q in node.levels)
    among = f", {len(node.candidates)} candidates" if node.candidates else ""
    return f"quantile({node.expr}, q=[{levels}]{among})"


@dataclass(frozen=True, eq=False, kw_only=True)
class Quantile(ReleaseNode):
    """Quantiles of a bounded column by the exponential mechanism (one or several levels q).

    ``candidates`` are the public values chosen among (``()``: the 4,097-point
    grid over the bounds).
    """

    expr: Expr
    bounds: Bounds
    levels: tuple[Fraction, ...]
    scalar: bool = True
    candidates: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        check_node_bounds(self.bounds, "quantile()")
        _check_levels(self.levels, self.scalar)
        check_candidates(self.candidates, self.bounds, "quantile()")

    def _what(self) -> str:
        return _shown(self)

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.expr,)

    def cells(self) -> int:
        """One utility per candidate bin and level (the histogram's bins, once per level)."""
        bins = len(self.candidates) + 1 if self.candidates else QUANTILE_BINS + 1
        return bins * len(self.levels)

    def check(self, schema: Schema) -> None:  # noqa: D102
        numeric(self.expr, schema, "quantile")


@dataclass(frozen=True, eq=False, kw_only=True)
class GroupedQuantile(ReleaseNode):
    """Quantiles of a bounded column in every group of declared keys, in one charge.

    One exponential-mechanism selection per group and level over the public
    ``candidates`` (``()``: the 4,097-point grid); the groups are disjoint,
    so each group's selections get the whole request (parallel composition),
    split evenly over the levels.
    """

    tag: ClassVar[str] = "grouped_quantile"  # its name on the wire

    expr: Expr
    bounds: Bounds
    levels: tuple[Fraction, ...]
    by: tuple[GroupKey, ...]
    scalar: bool = True
    candidates: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        check_node_bounds(self.bounds, "quantile()")
        _check_levels(self.levels, self.scalar)
        check_candidates(self.candidates, self.bounds, "quantile()")
        if not self.by or not all(k.categories for k in self.by):
            names = ", ".join(repr(k.name) for k in self.by if not k.categories)
            raise SchemaError(
                f"A quantile per group needs declared keys{' for ' + names if names else ''}: "
                "pass categories={...} when loading or pf.with_categories(...), or find "
                "them first with pf.discover_keys(column, epsilon=..., delta=...) and "
                "declare what it found."
            )
        for key in self.by:
            check_keys(key.name, key.categories)

    @property
    def n_groups(self) -> int:
        """The number of groups (declared key combinations)."""
        return math.prod(len(k.categories) for k in self.by)

    def _what(self) -> str:
        return f"{_shown(self)} by {', '.join(k.name for k in self.by)}"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.expr, *(k.expr for k in self.by))

    def cells(self) -> int:
        """One utility per group, candidate bin and level (the histogram, once per level)."""
        candidates = len(self.candidates) + 1 if self.candidates else QUANTILE_BINS + 1
        return self.n_groups * candidates * len(self.levels)

    def check(self, schema: Schema) -> None:  # noqa: D102
        keys_fit(self.by, schema)
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
