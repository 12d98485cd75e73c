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
import re
from collections.abc import Hashable, Mapping
from fractions import Fraction
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from dpframe.errors import SchemaError
from dpframe.plan.codec_fields import (
    BOOLEAN,
    BOUNDS,
    EXACT,
    EXPR,
    INTEGER,
    KEYS,
    NUMBER,
    TEXT,
    NodeFormatError,
    _bad,
    _choice,
    _Codec,
    _expr,
    _fields,
    _fixed,
    _optional,
    _text,
    _tuple_of,
    decode_exact,
    encode_exact,
)
from dpframe.plan.columns import ColumnInfo, DateBounds
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import Aggregate, GroupKey, Source
from dpframe.plan.plan_codec import MAX_JOINS, Joins, Resolver, decode_plan, encode_plan
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import ReleaseNode
from dpframe.plan.temporal import date_from_json, date_to_json
from dpframe.plan.text import check_max_length

__all__ = [
    "BOOLEAN",
    "BOUNDS",
    "EXACT",
    "EXPR",
    "FORMAT_VERSION",
    "INTEGER",
    "KEYS",
    "MAX_ITEMS",
    "MAX_JOINS",
    "NUMBER",
    "TEXT",
    "NodeFormatError",
    "Resolver",
    "column_extras",
    "column_extras_from_json",
    "decode_exact",
    "decode_node",
    "encode_exact",
    "encode_node",
    "node_type_names",
]

FORMAT_VERSION = 1
#: The most JSON objects and arrays one encoded node may hold.
MAX_ITEMS = 50_000

Node = Aggregate | ReleaseNode


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
        "plan": encode_plan(node.plan),
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
    plan = decode_plan(fields["plan"], source, Joins(resolve))
    privacy = _decode_privacy(fields["privacy"])
    values = {
        name: codec.decode(fields[name], name) for name, codec in codecs.items() if name in fields
    }
    node: Node = cls(plan=plan, privacy=privacy, **values)  # fields not sent keep defaults
    return node


# -- the public schema of a curator's dataset ---------------------------------------


def column_extras(info: ColumnInfo) -> dict[str, Any]:
    """A column's date bounds, maximum length and not-null flag in JSON (a curator's schema)."""
    bounds = info.date_bounds
    return {
        "date_bounds": None if bounds is None else [date_to_json(b) for b in bounds],
        "max_length": info.max_length,
        "not_null": info.not_null,
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
    not_null = data.get("not_null", False)
    if not isinstance(not_null, bool):
        raise SchemaError("not_null must be true or false.")
    return {
        "date_bounds": dates,
        "max_length": None if length is None else check_max_length(length, "max_length"),
        "not_null": not_null,
    }
