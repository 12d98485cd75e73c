"""Expressions from their JSON form: :func:`expr_from_dict`, the inverse of ``Expr.to_dict``.

Every expression node of the plan's modules (:mod:`dpframe.plan.expressions`,
:mod:`~dpframe.plan.recode`, :mod:`~dpframe.plan.temporal`,
:mod:`~dpframe.plan.text`, :mod:`~dpframe.plan.elementwise`,
:mod:`~dpframe.plan.combine`) is rebuilt and validated field by field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpframe.errors import SchemaError
from dpframe.plan.combine import combine_from_dict
from dpframe.plan.elementwise import elementwise_from_dict
from dpframe.plan.expressions import (
    Abs,
    Arith,
    Bucket,
    Clip,
    Col,
    Compare,
    Expr,
    IsIn,
    IsNull,
    Lit,
    Logical,
    Neg,
    Not,
)
from dpframe.plan.recode import recode_from_dict
from dpframe.plan.temporal import temporal_from_dict
from dpframe.plan.text import text_from_dict
from dpframe.plan.text_parts import part_from_dict

__all__ = ["expr_from_dict"]

_UNARY: dict[str, Callable[[Expr], Expr]] = {"neg": Neg, "abs": Abs, "not": Not, "isnull": IsNull}


def expr_from_dict(data: dict[str, Any]) -> Expr:
    """Rebuild an expression from :meth:`Expr.to_dict` output, validating every field."""
    if not isinstance(data, dict) or "op" not in data:
        raise SchemaError("An expression must be an object with an 'op' field.")
    op = data["op"]
    if op == "col" and isinstance(data.get("name"), str):
        return Col(data["name"])
    if op == "lit" and isinstance(data.get("value"), (bool, int, float, str)):
        return Lit(data["value"])
    if op in ("+", "-", "*", "/"):
        return Arith(op, expr_from_dict(data["left"]), expr_from_dict(data["right"]))
    if op in ("==", "!=", "<", "<=", ">", ">="):
        return Compare(op, expr_from_dict(data["left"]), expr_from_dict(data["right"]))
    if op in ("&", "|"):
        return Logical(op, expr_from_dict(data["left"]), expr_from_dict(data["right"]))
    if op in _UNARY:
        return _UNARY[op](expr_from_dict(data["operand"]))
    if op == "isin" and isinstance(data.get("values"), list):
        values = tuple(data["values"])
        if not all(isinstance(v, (bool, int, float, str)) for v in values):
            raise SchemaError("isin values must be numbers, strings or booleans.")
        return IsIn(expr_from_dict(data["operand"]), values)
    if op == "bucket" and isinstance(data.get("edges"), list):
        edges = tuple(float(e) for e in data["edges"])
        return Bucket(expr_from_dict(data["operand"]), edges, bool(data.get("clamp", False)))
    if op in ("bin", "recode"):
        return recode_from_dict(data, expr_from_dict(data["operand"]))
    if op in ("date", "dt", "period"):
        operand = None if op == "date" else expr_from_dict(data["operand"])
        return temporal_from_dict(data, operand)
    if op in ("str_map", "str_replace", "str_match", "str_len"):
        return text_from_dict(data, expr_from_dict(data["operand"]))
    if op == "str_part":
        return part_from_dict(data, expr_from_dict(data["operand"]))
    if op in ("ufunc", "where"):
        children = [expr_from_dict(data["operand"])]
        if op == "where":
            children.append(expr_from_dict(data["cond"]))
        return elementwise_from_dict(data, children)
    if op == "combine" and isinstance(data.get("operands"), list):
        return combine_from_dict(data, [expr_from_dict(item) for item in data["operands"][:9]])
    if op == "clip":
        return Clip(expr_from_dict(data["operand"]), float(data["lower"]), float(data["upper"]))
    raise SchemaError(f"Unknown or malformed expression node {op!r}.")
