"""The plan part of the wire format (:mod:`dpframe.plan.codec`): steps, and private joins.

A plan travels as its steps (``{"filter": expr}``, ``{"assign": [name,
expr]}``); its source does not (the curator supplies its own).  A private
join travels as the first step, ``{"join": {...}}``, its sides each a list of
steps that starts with ``{"dataset": name}`` (or a join of their own); a
curator resolves the names from its catalog (a :data:`Resolver`) and
recomputes the join's row limit per ID from its own sources
(:func:`dpframe.plan.joins.join_source`), never the sender's; at most
:data:`MAX_JOINS` joins a request.

Privacy: decoding reads no data; every limit of a decoded join follows from
the curator's sources.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dpframe.plan.codec_fields import (
    TEXT,
    _bad,
    _expr,
    _fields,
    _fixed,
    _integer,
    _text,
    _tuple_of,
)
from dpframe.plan.joins import join_source
from dpframe.plan.nodes import PUBLIC_VIEW, Assign, Filter, Join, Plan, Source, lineage

__all__ = ["MAX_JOINS", "Joins", "Resolver", "decode_plan", "encode_plan"]

#: A curator's map from a dataset's catalog name to its own source (a join's sides).
Resolver = Callable[[str], Source]


def encode_plan(plan: Plan) -> list[dict[str, Any]]:
    """A plan's steps as JSON (a join first; a dataset's own source is left out)."""
    source, plan_steps = lineage(plan)
    steps: list[dict[str, Any]] = []
    if source.join is not None:  # a join travels whole; the curator resolves its datasets
        steps.append({"join": _encode_join(source.join)})
    for step in plan_steps:
        if isinstance(step, Filter):
            steps.append({"filter": step.predicate.to_dict()})
        else:
            steps.append({"assign": [step.name, step.expr.to_dict()]})
    return steps


def _encode_side(plan: Plan) -> list[dict[str, Any]]:
    """A join side: its dataset (by name) or its own join first, then its steps."""
    source = lineage(plan)[0]
    if source.view == PUBLIC_VIEW:
        raise _bad(
            "A merge with a public table whose key repeats does not travel to a curator in "
            "this version; give the table one row per key."
        )
    head = [] if source.join is not None else [{"dataset": source.dataset}]
    return head + encode_plan(plan)


def _encode_join(join: Join) -> dict[str, Any]:
    """A join's fields; its sides' row limits and ID spaces are not sent (the curator's own)."""
    return {
        "left": _encode_side(join.left),
        "right": _encode_side(join.right),
        "left_on": list(join.left_on),
        "right_on": list(join.right_on),
        "how": join.how,
        "max_rows": join.max_rows,
        "left_columns": list(join.left_columns),
        "right_columns": list(join.right_columns),
        "suffixes": list(join.suffixes),
        "rows": join.rows,
        "k_left": join.k_left,
        "k_right": join.k_right,
    }


#: The most private joins one request may hold (nested joins multiply their sides' rows).
MAX_JOINS = 4
_JOIN_FIELDS = (
    "left",
    "right",
    "left_on",
    "right_on",
    "how",
    "max_rows",
    "left_columns",
    "right_columns",
    "suffixes",
    "rows",
    "k_left",
    "k_right",
)
_NAMES_CODEC = _tuple_of(TEXT, 1_000)


class Joins:
    """How a decoded plan resolves a join's datasets (a curator's catalog), and a join count."""

    def __init__(self, resolve: Resolver | None) -> None:
        self.resolve = resolve
        self.count = 0


def _decode_join(data: object, joins: Joins) -> Source:
    """A join step, rebuilt on the sources the curator resolves (never the sender's limits)."""
    if joins.resolve is None:
        raise _bad(
            "This request holds a private join, which this endpoint does not accept; ask on "
            "one dataset."
        )
    joins.count += 1
    if joins.count > MAX_JOINS:
        raise _bad(f"A request holds at most {MAX_JOINS} private joins.")
    fields = _fields(data, "join", _JOIN_FIELDS, frozenset({"k_left", "k_right"}))
    left = _decode_side(fields["left"], "join.left", joins)
    right = _decode_side(fields["right"], "join.right", joins)
    join = Join(
        left,
        right,
        _NAMES_CODEC.decode(fields["left_on"], "join.left_on"),
        _NAMES_CODEC.decode(fields["right_on"], "join.right_on"),
        _text(fields["how"], "join.how"),
        _integer(fields["max_rows"], "join.max_rows"),
        _NAMES_CODEC.decode(fields["left_columns"], "join.left_columns"),
        _NAMES_CODEC.decode(fields["right_columns"], "join.right_columns"),
        _fixed((TEXT, TEXT)).decode(fields["suffixes"], "join.suffixes"),
        _text(fields["rows"], "join.rows"),
        _integer(fields.get("k_left", 0), "join.k_left"),
        _integer(fields.get("k_right", 0), "join.k_right"),
    )
    # the join's source, with its row limit and ID space, follows from the curator's sides
    return join_source(join, lineage(left)[0], lineage(right)[0])


def _decode_side(data: object, what: str, joins: Joins) -> Plan:
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise _bad(f"{what} must be a list of steps starting with {{'dataset': name}}.")
    head = data[0]
    if set(head) == {"dataset"}:
        assert joins.resolve is not None  # checked by the caller
        source = joins.resolve(_text(head["dataset"], f"{what}.dataset"))
        return decode_plan(data[1:], source, joins)
    if set(head) == {"join"}:
        return decode_plan(data, None, joins)
    raise _bad(f"{what} must start with {{'dataset': name}} or {{'join': ...}}.")


def decode_plan(data: object, source: Source | None, joins: Joins) -> Plan:
    """Rebuild a plan from its steps on ``source`` (or on the join its first step holds)."""
    if not isinstance(data, list):
        raise _bad("plan must be a list of steps.")
    steps = list(data)
    if steps and isinstance(steps[0], dict) and set(steps[0]) == {"join"}:
        plan: Plan = _decode_join(steps.pop(0)["join"], joins)
    elif source is None:
        raise _bad("A join side must start with {'dataset': name} or {'join': ...}.")
    else:
        plan = source
    for i, step in enumerate(steps):
        what = f"plan[{i}]"
        if isinstance(step, dict) and set(step) == {"filter"}:
            plan = Filter(plan, _expr(step["filter"], what))
        elif isinstance(step, dict) and set(step) == {"assign"}:
            pair = step["assign"]
            if not isinstance(pair, list) or len(pair) != 2:
                raise _bad(f"{what}: an assignment is [name, expression].")
            name = _text(pair[0], what)
            if not name:
                raise _bad(f"{what}: an assignment needs a non-empty column name.")
            plan = Assign(plan, name, _expr(pair[1], what))
        else:
            raise _bad(f"{what} must be {{'filter': expression}} or {{'assign': [name, expr]}}.")
    return plan
