"""Release calls as plain data: built by the analyst's facade, replayed by the curator.

A facade method marked with :func:`releases` runs locally in embedded mode.
When its frame belongs to a remote session, it is not run: the decorator
describes the call instead — the frame's plan (its filters and derived
columns as expression trees), the public schema the analyst declared
(bounds, categories, selected columns), the receiver (frame, series or
group-by), the method name and its arguments — and hands that description
to the remote session.  The curator rebuilds the same objects from its own
copy of the data through the same public facade (so every validation runs
there again) and calls the same method.  Only method names on a fixed list
can be called.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from dpframe.plan.expressions import Col, Expr
from dpframe.plan.nodes import Assign, Filter, lineage
from dpframe.remote.wire import (
    ProtocolError,
    decode_expr,
    decode_request_value,
    encode_request_value,
)

if TYPE_CHECKING:
    from dpframe.frame import PrivateFrame

__all__ = ["ALLOWED_METHODS", "Call", "call_from_json", "releases", "replay"]

F = TypeVar("F", bound=Callable[..., Any])

#: The release methods a curator will run, per receiver kind.
ALLOWED_METHODS: Mapping[str, frozenset[str]] = {
    "frame": frozenset(
        {
            "count",
            "describe",
            "above_threshold",
            "discover_keys",
            "linear_regression",
            "logistic_regression",
        }
    ),
    "series": frozenset(
        {
            "count",
            "sum",
            "mean",
            "var",
            "std",
            "quantile",
            "median",
            "mode",
            "value_counts",
            "hist",
            "randomized_response",
            "laplace_copy",
            "kde",
        }
    ),
    "groupby": frozenset({"count", "size", "sum", "mean", "var", "std", "argmax"}),
}

MAX_STEPS = 256
MAX_COLUMNS = 4096


@dataclass(frozen=True)
class Call:
    """One release request: where (frame state), on what (receiver), which method, with what."""

    dataset: str
    steps: tuple[Filter | Assign, ...]
    columns: tuple[str, ...]
    bounds: Mapping[str, tuple[float, float]]
    categories: Mapping[str, tuple[Any, ...]]
    receiver: str
    expr: Expr | None
    by: tuple[str, ...]
    column: str | None
    method: str
    arguments: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready request body (expressions as trees, values tagged)."""
        steps: list[dict[str, Any]] = []
        for step in self.steps:
            if isinstance(step, Filter):
                steps.append({"kind": "filter", "predicate": step.predicate.to_dict()})
            else:
                steps.append({"kind": "assign", "name": step.name, "expr": step.expr.to_dict()})
        receiver: dict[str, Any] = {"kind": self.receiver}
        if self.expr is not None:
            receiver["expr"] = self.expr.to_dict()
        if self.receiver == "groupby":
            receiver["by"] = list(self.by)
            receiver["column"] = self.column
        return {
            "steps": steps,
            "columns": list(self.columns),
            "bounds": {k: [float(lo), float(hi)] for k, (lo, hi) in self.bounds.items()},
            "categories": {k: encode_request_value(list(v)) for k, v in self.categories.items()},
            "receiver": receiver,
            "method": self.method,
            "arguments": {k: encode_request_value(v) for k, v in self.arguments.items()},
        }


def _bad(message: str) -> ProtocolError:
    return ProtocolError("invalid_query", message)


def _str_list(value: Any, what: str, limit: int) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > limit:
        raise _bad(f"{what} must be a list of at most {limit} names.")
    if not all(isinstance(v, str) for v in value):
        raise _bad(f"{what} must hold column names (strings).")
    return tuple(value)


def call_from_json(dataset: str, body: Mapping[str, Any]) -> Call:
    """Validate a request body field by field and build the :class:`Call` it describes."""
    steps: list[Filter | Assign] = []
    raw_steps = body.get("steps", [])
    if not isinstance(raw_steps, list) or len(raw_steps) > MAX_STEPS:
        raise _bad(f"steps must be a list of at most {MAX_STEPS} filters and assignments.")
    from dpframe.plan.nodes import Source

    node: Any = Source(dataset)
    for raw in raw_steps:
        if not isinstance(raw, dict):
            raise _bad("Each step must be an object.")
        if raw.get("kind") == "filter" and set(raw) == {"kind", "predicate"}:
            node = Filter(node, decode_expr(raw["predicate"]))
        elif raw.get("kind") == "assign" and set(raw) == {"kind", "name", "expr"}:
            if not isinstance(raw["name"], str) or not raw["name"]:
                raise _bad("An assignment needs a non-empty column name.")
            node = Assign(node, raw["name"], decode_expr(raw["expr"]))
        else:
            raise _bad("A step is {kind: filter, predicate} or {kind: assign, name, expr}.")
        steps.append(node)
    columns = _str_list(body.get("columns", []), "columns", MAX_COLUMNS)
    bounds = _bounds(body.get("bounds", {}))
    categories = _categories(body.get("categories", {}))
    receiver = body.get("receiver")
    if not isinstance(receiver, dict) or receiver.get("kind") not in ALLOWED_METHODS:
        raise _bad("receiver.kind must be 'frame', 'series' or 'groupby'.")
    kind = receiver["kind"]
    expected = {"frame": {"kind"}, "series": {"kind", "expr"}, "groupby": {"kind", "by", "column"}}
    if set(receiver) != expected[kind]:
        raise _bad(f"A {kind} receiver has exactly the fields {sorted(expected[kind])}.")
    expr = decode_expr(receiver["expr"]) if kind == "series" else None
    by = _str_list(receiver["by"], "receiver.by", 16) if kind == "groupby" else ()
    column = receiver.get("column")
    if column is not None and not isinstance(column, str):
        raise _bad("receiver.column must be a column name or null.")
    method = body.get("method")
    if not isinstance(method, str) or method not in ALLOWED_METHODS[kind]:
        raise _bad(f"method must be one of {sorted(ALLOWED_METHODS[kind])} for a {kind}.")
    raw_args = body.get("arguments", {})
    if not isinstance(raw_args, dict) or len(raw_args) > 32:
        raise _bad("arguments must be an object of at most 32 named values.")
    arguments = {str(k): decode_request_value(v) for k, v in raw_args.items()}
    return Call(
        dataset,
        tuple(steps),
        columns,
        bounds,
        categories,
        kind,
        expr,
        by,
        column,
        method,
        arguments,
    )


def _bounds(raw: Any) -> dict[str, tuple[float, float]]:
    if not isinstance(raw, dict) or len(raw) > MAX_COLUMNS:
        raise _bad("bounds must be an object {column: [low, high]}.")
    result: dict[str, tuple[float, float]] = {}
    for name, pair in raw.items():
        ok = isinstance(pair, list) and len(pair) == 2
        if not ok or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in pair):
            raise _bad(f"bounds[{name!r}] must be [low, high] numbers.")
        result[name] = (float(pair[0]), float(pair[1]))
    return result


def _categories(raw: Any) -> dict[str, tuple[Any, ...]]:
    if not isinstance(raw, dict) or len(raw) > MAX_COLUMNS:
        raise _bad("categories must be an object {column: [key, ...]}.")
    result: dict[str, tuple[Any, ...]] = {}
    for name, keys in raw.items():
        decoded = decode_request_value(keys)
        if not isinstance(decoded, list):
            raise _bad(f"categories[{name!r}] must be a list of keys.")
        result[name] = tuple(decoded)
    return result


# -- the analyst's side ------------------------------------------------------------


def _frame_of(receiver: Any) -> PrivateFrame:
    from dpframe.frame import PrivateFrame

    if isinstance(receiver, PrivateFrame):
        return receiver
    frame: PrivateFrame = receiver._frame
    return frame


def describe_call(receiver: Any, method: str, arguments: Mapping[str, Any]) -> Call:
    """The :class:`Call` that asks a curator to run ``receiver.method(**arguments)``."""
    from dpframe.frame import _to_expr
    from dpframe.groupby import PrivateGroupBy
    from dpframe.series import PrivateSeries

    frame = _frame_of(receiver)
    source, steps = lineage(frame._plan)

    def convert(value: Any) -> Any:
        if isinstance(value, PrivateSeries):
            return _to_expr(value, frame)
        return value

    schema = frame._schema
    kind, expr, column = "frame", None, None
    by: tuple[str, ...] = ()
    if isinstance(receiver, PrivateSeries):
        kind, expr = "series", receiver._expr
    elif isinstance(receiver, PrivateGroupBy):
        kind, by, column = "groupby", tuple(k.name for k in receiver._keys), receiver._column
    converted = {k: _converted(v, convert) for k, v in arguments.items()}
    return Call(
        source.dataset,
        tuple(steps),
        schema.names,
        {c.name: c.bounds for c in schema.columns if c.bounds is not None},
        {c.name: c.categories for c in schema.columns if c.categories is not None},
        kind,
        expr,
        by,
        column,
        method,
        converted,
    )


def _converted(value: Any, convert: Callable[[Any], Any]) -> Any:
    value = convert(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_converted(v, convert) for v in value)
    if isinstance(value, Mapping):
        return {k: _converted(v, convert) for k, v in value.items()}
    return value


def releases(method: F) -> F:
    """Mark a facade method as a release: in a remote session it runs on the curator."""
    signature = inspect.signature(method)
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        session = _frame_of(self)._session
        if not getattr(session, "is_remote", False):
            return method(self, *args, **kwargs)
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{name}(): {exc}") from None
        arguments = dict(bound.arguments)
        arguments.pop(next(iter(signature.parameters)))
        return cast(Any, session)._remote_call(describe_call(self, name, arguments))

    return cast(F, wrapper)


# -- the curator's side ------------------------------------------------------------


def replay(base: PrivateFrame, call: Call) -> Any:
    """Rebuild the analyst's objects on ``base`` through the facade and run the call.

    Every step goes through the same public methods as in embedded mode
    (``filter``, ``assign``, ``with_bounds``, ``with_categories``,
    ``select``), so every check of embedded mode runs here too.
    """
    frame = base
    for step in call.steps:
        if isinstance(step, Filter):
            frame = frame.filter(step.predicate)
        else:
            frame = frame.assign(**{step.name: step.expr})
    for name, pair in call.bounds.items():
        if frame.bounds.get(name) != pair:
            frame = frame.with_bounds(**{name: pair})
    for name, keys in call.categories.items():
        if frame.categories.get(name) != keys:
            frame = frame.with_categories(**{name: list(keys)})
    if call.columns and tuple(frame.columns) != call.columns:
        frame = frame.select(list(call.columns))
    receiver: Any = frame
    if call.receiver == "series":
        assert call.expr is not None
        receiver = _series(frame, call.expr)
    elif call.receiver == "groupby":
        receiver = frame.groupby(list(call.by))
        if call.column is not None:
            receiver = receiver[call.column]
    method = getattr(receiver, call.method, None)
    if method is None:
        raise _bad(f"This dpframe version has no {call.receiver}.{call.method}().")
    try:
        inspect.signature(method).bind(**call.arguments)
    except TypeError as exc:  # an unknown or missing argument (names only, no data)
        raise _bad(f"{call.method}(): {exc}.") from None
    return method(**call.arguments)


def _series(frame: PrivateFrame, expr: Expr) -> Any:
    from dpframe.plan.schema import infer_column
    from dpframe.series import PrivateSeries

    if isinstance(expr, Col):
        return frame[expr.name]
    return PrivateSeries._create(frame, expr, infer_column(str(expr), expr, frame._schema))
