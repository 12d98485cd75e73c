"""Piece 1, the node: the noisy number of rows where one column is present."""

from __future__ import annotations

from dataclasses import dataclass

from dpframe.errors import InvalidArgumentError
from dpframe.plan.expressions import Expr, col
from dpframe.plan.releases.base import ReleaseNode
from dpframe.plan.schema import Schema


@dataclass(frozen=True, eq=False, kw_only=True)
class NonNullCount(ReleaseNode):
    """How many rows hold a value in ``column`` (after the plan's filters), with noise."""

    column: str

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.column, str) or not self.column:
            raise InvalidArgumentError("column must be a column name.")

    def _what(self) -> str:
        return f"nonnull_count({self.column})"

    def expressions(self) -> tuple[Expr | None, ...]:
        return (col(self.column),)

    def check(self, schema: Schema) -> None:
        schema.get(self.column)  # a SchemaError naming the column when it is not there
