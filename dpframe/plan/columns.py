"""Public facts about one column, and the base class of expressions that derive them.

:class:`ColumnInfo` holds what is public about a column (declared, never
inferred from the private values): its kind, its dtype's name, numeric
clamping bounds, date bounds, a text column's maximum length and its public
keys.  :class:`Derived` is the base of the expressions that compute a new
column from one operand with facts of their own (the ``.dt`` and ``.str``
expressions of :mod:`dpframe.plan.temporal` and :mod:`dpframe.plan.text`):
each says which operand kinds it accepts and which facts its result has, so
:func:`dpframe.plan.schema.infer_column` needs no case per node type.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr

__all__ = ["Bounds", "ColumnInfo", "DateBounds", "Derived", "Kind", "ValueKind", "pandas_order"]

Kind = Literal["numeric", "boolean", "categorical", "text", "datetime", "other"]
Bounds: TypeAlias = tuple[float, float]
DateBounds: TypeAlias = "tuple[pd.Timestamp, pd.Timestamp]"
#: The kind of a value in an expression: numbers (booleans included), text, dates,
#: periods (``to_period``) or anything else; :func:`dpframe.plan.schema.infer_column`
#: checks that each node gets the kinds it accepts.
ValueKind = Literal["number", "text", "date", "period", "other"]


@dataclass(frozen=True)
class ColumnInfo:
    """Public facts about one column.

    Attributes:
        name: the column name.
        kind: numeric, boolean, categorical, text, datetime or other.
        dtype: the pandas dtype's name.
        bounds: declared (or derived) clamping bounds, or None.
        categories: declared (or derived) public keys, or None.
        date_bounds: a date column's declared first and last dates (naive
            :class:`pandas.Timestamp` objects), or None.
        max_length: a text column's declared (or derived) maximum length in
            characters (longer values are truncated), or None.
        not_null: declared to hold a value in every row (``dtypes=`` kind
            ``"... not null"``); kept by a rename, a filter and a join side that
            every row matches, cleared by any derived column (it may be missing).
    """

    name: str
    kind: Kind
    dtype: str
    bounds: Bounds | None = None
    categories: tuple[Hashable, ...] | None = None
    date_bounds: DateBounds | None = None
    max_length: int | None = None
    # Not in repr: a schema's digest (repr) stays what it was for the columns that do
    # not declare it, so requests recorded before it keep their re-run keys.
    not_null: bool = field(default=False, repr=False)

    @property
    def summable(self) -> bool:
        """Numeric or boolean: can be summed and averaged."""
        return self.kind in ("numeric", "boolean")


def pandas_order(keys: tuple[Hashable, ...]) -> tuple[Hashable, ...]:
    """Keys in the order pandas gives a group-by on a plain column: sorted.

    A pandas ``Categorical`` column keeps its categories' order (as pandas
    does), so this is not called for one; keys of mixed types that do not
    sort (numbers and strings) stay as they are.
    """
    try:
        return tuple(sorted(keys))  # type: ignore[type-var]
    except TypeError:
        return keys


@dataclass(frozen=True, eq=False, repr=False)
class Derived(Expr):
    """An expression computing a column from one ``operand``, with facts of its own.

    Subclasses add their parameters as fields after ``operand`` and implement
    :meth:`value_kind` (checking the operand's kind), :meth:`facts` (the
    result's kind, bounds, keys...), :meth:`params`, :meth:`node_dict` and
    :meth:`pieces`.
    """

    operand: Expr

    def __post_init__(self) -> None:
        if not isinstance(self.operand, Expr):
            raise SchemaError(f"{type(self).__name__} needs a column expression as its operand.")

    def children(self) -> tuple[Expr, ...]:  # noqa: D102
        return (self.operand,)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse, when it is defined, a derived expression without its own kind and facts."""
        super().__init_subclass__(**kwargs)
        for method in ("value_kind", "facts"):
            if getattr(cls, method) is getattr(Derived, method):
                raise TypeError(f"Derived expression {cls.__name__} must define {method}().")

    def value_kind(self, operand: ValueKind) -> ValueKind:
        """The kind of this node's values, given its operand's; a :class:`SchemaError` if wrong.

        Every subclass defines it (enforced when the class is defined), so this
        base body never runs.
        """
        raise TypeError(f"{type(self).__name__} does not define value_kind()")

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:
        """The public facts of the column ``name`` this node computes from ``operand``'s.

        Every subclass defines it (enforced when the class is defined).
        """
        raise TypeError(f"{type(self).__name__} does not define facts()")
