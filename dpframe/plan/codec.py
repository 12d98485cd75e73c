"""The JSON form of release nodes: what an analyst's kernel sends a curator.

``encode_node(node)`` gives ``{"v": 1, "node": {...}}``; ``decode_node(data,
source)`` rebuilds the node on the curator's own :class:`~dpframe.plan.nodes.Source`
(the analyst never chooses the dataset's privacy-unit setting or view).
A private join travels as the plan's first step, ``{"join": {...}}``, its
sides each a list of steps that starts with ``{"dataset": name}`` (or a
join of their own); a curator resolves the names from its catalog and
recomputes the join's row limit per ID from its own sources (at most
:data:`MAX_JOINS` joins a request).
The format is strict:

* the node types are the allow-list: :class:`~dpframe.plan.nodes.Aggregate`
  and every subclass of :class:`~dpframe.plan.releases.ReleaseNode`, each with
  the fields of its dataclass, their codecs derived from the type annotations
  (a field that is not compared, e.g. a progress bar, is not sent); every
  field is required and no other field is accepted (``"v"`` must be 1);
* ε, δ and ρ are decimal strings of at most 40 significant digits (exponent
  at most 99 in size) or exact fractions ``"n/d"`` of at most 64-bit parts;
* numbers are finite JSON numbers, integers are integers, booleans booleans;
  a public key may also be ``{"$float": "nan"}``, an interval (the keys of a
  ``cut`` column) ``{"$interval": [left, right, closed]}`` or a period (the
  keys of ``.dt.to_period``) ``{"$period": ["2020-01", "M"]}``;
* the whole message holds at most :data:`MAX_ITEMS` JSON containers (checked
  before anything is built); expressions are limited in depth by the transport
  (``dpframe.remote.wire.MAX_DEPTH``) and in size by the engine's resource check.

Every decoding failure is a :class:`NodeFormatError` whose message names the
field, never a value from the data (the sender wrote every value it holds).

A curator also describes its datasets' public schema to the analyst; a
column's date bounds (ISO 8601 text) and maximum text length travel as
:func:`column_extras` gives them.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pandas as pd

from dpframe.errors import DPError, SchemaError
from dpframe.plan.columns import ColumnInfo, DateBounds
from dpframe.plan.expr_codec import expr_from_dict
from dpframe.plan.expressions import Expr
from dpframe.plan.joins import join_source
from dpframe.plan.nodes import (
    PUBLIC_VIEW,
    Aggregate,
    Assign,
    Filter,
    GroupKey,
    Join,
    Plan,
    Source,
    lineage,
)
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.recode import label_from_json, label_to_json, plain_label
from dpframe.plan.releases import ReleaseNode
from dpframe.plan.temporal import date_from_json, date_to_json, period_from_json, period_to_json
from dpframe.plan.text import check_max_length

__all__ = [
    "FORMAT_VERSION",
    "MAX_ITEMS",
    "MAX_JOINS",
    "NodeFormatError",
    "Resolver",
    "column_extras",
    "column_extras_from_json",
    "decode_node",
    "encode_node",
    "node_type_names",
]

FORMAT_VERSION = 1
#: The most JSON objects and arrays one encoded node may hold.
MAX_ITEMS = 50_000
_MAX_DIGITS = 40
_MAX_EXPONENT = 99
_MAX_PART = 2**64
_MAX_TEXT = 1_000
_DECIMAL = re.compile(r"(\d+)(?:\.(\d+))?(?:[eE]([-+]?\d{1,3}))?")
_FRACTION = re.compile(r"(\d+)/(\d+)")

Node = Aggregate | ReleaseNode
#: A curator's map from a dataset's catalog name to its own source (a join's sides).
Resolver = Callable[[str], Source]


class NodeFormatError(DPError):
    """An encoded release node does not follow the format (nothing was charged)."""


def _bad(message: str) -> NodeFormatError:
    return NodeFormatError(message)


# -- exact numbers -------------------------------------------------------------------


def encode_exact(value: Fraction) -> str:
    """A fraction as a short exact decimal when it has one, else ``"n/d"``."""
    d = value.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d == 1:
        places = max(twos, fives)
        digits = str(value.numerator * 10**places // value.denominator)
        if len(digits.lstrip("-0")) <= _MAX_DIGITS and places <= _MAX_EXPONENT:
            return f"{digits}e-{places}" if places else digits
    return f"{value.numerator}/{value.denominator}"


def decode_exact(text: object, what: str) -> Fraction:
    """Read a privacy parameter: a bounded decimal string or a fraction of 64-bit parts."""
    if not isinstance(text, str) or len(text) > 200:
        raise _bad(f"{what} must be a decimal string or a fraction 'n/d'.")
    fraction = _FRACTION.fullmatch(text)
    if fraction is not None:
        n, d = int(fraction[1]), int(fraction[2])
        if d == 0 or n >= _MAX_PART or d >= _MAX_PART:
            raise _bad(f"{what}: a fraction needs a nonzero denominator and parts below 2**64.")
        return Fraction(n, d)
    decimal = _DECIMAL.fullmatch(text)
    if decimal is None:
        raise _bad(f"{what} must be a decimal string or a fraction 'n/d'.")
    whole, part, exponent = decimal[1], decimal[2] or "", int(decimal[3] or 0)
    digits = (whole + part).lstrip("0")
    if len(digits) > _MAX_DIGITS or abs(exponent) > _MAX_EXPONENT:
        raise _bad(
            f"{what} has more than {_MAX_DIGITS} significant digits or an exponent beyond "
            f"±{_MAX_EXPONENT}."
        )
    return Fraction(int(whole + part), 10 ** len(part)) * Fraction(10) ** exponent


def _privacy(request: PrivacyRequest) -> dict[str, Any]:
    return {
        "epsilon": None if request.epsilon is None else encode_exact(request.epsilon),
        "delta": encode_exact(request.delta),
        "rho": None if request.rho is None else encode_exact(request.rho),
    }


def _decode_privacy(data: object) -> PrivacyRequest:
    fields = _fields(data, "privacy", ("epsilon", "delta", "rho"))
    epsilon = None if fields["epsilon"] is None else decode_exact(fields["epsilon"], "epsilon")
    rho = None if fields["rho"] is None else decode_exact(fields["rho"], "rho")
    return PrivacyRequest(epsilon=epsilon, delta=decode_exact(fields["delta"], "delta"), rho=rho)


# -- field codecs --------------------------------------------------------------------


@dataclass(frozen=True)
class _Codec:
    encode: Callable[[Any], Any]
    decode: Callable[[Any, str], Any]


def _identity(value: Any) -> Any:
    return value


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(f"{what} must be a number.")
    if not math.isfinite(value):
        raise _bad(f"{what} must be finite.")
    return float(value)


def _integer(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(f"{what} must be an integer.")
    return value


def _boolean(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(f"{what} must be true or false.")
    return value


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        raise _bad(f"{what} must be a string of at most {_MAX_TEXT} characters.")
    return value


def _expr(value: object, what: str) -> Expr:
    try:
        return expr_from_dict(value)  # type: ignore[arg-type]
    except DPError as exc:
        raise _bad(f"{what}: {exc}") from None
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError):
        raise _bad(f"{what} is not a valid column expression.") from None


def _optional(codec: _Codec) -> _Codec:
    return _Codec(
        lambda v: None if v is None else codec.encode(v),
        lambda v, what: None if v is None else codec.decode(v, what),
    )


def _tuple_of(codec: _Codec, limit: int = 100_000) -> _Codec:
    def decode(value: object, what: str) -> tuple[Any, ...]:
        if not isinstance(value, list) or len(value) > limit:
            raise _bad(f"{what} must be a list of at most {limit} items.")
        return tuple(codec.decode(v, f"{what}[{i}]") for i, v in enumerate(value))

    return _Codec(lambda v: [codec.encode(x) for x in v], decode)


def _pair(first: _Codec, second: _Codec) -> _Codec:
    def decode(value: object, what: str) -> tuple[Any, Any]:
        if not isinstance(value, list) or len(value) != 2:
            raise _bad(f"{what} must be a pair.")
        return first.decode(value[0], what), second.decode(value[1], what)

    return _Codec(lambda v: [first.encode(v[0]), second.encode(v[1])], decode)


def _choice(*options: str) -> _Codec:
    def decode(value: object, what: str) -> str:
        if value not in options:
            raise _bad(f"{what} must be one of {', '.join(options)}.")
        return str(value)

    return _Codec(_identity, decode)


def _key_value(value: object, what: str) -> Hashable:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, dict) and set(value) == {"$float"} and value["$float"] == "nan":
        return float("nan")
    if isinstance(value, dict) and set(value) == {"$interval"}:
        try:
            return label_from_json(value, what)  # the keys of a binned column (cut)
        except DPError as exc:
            raise _bad(str(exc)) from None
    if isinstance(value, dict) and set(value) == {"$period"}:
        try:
            return period_from_json(value, what)  # the keys of .dt.to_period
        except DPError as exc:
            raise _bad(str(exc)) from None
    raise _bad(f"{what} must be a string, number, boolean, null or interval (or period).")


def _encode_key_value(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return {"$float": "nan"}
    if isinstance(value, pd.Interval):
        return label_to_json(plain_label(value))
    if isinstance(value, pd.Period):
        return period_to_json(value)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


NUMBER = _Codec(_identity, _number)
INTEGER = _Codec(_identity, _integer)
BOOLEAN = _Codec(_identity, _boolean)
TEXT = _Codec(_identity, _text)
EXPR = _Codec(lambda e: e.to_dict(), _expr)
EXACT = _Codec(encode_exact, decode_exact)
BOUNDS = _pair(NUMBER, NUMBER)
KEYS = _tuple_of(_Codec(_encode_key_value, _key_value), 2**24)


def _group_key(value: object, what: str) -> GroupKey:
    fields = _fields(value, what, ("name", "expr", "categories"))
    return GroupKey(
        _text(fields["name"], f"{what}.name"),
        _expr(fields["expr"], f"{what}.expr"),
        KEYS.decode(fields["categories"], f"{what}.categories"),
    )


GROUP_KEY = _Codec(
    lambda k: {"name": k.name, "expr": k.expr.to_dict(), "categories": KEYS.encode(k.categories)},
    _group_key,
)

_SIMPLE: Mapping[Any, _Codec] = {
    float: NUMBER,
    int: INTEGER,
    bool: BOOLEAN,
    str: TEXT,
    Expr: EXPR,
    Fraction: EXACT,
    GroupKey: GROUP_KEY,
}

#: Limits on list fields, by item type (the whole message is limited by MAX_ITEMS too).
_GROUP_KEYS_LIMIT = 16
_LIST_LIMIT = 100_000


def _codec_for(hint: Any) -> _Codec:
    """The codec of a node field, derived from its type annotation."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return _choice(*(str(a) for a in args))
    if origin in (Union, UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return _optional(_codec_for(rest[0]))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = args[0]
            if item is Hashable:
                return KEYS
            limit = _GROUP_KEYS_LIMIT if item is GroupKey else _LIST_LIMIT
            return _tuple_of(_codec_for(item), limit)
        return _fixed(tuple(_codec_for(a) for a in args))
    simple = _SIMPLE.get(hint)
    if simple is None:
        raise TypeError(f"No wire codec for a node field of type {hint!r}.")
    return simple


def _fixed(codecs: tuple[_Codec, ...]) -> _Codec:
    def decode(value: object, what: str) -> tuple[Any, ...]:
        if not isinstance(value, list) or len(value) != len(codecs):
            raise _bad(f"{what} must be a list of {len(codecs)} items.")
        return tuple(c.decode(v, what) for c, v in zip(codecs, value, strict=True))

    return _Codec(lambda v: [c.encode(x) for c, x in zip(codecs, v, strict=True)], decode)


def _wire_fields(cls: type) -> dict[str, _Codec]:
    """Every field a node type sends (all compared fields but its plan and privacy)."""
    hints = get_type_hints(cls)
    return {
        f.name: _codec_for(hints[f.name])
        for f in dataclasses.fields(cls)
        if f.compare and f.name not in ("plan", "privacy")
    }


def _defaulted(cls: type) -> frozenset[str]:
    """The wire fields of ``cls`` with a default: a request may leave them out.

    So a field added later with a default (e.g. ``Aggregate.moment_weights``)
    does not break a client that predates it; unknown fields stay refused.
    """
    return frozenset(
        f.name
        for f in dataclasses.fields(cls)
        if f.compare
        and f.name not in ("plan", "privacy")
        and (f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)
    )


def _wire_name(cls: type) -> str:
    """``ArgMax`` -> ``argmax``, ``SanitizedCopy`` -> ``sanitized_copy`` (a node's ``tag``)."""
    tag = getattr(cls, "tag", None)
    if isinstance(tag, str):
        return tag
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


def _node_types() -> tuple[type, ...]:
    """Aggregate and every release node class of :mod:`dpframe.plan.releases` (all imported)."""
    import importlib
    import pkgutil

    import dpframe.plan.releases as package

    for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        importlib.import_module(info.name)
    found: list[type] = [Aggregate]
    stack = list(ReleaseNode.__subclasses__())
    while stack:
        cls = stack.pop(0)
        found.append(cls)
        stack.extend(cls.__subclasses__())
    return tuple(found)


#: Every node type on the wire, by its name: its class and its fields' codecs (the
#: allow-list: derived from the node dataclasses themselves, so a new release kind
#: needs nothing here).
_KINDS: Mapping[str, tuple[type, Mapping[str, _Codec]]] = {
    _wire_name(cls): (cls, _wire_fields(cls)) for cls in _node_types()
}


_NAMES: Mapping[type, str] = {cls: name for name, (cls, _) in _KINDS.items()}


def node_type_names() -> tuple[str, ...]:
    """The names of every node type the codec knows (the wire's allow-list)."""
    return tuple(_KINDS)


def _fields(
    data: object, what: str, names: tuple[str, ...], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``data`` as an object with exactly ``names`` (those in ``optional`` may be absent)."""
    if not isinstance(data, dict):
        raise _bad(f"{what} must be an object.")
    if not set(names) - optional <= set(data) <= set(names):
        unknown = sorted(set(map(str, data)) - set(names))[:5]
        missing = sorted(set(names) - optional - set(data))
        raise _bad(
            f"{what} has exactly the fields {', '.join(names)}"
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + "."
        )
    return data


# -- plans and nodes -----------------------------------------------------------------


def _encode_plan(plan: Plan) -> list[dict[str, Any]]:
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
    return head + _encode_plan(plan)


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


class _Joins:
    """How a decoded plan resolves a join's datasets (a curator's catalog), and a join count."""

    def __init__(self, resolve: Resolver | None) -> None:
        self.resolve = resolve
        self.count = 0


def _decode_join(data: object, joins: _Joins) -> Source:
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


def _decode_side(data: object, what: str, joins: _Joins) -> Plan:
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise _bad(f"{what} must be a list of steps starting with {{'dataset': name}}.")
    head = data[0]
    if set(head) == {"dataset"}:
        assert joins.resolve is not None  # checked by the caller
        source = joins.resolve(_text(head["dataset"], f"{what}.dataset"))
        return _decode_plan(data[1:], source, joins)
    if set(head) == {"join"}:
        return _decode_plan(data, None, joins)
    raise _bad(f"{what} must start with {{'dataset': name}} or {{'join': ...}}.")


def _decode_plan(data: object, source: Source | None, joins: _Joins) -> Plan:
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


def encode_node(node: Node) -> dict[str, Any]:
    """The JSON-ready form of a release node (its source is left out: the curator knows it)."""
    kind = _NAMES.get(type(node))
    if kind is None:
        raise _bad(f"A {type(node).__name__} is not a release node.")
    if node.privacy is None:
        raise _bad("The node has no privacy cost.")
    _, codecs = _KINDS[kind]
    body: dict[str, Any] = {
        "type": kind,
        "plan": _encode_plan(node.plan),
        "privacy": _privacy(node.privacy),
    }
    for name, codec in codecs.items():
        body[name] = codec.encode(getattr(node, name))
    return {"v": FORMAT_VERSION, "node": body}


def count_items(data: object, limit: int = MAX_ITEMS) -> int:
    """The JSON containers in ``data`` (iteratively); raises beyond ``limit``."""
    count = 0
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)):
            count += 1
            if count > limit:
                raise _bad(f"The request holds more than {limit} JSON objects and arrays.")
            stack.extend(item.values() if isinstance(item, dict) else item)
    return count


def decode_node(data: object, source: Source, resolve: Resolver | None = None) -> Node:
    """Rebuild a release node on ``source`` from :func:`encode_node`'s form; strict.

    A plan that starts with a private join is rebuilt on the sources
    ``resolve`` gives for the datasets it names (a curator's catalog: their
    row limits and ID spaces are the curator's own, never the sender's), and
    the join's source (its row limit per ID) is recomputed from them
    (:func:`dpframe.plan.joins.join_source`); without ``resolve`` a join is
    refused.  The names the join sends (keys, columns, ``max_rows``) are
    checked again by the engine before anything is read.

    Raises:
        NodeFormatError: a malformed request, or a join without ``resolve``.
        SchemaError: a join the engine would refuse (two ID spaces, keys
            without the ID, ...), before any charge.
    """
    count_items(data)
    envelope = _fields(data, "the request", ("v", "node"))
    if envelope["v"] != FORMAT_VERSION or isinstance(envelope["v"], bool):
        raise _bad(f"Unknown format version; this curator speaks v{FORMAT_VERSION}.")
    body = envelope["node"]
    if not isinstance(body, dict) or body.get("type") not in _KINDS:
        raise _bad(f"node.type must be one of {', '.join(_KINDS)}.")
    cls, codecs = _KINDS[body["type"]]
    fields = _fields(
        body, f"a {body['type']} node", ("type", "plan", "privacy", *codecs), _defaulted(cls)
    )
    plan = _decode_plan(fields["plan"], source, _Joins(resolve))
    privacy = _decode_privacy(fields["privacy"])
    values = {
        name: codec.decode(fields[name], name) for name, codec in codecs.items() if name in fields
    }
    node: Node = cls(plan=plan, privacy=privacy, **values)  # fields not sent keep defaults
    return node


# -- the public schema of a curator's dataset ---------------------------------------


def column_extras(info: ColumnInfo) -> dict[str, Any]:
    """A column's date bounds and maximum length in JSON (what a curator adds to its schema)."""
    bounds = info.date_bounds
    return {
        "date_bounds": None if bounds is None else [date_to_json(b) for b in bounds],
        "max_length": info.max_length,
    }


def column_extras_from_json(data: Mapping[str, Any]) -> dict[str, Any]:
    """Read :func:`column_extras`' fields (absent: None), as :class:`ColumnInfo` keywords."""
    bounds = data.get("date_bounds")
    length = data.get("max_length")
    dates: DateBounds | None = None
    if bounds is not None:
        if not isinstance(bounds, list) or len(bounds) != 2:
            raise SchemaError("date_bounds must be a pair of ISO 8601 dates.")
        dates = (date_from_json(bounds[0], "date_bounds"), date_from_json(bounds[1], "date_bounds"))
    return {
        "date_bounds": dates,
        "max_length": None if length is None else check_max_length(length, "max_length"),
    }
