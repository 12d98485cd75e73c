"""The public schema of a private frame: column names, kinds, bounds and categories.

Everything here is public by declaration: bounds and categories come from the
data owner or analyst, never from the data.  Derived columns get bounds by
interval arithmetic over the declared bounds (:func:`infer_column`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, cast

import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.columns import Bounds, ColumnInfo, Derived, Kind, ValueKind, pandas_order
from dpframe.plan.expressions import (
    Abs,
    Arith,
    Bucket,
    Clip,
    Col,
    Compare,
    Expr,
    IsIn,
    IsNull,
    Lit,
    Logical,
    Neg,
    Not,
)
from dpframe.plan.key_images import key_image
from dpframe.plan.recode import Bin, Recode
from dpframe.plan.temporal import DateLit, check_date_bounds, check_temporal

__all__ = [
    "ColumnInfo",
    "Kind",
    "Schema",
    "check_keys",
    "check_node_bounds",
    "infer_column",
    "keys_fit",
    "numeric",
    "schema_from_frame",
    "value_fits",
]


@dataclass(frozen=True)
class Schema:
    """An ordered collection of :class:`ColumnInfo`."""

    columns: tuple[ColumnInfo, ...]

    @cached_property
    def _positions(self) -> dict[str, int]:
        """Each column's position (built once per schema: lookups in constant time)."""
        return {c.name: i for i, c in enumerate(self.columns)}

    @cached_property
    def declared_digest(self) -> str:
        """SHA-256 (hex) of the whole declaration, computed once per schema (a re-run's key).

        It covers every column's name, kind, bounds, categories and missing
        values (their ``repr``): two schemas with one digest declare the same
        thing.  Writing out and hashing a schema of a thousand categories takes
        about 0.2 ms, which every release would otherwise pay.
        """
        text = repr(self.columns)
        not_null = [c.name for c in self.columns if c.not_null]
        if not_null:  # not in ColumnInfo's repr (older digests unchanged): added here
            text += f" not null: {not_null!r}"
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    @property
    def names(self) -> tuple[str, ...]:
        """Column names in order."""
        return tuple(c.name for c in self.columns)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._positions

    def get(self, name: str) -> ColumnInfo:
        """The column ``name``, or a :class:`SchemaError` listing the known columns."""
        index = self._positions.get(name) if isinstance(name, str) else None
        if index is None:
            shown = ", ".join(self.names[:50]) + (", ..." if len(self.columns) > 50 else "")
            raise SchemaError(f"Unknown column {name!r}. Columns: {shown}.")
        return self.columns[index]

    def with_column(self, info: ColumnInfo) -> Schema:
        """This schema with ``info`` added or replacing the column of the same name."""
        index = self._positions.get(info.name)
        if index is None:
            grown = Schema((*self.columns, info))
            positions = self._positions.copy()  # a C-level copy: no per-column Python work
            positions[info.name] = len(self.columns)
            grown.__dict__["_positions"] = positions
            return grown
        return Schema((*self.columns[:index], info, *self.columns[index + 1 :]))

    def select(self, names: Sequence[str]) -> Schema:
        """Only the columns ``names``, in that order."""
        return Schema(tuple(self.get(n) for n in names))

    def to_frame(self) -> pd.DataFrame:
        """The schema as a small public table."""
        columns: dict[str, Any] = {
            "kind": [c.kind for c in self.columns],
            "dtype": [c.dtype for c in self.columns],
            "bounds": [c.bounds if c.date_bounds is None else c.date_bounds for c in self.columns],
            "categories": [
                None if c.categories is None else list(c.categories) for c in self.columns
            ],
        }
        if any(c.max_length is not None for c in self.columns):
            columns["max_length"] = pd.array([c.max_length for c in self.columns], dtype=object)
        if any(c.not_null for c in self.columns):
            columns["not_null"] = [c.not_null for c in self.columns]
        table: pd.DataFrame = pd.DataFrame(columns, index=pd.Index(self.names, name="column"))
        return table


def check_bounds(name: str, bounds: object) -> Bounds:
    """Validate a ``(low, high)`` pair: finite numbers with low <= high."""
    try:
        pair: tuple[object, ...] = tuple(bounds)  # type: ignore[arg-type]
        if len(pair) != 2 or any(isinstance(v, (str, bytes)) for v in pair):
            raise ValueError
        low_f, high_f = float(pair[0]), float(pair[1])  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise SchemaError(f"bounds for {name!r} must be a (low, high) pair of numbers.") from None
    if not (math.isfinite(low_f) and math.isfinite(high_f)):
        raise SchemaError(f"bounds for {name!r} must be finite numbers.")
    if low_f > high_f:
        raise SchemaError(f"bounds for {name!r} need low <= high; got low > high.")
    return (low_f, high_f)


def check_categories(name: str, categories: object, kind: str) -> tuple[Hashable, ...]:
    """Validate declared keys: non-empty, distinct, hashable, of the column's type."""
    if isinstance(categories, (str, bytes)) or not isinstance(categories, (Sequence, pd.Index)):
        raise SchemaError(f"categories for {name!r} must be a list of public keys.")
    if kind == "datetime":
        raise SchemaError(
            f"categories for {name!r}, which holds dates: group by a calendar field "
            f"instead, e.g. pf[{name!r}].dt.year or pf[{name!r}].dt.to_period('M'), whose "
            "keys follow from the column's bounds."
        )
    keys = tuple(categories)
    if not keys:
        raise SchemaError(f"categories for {name!r} must not be empty.")
    if any(_is_missing(k) for k in keys):
        raise SchemaError(
            f"categories for {name!r} must not contain a missing value (None, NaN): missing "
            f"values are never a group. Count them with pf[pf[{name!r}].isna()].count(...)."
        )
    try:
        distinct = len(set(keys))
    except TypeError:
        raise SchemaError(f"categories for {name!r} must be numbers or strings.") from None
    if distinct != len(keys):
        raise SchemaError(f"categories for {name!r} must be distinct.")
    is_text = [isinstance(k, str) for k in keys]
    if kind in ("numeric", "boolean") and any(is_text):
        raise SchemaError(f"categories for {name!r} are text, but the column holds numbers.")
    if kind in ("text", "categorical") and not all(is_text):
        raise SchemaError(f"categories for {name!r} must be strings, like the column's values.")
    return keys


def _is_missing(key: object) -> bool:
    return bool(pd.api.types.is_scalar(key) and pd.isna(cast("Any", key)))


def _kind_of(series: pd.Series) -> Kind:
    dtype = series.dtype
    if pd.api.types.is_complex_dtype(dtype):
        return "other"  # no order and no clamping: never summed
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_datetime64_dtype(dtype):
        return "datetime"  # naive dates; with a time zone they stay "other"
    if pd.api.types.is_numeric_dtype(dtype):
        return "numeric"
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(dtype):
        return "text"
    if pd.api.types.is_object_dtype(dtype):
        return "text"
    return "other"


def schema_from_frame(
    df: pd.DataFrame,
    bounds: Mapping[str, object] | None,
    categories: Mapping[str, Sequence[Hashable]] | None,
) -> Schema:
    """Build and validate the public schema of a DataFrame.

    A date column (naive ``datetime64``) takes two dates as its bounds
    (:func:`~dpframe.plan.temporal.check_date_bounds`), kept in
    :attr:`ColumnInfo.date_bounds`.

    Raises:
        SchemaError: for unknown columns in ``bounds``/``categories``, bounds
            that are not finite or have low > high, bounds on a column that
            is neither numeric nor dates, date bounds that are not dates,
            categories on a date column, empty or duplicate categories, or
            non-string column names.
    """
    declared: tuple[tuple[object, str], ...] = ((bounds, "bounds"), (categories, "categories"))
    for given, what in declared:  # annotations are not checked at run time
        if given is not None and not isinstance(given, Mapping):
            kind = type(given).__name__
            raise SchemaError(f"{what}= takes a dict {{column: ...}}, not a {kind}.")
    bounds = dict(bounds or {})
    categories = dict(categories or {})
    names = list(df.columns)
    if len(set(names)) != len(names):
        raise SchemaError("Column names must be unique.")
    for name in names:
        if not isinstance(name, str):
            raise SchemaError("Column names must be strings; rename the columns first.")
    for key in [*bounds, *categories]:
        if key not in names:
            raise SchemaError(f"Unknown column {key!r}. Columns: {', '.join(map(str, names))}.")
    infos = []
    for name in names:
        series = df[name]
        kind = _kind_of(series)
        info = ColumnInfo(name=name, kind=kind, dtype=str(series.dtype))
        if kind == "boolean":
            info = replace(info, bounds=(0.0, 1.0), categories=(False, True))
        if kind == "datetime" and name in bounds:
            if _numbers(bounds[name]):
                raise SchemaError(
                    f"bounds given for {name!r}, which is not numeric; it holds dates, so its "
                    "bounds are two dates, e.g. (pd.Timestamp('2000-01-01'), "
                    "pd.Timestamp('2020-12-31'))."
                )
            info = replace(info, date_bounds=check_date_bounds(name, bounds[name]))
        elif name in bounds:
            if kind not in ("numeric", "boolean"):
                raise SchemaError(
                    f"bounds given for {name!r}, which is not numeric; declare its "
                    "categories= instead."
                )
            info = replace(info, bounds=check_bounds(name, bounds[name]))
        if name in categories:
            cats_t = check_categories(name, categories[name], kind)
            if not isinstance(series.dtype, pd.CategoricalDtype):
                cats_t = pandas_order(cats_t)
            info = replace(info, categories=cats_t, kind="categorical" if kind == "text" else kind)
        infos.append(info)
    return Schema(tuple(infos))


def _numbers(pair: object) -> bool:
    """True for a pair whose values are all numbers (numeric bounds given for dates)."""
    if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence):
        return False
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair)


def _arith_bounds(op: str, a: Bounds, b: Bounds) -> Bounds | None:
    if op == "+":
        return (a[0] + b[0], a[1] + b[1])
    if op == "-":
        return (a[0] - b[1], a[1] - b[0])
    if op == "*":
        products = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
        return (min(products), max(products))
    if b[0] <= 0 <= b[1]:
        return None
    quotients = [a[0] / b[0], a[0] / b[1], a[1] / b[0], a[1] / b[1]]
    return (min(quotients), max(quotients))


def _postorder(root: Expr) -> list[Expr]:
    """The distinct node objects of ``root``, children before parents (iterative)."""
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node.children()))
    return order


def _node_bounds(
    expr: Expr,
    infos: Mapping[str, ColumnInfo],
    found: dict[int, Bounds | None],
    facts: Mapping[int, ColumnInfo],
) -> Bounds | None:
    """The bounds of ``expr`` given those of its children in ``found`` (by object id)."""
    if isinstance(expr, Col):
        return infos[expr.name].bounds
    if isinstance(expr, Derived):
        return facts[id(expr)].bounds
    if isinstance(expr, Lit):
        if isinstance(expr.value, (int, float)):
            value = float(expr.value)
            return (value, value) if math.isfinite(value) else None
        return None
    if isinstance(expr, (Compare, Logical, IsIn, IsNull, Not)):
        return (0.0, 1.0)
    if isinstance(expr, (Neg, Abs, Clip)):
        inner = found[id(expr.operand)]
        if isinstance(expr, Clip):
            if inner is None:
                return (expr.lower, expr.upper)
            return (_clamp(inner[0], expr), _clamp(inner[1], expr))
        if inner is None:
            return None
        if isinstance(expr, Neg):
            return (-inner[1], -inner[0])
        low = 0.0 if inner[0] <= 0 <= inner[1] else min(abs(inner[0]), abs(inner[1]))
        return (low, max(abs(inner[0]), abs(inner[1])))
    if isinstance(expr, (Bin, Recode)):
        return _recoded_bounds(expr, found)
    if isinstance(expr, Arith):
        left, right = found[id(expr.left)], found[id(expr.right)]
        if left is None or right is None:
            return None
        result = _arith_bounds(expr.op, left, right)
        if result is None or not all(math.isfinite(v) for v in result):
            return None
        return result
    return None


def _recoded_bounds(expr: Bin | Recode, found: Mapping[int, Bounds | None]) -> Bounds | None:
    """A bin index lies in [0, bins - 1]; numeric labels between the smallest and largest."""
    if isinstance(expr, Bin):
        return (0.0, float(expr.bins - 1))
    if not expr.numeric:
        return None
    values = [float(t) for t in expr.target if isinstance(t, (int, float))]
    low, high = min(values), max(values)
    if not expr.keep:
        return (low, high)
    inner = found.get(id(expr.operand))
    return None if inner is None else (min(low, inner[0]), max(high, inner[1]))


def _clamp(value: float, clip: Clip) -> float:
    return min(max(value, clip.lower), clip.upper)


def _expr_bounds(
    order: list[Expr], infos: Mapping[str, ColumnInfo], facts: Mapping[int, ColumnInfo]
) -> Bounds | None:
    """Interval-arithmetic bounds of ``order[-1]`` (nodes in post-order), each computed once."""
    found: dict[int, Bounds | None] = {}
    for node in order:
        found[id(node)] = _node_bounds(node, infos, found, facts)
    return found[id(order[-1])]


def _derived_facts(
    order: list[Expr], infos: Mapping[str, ColumnInfo], schema: Schema
) -> dict[int, ColumnInfo]:
    """The facts of every :class:`Derived` node of ``order`` (post-order), by object id.

    A chain of derived nodes is resolved in one pass (each from its
    operand's facts, found before it); an operand of another type gets its
    facts from :func:`infer_column`.
    """
    facts: dict[int, ColumnInfo] = {}
    for node in order:
        if isinstance(node, Derived):
            operand = node.operand
            base = facts.get(id(operand))
            if base is None:
                if isinstance(operand, Col):
                    base = infos[operand.name]
                else:
                    base = infer_column(str(operand), operand, schema)
            facts[id(node)] = node.facts(str(node), base)
    return facts


_KIND_OF_COLUMN: Mapping[str, ValueKind] = {
    "numeric": "number",
    "boolean": "number",
    "text": "text",
    "categorical": "text",
    "datetime": "date",
}


def _column_kind(info: ColumnInfo) -> ValueKind:
    if info.dtype.startswith("period["):
        return "period"  # a column assigned from to_period()
    return _KIND_OF_COLUMN.get(info.kind, "other")


def _value_kind(order: list[Expr], infos: Mapping[str, ColumnInfo]) -> ValueKind:
    """The :data:`~dpframe.plan.columns.ValueKind` of ``order[-1]`` (nodes in post-order).

    Checks the kinds every node gets.  Each shared node is checked once,
    children first (the first offending node in a left-to-right post-order
    walk is the one reported).
    """
    found: dict[int, ValueKind] = {}
    for node in order:
        if isinstance(node, Col):
            found[id(node)] = _column_kind(infos[node.name])
            continue
        if isinstance(node, Lit):
            found[id(node)] = "text" if isinstance(node.value, str) else "number"
            continue
        if isinstance(node, DateLit):
            found[id(node)] = "date"
            continue
        kinds = [found[id(child)] for child in node.children()]
        if isinstance(node, Derived):
            found[id(node)] = node.value_kind(kinds[0])
            continue
        if isinstance(node, (Arith, Neg, Abs, Clip)) and "text" in kinds:
            raise SchemaError(f"Arithmetic needs numbers; {node} involves text.")
        check_temporal(node, kinds)
        if isinstance(node, Bin) and kinds != ["number"]:
            raise SchemaError(f"cut() needs numbers; {node} bins values that are not numbers.")
        if isinstance(node, Recode):
            number = node.numeric and (not node.keep or kinds == ["number"])
            found[id(node)] = "number" if number else "text"
            continue
        ordered = isinstance(node, Compare) and node.op in ("<", "<=", ">", ">=")
        if ordered and set(kinds) == {"number", "text"}:
            raise SchemaError(f"{node} compares a number with text; compare like with like.")
        found[id(node)] = "number"
    return found[id(order[-1])]


def infer_column(name: str, expr: Expr, schema: Schema) -> ColumnInfo:
    """The public facts of a derived column ``name = expr``.

    Every referenced column must exist.  Comparisons and logical operators
    give boolean columns; arithmetic needs numeric inputs and gets bounds by
    interval arithmetic (None when an input is unbounded or a divisor's
    bounds contain zero); a bare column reference keeps its facts.  Time is
    linear in the distinct node objects of ``expr`` (shared sub-expressions
    are examined once) and any depth works (no recursion).
    """
    order = _postorder(expr)
    refs = sorted({node.name for node in order if isinstance(node, Col)})
    infos = {ref: schema.get(ref) for ref in refs}  # each column looked up once
    value_kind = _value_kind(order, infos)
    if isinstance(expr, Col):
        return replace(infos[expr.name], name=name)
    info = _derived_column(name, expr, schema, order, infos, value_kind)
    return replace(info, not_null=False) if info.not_null else info  # it may be missing


def _derived_column(
    name: str,
    expr: Expr,
    schema: Schema,
    order: list[Expr],
    infos: Mapping[str, ColumnInfo],
    value_kind: ValueKind,
) -> ColumnInfo:
    """:func:`infer_column` of an expression other than a bare column."""
    if isinstance(expr, DateLit):
        return ColumnInfo(name, "datetime", "datetime64[ns]", date_bounds=(expr.value, expr.value))
    facts = _derived_facts(order, infos, schema)
    if isinstance(expr, Derived):
        return _keyed(replace(facts[id(expr)], name=name), order, infos)
    if isinstance(expr, Bucket):
        bins = tuple(range(len(expr.edges) - 1))
        return ColumnInfo(name, "categorical", "int64", (0.0, float(len(bins) - 1)), bins)
    if isinstance(expr, (Bin, Recode)):
        bounds = _expr_bounds(order, infos, facts)
        return _recoded_column(name, expr, value_kind == "number", bounds, schema)
    if isinstance(expr, (Compare, Logical, IsIn, IsNull, Not)):
        return ColumnInfo(name, "boolean", "bool", (0.0, 1.0), (False, True))
    for ref in _direct_refs(expr):
        if not infos[ref].summable and not isinstance(expr, Lit):
            raise SchemaError(f"Column {ref!r} is not numeric, so it cannot be used in arithmetic.")
    return _keyed(
        ColumnInfo(name, "numeric", "float64", _expr_bounds(order, infos, facts)), order, infos
    )


def _keyed(info: ColumnInfo, order: list[Expr], infos: Mapping[str, ColumnInfo]) -> ColumnInfo:
    """A number computed from one keyed column gets its keys' image as keys (:mod:`.key_images`)."""
    if info.kind != "numeric" or info.categories is not None:
        return info
    image = key_image(order, infos)
    return info if image is None else replace(info, categories=image)


def _direct_refs(expr: Expr) -> list[str]:
    """The columns ``expr`` reads other than through a :class:`Derived` node, sorted."""
    found: set[str] = set()
    seen: set[int] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if id(node) in seen or isinstance(node, Derived):
            continue
        seen.add(id(node))
        if isinstance(node, Col):
            found.add(node.name)
        stack.extend(node.children())
    return sorted(found)


def _recoded_column(
    name: str, expr: Bin | Recode, numeric: bool, bounds: Bounds | None, schema: Schema
) -> ColumnInfo:
    """The facts of a binned or recoded column: its public keys are the bins or labels.

    A bin index is numeric with keys ``0 .. bins - 1``; numeric labels give a
    numeric column, other labels a categorical one.  Keeping the values not
    recoded (``keep``) adds the operand's own keys, when it has declared ones.
    """
    if isinstance(expr, Bin):
        return ColumnInfo(name, "numeric", "int64", bounds, tuple(range(expr.bins)))
    keys: tuple[Hashable, ...] | None = expr.labels
    if expr.keep:
        inner = infer_column(name, expr.operand, schema).categories
        recoded = set(expr.source)
        rest = () if inner is None else tuple(k for k in inner if k not in recoded)
        keys = None if inner is None else tuple(dict.fromkeys((*expr.labels, *rest)))
    if keys is not None and not expr.ordered:
        keys = pandas_order(keys)  # map/replace give a plain column: pandas sorts its groups
    if numeric:
        return ColumnInfo(name, "numeric", "float64", bounds, keys)
    if expr.keep:
        return ColumnInfo(name, "categorical" if keys else "text", "object", None, keys)
    return ColumnInfo(name, "categorical", "category", None, keys)


def numeric(expr: Expr, schema: Schema, what: str) -> ColumnInfo:
    """The facts of ``expr``, which must be numeric (summed, averaged, ranked or fitted)."""
    info = infer_column(str(expr), expr, schema)
    if not info.summable:
        raise SchemaError(
            f"{what}() needs a numeric column; {info.name!r} is {info.kind}. "
            "Use count(), value counts by groupby(), or derive a number first."
        )
    return info


def value_fits(expr: Expr, schema: Schema, statistic: str) -> None:
    """A counted value may be of any kind; a summed or averaged one must be numeric."""
    if statistic == "count":
        infer_column(str(expr), expr, schema)
    else:
        numeric(expr, schema, statistic)


def keys_fit(keys: Sequence[Any], schema: Schema) -> None:
    """Every group key's expression is valid on ``schema``."""
    for key in keys:
        infer_column(key.name, key.expr, schema)


def check_node_bounds(bounds: object, what: str) -> None:
    """Clamping bounds of a release: a pair of finite floats with low <= high."""
    ok = (
        isinstance(bounds, tuple)
        and len(bounds) == 2
        and all(
            isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b)
            for b in bounds
        )
        and bounds[0] <= bounds[1]
    )
    if not ok:
        raise SchemaError(f"{what} needs finite public bounds (low, high) with low <= high.")


def check_keys(name: str, keys: tuple[Hashable, ...]) -> None:
    """Public keys of a release: distinct, hashable, and none of them missing."""
    try:
        distinct = len(set(keys)) == len(keys)
    except TypeError:
        raise SchemaError(f"The keys of {name!r} must be hashable values.") from None
    if not distinct:
        raise SchemaError(f"The keys of {name!r} must be distinct.")
    if any(_is_missing(k) for k in keys):
        raise SchemaError(f"The keys of {name!r} cannot include a missing value (None, NaN).")
