"""Element-wise numeric functions and conditional replacement as expression nodes.

Two expression nodes (see :mod:`dpframe.plan.expressions` for what every node provides):

* :class:`UFunc`: a numpy function of one number per row (``np.log(x)``,
  ``np.sqrt``, ``np.exp``, ``np.floor``...).  Only functions whose result
  bounds follow from the operand's public bounds are accepted
  (:data:`UFUNCS`): monotone functions map the bounds' ends, the others have
  a fixed range (``sin``, ``cos``) or a known minimum (``square``).  Where a
  bound falls outside the function's domain (``log`` of bounds that include
  0) the result has no bounds, so summing it is refused until it is clipped.
  Values are computed as numpy does (``log`` of 0 is ``-inf``, of a negative
  number NaN, i.e. missing); aggregates clamp to the derived bounds.
* :class:`Where`: ``operand`` where ``cond`` holds, else the public constant
  ``other`` (None: missing) — ``Series.where``; ``mask`` is ``where`` of the
  negated condition and ``fillna(v)`` is ``where(notna(x), v)``.  Its facts
  are the operand's with ``other`` added to the bounds and the public keys.

:func:`evaluate` computes either node on a chunk of rows (the backends call it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any, ClassVar, cast

import numpy as np
import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.columns import Bounds, ColumnInfo, Derived, ValueKind, pandas_order
from dpframe.plan.expressions import Expr, Scalar

__all__ = ["UFUNCS", "UFunc", "Where", "bounded_ufunc", "elementwise_from_dict", "evaluate"]


def _monotone(function: Callable[[float], float], low: float = -math.inf) -> Any:
    """Bounds of an increasing function defined for values above ``low`` (or at it if finite)."""

    def bounds(pair: Bounds) -> Bounds | None:
        if not pair[0] > low and not (pair[0] == low and math.isfinite(function(low))):
            return None
        return (function(pair[0]), function(pair[1]))

    return bounds


def _safe(function: Callable[[float], float]) -> Callable[[float], float]:
    def call(value: float) -> float:
        try:
            return function(value)
        except (ValueError, OverflowError):
            return math.inf
        except ZeroDivisionError:  # pragma: no cover - no listed function divides
            return math.nan

    return call


def _square(pair: Bounds) -> Bounds:
    low, high = pair
    if low >= 0:
        return (low * low, high * high)
    if high <= 0:
        return (high * high, low * low)
    return (0.0, max(low * low, high * high))


def _fixed(low: float, high: float) -> Callable[[Bounds], Bounds]:
    return lambda pair: (low, high)


def _sign(pair: Bounds) -> Bounds:
    return (float(np.sign(pair[0])), float(np.sign(pair[1])))


#: The numpy functions a private column accepts, and how each maps the operand's bounds.
UFUNCS: dict[str, Callable[[Bounds], Bounds | None]] = {
    "log": _monotone(_safe(math.log), 0.0),
    "log2": _monotone(_safe(math.log2), 0.0),
    "log10": _monotone(_safe(math.log10), 0.0),
    "log1p": _monotone(_safe(math.log1p), -1.0),
    "sqrt": _monotone(math.sqrt, 0.0),
    "cbrt": _monotone(lambda v: math.copysign(abs(v) ** (1 / 3), v)),
    "exp": _monotone(_safe(math.exp)),
    "exp2": _monotone(_safe(lambda v: 2.0**v)),
    "expm1": _monotone(_safe(math.expm1)),
    "square": _square,
    "floor": _monotone(lambda v: float(math.floor(v))),
    "ceil": _monotone(lambda v: float(math.ceil(v))),
    "trunc": _monotone(lambda v: float(math.trunc(v))),
    "rint": _monotone(lambda v: float(np.rint(v))),
    "sign": _sign,
    "tanh": _monotone(math.tanh),
    "arctan": _monotone(math.atan),
    "sin": _fixed(-1.0, 1.0),
    "cos": _fixed(-1.0, 1.0),
}


def bounded_ufunc(name: str) -> bool:
    """True for a numpy function a private column accepts (bounds follow from the column's)."""
    return name in UFUNCS or name == "isnan"


@dataclass(frozen=True, eq=False, repr=False)
class UFunc(Derived):
    """``numpy.<name>(operand)`` for one of :data:`UFUNCS` (see the module).

    Raises:
        SchemaError: a function whose result cannot be given public bounds.
    """

    tag: ClassVar[str] = "ufunc"
    name: str

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.name not in UFUNCS:
            raise SchemaError(
                f"np.{self.name} cannot be given public bounds from the column's, so it is not "
                f"available on private columns; these are: {', '.join(sorted(UFUNCS))}."
            )

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.name,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "ufunc", "operand": children[0], "name": self.name}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (f"{self.name}(", self.operand, ")")

    def value_kind(self, operand: ValueKind) -> ValueKind:  # noqa: D102
        if operand != "number":
            raise SchemaError(f"np.{self.name} needs numbers; {self.operand} is not numeric.")
        return "number"

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:  # noqa: D102
        bounds = None if operand.bounds is None else UFUNCS[self.name](operand.bounds)
        if bounds is not None and not all(math.isfinite(b) for b in bounds):
            bounds = None
        return ColumnInfo(name, "numeric", "float64", bounds)


def _other(value: object) -> Scalar | None:
    """A public replacement value: None (missing), a string, a boolean or a finite number."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = value.item() if isinstance(value, np.generic) else value
        if isinstance(number, float) and math.isnan(number):
            return None
        if not math.isfinite(number):
            raise SchemaError("The replacement value must be finite.")
        return number
    raise SchemaError(
        "The replacement value must be a public constant (a number, a string, a boolean "
        f"or NaN), not a {type(value).__name__}."
    )


@dataclass(frozen=True, eq=False, repr=False)
class Where(Derived):
    """``operand`` where ``cond`` holds, else the public ``other`` (None: missing).

    ``Series.where(cond, other)``; a missing condition counts as false (as a
    filter).  The facts are the operand's, with ``other`` added to the bounds
    (numbers) or to the public keys.

    Raises:
        SchemaError: ``cond`` is not an expression, ``other`` is not a public
            constant, or ``other`` is text for a numeric operand (or a number
            for a text one).
    """

    tag: ClassVar[str] = "where"
    cond: Expr
    other: Scalar | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.cond, Expr):
            raise SchemaError("where() needs a condition built from the frame's columns.")
        object.__setattr__(self, "other", _other(self.other))

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand, self.cond)

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.other,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "where", "operand": children[0], "cond": children[1], "other": self.other}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (self.operand, ".where(", self.cond, f", {self.other!r})")

    def value_kind(self, operand: ValueKind) -> ValueKind:  # noqa: D102
        other = self.other
        if other is None:
            return operand
        text = isinstance(other, str)
        if operand == "number" and text:
            raise SchemaError(
                f"Replacing values of the numeric {self.operand} by the text {other!r} would "
                "mix numbers and text; replace by a number, or recode with map() first."
            )
        if operand == "text" and not text:
            raise SchemaError(
                f"Replacing values of the text column {self.operand} by a number would mix "
                "text and numbers; replace by a string."
            )
        if operand not in ("number", "text"):
            raise SchemaError(f"{self.operand} takes only a missing value as a replacement.")
        return operand

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:  # noqa: D102
        other = self.other
        if other is None:
            return replace(operand, name=name)
        bounds = operand.bounds
        kind, dtype = operand.kind, operand.dtype
        if isinstance(other, (int, float)):
            value = float(other)
            if bounds is not None:
                bounds = (min(bounds[0], value), max(bounds[1], value))
            if kind == "boolean" and other not in (0, 1):
                kind, dtype = "numeric", "float64"
            if dtype.lower().startswith("int") and not value.is_integer():
                dtype = "float64"  # a declared integer column filled with a fraction
        keys: tuple[Hashable, ...] | None = operand.categories
        if keys is not None and other not in keys:
            # sorted keys (a plain column's) stay sorted, as pandas sorts the filled column's
            # groups; a Categorical's own order gets the new key last, as add_categories does
            keys = pandas_order((*keys, other)) if keys == pandas_order(keys) else (*keys, other)
        if kind == "categorical":
            dtype = "object"
        return replace(operand, name=name, kind=kind, dtype=dtype, bounds=bounds, categories=keys)


def elementwise_from_dict(data: dict[str, Any], children: list[Expr]) -> Expr:
    """Rebuild a ``ufunc`` or ``where`` node from its :meth:`~Expr.node_dict` (strictly)."""
    if data["op"] == "ufunc":
        if set(data) != {"op", "operand", "name"} or not isinstance(data["name"], str):
            raise SchemaError("A ufunc node has the fields operand and name (a string).")
        return UFunc(children[0], data["name"])
    if set(data) != {"op", "operand", "cond", "other"}:
        raise SchemaError("A where node has the fields operand, cond and other.")
    other = data["other"]
    if other is not None and not isinstance(other, (str, bool, int, float)):
        raise SchemaError("A where node's other is a string, a number, a boolean or null.")
    return Where(children[0], children[1], other)


def _truth(value: Any) -> bool:
    """A value's truth as a condition: missing is false; never raises (any kind of value)."""
    try:
        return False if pd.isna(value) else bool(value)
    except (TypeError, ValueError):
        return True


def _mask(cond: Any, n: int) -> np.ndarray:
    """The rows where ``cond`` holds (the facade sends booleans; anything else by its truth)."""
    if isinstance(cond, pd.Series):
        if pd.api.types.is_bool_dtype(cond.dtype) and not isinstance(
            cond.dtype, pd.CategoricalDtype
        ):
            return np.asarray(cond.to_numpy(dtype=bool, na_value=False), dtype=bool)
        codes, uniques = pd.factorize(cond, use_na_sentinel=True)
        truth = np.array([_truth(v) for v in uniques] + [False], dtype=bool)
        return np.asarray(truth[codes], dtype=bool)
    return np.full(n, _truth(cond))


def _floats(value: Any, n: int) -> np.ndarray:
    if isinstance(value, pd.Series):
        return np.asarray(
            pd.to_numeric(value, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        )
    number = np.nan if value is None or pd.isna(value) else float(value)
    return np.full(n, number, dtype=np.float64)


def evaluate(tag: str, params: tuple[Any, ...], args: list[Any], index: pd.Index) -> pd.Series:
    """The value of a ``ufunc`` or ``where`` node on the rows of ``index`` (from its arguments).

    Row by row: the result of a row depends on that row's arguments only.
    """
    n = len(index)
    if tag == "ufunc":
        with np.errstate(all="ignore"):
            values = np.asarray(getattr(np, params[0])(_floats(args[0], n)), dtype=np.float64)
        return pd.Series(values, index=index)
    value, cond = args
    other = params[0]
    keep = _mask(cond, n)
    if not isinstance(value, pd.Series):
        dtype = object if isinstance(value, str) else None
        value = pd.Series(np.full(n, value, dtype=dtype), index=index)
    numeric = pd.api.types.is_numeric_dtype(value.dtype) and not isinstance(
        value.dtype, pd.CategoricalDtype
    )
    if numeric and (other is None or not isinstance(other, str)):
        fill = np.nan if other is None else float(other)
        return pd.Series(np.where(keep, _floats(value, n), fill), index=index)
    if isinstance(value.dtype, pd.CategoricalDtype):
        value = value.astype(object)
    replaced = value.where(keep, np.nan if other is None else other)
    return cast("pd.Series", replaced)
