"""Public recodings of a column: bins as ``pandas.cut`` draws them, and maps to public labels.

Two expression nodes (see :mod:`dpframe.plan.expressions` for what every node provides):

* :class:`Bin`: the index of the bin holding ``operand``, exactly as
  ``pandas.cut(x, edges, right=..., include_lowest=..., labels=False)``
  computes it: bins ``(e[i], e[i+1]]`` (``right=True``) or ``[e[i], e[i+1])``
  (``right=False``); with ``include_lowest`` and ``right`` the first edge
  belongs to the first bin.  Values outside the edges, ±inf and missing
  values are in no bin (missing).
* :class:`Recode`: each value found among the public ``source`` values
  replaced by the public ``target`` at the same position; any other value is
  missing (``keep=False``, as ``Series.map(dict)``) or kept as it is
  (``keep=True``, as ``Series.replace(dict)``).

``pandas.cut`` with labels is ``Recode(Bin(x, edges), (0, 1, ...), labels)``;
its result's public keys are the labels (no declaration needed).

A label is a public constant: a string, a finite number, a boolean, or a
:class:`pandas.Interval` with finite numeric ends (the labels ``pandas.cut``
makes).  In keys and node parameters an interval is the tuple
``("interval", left, right, closed)`` (:func:`encode_label`), in JSON the
object ``{"$interval": [left, right, closed]}`` (:func:`label_to_json`).
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

import numpy as np
import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr, Scalar

__all__ = [
    "Bin",
    "Label",
    "Recode",
    "check_edges",
    "decode_label",
    "encode_label",
    "label_from_json",
    "label_to_json",
    "plain_label",
    "recode_from_dict",
]

Label: TypeAlias = "bool | int | float | str | pd.Interval"
_CLOSED = ("right", "left", "both", "neither")
#: Edges and pairs shown in an expression's printed form (more are summarized).
_SHOWN = 6


def _plain_number(value: object, what: str) -> int | float:
    """A finite real number as a plain Python int or float (numpy scalars unwrapped)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise SchemaError(f"{what} must be a finite number.")
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    if not math.isfinite(number):
        raise SchemaError(f"{what} must be a finite number.")
    return number


def _plain_scalar(value: object, what: str) -> Scalar:
    """A public constant (string, boolean, finite number) as a plain Python value."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Real):
        return _plain_number(value, what)
    raise SchemaError(f"{what} must be a string, a finite number or a boolean (not missing).")


def _interval(left: Any, right: Any, closed: Any) -> Label:
    interval: pd.Interval = pd.Interval(left, right, closed=closed)
    return interval


def plain_label(value: object, what: str = "A label") -> Label:
    """A label as a plain value: a scalar, or a :class:`pandas.Interval` with plain ends."""
    if isinstance(value, pd.Interval):
        left = _plain_number(value.left, f"{what}'s left end")
        right = _plain_number(value.right, f"{what}'s right end")
        return _interval(left, right, value.closed)
    return _plain_scalar(value, what)


def encode_label(label: Label) -> Hashable:
    """A label in node parameters and keys: an interval becomes a plain tuple."""
    if isinstance(label, pd.Interval):
        return ("interval", label.left, label.right, label.closed)
    return label


def decode_label(item: Hashable) -> Label:
    """The inverse of :func:`encode_label`."""
    if isinstance(item, tuple):
        _, left, right, closed = item
        return _interval(left, right, closed)
    return item  # type: ignore[return-value]  # a scalar label


def label_to_json(label: Label) -> Any:
    """A label's JSON form (an interval is ``{"$interval": [left, right, closed]}``)."""
    if isinstance(label, pd.Interval):
        return {"$interval": [label.left, label.right, label.closed]}
    return label


def label_from_json(data: object, what: str) -> Label:
    """Read a label written by :func:`label_to_json` (strictly; a :class:`SchemaError` if bad)."""
    if isinstance(data, dict):
        body = data.get("$interval")
        if set(data) != {"$interval"} or not isinstance(body, list) or len(body) != 3:
            raise SchemaError(f"{what} must be a scalar or {{'$interval': [left, right, closed]}}.")
        left, right, closed = body
        if closed not in _CLOSED:
            raise SchemaError(f"{what}: an interval is closed on one of {', '.join(_CLOSED)}.")
        low = _plain_number(left, f"{what}'s left end")
        high = _plain_number(right, f"{what}'s right end")
        if low > high:
            raise SchemaError(f"{what}: an interval needs left <= right.")
        return _interval(low, high, closed)
    if isinstance(data, float) and not math.isfinite(data):
        raise SchemaError(f"{what} must be finite.")
    if data is None or not isinstance(data, (str, bool, int, float)):
        raise SchemaError(f"{what} must be a string, a finite number or a boolean.")
    return data


def check_edges(edges: Sequence[object], what: str = "Bin edges") -> tuple[float, ...]:
    """At least two finite numbers, strictly increasing, as floats."""
    try:
        values = tuple(float(_plain_number(e, what)) for e in edges)
    except OverflowError:
        raise SchemaError(f"{what} must be finite numbers.") from None
    if len(values) < 2:
        raise SchemaError(f"{what} need at least two values (one bin).")
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise SchemaError(f"{what} must increase strictly.")
    return values


def _show_edges(edges: tuple[float, ...]) -> str:
    if len(edges) <= _SHOWN:
        return "[" + ", ".join(f"{e:g}" for e in edges) + "]"
    return f"{len(edges) - 1} bins"


@dataclass(frozen=True, eq=False, repr=False)
class Bin(Expr):
    """The index of the bin holding ``operand`` (``pandas.cut``'s codes; see the module).

    Raises:
        SchemaError: the edges are not finite, or not strictly increasing.
    """

    tag: ClassVar[str] = "bin"
    operand: Expr
    edges: tuple[float, ...]
    right: bool = True
    include_lowest: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.right, bool) or not isinstance(self.include_lowest, bool):
            raise SchemaError("right and include_lowest are booleans.")
        object.__setattr__(self, "edges", check_edges(self.edges))

    @property
    def bins(self) -> int:
        """The number of bins."""
        return len(self.edges) - 1

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.edges, self.right, self.include_lowest)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {
            "op": "bin",
            "operand": children[0],
            "edges": list(self.edges),
            "right": self.right,
            "include_lowest": self.include_lowest,
        }

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        options = ("" if self.right else ", right=False") + (
            ", include_lowest=True" if self.include_lowest else ""
        )
        return ("cut(", self.operand, f", {_show_edges(self.edges)}{options})")


@dataclass(frozen=True, eq=False, repr=False)
class Recode(Expr):
    """``operand`` with each public ``source`` value replaced by its ``target`` (see the module).

    ``ordered`` marks the labels' order as meaningful (``pandas.cut``'s
    ordered categorical).

    Raises:
        SchemaError: sources and targets differ in number or are empty, a
            source repeats or is not a plain constant, or a target is not a label.
    """

    tag: ClassVar[str] = "recode"
    operand: Expr
    source: tuple[Scalar, ...]
    target: tuple[Label, ...]
    keep: bool = False
    ordered: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.keep, bool) or not isinstance(self.ordered, bool):
            raise SchemaError("keep and ordered are booleans.")
        sources = tuple(_plain_scalar(s, "A value recoded") for s in self.source)
        targets = tuple(plain_label(t, "A recoded value's label") for t in self.target)
        if not sources or len(sources) != len(targets):
            raise SchemaError("A recoding needs as many labels as values, at least one.")
        if len(set(sources)) != len(sources):
            raise SchemaError("The values recoded must be distinct (1, 1.0 and True are one).")
        object.__setattr__(self, "source", sources)
        object.__setattr__(self, "target", targets)

    @property
    def labels(self) -> tuple[Label, ...]:
        """The distinct targets, in order of first appearance (the result's public keys)."""
        return tuple(dict.fromkeys(self.target))

    @property
    def numeric(self) -> bool:
        """Every target is a number (not a boolean): the result is numeric."""
        return all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in self.target)

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        encoded = tuple(encode_label(t) for t in self.target)
        return (self.source, encoded, self.keep, self.ordered)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {
            "op": "recode",
            "operand": children[0],
            "source": list(self.source),
            "target": [label_to_json(t) for t in self.target],
            "keep": self.keep,
            "ordered": self.ordered,
        }

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        verb = "replace" if self.keep else "map"
        if len(self.source) > _SHOWN:
            return (self.operand, f".{verb}({len(self.source)} values)")
        pairs = ", ".join(
            f"{s!r}: {t if isinstance(t, pd.Interval) else repr(t)}"
            for s, t in zip(self.source, self.target, strict=True)
        )
        return (self.operand, f".{verb}({{{pairs}}})")


def _flag(data: dict[str, Any], name: str) -> bool:
    value = data[name]
    if not isinstance(value, bool):
        raise SchemaError(f"{name} must be true or false.")
    return value


def _items(data: dict[str, Any], name: str) -> list[Any]:
    value = data[name]
    if not isinstance(value, list):
        raise SchemaError(f"{name} must be a list.")
    return value


def recode_from_dict(data: dict[str, Any], operand: Expr) -> Expr:
    """Rebuild a ``bin`` or ``recode`` node from its :meth:`~Expr.node_dict` (strictly)."""
    if data["op"] == "bin":
        if set(data) != {"op", "operand", "edges", "right", "include_lowest"}:
            raise SchemaError("A bin node has the fields operand, edges, right, include_lowest.")
        edges = _items(data, "edges")
        if not all(isinstance(e, (int, float)) and not isinstance(e, bool) for e in edges):
            raise SchemaError("Bin edges must be numbers.")
        return Bin(operand, tuple(edges), _flag(data, "right"), _flag(data, "include_lowest"))
    if set(data) != {"op", "operand", "source", "target", "keep", "ordered"}:
        raise SchemaError("A recode node has the fields operand, source, target, keep, ordered.")
    sources = _items(data, "source")
    if not all(isinstance(s, (str, bool, int, float)) for s in sources):
        raise SchemaError("The values recoded must be strings, numbers or booleans.")
    targets = tuple(
        label_from_json(t, f"target[{i}]") for i, t in enumerate(_items(data, "target"))
    )
    return Recode(operand, tuple(sources), targets, _flag(data, "keep"), _flag(data, "ordered"))
