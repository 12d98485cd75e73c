"""Inlining derived columns: rewrite an expression so it reads source columns only.

The backends no longer inline (they evaluate the plan as a DAG, see
:mod:`dpframe.plan.dag`); these functions remain for callers that want the
tree form.  Each is linear in the distinct expression objects it walks: a
shared sub-expression is rewritten once and the result is shared too.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from dpframe.plan.dag import DagBuilder
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.nodes import Assign, Plan, lineage

__all__ = ["SourceCol", "definitions", "inline", "resolved_key"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class SourceCol(Expr):
    """A column read straight from the source data (after inlining)."""

    tag: ClassVar[str] = "source"
    name: str

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.name,)

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (self.name,)


def inline(expr: Expr, defs: dict[str, Expr]) -> Expr:
    """``expr`` with every derived column replaced by its (already inlined) definition."""
    done: dict[int, Expr] = {}
    stack: list[Expr] = [expr]
    while stack:
        node = stack[-1]
        if id(node) in done:
            stack.pop()
            continue
        if isinstance(node, Col):
            done[id(node)] = defs.get(node.name, SourceCol(node.name))
            stack.pop()
            continue
        pending = [child for child in node.children() if id(child) not in done]
        if pending:
            stack.extend(reversed(pending))
            continue
        stack.pop()
        changes = {}
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            if isinstance(value, Expr) and done[id(value)] is not value:
                changes[field.name] = done[id(value)]
        done[id(node)] = dataclasses.replace(node, **changes) if changes else node
    return done[id(expr)]


def definitions(plan: Plan) -> dict[str, Expr]:
    """The inlined definition of every derived column of ``plan``, as of its last step."""
    defs: dict[str, Expr] = {}
    for step in lineage(plan)[1]:
        if isinstance(step, Assign):
            defs[step.name] = inline(step.expr, defs)
    return defs


def resolved_key(plan: Plan, expr: Expr) -> tuple[Any, ...]:
    """A structural key of ``expr`` as evaluated on ``plan`` (source and derived columns).

    ``(dataset, view, entries)``, where ``entries`` is the canonical key of
    the expression with every derived column replaced by its definition (the
    key of the inlined tree, in the format of :mod:`dpframe.plan.keys`, with
    source columns tagged ``"source"``), built from the plan's steps in time
    linear in the steps and expression objects read: two expressions read
    the same on two plans exactly when their keys are equal.
    """
    builder = DagBuilder(plan)
    builder.add(expr)
    return (builder.source.dataset, builder.source.view, builder.entries)
