"""Column expressions: immutable trees, never Python callables.

``col("wage") * 2 > 1000`` builds a tree of frozen dataclasses that can be
validated, costed, printed and serialized (``to_dict``) before any data is
read.  Operators build new nodes; ``bool(expr)`` is refused, because the truth
of an expression is only known row by row (use ``&``, ``|`` and ``~``).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

from dpframe.errors import SchemaError

__all__ = [
    "Abs",
    "Arith",
    "Bucket",
    "Clip",
    "Col",
    "Compare",
    "Expr",
    "IsIn",
    "IsNull",
    "Lit",
    "Logical",
    "Neg",
    "Not",
    "col",
    "expr_from_dict",
    "lit",
]

Scalar: TypeAlias = bool | int | float | str
ArithOp = Literal["+", "-", "*", "/"]
CompareOp = Literal["==", "!=", "<", "<=", ">", ">="]
LogicalOp = Literal["&", "|"]
ExprLike: TypeAlias = "Expr | bool | int | float | str"


def _wrap(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    to_expr = getattr(value, "_to_expr", None)
    if to_expr is not None:
        result = to_expr()
        assert isinstance(result, Expr)
        return result
    if isinstance(value, (bool, int, float, str)):
        return Lit(value)
    raise SchemaError(
        f"Cannot use a {type(value).__name__} in a column expression; use a number, a "
        "string, a boolean or another column."
    )


@dataclass(frozen=True, eq=False)
class Expr:
    """Base class of column expressions (see the module docstring)."""

    def __add__(self, other: ExprLike) -> Expr:
        return Arith("+", self, _wrap(other))

    def __radd__(self, other: ExprLike) -> Expr:
        return Arith("+", _wrap(other), self)

    def __sub__(self, other: ExprLike) -> Expr:
        return Arith("-", self, _wrap(other))

    def __rsub__(self, other: ExprLike) -> Expr:
        return Arith("-", _wrap(other), self)

    def __mul__(self, other: ExprLike) -> Expr:
        return Arith("*", self, _wrap(other))

    def __rmul__(self, other: ExprLike) -> Expr:
        return Arith("*", _wrap(other), self)

    def __truediv__(self, other: ExprLike) -> Expr:
        return Arith("/", self, _wrap(other))

    def __rtruediv__(self, other: ExprLike) -> Expr:
        return Arith("/", _wrap(other), self)

    def __neg__(self) -> Expr:
        return Neg(self)

    def __abs__(self) -> Expr:
        return Abs(self)

    def abs(self) -> Expr:
        """Absolute value."""
        return Abs(self)

    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        return Compare("==", self, _wrap(other))

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        return Compare("!=", self, _wrap(other))

    def __lt__(self, other: ExprLike) -> Expr:
        return Compare("<", self, _wrap(other))

    def __le__(self, other: ExprLike) -> Expr:
        return Compare("<=", self, _wrap(other))

    def __gt__(self, other: ExprLike) -> Expr:
        return Compare(">", self, _wrap(other))

    def __ge__(self, other: ExprLike) -> Expr:
        return Compare(">=", self, _wrap(other))

    def __and__(self, other: ExprLike) -> Expr:
        return Logical("&", self, _wrap(other))

    def __rand__(self, other: ExprLike) -> Expr:
        return Logical("&", _wrap(other), self)

    def __or__(self, other: ExprLike) -> Expr:
        return Logical("|", self, _wrap(other))

    def __ror__(self, other: ExprLike) -> Expr:
        return Logical("|", _wrap(other), self)

    def __invert__(self) -> Expr:
        return Not(self)

    def __hash__(self) -> int:
        return hash(self.key())

    def __bool__(self) -> bool:
        raise SchemaError(
            "The truth value of a column expression is only known row by row; combine "
            "conditions with & | ~ instead of and/or/not, and filter with pf[condition]."
        )

    def isin(self, values: Iterable[Scalar]) -> Expr:
        """True where the value is one of ``values`` (public constants)."""
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise SchemaError("isin() takes a list of public values, e.g. isin(['a', 'b']).")
        return IsIn(self, tuple(_plain_scalar(v) for v in values))

    def between(self, low: ExprLike, high: ExprLike) -> Expr:
        """``low <= x <= high`` (both ends inclusive, as in pandas)."""
        return Logical("&", Compare(">=", self, _wrap(low)), Compare("<=", self, _wrap(high)))

    def clip(self, lower: float, upper: float) -> Expr:
        """Clamp to ``[lower, upper]``; the result has these bounds."""
        if not float(lower) <= float(upper):
            raise SchemaError("clip needs lower <= upper.")
        return Clip(self, float(lower), float(upper))

    def isna(self) -> Expr:
        """True where the value is missing (NaN or None)."""
        return IsNull(self)

    def notna(self) -> Expr:
        """True where the value is present."""
        return Not(IsNull(self))

    def columns(self) -> frozenset[str]:
        """The column names this expression reads."""
        found: set[str] = set()
        stack: list[Expr] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, Col):
                found.add(node.name)
            stack.extend(node.children())
        return frozenset(found)

    def children(self) -> tuple[Expr, ...]:
        """Direct sub-expressions."""
        return ()

    def key(self) -> tuple[Any, ...]:
        """A structural identity (equal trees have equal keys)."""
        return (type(self).__name__,)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description of the tree."""
        raise SchemaError(f"{type(self).__name__} cannot be serialized.")

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True, eq=False, repr=False)
class Col(Expr):
    """A column of the frame, by name."""

    name: str

    def key(self) -> tuple[Any, ...]:  # noqa: D102
        return ("col", self.name)

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"op": "col", "name": self.name}

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False, repr=False)
class Lit(Expr):
    """A public constant."""

    value: Scalar

    def key(self) -> tuple[Any, ...]:  # noqa: D102
        return ("lit", type(self.value).__name__, self.value)

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"op": "lit", "value": self.value}

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True, eq=False, repr=False)
class Arith(Expr):
    """``left op right`` for op in + - * /."""

    op: ArithOp
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.left, self.right)

    def key(self) -> tuple[Any, ...]:  # noqa: D102
        return ("arith", self.op, self.left.key(), self.right.key())

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"op": self.op, "left": self.left.to_dict(), "right": self.right.to_dict()}

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True, eq=False, repr=False)
class Compare(Expr):
    """``left op right`` for comparisons; the result is boolean."""

    op: CompareOp
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.left, self.right)

    def key(self) -> tuple[Any, ...]:  # noqa: D102
        return ("compare", self.op, self.left.key(), self.right.key())

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"op": self.op, "left": self.left.to_dict(), "right": self.right.to_dict()}

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True, eq=False, repr=False)
class Logical(Expr):
    """``left & right`` or ``left | right`` of boolean expressions."""

    op: LogicalOp
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.left, self.right)

    def key(self) -> tuple[Any, ...]:  # noqa: D102
        return ("logical", self.op, self.left.key(), self.right.key())

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"op": self.op, "left": self.left.to_dict(), "right": self.right.to_dict()}

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True, eq=False, repr=False)
class _Unary(Expr):
    operand: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def key(self) -> tuple[Any, ...]:
        return (type(self).__name__.lower(), self.operand.key())

    def to_dict(self) -> dict[str, Any]:
        return {"op": type(self).__name__.lower(), "operand": self.operand.to_dict()}

    def __str__(self) -> str:
        return f"{type(self).__name__.lower()}({self.operand})"


class Neg(_Unary):
    """``-x``."""


class Abs(_Unary):
    """``abs(x)``."""


class Not(_Unary):
    """``~x`` of a boolean expression."""


class IsNull(_Unary):
    """True where ``x`` is missing."""


@dataclass(frozen=True, eq=False, repr=False)
class IsIn(Expr):
    """True where ``operand`` is one of the public ``values``."""

    operand: Expr
    values: tuple[Scalar, ...]

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def key(self) -> tuple[Any, ...]:  # noqa: D102
        return ("isin", self.operand.key(), self.values)

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"op": "isin", "operand": self.operand.to_dict(), "values": list(self.values)}

    def __str__(self) -> str:
        return f"{self.operand}.isin({list(self.values)!r})"


def _plain_scalar(value: object) -> Scalar:
    """A public constant as a plain Python value (numpy scalars are unwrapped)."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, numbers.Real) and hasattr(value, "item"):
        return cast("Scalar", value.item())
    raise SchemaError("isin() values must be numbers, strings or booleans (use isna() for None).")


@dataclass(frozen=True, eq=False, repr=False)
class Clip(Expr):
    """``operand`` clamped to ``[lower, upper]``."""

    operand: Expr
    lower: float
    upper: float

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def key(self) -> tuple[Any, ...]:  # noqa: D102
        return ("clip", self.operand.key(), self.lower, self.upper)

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {
            "op": "clip",
            "operand": self.operand.to_dict(),
            "lower": self.lower,
            "upper": self.upper,
        }

    def __str__(self) -> str:
        return f"{self.operand}.clip({self.lower}, {self.upper})"


@dataclass(frozen=True, eq=False, repr=False)
class Bucket(Expr):
    """The index of the bin ``[edges[i], edges[i+1])`` holding ``operand`` (last bin closed).

    With ``clamp`` values beyond the edges go to the end bins; otherwise they
    (and missing values) belong to no bin.
    """

    operand: Expr
    edges: tuple[float, ...]
    clamp: bool = False

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def key(self) -> tuple[Any, ...]:  # noqa: D102
        return ("bucket", self.operand.key(), self.edges, self.clamp)

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {
            "op": "bucket",
            "operand": self.operand.to_dict(),
            "edges": list(self.edges),
            "clamp": self.clamp,
        }

    def __str__(self) -> str:
        return f"bucket({self.operand}, {len(self.edges) - 1} bins)"


def col(name: str) -> Col:
    """A reference to the column ``name``, for building expressions."""
    if not isinstance(name, str):
        raise SchemaError("Column names are strings.")
    return Col(name)


def lit(value: Scalar) -> Lit:
    """A public constant in an expression."""
    return Lit(value)


_UNARY: dict[str, type[_Unary]] = {"neg": Neg, "abs": Abs, "not": Not, "isnull": IsNull}


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
    if op == "clip":
        return Clip(expr_from_dict(data["operand"]), float(data["lower"]), float(data["upper"]))
    raise SchemaError(f"Unknown or malformed expression node {op!r}.")
