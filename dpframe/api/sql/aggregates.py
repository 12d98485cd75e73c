"""SQL aggregates to the facade's release verbs: one node per query.

=============================================  =========================================
SQL                                            the pandas spelling whose node it builds
=============================================  =========================================
``COUNT(*)``                                   ``pf.count()`` / ``groupby(k).size()``
``COUNT(x)``, ``SUM``, ``AVG``                 ``pf["x"].count()``, ``.sum()``, ``.mean()``
``VARIANCE``, ``STDDEV`` (and ``_POP``)        ``.var()``, ``.std()`` (population: n divisor)
``MEDIAN(x)``, ``PERCENTILE_CONT(q) ...``      ``.median()``, ``.quantile(q)`` (a list:
                                               several levels of one column)
``COUNT(DISTINCT x)``                          ``pf["x"].nunique()`` (any column)
``MODE(x)``                                    ``pf["x"].mode()``
several aggregates                             ``pf.agg({col: [names]})`` (one charge split
                                               equally, or by ``weights=``); ``COUNT(*)``
                                               among them is ``count`` of a column of ones
                                               assigned as ``"*"``
=============================================  =========================================

Grouped, each is the group-by's method (``pf.groupby(k)["x"].mean()``); a
key without declared categories is discovered privately in the same release
when the request has a δ.  An aggregate's argument that is an expression is
the expression's column (``(pf.wage / 40).mean()``), assigned under its SQL
text when it is grouped or one of several (``pf.assign(**{"wage / 40": ...})``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dpframe.api.handle import FrameHandle, GroupHandle, SeriesHandle
from dpframe.api.sql.errors import SQLRefusedError
from dpframe.api.sql.scalars import Const, scalar
from dpframe.api.sql.scope import Scope
from dpframe.api.verbs import aggregates, aggregation, distinct, grouping, quantiles
from dpframe.api.verbs.requests import public_keys
from dpframe.plan.expressions import Col
from dpframe.plan.privacy import PrivacyRequest

__all__ = ["COUNT_STAR", "Cell", "cell_of", "is_aggregate", "node_of"]

#: The column of ones whose count is ``COUNT(*)`` among several aggregates.
COUNT_STAR = "*"

_STATISTICS: dict[type[exp.Expression], str] = {
    exp.Sum: "sum",
    exp.Avg: "mean",
    exp.Variance: "var",
    exp.VariancePop: "var",
    exp.Stddev: "std",
    exp.StddevPop: "std",
    exp.StddevSamp: "std",
}
_SAMPLE = {"VarSamp"}  # sqlglot versions name VAR_SAMP differently; matched by name
_ROW_VALUES = (
    "returns values of private rows; aggregate them (COUNT, SUM, AVG, MEDIAN, "
    "PERCENTILE_CONT(q) WITHIN GROUP (ORDER BY x))"
)


@dataclass(frozen=True)
class Cell:
    """One released aggregate: its statistic, argument (None: rows) and quantile level."""

    statistic: str
    argument: SeriesHandle | None
    level: float | None
    text: str
    source: str = "*"

    @property
    def identity(self) -> tuple[str, str, float | None]:
        """Two cells with the same identity are one release."""
        argument = "*" if self.argument is None else str(self.argument.expr)
        return (self.statistic, argument, self.level)


def is_aggregate(node: exp.Expression) -> bool:
    """True for an aggregate call (``AVG(x)``, ``PERCENTILE_CONT(q) WITHIN GROUP (...)``)."""
    return isinstance(node, (exp.AggFunc, exp.WithinGroup))


def _sql(node: exp.Expression) -> str:
    return str(node.sql(dialect="duckdb"))


def _argument(node: exp.Expression, scope: Scope, text: str) -> SeriesHandle:
    value = scalar(node, scope)
    if isinstance(value, Const):
        raise SQLRefusedError(f"{text}: aggregate a column, not a constant.")
    return value


def _level(node: exp.Expression | None, text: str) -> float:
    if not isinstance(node, exp.Literal) or node.is_string:
        raise SQLRefusedError(f"{text}: the percentile is a number between 0 and 1.")
    return float(str(node.this))


def cell_of(node: exp.Expression, scope: Scope) -> Cell:
    """The release an aggregate call asks for (refused, naming the nearest form, if none)."""
    text = _sql(node)
    if isinstance(node, exp.WithinGroup):
        inner, order = node.this, node.expression
        if not isinstance(inner, exp.PercentileCont):
            raise SQLRefusedError(
                f"{text}: PERCENTILE_DISC is not available; use PERCENTILE_CONT(q) WITHIN "
                "GROUP (ORDER BY x) (dpframe picks the value among public candidates)."
            )
        ordered = order.expressions if isinstance(order, exp.Order) else []
        if len(ordered) != 1 or ordered[0].args.get("desc"):
            raise SQLRefusedError(f"{text}: WITHIN GROUP (ORDER BY x) takes one column, ascending.")
        level = _level(inner.this, text)
        arg = ordered[0].this
        return Cell("quantile", _argument(arg, scope, text), level, text, _sql(arg))
    if isinstance(node, exp.Filter):
        raise SQLRefusedError(
            f"{text}: FILTER (WHERE ...) is not available; write SUM(CASE WHEN cond THEN 1 ELSE "
            "0 END), or move the condition to WHERE."
        )
    if isinstance(node, (exp.Min, exp.Max)):
        which, q = ("MIN", "0.01") if isinstance(node, exp.Min) else ("MAX", "0.99")
        raise SQLRefusedError(
            f"{text}: {which} is one private row's value; use PERCENTILE_CONT({q}) WITHIN GROUP "
            "(ORDER BY x), or pf['x'].approx_bounds(epsilon=...) for clamping bounds."
        )
    if isinstance(node, exp.Count):
        inner = node.this
        if isinstance(inner, exp.Star) or inner is None:
            return Cell("count", None, None, text)
        if isinstance(inner, exp.Distinct):
            if len(inner.expressions) != 1:
                raise SQLRefusedError(f"{text}: COUNT(DISTINCT ...) takes one column.")
            arg = inner.expressions[0]
            return Cell("nunique", _argument(arg, scope, text), None, text, _sql(arg))
        return Cell("count", _argument(inner, scope, text), None, text, _sql(inner))
    if isinstance(node, exp.Median):
        return Cell("quantile", _argument(node.this, scope, text), 0.5, text, _sql(node.this))
    if isinstance(node, (exp.PercentileCont, exp.ApproxQuantile)):
        level_node = node.args.get("expression") or node.args.get("quantile")
        level = _level(level_node, text)
        return Cell("quantile", _argument(node.this, scope, text), level, text, _sql(node.this))
    if isinstance(node, exp.Mode):
        return Cell("mode", _argument(node.this, scope, text), None, text, _sql(node.this))
    statistic = _STATISTICS.get(type(node))
    if statistic is None and type(node).__name__ in _SAMPLE:
        statistic = "var"
    if statistic is not None:
        if isinstance(node.this, exp.Distinct):
            raise SQLRefusedError(
                f"{text}: {type(node).__name__.upper()}(DISTINCT ...) is not available; "
                "aggregate the column itself."
            )
        return Cell(statistic, _argument(node.this, scope, text), None, text, _sql(node.this))
    if isinstance(node, (exp.ArgMax, exp.ArgMin)):
        raise SQLRefusedError(
            f"{text}: ARG_MAX/ARG_MIN return a private row's value; the key with the largest "
            "count, sum or mean is pf.groupby(k).argmax('count'|'sum'|'mean', epsilon=...)."
        )
    raise SQLRefusedError(f"{text}: {type(node).__name__.upper()} {_ROW_VALUES}.")


def column_name(cell: Cell) -> str:
    """The column a grouped or combined aggregate reads (its SQL text when it is derived)."""
    if cell.argument is None:
        return COUNT_STAR
    expr = cell.argument.expr
    if isinstance(expr, Col):
        return expr.name
    return cell.source


def derived_columns(cells: list[Cell], frame: FrameHandle) -> dict[str, Any]:
    """The columns assigned before grouping or combining: derived arguments, ``COUNT(*)``'s ones."""
    made: dict[str, Any] = {}
    for cell in cells:
        name = column_name(cell)
        if cell.argument is None:
            if len(cells) > 1:  # alone, COUNT(*) is the frame's count or the groups' size
                made[name] = 1
        elif not (isinstance(cell.argument.expr, Col) and name in frame.schema.names):
            made[name] = cell.argument
    return made


_AGG_NAMES = {"count": "count", "sum": "sum", "mean": "mean", "var": "var", "std": "std"}


def node_of(
    frame: FrameHandle,
    group: GroupHandle | None,
    cells: list[Cell],
    request: PrivacyRequest,
    weights: object,
) -> tuple[Any, str]:
    """The release node of ``cells`` and its shape.

    Shapes: ``"single"`` (one cell's verb), ``"levels"`` (quantiles of one column at
    several levels), ``"agg"`` (several cells, ``agg``), ``"nunique"`` (the caller
    runs ``tables.nunique``, which post-processes its value counts),
    ``"grouped_nunique"`` (the caller runs ``distinct.grouped_nunique``: per
    group, the keys whose noisy count clears the threshold).

    ``frame`` holds the derived columns already (for ``group``'s frame the same).
    """
    if len(cells) == 1:
        if weights is not None:
            raise SQLRefusedError("weights= splits several aggregates; this query asks for one.")
        if cells[0].statistic == "nunique" and group is not None:  # COUNT(DISTINCT x) per group
            node, thresholded = distinct.grouped_nunique_node(
                group.selecting(column_name(cells[0])), request
            )
            return node, ("grouped_nunique" if thresholded else "single")
        shape = "nunique" if cells[0].statistic == "nunique" and group is None else "single"
        return _single(frame, group, cells[0], request), shape
    kinds = {c.statistic for c in cells}
    if kinds == {"quantile"} and len({c.identity[1] for c in cells}) == 1:
        if weights is not None and len(set(_weights(weights, len(cells)))) != 1:
            raise SQLRefusedError(
                "weights= for percentiles of one column: they split ε evenly (one release)."
            )
        levels = [c.level for c in cells]
        if group is None:
            assert cells[0].argument is not None
            return quantiles.quantile_node(cells[0].argument, levels, request), "levels"
        column = column_name(cells[0])
        return (
            quantiles.grouped_quantile_node(group.frame, group.keys, column, levels, request),
            "levels",
        )
    for cell in cells:
        if cell.statistic in ("nunique", "mode"):
            raise SQLRefusedError(
                f"{cell.text} among other aggregates: ask it in a query of its own."
            )
        if cell.statistic == "quantile" and cell.level != 0.5:
            raise SQLRefusedError(
                f"{cell.text} among other aggregates: only MEDIAN combines with others; ask "
                "percentiles of one column in a query of their own."
            )
    spec: dict[str, list[str]] = {}
    for cell in cells:
        name = "median" if cell.statistic == "quantile" else _AGG_NAMES[cell.statistic]
        spec.setdefault(column_name(cell), []).append(name)
    order = [
        (column_name(c), "median" if c.statistic == "quantile" else c.statistic) for c in cells
    ]
    chosen = None
    if weights is not None:
        given = _weights(weights, len(cells))
        by_cell = dict(zip(order, given, strict=True))
        chosen = [by_cell[(column, name)] for column, names in spec.items() for name in names]
    if group is None:
        return aggregation.agg_node(frame, spec, request, weights=chosen), "agg"
    return aggregation.grouped_agg_node(group, spec, request, chosen), "agg"


def _weights(weights: object, count: int) -> list[Any]:
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__iter__"):
        raise SQLRefusedError(f"weights= takes {count} positive integers, one per aggregate.")
    given = list(weights)  # type: ignore[call-overload,unused-ignore]
    if len(given) != count:
        raise SQLRefusedError(
            f"weights= takes {count} positive integers, one per aggregate in the order of "
            "the select list (then HAVING's and ORDER BY's own aggregates)."
        )
    return given


def _single(
    frame: FrameHandle, group: GroupHandle | None, cell: Cell, request: PrivacyRequest
) -> Any:
    if group is None:
        if cell.argument is None:
            return aggregates.count_node(frame, request)
        if cell.statistic == "quantile":
            return quantiles.quantile_node(cell.argument, cell.level, request)
        if cell.statistic == "mode":
            return aggregates.mode_node(cell.argument, request)
        if cell.statistic == "nunique":
            if public_keys(cell.argument.info) is None:  # an ID column: a distinct count
                return distinct.distinct_count_node(cell.argument, request)
            return aggregates.value_counts_node(cell.argument, request)
        return aggregates.aggregate_node(cell.argument, cell.statistic, request)  # type: ignore[arg-type]
    if cell.statistic == "mode":
        raise SQLRefusedError(
            f"{cell.text} per group is not available; ask it without GROUP BY on a filtered "
            "table (WHERE k = '...')."
        )
    column = None if cell.argument is None else column_name(cell)
    if cell.statistic == "quantile":
        return quantiles.grouped_quantile_node(group.frame, group.keys, column, cell.level, request)
    return grouping.aggregate_node(group.selecting(column), cell.statistic, request)  # type: ignore[arg-type]
