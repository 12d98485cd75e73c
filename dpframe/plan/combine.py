"""The combination of several columns' values as one key: for key discovery over several columns.

:class:`Combine` gives, for every row, the JSON text of the list of its
values (``'["south", 12.0]'``; numbers as floats, booleans as ``true`` /
``false``), or a missing value when any of them is missing.  Discovering
the keys of that one column discovers the combinations that occur; the
analyst's side reads each released key back with :func:`json.loads` (never
``eval``).  The text is computed once per distinct combination of a chunk,
so the work is linear in the rows.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.columns import ColumnInfo, Derived, ValueKind
from dpframe.plan.expressions import Expr

__all__ = ["MAX_COMBINED", "Combine", "combine_from_dict", "combine_values", "read_combination"]

#: The most columns one combination holds.
MAX_COMBINED = 8


@dataclass(frozen=True, eq=False, repr=False)
class Combine(Derived):
    """The JSON list of the values of ``operand`` and ``rest`` (missing if any is missing).

    Raises:
        SchemaError: more than :data:`MAX_COMBINED` columns, or a part that is
            not an expression.
    """

    tag: ClassVar[str] = "combine"
    rest: tuple[Expr, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= len(self.rest) < MAX_COMBINED:
            raise SchemaError(f"A combination holds 2 to {MAX_COMBINED} columns.")
        if not all(isinstance(e, Expr) for e in self.rest):
            raise SchemaError("A combination holds column expressions.")

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand, *self.rest)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "combine", "operands": children}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        parts: list[str | Expr] = ["combine("]
        for i, child in enumerate(self.children()):
            parts.extend(([", "] if i else []) + [child])
        return (*parts, ")")

    def value_kind(self, operand: ValueKind) -> ValueKind:  # noqa: D102
        return "text"

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:  # noqa: D102
        return ColumnInfo(name, "text", "object")


def combine_from_dict(data: dict[str, Any], children: list[Expr]) -> Expr:
    """Rebuild a ``combine`` node from its :meth:`~Expr.node_dict` (strictly)."""
    if set(data) != {"op", "operands"} or len(children) < 2:
        raise SchemaError("A combine node has the field operands (2 or more expressions).")
    return Combine(children[0], tuple(children[1:]))


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return str(value)


def _missing(value: Any) -> bool:
    return (
        value is None
        or value is pd.NA
        or value is pd.NaT
        or (isinstance(value, float) and math.isnan(value))
    )


def combine_values(args: list[Any], index: pd.Index) -> pd.Series:
    """The :class:`Combine` value of each row of ``index`` (object text, None where missing)."""
    n = len(index)
    columns = [
        a.to_numpy(dtype=object) if isinstance(a, pd.Series) else np.full(n, a, dtype=object)
        for a in args
    ]
    rows = pd.Series(list(zip(*columns, strict=True)), index=index, dtype=object)
    codes, uniques = pd.factorize(rows)
    table = np.empty(len(uniques) + 1, dtype=object)
    table[-1] = None
    for i, combination in enumerate(uniques):
        missing = any(_missing(v) for v in combination)
        table[i] = None if missing else json.dumps([_plain(v) for v in combination])
    combined: pd.Series = pd.Series(table[codes], index=index, dtype=object)
    return combined


def read_combination(text: object, size: int) -> tuple[Any, ...] | None:
    """A released combined key as a tuple of ``size`` values, or None if it does not read."""
    if not isinstance(text, str):
        return None
    try:
        values = json.loads(text)
    except ValueError:
        return None
    if not isinstance(values, list) or len(values) != size:
        return None
    return tuple(values)
