"""Dates in expressions: date constants, ``.dt`` fields and ``.dt.to_period``.

Three expression nodes (see :mod:`dpframe.plan.expressions` for what every node provides):

* :class:`DateLit`: a public date constant (``pf["date"] >= pd.Timestamp("2010-01-01")``);
* :class:`DtField`: a calendar field of each date, exactly as pandas'
  ``Series.dt.<field>`` computes it (``year``, ``quarter``, ``month``,
  ``day``, ``day_of_week``, ``day_of_year``, ``hour``, ``minute``, ``second``);
* :class:`PeriodOf`: the period holding each date, as ``Series.dt.to_period(freq)``.

The values are pandas' own, for every date; missing dates (NaT) give missing
values.  The *public keys* of the result come from the date column's declared
bounds (:class:`~dpframe.plan.columns.ColumnInfo.date_bounds`), never from the
data: ``year`` has the years from the first bound's to the last bound's,
``to_period`` the periods between the bounds (:class:`pandas.Period`
objects, what ``value_counts`` of a period column is indexed by), the other
fields their whole calendar range (``month`` 1..12, ``day_of_week`` 0..6, ...).
A date outside the bounds keeps its own year and period, which are then not
among the keys: such a row counts in no declared group (the undeclared
rows), never in the first or last one.

Dates are naive :class:`pandas.Timestamp` objects at nanosecond resolution
(1677-09-22 to 2262-04-11).  In JSON a date is its ISO 8601 text
(``"2010-01-01T00:00:00"``, :func:`date_to_json`), a period key is
``{"$period": ["2010-01", "M"]}`` (:func:`period_to_json`).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.columns import ColumnInfo, DateBounds, Derived, ValueKind
from dpframe.plan.date_values import as_date, date_from_json, date_to_json, is_date
from dpframe.plan.expressions import (
    Abs,
    Arith,
    Clip,
    Compare,
    DateLit,
    Expr,
    Logical,
    Neg,
    Not,
)

__all__ = [
    "DT_FIELDS",
    "MAX_PERIOD_KEYS",
    "PERIOD_FREQS",
    "DateLit",
    "DtField",
    "PeriodOf",
    "as_date",
    "check_date_bounds",
    "check_temporal",
    "date_from_json",
    "date_to_json",
    "is_date",
    "period_from_json",
    "period_to_json",
    "temporal_from_dict",
]

#: The ``.dt`` fields, with the keys each can take (None: from the declared bounds).
DT_FIELDS: dict[str, tuple[int, int] | None] = {
    "year": None,
    "quarter": (1, 4),
    "month": (1, 12),
    "day": (1, 31),
    "day_of_week": (0, 6),
    "day_of_year": (1, 366),
    "hour": (0, 23),
    "minute": (0, 59),
    "second": (0, 59),
}
#: ``to_period`` frequencies, with the name pandas gives their periods (``Period.freqstr``).
PERIOD_FREQS: dict[str, str] = {
    "Y": "Y-DEC",
    "Q": "Q-DEC",
    "M": "M",
    "W": "W-SUN",
    "D": "D",
    "h": "h",
}
_FREQ_OF_NAME = {name: freq for freq, name in PERIOD_FREQS.items()}
#: The most periods ``to_period`` derives as keys from the declared bounds.
MAX_PERIOD_KEYS = 100_000


def check_date_bounds(name: str, bounds: object) -> DateBounds:
    """Validate a date column's ``(low, high)`` bounds: two dates with low <= high.

    Raises:
        SchemaError: not a pair, a value that is not a date (or has a time
            zone, or lies outside the nanosecond range), or low > high.
    """
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise SchemaError(
            f"bounds for {name!r} must be a (low, high) pair of dates, e.g. "
            "(pd.Timestamp('2000-01-01'), pd.Timestamp('2020-12-31'))."
        )
    low = as_date(bounds[0], f"The low bound of {name!r}")
    high = as_date(bounds[1], f"The high bound of {name!r}")
    if low > high:
        raise SchemaError(f"bounds for {name!r} need low <= high; got low > high.")
    return (low, high)


def period_to_json(period: pd.Period) -> dict[str, list[str]]:
    """A period key's JSON form: ``{"$period": [text, freq]}`` (``freq`` as pandas names it)."""
    return {"$period": [str(period), period.freqstr]}


def period_from_json(data: object, what: str) -> pd.Period:
    """Read :func:`period_to_json`'s form strictly (a :class:`SchemaError` if malformed)."""
    body = data.get("$period") if isinstance(data, dict) else None
    if not (isinstance(data, dict) and set(data) == {"$period"} and isinstance(body, list)):
        raise SchemaError(f"{what} must be {{'$period': [text, freq]}}.")
    if len(body) != 2 or not all(isinstance(b, str) and len(b) <= 64 for b in body):
        raise SchemaError(f"{what} must be {{'$period': [text, freq]}}.")
    text, name = body
    if name not in _FREQ_OF_NAME:
        raise SchemaError(f"{what}: a period's frequency is one of {', '.join(_FREQ_OF_NAME)}.")
    try:
        period = pd.Period(text, freq=_FREQ_OF_NAME[name])
    except ValueError:
        raise SchemaError(f"{what} is not a valid period.") from None
    if str(period) != text or period.freqstr != name:
        raise SchemaError(f"{what}: write the period as pandas prints it (str(period)).")
    return period


_TEMPORAL = frozenset(("date", "period"))


def check_temporal(node: Expr, kinds: list[ValueKind]) -> None:
    """Check a node's use of dates: ``kinds`` are its children's value kinds.

    Dates compare only with dates; periods only for equality, with periods or
    their text (as pandas parses it); neither takes part in arithmetic or
    logic (``&``, ``|``, ``~``).

    Raises:
        SchemaError: any other use.
    """
    if not _TEMPORAL & set(kinds):
        return
    if isinstance(node, (Arith, Neg, Abs, Clip)):
        raise SchemaError(
            f"Arithmetic needs numbers; {node} involves dates. Use a calendar field "
            "(.dt.year, .dt.month, ...) for numbers."
        )
    if isinstance(node, (Logical, Not)):
        raise SchemaError(f"{node} uses dates as conditions; compare them first.")
    if not isinstance(node, Compare):
        return
    if "period" in kinds:
        if node.op in ("==", "!=") and set(kinds) <= {"period", "text"}:
            return
        raise SchemaError(
            f"{node}: periods are compared only for equality (== '2020-01'); to compare in "
            "time, compare the dates: pf['date'] >= pd.Timestamp('2020-01-01')."
        )
    if set(kinds) != {"date"}:
        raise SchemaError(
            f"{node} compares dates with something else; compare with a date, e.g. "
            "pd.Timestamp('2020-01-01')."
        )


def _date_operand(operand: ValueKind, what: str, node: Expr) -> None:
    if operand != "date":
        raise SchemaError(
            f"{what} needs dates; {node.children()[0]} is not a date column (declare one with "
            "bounds={'column': (pd.Timestamp(...), pd.Timestamp(...))} or dtypes={'column': "
            "'datetime'})."
        )


@dataclass(frozen=True, eq=False, repr=False)
class DtField(Derived):
    """A calendar field of each date, as ``Series.dt.<field>`` (see the module).

    Raises:
        SchemaError: an unknown field.
    """

    tag: ClassVar[str] = "dt"
    field: str

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.field not in DT_FIELDS:
            raise SchemaError(f"Unknown .dt field {self.field!r}; one of {', '.join(DT_FIELDS)}.")

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.field,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "dt", "operand": children[0], "field": self.field}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (self.operand, f".dt.{self.field}")

    def value_kind(self, operand: ValueKind) -> ValueKind:  # noqa: D102
        _date_operand(operand, f".dt.{self.field}", self)
        return "number"

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:
        """Numeric, with the field's keys (``year``: those between the declared bounds)."""
        span = DT_FIELDS[self.field]
        if span is None and operand.date_bounds is not None:
            low, high = operand.date_bounds
            span = (low.year, high.year)
        if span is None:
            return ColumnInfo(name, "numeric", "int32")
        keys = tuple(range(span[0], span[1] + 1))
        return ColumnInfo(name, "numeric", "int32", (float(span[0]), float(span[1])), keys)


@dataclass(frozen=True, eq=False, repr=False)
class PeriodOf(Derived):
    """The period holding each date, as ``Series.dt.to_period(freq)`` (see the module).

    Raises:
        SchemaError: a frequency that is not one of :data:`PERIOD_FREQS`.
    """

    tag: ClassVar[str] = "period"
    freq: str

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.freq not in PERIOD_FREQS:
            raise SchemaError(
                f"to_period() takes one of the frequencies {', '.join(PERIOD_FREQS)} "
                "(year, quarter, month, week, day, hour)."
            )

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.freq,)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "period", "operand": children[0], "freq": self.freq}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (self.operand, f".dt.to_period({self.freq!r})")

    def value_kind(self, operand: ValueKind) -> ValueKind:  # noqa: D102
        _date_operand(operand, f".dt.to_period({self.freq!r})", self)
        return "period"

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:
        """Categorical, keyed by the periods between the declared bounds (if declared)."""
        dtype = f"period[{PERIOD_FREQS[self.freq]}]"
        if operand.date_bounds is None:
            return ColumnInfo(name, "categorical", dtype)
        return ColumnInfo(name, "categorical", dtype, categories=self.keys(*operand.date_bounds))

    def keys(self, low: pd.Timestamp, high: pd.Timestamp) -> tuple[Hashable, ...]:
        """The periods from the one holding ``low`` to the one holding ``high`` (kept per node).

        Raises:
            SchemaError: more than :data:`MAX_PERIOD_KEYS` periods.
        """
        cache: dict[tuple[pd.Timestamp, pd.Timestamp], tuple[Hashable, ...]]
        cache = self.__dict__.setdefault("_dp_period_keys", {})
        found = cache.get((low, high))
        if found is None:
            first, last = pd.Period(low, freq=self.freq), pd.Period(high, freq=self.freq)
            count = last.ordinal - first.ordinal + 1
            if count > MAX_PERIOD_KEYS:
                raise SchemaError(
                    f"to_period({self.freq!r}) over the declared bounds makes {count} periods, "
                    f"more than {MAX_PERIOD_KEYS} keys; use a coarser frequency or narrower "
                    "bounds."
                )
            found = cache[(low, high)] = tuple(pd.period_range(first, last, freq=self.freq))
        return found


def _field(data: dict[str, Any], name: str) -> str:
    value = data[name]
    if not isinstance(value, str):
        raise SchemaError(f"{name} must be a string.")
    return value


def temporal_from_dict(data: dict[str, Any], operand: Expr | None) -> Expr:
    """Rebuild a ``date``, ``dt`` or ``period`` node from its :meth:`~Expr.node_dict` (strictly)."""
    op = data["op"]
    if op == "date":
        if set(data) != {"op", "value"}:
            raise SchemaError("A date node has the field value.")
        return DateLit(date_from_json(data["value"], "A date constant"))
    assert operand is not None
    if op == "dt":
        if set(data) != {"op", "operand", "field"}:
            raise SchemaError("A dt node has the fields operand, field.")
        return DtField(operand, _field(data, "field"))
    if set(data) != {"op", "operand", "freq"}:
        raise SchemaError("A period node has the fields operand, freq.")
    return PeriodOf(operand, _field(data, "freq"))
