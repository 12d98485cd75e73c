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
from typing import Any, ClassVar, Literal, TypeAlias, cast

import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.date_values import as_date, date_to_json, is_date
from dpframe.plan.keys import KeyTable, intern

__all__ = [
    "Abs",
    "Arith",
    "Bucket",
    "Clip",
    "Col",
    "Compare",
    "DateLit",
    "Expr",
    "IsIn",
    "IsNull",
    "Lit",
    "Logical",
    "Neg",
    "Not",
    "col",
    "lit",
]

#: ``str(expr)`` shows at most this many characters, then ``…`` (computed without
#: expanding the rest of the tree, so a huge shared expression prints quickly).
STR_LIMIT = 1000
#: ``to_dict()`` writes out at most this many nodes (the JSON form is a tree: an
#: expression whose sub-trees are shared can be exponentially larger written out).
DICT_NODE_LIMIT = 100_000

Scalar: TypeAlias = bool | int | float | str
ArithOp = Literal["+", "-", "*", "/"]
CompareOp = Literal["==", "!=", "<", "<=", ">", ">="]
LogicalOp = Literal["&", "|"]
ExprLike: TypeAlias = "Expr | bool | int | float | str"


def _wrap(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    handle = getattr(type(value), "__dpframe__", None)  # a private column (the facade's)
    if handle is not None:
        expr = getattr(handle(value), "expr", None)
        if isinstance(expr, Expr):
            return expr
    if isinstance(value, (bool, int, float, str)):
        return Lit(value)
    if is_date(value):
        return DateLit(value)
    raise SchemaError(
        f"Cannot use a {type(value).__name__} in a column expression; use a number, a "
        "string, a boolean, a date or another column."
    )


@dataclass(frozen=True, eq=False)
class Expr:
    """Base class of column expressions (see the module docstring).

    Expressions are compared by :meth:`key` (``==`` builds a condition), and
    every walk over one (``key``, ``str``, ``to_dict``, ``columns``) is
    iterative and visits each shared sub-expression object once, so a deep
    or heavily shared expression costs time linear in its distinct nodes.
    """

    tag: ClassVar[str] = "expr"

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
        cached: int | None = self.__dict__.get("_dp_hash")
        if cached is None:
            cached = self.__dict__["_dp_hash"] = hash(self.key())
        return cached

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
        """The column names this expression reads (each shared node visited once)."""
        found: set[str] = set()
        seen: set[int] = set()
        stack: list[Expr] = [self]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, Col):
                found.add(node.name)
            stack.extend(node.children())
        return frozenset(found)

    def children(self) -> tuple[Expr, ...]:
        """Direct sub-expressions, in declaration order."""
        return ()

    def params(self) -> tuple[Any, ...]:
        """The node's own fields that are not sub-expressions, in declaration order."""
        return ()

    def key(self) -> tuple[Any, ...]:
        """The canonical structural key: equal trees, and only they, have equal keys.

        A flat tuple of entries (see :mod:`dpframe.plan.keys` for the format
        and how numbers are keyed), computed once per object in time linear
        in the number of distinct node objects, then cached on the object.
        """
        cached: tuple[Any, ...] | None = self.__dict__.get("_dp_key")
        if cached is None:
            table = KeyTable()
            intern(self, table, {})
            cached = self.__dict__["_dp_key"] = tuple(table.entries)
        return cached

    def pieces(self) -> tuple[str | Expr, ...]:
        """The printed form: text and sub-expressions, in order (see ``__str__``)."""
        return (type(self).__name__,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:
        """This node's JSON form, given its children's (see :meth:`to_dict`)."""
        raise SchemaError(f"{type(self).__name__} cannot be serialized.")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description of the tree.

        Raises:
            SchemaError: the tree written out (shared sub-expressions written
                once per use) has more than :data:`DICT_NODE_LIMIT` nodes, or
                holds a node that cannot be serialized.
        """
        written = 0
        stack: list[tuple[Expr, bool]] = [(self, False)]
        done: list[dict[str, Any]] = []
        while stack:
            node, expanded = stack.pop()
            children = node.children()
            if expanded:
                taken = [done.pop() for _ in children]
                taken.reverse()
                done.append(node.node_dict(taken))
                continue
            written += 1
            if written > DICT_NODE_LIMIT:
                raise SchemaError(
                    f"This expression has more than {DICT_NODE_LIMIT} nodes when written out "
                    "(its parts are reused many times); define the reused parts as columns "
                    "with assign() instead."
                )
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children))
        return done[0]

    def __str__(self) -> str:
        out: list[str] = []
        size = 0
        steps = 0
        stack: list[str | Expr] = [self]
        while stack and size <= STR_LIMIT and steps <= 4 * STR_LIMIT:
            steps += 1
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                size += len(item)
            else:
                stack.extend(reversed(item.pieces()))
        text = "".join(out)
        if stack:
            return text[:STR_LIMIT] + "…"
        return text

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True, eq=False, repr=False)
class Col(Expr):
    """A column of the frame, by name."""

    tag: ClassVar[str] = "col"
    name: str

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.name,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "col", "name": self.name}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (self.name,)


@dataclass(frozen=True, eq=False, repr=False)
class Lit(Expr):
    """A public constant."""

    tag: ClassVar[str] = "lit"
    value: Scalar

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.value,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "lit", "value": self.value}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (repr(self.value),)


@dataclass(frozen=True, eq=False, repr=False)
class _Binary(Expr):
    op: str
    left: Expr
    right: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)

    def params(self) -> tuple[Any, ...]:
        return (self.op,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:
        return {"op": self.op, "left": children[0], "right": children[1]}

    def pieces(self) -> tuple[str | Expr, ...]:
        return ("(", self.left, f" {self.op} ", self.right, ")")


@dataclass(frozen=True, eq=False, repr=False)
class Arith(_Binary):
    """``left op right`` for op in + - * /."""

    tag: ClassVar[str] = "arith"
    op: ArithOp


@dataclass(frozen=True, eq=False, repr=False)
class Compare(_Binary):
    """``left op right`` for comparisons; the result is boolean."""

    tag: ClassVar[str] = "compare"
    op: CompareOp


@dataclass(frozen=True, eq=False, repr=False)
class Logical(_Binary):
    """``left & right`` or ``left | right`` of boolean expressions."""

    tag: ClassVar[str] = "logical"
    op: LogicalOp


@dataclass(frozen=True, eq=False, repr=False)
class _Unary(Expr):
    operand: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:
        return {"op": self.tag, "operand": children[0]}

    def pieces(self) -> tuple[str | Expr, ...]:
        return (f"{self.tag}(", self.operand, ")")


class Neg(_Unary):
    """``-x``."""

    tag: ClassVar[str] = "neg"


class Abs(_Unary):
    """``abs(x)``."""

    tag: ClassVar[str] = "abs"


class Not(_Unary):
    """``~x`` of a boolean expression."""

    tag: ClassVar[str] = "not"


class IsNull(_Unary):
    """True where ``x`` is missing."""

    tag: ClassVar[str] = "isnull"


@dataclass(frozen=True, eq=False, repr=False)
class IsIn(Expr):
    """True where ``operand`` is one of the public ``values``."""

    tag: ClassVar[str] = "isin"
    operand: Expr
    values: tuple[Scalar, ...]

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.values,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "isin", "operand": children[0], "values": list(self.values)}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (self.operand, f".isin({list(self.values)!r})")


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

    tag: ClassVar[str] = "clip"
    operand: Expr
    lower: float
    upper: float

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.lower, self.upper)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "clip", "operand": children[0], "lower": self.lower, "upper": self.upper}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (self.operand, f".clip({self.lower}, {self.upper})")


@dataclass(frozen=True, eq=False, repr=False)
class Bucket(Expr):
    """The index of the bin ``[edges[i], edges[i+1])`` holding ``operand`` (last bin closed).

    With ``clamp`` values beyond the edges go to the end bins; otherwise they
    (and missing values) belong to no bin.
    """

    tag: ClassVar[str] = "bucket"
    operand: Expr
    edges: tuple[float, ...]
    clamp: bool = False

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.edges, self.clamp)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {
            "op": "bucket",
            "operand": children[0],
            "edges": list(self.edges),
            "clamp": self.clamp,
        }

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return ("bucket(", self.operand, f", {len(self.edges) - 1} bins)")


def col(name: str) -> Col:
    """A column named in an expression, before there is a frame to take it from.

    Example:
        >>> pf.filter(dp.col("education") >= 12).count(epsilon=0.1)  # doctest: +SKIP
        >>> pf.assign(weekly=dp.col("wage") / 40)["weekly"].mean(epsilon=0.1)  # doctest: +SKIP

    ``pf["education"]`` does the same with a frame at hand; ``dp.col`` builds
    an expression to use on any frame that has the column.  Free.
    """
    if not isinstance(name, str):
        raise SchemaError("Column names are strings.")
    return Col(name)


def lit(value: Scalar) -> Lit:
    """A public constant in an expression (a plain number or string works too).

    Example:
        >>> pf.assign(hours=dp.lit(40))["hours"].sum(epsilon=0.1)  # doctest: +SKIP

    Free: a constant is public, so it adds nothing to what a release reveals.
    """
    return Lit(value)


@dataclass(frozen=True, eq=False, repr=False)
class DateLit(Expr):
    """A public date constant (a naive :class:`pandas.Timestamp`).

    Raises:
        SchemaError: the value is not a date, has a time zone or is out of range.
    """

    tag: ClassVar[str] = "date"
    value: pd.Timestamp

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", as_date(self.value, "A date constant"))

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.value,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "date", "value": date_to_json(self.value)}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (repr(self.value),)
