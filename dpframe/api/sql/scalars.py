"""SQL expressions of one row, compiled to the facade's column verbs (free: nothing read).

Every SQL operator and function here becomes the verb a pandas user would
call on the column (:mod:`dpframe.api.verbs.columns`, ``elementwise``,
``recoding`` and the ``.str``/``.dt`` accessors), applied to the column's
handle, so a query builds the expressions its pandas spelling builds.

SQL's three-valued logic is written out in pandas' two values: for a
condition P this module builds T(P) ("P is TRUE") and F(P) ("P is FALSE"),
never missing.  ``x <> 5`` is ``(x != 5) & x.notna()`` (pandas' ``!=`` is
true for a missing x, SQL's is NULL); ``NOT P`` is F(P); ``P AND Q`` is
T(P) & T(Q), with F = F(P) | F(Q); ``WHERE`` keeps the rows where T holds.
Operators other than ``<>`` are already false for a missing operand, so
``WHERE x > 5`` is ``pf[pf.x > 5]``.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd
from sqlglot import exp

from dpframe.api.accessors import DatetimeAccessor, StringAccessor
from dpframe.api.handle import SeriesHandle
from dpframe.api.sql.errors import SQLError, SQLRefusedError
from dpframe.api.sql.scope import Scope
from dpframe.api.verbs import columns, elementwise, recoding
from dpframe.plan.expressions import Lit

__all__ = ["Const", "Value", "condition", "scalar", "truth"]


@dataclass(frozen=True)
class Const:
    """A public constant of the query (a number, text, boolean, date or NULL)."""

    value: Any


Value = SeriesHandle | Const

_ARITHMETIC: dict[type[exp.Expression], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
}
_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "==",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
#: The comparison that is FALSE exactly when this one is TRUE (both operands present).
_NEGATED = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_PYTHON: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
#: SQL functions of one number, as numpy's (``np.sqrt(pf.x)``).
_UFUNCS: dict[type[exp.Expression], str] = {
    exp.Sqrt: "sqrt",
    exp.Ln: "log",
    exp.Exp: "exp",
    exp.Floor: "floor",
    exp.Ceil: "ceil",
    exp.Trunc: "trunc",
    exp.Sign: "sign",
}
_CASTS = {
    "DOUBLE": "float",
    "FLOAT": "float",
    "REAL": "float",
    "DECIMAL": "float",
    "INT": "int",
    "BIGINT": "int",
    "SMALLINT": "int",
    "TINYINT": "int",
    "HUGEINT": "int",
    "UBIGINT": "int",
    "UINT": "int",
    "VARCHAR": "str",
    "TEXT": "str",
    "CHAR": "str",
    "BOOLEAN": "bool",
}
#: Date parts: EXTRACT(part FROM d), part(d) and DATE_PART('part', d), as ``.dt`` fields.
_PARTS = {
    "YEAR": "year",
    "QUARTER": "quarter",
    "MONTH": "month",
    "DAY": "day",
    "DAYOFMONTH": "day",
    "DOY": "day_of_year",
    "DAYOFYEAR": "day_of_year",
    "HOUR": "hour",
    "MINUTE": "minute",
    "SECOND": "second",
}
#: DuckDB's day-of-week numbers from pandas' (Monday 0): DOW has Sunday 0, ISODOW Monday 1.
_WEEKDAYS = {
    "DOW": {0: 1, 1: 2, 2: 3, 3: 4, 4: 5, 5: 6, 6: 0},
    "DAYOFWEEK": {0: 1, 1: 2, 2: 3, 3: 4, 4: 5, 5: 6, 6: 0},
    "ISODOW": {0: 1, 1: 2, 2: 3, 3: 4, 4: 5, 5: 6, 6: 7},
}
_FUNCTION_PARTS: dict[type[exp.Expression], str] = {
    exp.Year: "YEAR",
    exp.Quarter: "QUARTER",
    exp.Month: "MONTH",
    exp.Day: "DAY",
    exp.DayOfYear: "DOY",
    exp.DayOfWeek: "DOW",
    exp.DayOfWeekIso: "ISODOW",
}
_PERIODS = {"YEAR": "Y", "QUARTER": "Q", "MONTH": "M", "WEEK": "W", "DAY": "D", "HOUR": "h"}


def _text(series: SeriesHandle) -> Any:
    """``series.str`` giving handles (the facade's accessor, applied to a handle)."""
    return StringAccessor(series, cast(Any, lambda handle: handle))


def _dates(series: SeriesHandle) -> Any:
    """``series.dt`` giving handles."""
    return DatetimeAccessor(series, cast(Any, lambda handle: handle))


def _sql(node: exp.Expression) -> str:
    return str(node.sql(dialect="duckdb"))


def _literal(node: exp.Literal) -> Const:
    if node.is_string:
        return Const(str(node.this))
    text = str(node.this)
    try:
        return Const(int(text))
    except ValueError:
        return Const(float(text))


def _column(value: Value, where: str) -> SeriesHandle:
    if isinstance(value, Const):
        raise SQLRefusedError(f"{where} takes a column here, not the constant {value.value!r}.")
    return value


def _constant(value: Value, where: str) -> Any:
    if not isinstance(value, Const):
        raise SQLRefusedError(
            f"{where} takes a public constant here (a number or text), not a column."
        )
    return value.value


def _anchor(scope: Scope) -> SeriesHandle:
    """A column of the scope's frame, to build a constant's handle over the same frame."""
    return scope.frame.column(scope.frame.schema.names[0])


def as_column(value: Value, scope: Scope) -> SeriesHandle:
    """A constant as a column of the frame (its expression is the literal); columns unchanged."""
    if isinstance(value, SeriesHandle):
        return value
    if value.value is None:
        raise SQLRefusedError("NULL as a value of its own: use it in IS NULL or CASE ... ELSE.")
    return columns.wrap(_anchor(scope), Lit(value.value))


def _binary(left: Value, right: Value, op: str) -> Value:
    if isinstance(left, Const) and isinstance(right, Const):
        if left.value is None or right.value is None:
            return Const(None)
        if op == "/" and right.value == 0:
            return Const(None)  # DuckDB: division by zero is NULL
        return Const(_PYTHON[op](left.value, right.value))
    if isinstance(left, SeriesHandle):
        return columns.binary(left, right.value if isinstance(right, Const) else right, op)
    assert isinstance(right, SeriesHandle)
    return columns.binary(right, left.value, op, reverse=True)


def _cast(node: exp.Cast, scope: Scope) -> Value:
    to = node.args["to"]
    type_name = str(to.this.name if hasattr(to.this, "name") else to.this).upper()
    inner = scalar(node.this, scope)
    if type_name in ("DATE", "TIMESTAMP", "DATETIME", "TIMESTAMPTZ"):
        if isinstance(inner, Const) and isinstance(inner.value, str):
            try:
                return Const(pd.Timestamp(inner.value))
            except ValueError:
                raise SQLError(f"{_sql(node)}: {inner.value!r} is not a date.") from None
        raise SQLRefusedError(
            f"{_sql(node)}: a column becomes a date when loaded (declare its dtype 'datetime' "
            "or date bounds), not in a query."
        )
    target = _CASTS.get(type_name)
    if target is None:
        raise SQLRefusedError(
            f"{_sql(node)}: CAST to {type_name} is not available; cast to DOUBLE, INTEGER, "
            "VARCHAR or BOOLEAN."
        )
    if isinstance(inner, Const):
        value = inner.value
        converters: dict[str, Callable[[Any], Any]] = {
            "float": float,
            "int": lambda v: round(float(v)),
            "str": str,
            "bool": bool,
        }
        return Const(None if value is None else converters[target](value))
    return elementwise.astype(inner, target)


def _case(node: exp.Case, scope: Scope) -> Value:
    """CASE WHEN ... THEN ... ELSE ... END, as ``mask`` steps over its ELSE value.

    The first true WHEN wins: the branches are applied last to first, each
    ``mask(T(cond), value)`` (a WHEN whose condition is NULL falls through, as in SQL).
    """
    if node.this is not None:  # CASE x WHEN 1 THEN ... : each WHEN compares x
        subject = node.this
        branches = [
            (exp.EQ(this=subject.copy(), expression=i.this), i.args["true"])
            for i in node.args["ifs"]
        ]
    else:
        branches = [(i.this, i.args["true"]) for i in node.args["ifs"]]
    values = [scalar(v, scope) for _, v in branches]
    default = node.args.get("default")
    other = Const(None) if default is None else scalar(default, scope)
    conds = [truth(c, scope) for c, _ in branches]
    columns_given = [v for v in (*values, other) if isinstance(v, SeriesHandle)]
    if not columns_given:
        return _case_of_constants(conds, [*values, other], scope)
    if len(branches) == 1 and isinstance(values[0], SeriesHandle) and isinstance(other, Const):
        fill = float("nan") if other.value is None else other.value
        return elementwise.where(values[0], _condition_of(conds[0], scope), fill)
    if isinstance(other, SeriesHandle) and len(columns_given) == 1:
        result = other
    else:
        raise SQLRefusedError(
            f"{_sql(node)}: CASE takes public constants as results, or one column as the only "
            "THEN or the ELSE (CASE WHEN c THEN wage ELSE 0 END)."
        )
    for cond, value in zip(reversed(conds), reversed(values), strict=True):
        result = elementwise.mask(result, _condition_of(cond, scope), _constant(value, "THEN"))
    return result


def _case_of_constants(conds: list[Value], results: list[Value], scope: Scope) -> SeriesHandle:
    """A CASE whose results are constants: the number of the branch taken, mapped to its result.

    ``0.mask(T(c_n), n)...mask(T(c_1), 1)`` numbers the first true branch
    (0: the ELSE), and ``map({1: v_1, ..., 0: else})`` gives its value: the
    results are the column's public keys (``map``'s labels), so it can be
    grouped by; without ELSE (or ELSE NULL) a row no branch takes is missing.
    """
    branch = as_column(Const(0), scope)
    for number, cond in reversed(list(enumerate(conds, start=1))):
        branch = elementwise.mask(branch, _condition_of(cond, scope), number)
    labels = {n: _constant(r, "THEN") for n, r in enumerate(results[:-1], start=1)}
    default = _constant(results[-1], "ELSE")
    if default is not None:
        labels[0] = default
    return recoding.map_values(branch, labels)


def _condition_of(value: Value, scope: Scope) -> Any:
    """The expression of a condition (a verb's ``cond=`` argument)."""
    return as_column(value, scope).expr


def _function(node: exp.Expression, scope: Scope) -> Value:
    kind = type(node)
    if kind in _UFUNCS:
        return elementwise.apply_ufunc(_column(scalar(node.this, scope), _sql(node)), _UFUNCS[kind])
    if isinstance(node, exp.Log):
        if node.expression is None:  # DuckDB's LOG(x) is the base-10 logarithm
            return elementwise.apply_ufunc(_column(scalar(node.this, scope), "LOG"), "log10")
        base = _constant(scalar(node.this, scope), "LOG(base, x)")
        name = {10: "log10", 2: "log2"}.get(base)
        if name is None:
            raise SQLRefusedError(f"{_sql(node)}: LOG takes base 10 or 2 (LN for base e).")
        return elementwise.apply_ufunc(_column(scalar(node.expression, scope), "LOG"), name)
    if isinstance(node, exp.Abs):
        series = _column(scalar(node.this, scope), "ABS")
        return columns.wrap(series, abs(series.expr))
    if isinstance(node, exp.Round):
        decimals = node.args.get("decimals")
        places = 0 if decimals is None else _constant(scalar(decimals, scope), "ROUND")
        return elementwise.round_values(_column(scalar(node.this, scope), "ROUND"), places)
    if isinstance(node, exp.Pow):
        exponent = _constant(scalar(node.expression, scope), "POWER")
        return columns.power(_column(scalar(node.this, scope), "POWER"), exponent)
    if isinstance(node, exp.Coalesce):
        first = _column(scalar(node.this, scope), "COALESCE")
        rest = node.expressions
        if len(rest) != 1:
            raise SQLRefusedError(f"{_sql(node)}: COALESCE takes a column and one constant.")
        return elementwise.fillna(first, _constant(scalar(rest[0], scope), "COALESCE"))
    if isinstance(node, (exp.Lower, exp.Upper)):
        method = "lower" if isinstance(node, exp.Lower) else "upper"
        return cast(Value, getattr(_text(_column(scalar(node.this, scope), method)), method)())
    if isinstance(node, exp.Trim):
        position = str(node.args.get("position") or "").upper()
        method = {"LEADING": "lstrip", "TRAILING": "rstrip"}.get(position, "strip")
        return cast(Value, getattr(_text(_column(scalar(node.this, scope), "TRIM")), method)())
    if isinstance(node, exp.Length):
        return cast(Value, _text(_column(scalar(node.this, scope), "LENGTH")).len())
    if isinstance(node, exp.Replace):
        series = _column(scalar(node.this, scope), "REPLACE")
        pat = _constant(scalar(node.expression, scope), "REPLACE")
        repl = _constant(scalar(node.args["replacement"], scope), "REPLACE")
        return cast(Value, _text(series).replace(pat, repl))
    if isinstance(node, (exp.StartsWith, exp.EndsWith, exp.Contains)):
        return _match(node, scope)
    if isinstance(node, exp.Extract):
        part = str(node.this.name).upper()
        return _date_part(part, _column(scalar(node.expression, scope), "EXTRACT"), node)
    if kind in _FUNCTION_PARTS:
        return _date_part(
            _FUNCTION_PARTS[kind], _column(scalar(node.this, scope), _sql(node)), node
        )
    if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        unit = str(node.args["unit"].name).upper().strip("'")
        freq = _PERIODS.get(unit)
        if freq is None:
            raise SQLRefusedError(f"{_sql(node)}: DATE_TRUNC takes {', '.join(_PERIODS).lower()}.")
        return cast(Value, _dates(_column(scalar(node.this, scope), "DATE_TRUNC")).to_period(freq))
    raise SQLRefusedError(
        f"{_sql(node)}: the function {kind.__name__.upper()} is not available on private rows; "
        "docs/sql.md lists the functions that are."
    )


def _date_part(part: str, series: SeriesHandle, node: exp.Expression) -> Value:
    if part in _WEEKDAYS:
        day = _dates(series).day_of_week
        return recoding.map_values(day, _WEEKDAYS[part])
    field = _PARTS.get(part)
    if field is None:
        known = ", ".join([*_PARTS, *_WEEKDAYS])
        raise SQLRefusedError(
            f"{_sql(node)}: the date part {part} is not available; one of {known}."
        )
    return cast(Value, getattr(_dates(series), field))


def _match(node: exp.Expression, scope: Scope) -> SeriesHandle:
    series = _column(scalar(node.this, scope), _sql(node))
    pat = _constant(scalar(node.expression, scope), _sql(node))
    text = _text(series)
    if isinstance(node, exp.StartsWith):
        return cast(SeriesHandle, text.startswith(pat, na=False))
    if isinstance(node, exp.EndsWith):
        return cast(SeriesHandle, text.endswith(pat, na=False))
    return cast(SeriesHandle, text.contains(pat, regex=False, na=False))


def _like(node: exp.Like | exp.ILike, scope: Scope) -> SeriesHandle:
    """``LIKE`` (case-sensitive) and ``ILIKE`` as ``==`` or ``.str`` matches (free)."""
    if node.args.get("escape") is not None:
        raise SQLRefusedError(f"{_sql(node)}: LIKE ... ESCAPE is not available.")
    series = _column(scalar(node.this, scope), "LIKE")
    pattern = _constant(scalar(node.expression, scope), "LIKE")
    if not isinstance(pattern, str):
        raise SQLError(f"{_sql(node)}: LIKE takes a text pattern in single quotes.")
    if isinstance(node, exp.ILike):
        series = cast(SeriesHandle, _text(series).lower())
        pattern = pattern.lower()
    text = _text(series)
    inner = pattern.strip("%")
    plain = "_" not in pattern and "%" not in inner
    if plain and pattern == inner:
        return columns.binary(series, pattern, "==")
    if plain and pattern == inner + "%":
        return cast(SeriesHandle, text.startswith(inner, na=False))
    if plain and pattern == "%" + inner:
        return cast(SeriesHandle, text.endswith(inner, na=False))
    if plain and inner:
        return cast(SeriesHandle, text.contains(inner, regex=False, na=False))
    if plain:  # '%' alone: every text value
        return columns.wrap(series, series.expr.notna())
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return cast(SeriesHandle, text.contains(f"(?s)^{regex}$", regex=True, na=False))


def scalar(node: exp.Expression, scope: Scope) -> Value:
    """The value of ``node`` on each row: a column handle, or a public constant."""
    if isinstance(node, exp.Paren):
        return scalar(node.this, scope)
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            raise SQLRefusedError("table.* returns rows: aggregate them (COUNT(*), AVG(x), ...).")
        table = node.args.get("table")
        return scope.column(node.name, None if table is None else table.name)
    if isinstance(node, exp.Literal):
        return _literal(node)
    if isinstance(node, exp.Boolean):
        return Const(bool(node.this))
    if isinstance(node, exp.Null):
        return Const(None)
    if isinstance(node, exp.Neg):
        inner = scalar(node.this, scope)
        if isinstance(inner, Const):
            return Const(None if inner.value is None else -inner.value)
        return columns.wrap(inner, -inner.expr)
    if type(node) in _ARITHMETIC:
        return _binary(
            scalar(node.this, scope), scalar(node.expression, scope), _ARITHMETIC[type(node)]
        )
    if isinstance(node, exp.IntDiv):  # DuckDB's //: truncated toward zero, as (a / b).astype(int)
        left, right = scalar(node.this, scope), scalar(node.expression, scope)
        quotient = _binary(left, right, "/")
        if isinstance(quotient, Const):
            return Const(None if quotient.value is None else math.trunc(quotient.value))
        return elementwise.astype(quotient, "int")
    if isinstance(node, exp.Mod):
        left = _column(scalar(node.this, scope), "%")
        return elementwise.modulo(left, _constant(scalar(node.expression, scope), "%"))
    if isinstance(node, exp.Cast):
        return _cast(node, scope)
    if isinstance(node, exp.Case):
        return _case(node, scope)
    if _is_condition(node):
        return truth(node, scope)
    if isinstance(node, exp.Subquery):
        raise SQLRefusedError(
            f"({_sql(node.this)[:60]}...): a subquery as a value reads other rows; subqueries "
            "per ID come with the issue 'Several tables, one person'."
        )
    if isinstance(node, exp.Func):
        return _function(node, scope)
    raise SQLRefusedError(f"{_sql(node)}: this expression is not available on private rows.")


def _is_condition(node: exp.Expression) -> bool:
    kinds = (exp.And, exp.Or, exp.Not, exp.Is, exp.In, exp.Between, exp.Like, exp.ILike)
    return isinstance(node, kinds) or type(node) in _COMPARISONS


def _present(value: Value) -> SeriesHandle | None:
    """``value.notna()`` for a column (None for a constant: never missing)."""
    if isinstance(value, Const):
        return None
    return columns.wrap(value, value.expr.notna())


def _all(parts: list[Value]) -> Value:
    """T(P1 AND P2 ...) from the parts (constants folded)."""
    found: list[SeriesHandle] = []
    for part in parts:
        if isinstance(part, Const):
            if not part.value:
                return Const(False)
            continue
        found.append(part)
    if not found:
        return Const(True)
    result = found[0]
    for part in found[1:]:
        result = columns.binary(result, part, "&")
    return result


def _any(parts: list[Value]) -> Value:
    found: list[SeriesHandle] = []
    for part in parts:
        if isinstance(part, Const):
            if part.value:
                return Const(True)
            continue
        found.append(part)
    if not found:
        return Const(False)
    result = found[0]
    for part in found[1:]:
        result = columns.binary(result, part, "|")
    return result


def _compare(left: Value, right: Value, op: str) -> Value:
    """T(left op right): pandas' comparison, with ``notna`` for ``!=`` (SQL's NULL is not TRUE)."""
    if isinstance(left, Const) and isinstance(right, Const):
        if left.value is None or right.value is None:
            return Const(False)
        return Const(bool(_PYTHON[op](left.value, right.value)))
    if (isinstance(left, Const) and left.value is None) or (
        isinstance(right, Const) and right.value is None
    ):
        raise SQLRefusedError("A comparison with NULL is never true: write x IS NULL.")
    found = _binary(left, right, op)
    if op != "!=":
        return found
    return _all([found, *(p for p in (_present(left), _present(right)) if p is not None)])


def truth(node: exp.Expression, scope: Scope, positive: bool = True) -> Value:
    """T(node) (``positive``) or F(node): a boolean column that is never missing, or a constant."""
    if isinstance(node, exp.Paren):
        return truth(node.this, scope, positive)
    if isinstance(node, exp.Not):
        return truth(node.this, scope, not positive)
    if isinstance(node, (exp.And, exp.Or)):
        parts = [truth(node.this, scope, positive), truth(node.expression, scope, positive)]
        conjunction = isinstance(node, exp.And) == positive
        return _all(parts) if conjunction else _any(parts)
    if type(node) in _COMPARISONS:
        op = _COMPARISONS[type(node)]
        left, right = scalar(node.this, scope), scalar(node.expression, scope)
        return _compare(left, right, op if positive else _NEGATED[op])
    if isinstance(node, exp.Is):
        if not isinstance(node.expression, exp.Null):
            raise SQLRefusedError(f"{_sql(node)}: IS takes NULL (x IS NULL, x IS NOT NULL).")
        value = scalar(node.this, scope)
        if isinstance(value, Const):
            return Const((value.value is None) == positive)
        test = value.expr.isna() if positive else value.expr.notna()
        return columns.wrap(value, test)
    if isinstance(node, exp.In):
        return _in(node, scope, positive)
    if isinstance(node, exp.Between):
        series = _column(scalar(node.this, scope), "BETWEEN")
        low, high = scalar(node.args["low"], scope), scalar(node.args["high"], scope)
        if positive:
            return columns.between(series, _constant(low, "BETWEEN"), _constant(high, "BETWEEN"))
        return _any([_compare(series, low, "<"), _compare(series, high, ">")])
    if isinstance(node, (exp.Like, exp.ILike)):
        matched = _like(node, scope)
        if positive:
            return matched
        present = _present(_column(scalar(node.this, scope), "LIKE"))
        assert present is not None
        return _all([columns.wrap(matched, ~matched.expr), present])
    value = scalar(node, scope)
    if isinstance(value, Const):
        if not isinstance(value.value, bool):
            raise SQLError(f"{_sql(node)} is not a condition.")
        return Const(value.value == positive)
    if value.info.kind != "boolean":
        raise SQLError(f"{_sql(node)} is not a condition (a comparison, IN, LIKE, IS NULL, ...).")
    if positive:
        return value
    present = _present(value)
    assert present is not None
    return _all([columns.wrap(value, ~value.expr), present])


def _in(node: exp.In, scope: Scope, positive: bool) -> Value:
    if node.args.get("query") is not None or node.args.get("unnest") is not None:
        raise SQLRefusedError(
            f"{_sql(node)[:80]}: IN (SELECT ...) reads other rows; list public values, "
            "x IN ('a', 'b'), or JOIN a registered public table."
        )
    series = _column(scalar(node.this, scope), "IN")
    values = [_constant(scalar(v, scope), "IN (...)") for v in node.expressions]
    if any(v is None for v in values):
        raise SQLRefusedError("NULL inside IN (...): write x IS NULL OR x IN (...).")
    found = columns.isin(series, values)
    if positive:
        return found
    present = _present(series)
    assert present is not None
    return _all([columns.wrap(found, ~found.expr), present])


def condition(node: exp.Expression, scope: Scope, clause: str) -> SeriesHandle | None:
    """T(node) as a filter condition (None: always true); one that is never true is refused."""
    found = truth(node, scope)
    if isinstance(found, Const):
        if found.value:
            return None
        raise SQLRefusedError(f"{clause} {_sql(node)} is never true: the query would read no row.")
    return found
