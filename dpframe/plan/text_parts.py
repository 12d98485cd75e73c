"""``s.str.split(sep).str[i]``: the i-th part of each text value, as an expression node.

pandas makes a list per row and then picks an element; a private column
holds no lists, so the two steps are one node, :class:`StrPart`, whose
function of one value is :func:`part_of` (Python's ``str.split`` or
``str.rsplit`` with ``maxsplit``, as pandas calls them, then the element at
``index``, missing when the value has fewer parts).  The separator is plain
text, always (the facade refuses what pandas would read as a regular
expression), or None (runs of whitespace).

Like the other text nodes (:mod:`dpframe.plan.text`), it is applied once per
distinct value of a chunk, a part is never longer than its value (so the
column's maximum length holds), and its public keys are the operand's keys'
parts, when the operand has declared keys.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

from dpframe.errors import SchemaError
from dpframe.plan.columns import ColumnInfo, Derived, ValueKind, pandas_order
from dpframe.plan.expressions import Expr
from dpframe.plan.text import MAX_PATTERN, check_max_length, part_of

__all__ = ["MAX_PART_INDEX", "StrPart", "part_from_dict"]

#: The largest part index (and ``n``) a split takes, either sign.
MAX_PART_INDEX = 10_000


def _index(value: object, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_PART_INDEX:
        raise SchemaError(f"{what} must be a whole number from {low} to {MAX_PART_INDEX}.")
    return value


@dataclass(frozen=True, eq=False, repr=False)
class StrPart(Derived):
    """``operand.str.split(sep, n=n).str[index]`` (``rsplit`` with ``reverse``).

    Raises:
        SchemaError: an empty or too long separator, ``n`` or ``index`` out of
            range, or a bad maximum length.
    """

    tag: ClassVar[str] = "str_part"
    sep: str | None
    n: int
    index: int
    reverse: bool = False
    max_length: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sep is not None and (
            not isinstance(self.sep, str) or not self.sep or len(self.sep) > MAX_PATTERN
        ):
            raise SchemaError(
                f"split() takes a separator of 1 to {MAX_PATTERN} characters (or None)."
            )
        if _index(self.n, "split(n=...)", -1) == 0:  # the facade reads pandas' n=0 as -1
            raise SchemaError("split(n=...) is -1 (every split) or a whole number from 1.")
        if isinstance(self.index, bool) or not isinstance(self.index, int):
            raise SchemaError(".str[i] must be a whole number.")
        _index(abs(self.index), ".str[i]", 0)
        if not isinstance(self.reverse, bool):
            raise SchemaError("reverse must be True or False.")
        if self.max_length is not None:
            check_max_length(self.max_length, "max_length")

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.sep, self.n, self.index, self.reverse, self.max_length)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {
            "op": "str_part",
            "operand": children[0],
            "sep": self.sep,
            "n": self.n,
            "index": self.index,
            "reverse": self.reverse,
            "max_length": self.max_length,
        }

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        method = "rsplit" if self.reverse else "split"
        n = "" if self.n == -1 else f", n={self.n}"
        sep = "" if self.sep is None else repr(self.sep)
        return (self.operand, f".str.{method}({sep}{n}).str[{self.index}]")

    def value_kind(self, operand: ValueKind) -> ValueKind:  # noqa: D102
        if operand != "text":
            raise SchemaError(
                f".str.split() needs text; {self.operand} is not a text column (declare one "
                "with dtypes={'column': 'text'})."
            )
        return "text"

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:
        """Text, keyed by the parts of the operand's keys (if it has keys)."""
        if self.max_length != operand.max_length:
            raise SchemaError(
                f"{self} has the maximum length {self.max_length}, but {operand.name!r} has "
                f"{operand.max_length}; build it from the column."
            )
        keys: tuple[Hashable, ...] | None = None
        if operand.categories is not None:
            parts = (
                part_of(k, self.sep, self.n, self.index, self.reverse)
                for k in operand.categories
                if isinstance(k, str)
            )
            keys = pandas_order(tuple(dict.fromkeys(p for p in parts if p is not None)))
        if keys:
            return ColumnInfo(
                name, "categorical", "object", categories=keys, max_length=self.max_length
            )
        return ColumnInfo(name, "text", "object", max_length=self.max_length)


def part_from_dict(data: dict[str, Any], operand: Expr) -> StrPart:
    """Rebuild a ``str_part`` node from its :meth:`~Expr.node_dict` (strictly)."""
    if set(data) != {"op", "operand", "sep", "n", "index", "reverse", "max_length"}:
        raise SchemaError(
            "A str_part node has the fields operand, sep, n, index, reverse, max_length."
        )
    return StrPart(
        operand, data["sep"], data["n"], data["index"], data["reverse"], data["max_length"]
    )
