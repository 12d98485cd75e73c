"""Correlation and covariance of bounded columns in one charge (``corr``, ``cov``)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Clip, Expr
from dpframe.plan.nodes import Aggregate, describe_plan
from dpframe.plan.releases.base import Bounds, ReleaseNode, scaled
from dpframe.plan.schema import Schema, check_node_bounds, numeric

__all__ = ["MAX_MOMENT_COLUMNS", "Moments"]

#: The most columns one corr()/cov() release takes (the parts grow as k²/2).
MAX_MOMENT_COLUMNS = 20
_STATISTICS = ("corr", "cov")


@dataclass(frozen=True, eq=False, kw_only=True)
class Moments(ReleaseNode):
    """The covariance (or correlation) matrix of k bounded columns, from noisy moments.

    Parts, each an equal share of the request (sequential composition): the
    row count, the k sums of ``clip(x_i) - c_i`` (c_i the middle of x_i's
    bounds) and the k(k+1)/2 sums of products ``(clip(x_i) - c_i)·(clip(x_j) - c_j)``.
    The plan keeps the rows where every column is present (listwise, unlike
    pandas' pairwise deletion when values are missing).
    """

    columns: tuple[tuple[str, Expr, Bounds], ...]
    statistic: str = "corr"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.statistic not in _STATISTICS:
            raise SchemaError("Moments' statistic is 'corr' or 'cov'.")
        if not 2 <= len(self.columns) <= MAX_MOMENT_COLUMNS:
            raise SchemaError(
                f"{self.statistic}() needs 2 to {MAX_MOMENT_COLUMNS} numeric columns with "
                "declared bounds."
            )
        names = [name for name, _, _ in self.columns]
        if len(set(names)) != len(names):
            raise SchemaError(f"{self.statistic}(): each column once.")
        for name, _, bounds in self.columns:
            check_node_bounds(bounds, f"{self.statistic}() of {name!r}")

    @property
    def part_count(self) -> int:
        """1 count + k sums + k(k+1)/2 sums of products."""
        k = len(self.columns)
        return 1 + k + k * (k + 1) // 2

    @property
    def share(self) -> Fraction:
        """Each part's share of the request."""
        return Fraction(1, self.part_count)

    def _what(self) -> str:
        return f"{self.statistic}({', '.join(name for name, _, _ in self.columns)})"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return tuple(expr for _, expr, _ in self.columns)

    def cells(self) -> int:  # noqa: D102
        return self.part_count

    def check(self, schema: Schema) -> None:  # noqa: D102
        for _, expr, _ in self.columns:
            numeric(expr, schema, self.statistic)

    def centred(self) -> tuple[tuple[Expr, float], ...]:
        """Per column: ``clip(x) - c`` and its half-width h (its values lie in [-h, h])."""
        found = []
        for _, expr, (low, high) in self.columns:
            centre = (low + high) / 2
            found.append((Clip(expr, low, high) - centre, (high - low) / 2))
        return tuple(found)

    def pairs(self) -> tuple[tuple[int, int], ...]:
        """The (i, j) of each product part, i <= j, in row order."""
        k = len(self.columns)
        return tuple((i, j) for i in range(k) for j in range(i, k))

    def parts(self) -> tuple[Aggregate | ReleaseNode, ...]:
        """The count, then the k centred sums, then the products in :meth:`pairs` order."""
        privacy = scaled(self.privacy, self.share, self.privacy.delta * self.share)
        rows = describe_plan(self.plan)
        centred = self.centred()
        found: list[Aggregate | ReleaseNode] = [
            Aggregate(self.plan, "count", None, None, (), f"count(){rows}", privacy)
        ]
        for (name, _, _), (expr, half) in zip(self.columns, centred, strict=True):
            label = f"sum({name} centred){rows}"
            found.append(Aggregate(self.plan, "sum", expr, (-half, half), (), label, privacy))
        for i, j in self.pairs():
            (left, hl), (right, hr) = centred[i], centred[j]
            bound = hl * hr
            bounds = (0.0, bound) if i == j else (-bound, bound)
            names = f"{self.columns[i][0]}·{self.columns[j][0]}"
            label = f"sum({names} centred){rows}"
            found.append(Aggregate(self.plan, "sum", left * right, bounds, (), label, privacy))
        return tuple(found)
