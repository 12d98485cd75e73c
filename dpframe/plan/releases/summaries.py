"""Summaries released in one charge: describe, and suggested bounds (approx_bounds)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Bucket, Expr
from dpframe.plan.nodes import Aggregate, GroupKey, describe_plan
from dpframe.plan.releases.base import QUANTILE_BINS, Bounds, ReleaseNode, scaled
from dpframe.plan.releases.selection import Quantile
from dpframe.plan.schema import Schema, check_node_bounds, keys_fit, numeric

#: describe()'s variance: count, sum and squares around the bounds' midpoint in thirds
#: (no adaptive first pass).  describe reports the mean from the same sums; on the CPS
#: wages (bounds 0-5,000, 200 releases) every adaptive split measured made its mean
#: 1.2-2.5x worse for at most 7% on its std (see benchmarks/RESULTS.md).
DESCRIBE_MOMENT_WEIGHTS = (0, 1, 1, 1)


@dataclass(frozen=True, eq=False, kw_only=True)
class Describe(ReleaseNode):
    """count, mean, std and quartiles of bounded numeric columns, in one charge.

    The request is split evenly over the parts: per numeric column, one
    ``var`` aggregate (the moments) and one :class:`Quantile` (the three
    quartiles); per categorical column (``include="all"``), one count per
    declared key (one noisy histogram: count, unique, top and freq are
    post-processing of it).
    """

    columns: tuple[tuple[str, Expr, Bounds], ...]
    categorical: tuple[GroupKey, ...] = ()
    #: per numeric column, its quartiles' public candidates (``()``: the default grid;
    #: an integer column's integers, so that its quartiles are whole numbers).
    candidates: tuple[tuple[float, ...], ...] = ()
    #: the numeric columns declared not null (a value in every row): their count row
    #: shows one row count, combined from their variance releases' counts (free).
    not_null: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.candidates and len(self.candidates) != len(self.columns):
            raise SchemaError("describe(): one candidate list per numeric column.")
        if not set(self.not_null) <= {name for name, _, _ in self.columns}:
            raise SchemaError("describe(): not_null names only its numeric columns.")
        if not self.columns and not self.categorical:
            raise SchemaError(
                "describe() needs numeric columns with declared bounds (or, with "
                "include='all', columns with declared categories)."
            )
        for name, _, bounds in self.columns:
            check_node_bounds(bounds, f"describe() of {name!r}")
        for key in self.categorical:
            if not key.categories:
                raise SchemaError(f"describe() of {key.name!r} needs its declared categories.")

    @property
    def share(self) -> Fraction:
        """Each part's share of the request."""
        return Fraction(1, 2 * len(self.columns) + len(self.categorical))

    def _what(self) -> str:
        names = [name for name, _, _ in self.columns] + [k.name for k in self.categorical]
        return f"describe({', '.join(names)})"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return tuple(expr for _, expr, _ in self.columns) + tuple(k.expr for k in self.categorical)

    def cells(self) -> int:  # noqa: D102
        keys = sum(len(k.categories) for k in self.categorical)
        return len(self.columns) * (QUANTILE_BINS + 1) + keys

    def check(self, schema: Schema) -> None:  # noqa: D102
        for _, expr, _ in self.columns:
            numeric(expr, schema, "describe")
        keys_fit(self.categorical, schema)
        for name in self.not_null:  # a declaration of the data's schema, not the request's
            if name not in schema or not schema.get(name).not_null:
                raise SchemaError(
                    f"describe(): {name!r} is not declared not null in this frame's schema."
                )

    def parts(self) -> tuple[Aggregate | ReleaseNode, ...]:
        """The parts, in order: per numeric column a ``var`` and a quartiles :class:`Quantile`.

        Then per categorical column its histogram over the declared keys.
        """
        privacy = scaled(self.privacy, self.share, self.privacy.delta * self.share)
        found: list[Aggregate | ReleaseNode] = []
        candidates = self.candidates or tuple(() for _ in self.columns)
        for (_, expr, bounds), chosen in zip(self.columns, candidates, strict=True):
            label = f"var({expr}){describe_plan(self.plan)}"
            found.append(
                Aggregate(
                    self.plan,
                    "var",
                    expr,
                    bounds,
                    (),
                    label,
                    privacy,
                    moment_weights=DESCRIBE_MOMENT_WEIGHTS,
                )
            )
            quartiles = tuple(Fraction(k, 4) for k in (1, 2, 3))
            found.append(
                Quantile(
                    plan=self.plan,
                    privacy=privacy,
                    expr=expr,
                    bounds=bounds,
                    levels=quartiles,
                    scalar=False,
                    candidates=chosen,
                )
            )
        for key in self.categorical:
            label = f"count() by {key.name}{describe_plan(self.plan)}"
            found.append(Aggregate(self.plan, "count", None, None, (key,), label, privacy))
        return tuple(found)


#: approx_bounds() bins its column over fixed public edges ±2^k, k from the first
#: power to the second: 50 negative bins, a zero bin [-2^-10, 2^-10) and 50
#: positive bins; values beyond ±2^40 fold into the end bins.
BOUNDS_POWERS = (-10, 40)


_EDGES = (
    *(-(2.0**k) for k in range(BOUNDS_POWERS[1], BOUNDS_POWERS[0] - 1, -1)),
    *(2.0**k for k in range(BOUNDS_POWERS[0], BOUNDS_POWERS[1] + 1)),
)


def bounds_edges() -> tuple[float, ...]:
    """The public bin edges of :class:`ApproxBounds` (102 edges, 101 bins; computed once)."""
    return _EDGES


@dataclass(frozen=True, eq=False, kw_only=True)
class ApproxBounds(ReleaseNode):
    """Suggested clamping bounds of a numeric column: a noisy histogram over fixed log-scale bins.

    Needs no bounds of its own (that is its point): the bins are public
    constants (:func:`bounds_edges`), so nobody looks at the data to choose them.
    """

    expr: Expr

    def _what(self) -> str:
        return f"approx_bounds({self.expr})"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.expr,)

    def cells(self) -> int:  # noqa: D102
        return len(bounds_edges()) - 1

    def check(self, schema: Schema) -> None:  # noqa: D102
        numeric(self.expr, schema, "approx_bounds")

    def histogram(self) -> Aggregate:
        """The count of present values per public bin (values beyond the edges fold in)."""
        edges = bounds_edges()
        bins = GroupKey("_bin", Bucket(self.expr, edges, clamp=True), tuple(range(len(edges) - 1)))
        return Aggregate(self.plan, "count", self.expr, None, (bins,), self.label, self.privacy)
