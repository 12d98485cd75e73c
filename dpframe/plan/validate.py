"""Validating a release node against the public schema of its data, before any charge.

The facade checks an analyst's arguments as it builds a node; the engine
checks every node again here, so a node built by hand (``session.run(node)``)
or received by a curator gets exactly the same checks: every column exists,
conditions are boolean, arithmetic reads numbers, and every value that is
summed, averaged, ranked or fitted is numeric.  Only public facts are read
(column kinds, the plan's steps), never the data.
"""

from __future__ import annotations

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import Aggregate, Filter, GroupKey, Plan, lineage
from dpframe.plan.releases import (
    ArgMax,
    Describe,
    DiscoverKeys,
    DiscoverThenAggregate,
    KernelDensity,
    Mode,
    Quantile,
    Regression,
    ReleaseNode,
    SanitizedCopy,
    SparseVector,
)
from dpframe.plan.schema import ColumnInfo, Schema, infer_column

__all__ = ["plan_schema", "validate_node"]


def plan_schema(plan: Plan, base: Schema) -> Schema:
    """The public schema after the plan's steps; raises for an invalid filter or column."""
    _, steps = lineage(plan)
    schema = base
    for step in steps:
        if isinstance(step, Filter):
            if infer_column("_condition", step.predicate, schema).kind != "boolean":
                raise SchemaError("A filter needs a condition (a comparison, isin, &, |, ~).")
        else:
            schema = schema.with_column(infer_column(step.name, step.expr, schema))
    return schema


def _value(expr: Expr, schema: Schema, what: str) -> ColumnInfo:
    info = infer_column(str(expr), expr, schema)
    if not info.summable:
        raise SchemaError(
            f"{what}() needs a numeric column; {info.name!r} is {info.kind}. "
            "Use count(), value counts by groupby(), or derive a number first."
        )
    return info


def _keys(keys: tuple[GroupKey, ...], schema: Schema) -> None:
    for key in keys:
        infer_column(key.name, key.expr, schema)


def _condition(name: str, expr: Expr, schema: Schema) -> None:
    if infer_column(name, expr, schema).kind != "boolean":
        raise SchemaError(f"Query {name!r} is not a row condition (comparison, isin, &, |, ~).")


def validate_node(node: Aggregate | ReleaseNode, base: Schema) -> None:
    """Raise a :class:`SchemaError` if ``node`` does not fit the data's public schema."""
    schema = plan_schema(node.plan, base)
    if isinstance(node, Aggregate):
        _keys(node.by, schema)
        if node.expr is not None:
            if node.statistic == "count":
                infer_column(str(node.expr), node.expr, schema)
            else:
                _value(node.expr, schema, node.statistic)
    elif isinstance(node, (Quantile, KernelDensity)):
        _value(node.expr, schema, "quantile" if isinstance(node, Quantile) else "kde")
    elif isinstance(node, Mode):
        _keys((node.group,), schema)
    elif isinstance(node, ArgMax):
        _keys(node.keys, schema)
        if node.expr is not None:
            if node.agg == "count":
                infer_column(str(node.expr), node.expr, schema)
            else:
                _value(node.expr, schema, f"argmax('{node.agg}')")
    elif isinstance(node, SparseVector):
        for name, expr in node.conditions:
            _condition(name, expr, schema)
    elif isinstance(node, (DiscoverKeys, DiscoverThenAggregate)):
        schema.get(node.column)
        if isinstance(node, DiscoverThenAggregate) and node.value is not None:
            if node.statistic == "count":
                infer_column(str(node.value), node.value, schema)
            else:
                _value(node.value, schema, node.statistic)
    elif isinstance(node, Describe):
        for _, expr, _ in node.columns:
            _value(expr, schema, "describe")
    elif isinstance(node, SanitizedCopy):
        if node.kind == "laplace":
            _value(node.expr, schema, "laplace_copy")
        else:
            infer_column(node.name, node.expr, schema)
    elif isinstance(node, Regression):
        for name in (*node.features, node.target):
            info = schema.get(name)
            if not info.summable:
                raise SchemaError(f"Regression columns must be numeric; {name!r} is {info.kind}.")
    else:
        raise SchemaError(f"A {type(node).__name__} is not a release node this engine knows.")
