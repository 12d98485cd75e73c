"""Inlining derived columns: rewrite an expression so it reads source columns only."""

from __future__ import annotations

import dataclasses
from typing import Any

from dpframe.plan.expressions import Col, Expr
from dpframe.plan.nodes import Assign, Plan, lineage

__all__ = ["SourceCol", "definitions", "inline", "resolved_key"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class SourceCol(Expr):
    """A column read straight from the source data (after inlining)."""

    name: str

    def key(self) -> tuple[Any, ...]:  # noqa: D102
        return ("source", self.name)

    def __str__(self) -> str:
        return self.name


def inline(expr: Expr, defs: dict[str, Expr]) -> Expr:
    """``expr`` with every derived column replaced by its (already inlined) definition."""
    if isinstance(expr, Col):
        return defs.get(expr.name, SourceCol(expr.name))
    changes = {}
    for field in dataclasses.fields(expr):
        value = getattr(expr, field.name)
        if isinstance(value, Expr):
            changes[field.name] = inline(value, defs)
    return dataclasses.replace(expr, **changes) if changes else expr


def definitions(plan: Plan) -> dict[str, Expr]:
    """The inlined definition of every derived column of ``plan``, as of its last step."""
    defs: dict[str, Expr] = {}
    for step in lineage(plan)[1]:
        if isinstance(step, Assign):
            defs[step.name] = inline(step.expr, defs)
    return defs


def resolved_key(plan: Plan, expr: Expr) -> tuple[Any, ...]:
    """A structural key of ``expr`` as evaluated on ``plan`` (source and inlined columns)."""
    source = lineage(plan)[0]
    return (source.dataset, source.view, inline(expr, definitions(plan)).key())
