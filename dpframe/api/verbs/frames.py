"""Frame verbs that build plans: select, filter, assign, declare (all free).

Selecting, filtering and deriving columns build an immutable plan
(:mod:`dpframe.plan.nodes`); declaring bounds and categories changes the
public schema.  Nothing is read or charged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from dpframe.api.handle import FrameHandle
from dpframe.api.verbs.columns import to_expr
from dpframe.errors import SchemaError
from dpframe.plan.columns import ColumnInfo
from dpframe.plan.nodes import Assign, Filter
from dpframe.plan.schema import check_bounds, check_categories, infer_column

__all__ = ["assign", "filter_rows", "select", "with_bounds", "with_categories"]


def select(frame: FrameHandle, columns: Sequence[str]) -> FrameHandle:
    """Only ``columns``."""
    return frame.derive(schema=frame.schema.select(list(columns)))


def filter_rows(frame: FrameHandle, condition: Any) -> FrameHandle:
    """The rows where ``condition`` holds (missing counts as false)."""
    expr = to_expr(condition, frame)
    info = infer_column("_condition", expr, frame.schema)
    if info.kind != "boolean":
        raise SchemaError("A filter needs a condition (a comparison, isin, &, |, ~).")
    return frame.derive(plan=Filter(frame.plan, expr))


def assign(frame: FrameHandle, columns: Mapping[str, Any]) -> FrameHandle:
    """Derived columns added; bounds follow by interval arithmetic."""
    plan, schema = frame.plan, frame.schema
    for name, value in columns.items():
        expr = to_expr(value, frame)
        info = infer_column(name, expr, schema)
        plan = Assign(plan, name, expr)
        schema = schema.with_column(info)
    return frame.derive(plan=plan, schema=schema)


def with_bounds(frame: FrameHandle, bounds: Mapping[str, tuple[float, float]]) -> FrameHandle:
    """Public clamping bounds declared for numeric columns."""
    schema = frame.schema
    for name, pair in bounds.items():
        info = schema.get(name)
        if not info.summable:
            raise SchemaError(f"{name!r} is not numeric; bounds apply to numeric columns.")
        schema = schema.with_column(
            ColumnInfo(
                info.name,
                info.kind,
                info.dtype,
                check_bounds(name, pair),
                info.categories,
                not_null=info.not_null,
            )
        )
    return frame.derive(schema=schema)


def with_categories(
    frame: FrameHandle, categories: Mapping[str, Sequence[Hashable]]
) -> FrameHandle:
    """Public group keys declared for columns."""
    schema = frame.schema
    for name, cats in categories.items():
        info = schema.get(name)
        values = check_categories(name, cats, info.kind)
        kind = "categorical" if info.kind == "text" else info.kind
        schema = schema.with_column(dataclasses.replace(info, kind=kind, categories=values))
    return frame.derive(schema=schema)
