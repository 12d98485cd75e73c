"""Sanitized copies: every row perturbed (randomized response, Laplace copies)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from dpframe.errors import InvalidArgumentError, SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.releases.base import Bounds, ReleaseNode
from dpframe.plan.schema import Schema, check_keys, check_node_bounds, infer_column, numeric


@dataclass(frozen=True, eq=False, kw_only=True)
class SanitizedCopy(ReleaseNode):
    """A randomized-response (``rr``) or Laplace copy of one column: a public Series."""

    expr: Expr
    name: str
    kind: Literal["rr", "laplace"]
    length_share: Fraction
    categories: tuple[Hashable, ...] = ()
    bounds: Bounds = (0.0, 0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in ("rr", "laplace"):
            raise InvalidArgumentError("A sanitized copy is 'rr' or 'laplace'.")
        if not isinstance(self.length_share, Fraction) or not 0 < self.length_share < 1:
            raise InvalidArgumentError(
                "length_share must be in (0, 1): the share of the request that hides the row count."
            )
        if self.kind == "rr" and len(self.categories) < 2:
            raise SchemaError(
                f"randomized_response() needs at least two declared categories for {self.name!r}."
            )
        check_keys(self.name, self.categories)
        if self.kind == "laplace":
            check_node_bounds(self.bounds, "laplace_copy()")
            if not self.bounds[1] > self.bounds[0]:
                raise SchemaError(f"laplace_copy() needs bounds with low < high for {self.name!r}.")

    def _what(self) -> str:
        return f"{'randomized_response' if self.kind == 'rr' else 'laplace_copy'}({self.expr})"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.expr,)

    def check(self, schema: Schema) -> None:  # noqa: D102
        if self.kind == "laplace":
            numeric(self.expr, schema, "laplace_copy")
        else:
            infer_column(self.name, self.expr, schema)
