"""Validating a release node against the public schema of its data, before any charge.

The facade checks an analyst's arguments as it builds a node; the engine
checks every node again here, so a node built by hand (``session.run(node)``)
or received by a curator gets exactly the same checks: every column exists,
conditions are boolean, arithmetic reads numbers, and every value that is
summed, averaged, ranked or fitted is numeric (each node's ``check``).  Only public facts are read
(column kinds, the plan's steps), never the data.
"""

from __future__ import annotations

from dpframe.errors import SchemaError
from dpframe.plan.nodes import Aggregate, Filter, Plan, lineage
from dpframe.plan.releases import ReleaseNode
from dpframe.plan.schema import Schema, infer_column

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


def validate_node(node: Aggregate | ReleaseNode, base: Schema) -> None:
    """Raise a :class:`SchemaError` if ``node`` does not fit the data's public schema.

    Besides the node's own ``check``, every expression the node reads
    (``expressions()``) must fit the schema: a check that forgets one (a group
    key over a column that does not exist) is still refused before the charge.
    """
    schema = plan_schema(node.plan, base)
    node.check(schema)
    for expr in node.expressions():
        if expr is not None:
            infer_column("_read", expr, schema)
