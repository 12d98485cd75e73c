"""The released answer as a SQL table, and HAVING, ORDER BY, LIMIT on it (post-processing, free).

A query with one aggregate and no GROUP BY answers with the facade's own
release (a :class:`~dpframe.Release`, the key of ``MODE``, the count of
``COUNT(DISTINCT)``).  Any other answer is a DataFrame of ``dp`` columns
(:mod:`dpframe.mechanisms.answers`), one row per group (the keys are its
index, named as the query names them) and one column per select item: each
column is the released cells themselves, taken from the facade's answer, so
``dp.ci(answer)`` and ``value ± half-width`` hold, and keep holding through
pandas' own steps.  Arithmetic of aggregates in the select list
(``SUM(x) / COUNT(*)``) is pandas arithmetic on those columns (exact for
``+``, ``-`` and public factors; a ratio of releases gets the Bonferroni box
of their intervals).

HAVING, ORDER BY and LIMIT select and order the released rows; they read
released values and public keys only.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlglot import exp

from dpframe.api.sql.aggregates import column_name
from dpframe.api.sql.compiler import Compiled
from dpframe.api.sql.errors import SQLRefusedError
from dpframe.errors import DPError
from dpframe.mechanisms.answers.results import (
    FrameRelease,
    GroupedRelease,
    Release,
    answer_array,
)

__all__ = ["ColumnIntervals", "answer", "check_post_processing"]

_BINARY: dict[type[exp.Expression], Callable[[Any, Any], Any]] = {
    exp.Add: operator.add,
    exp.Sub: operator.sub,
    exp.Mul: operator.mul,
    exp.Div: operator.truediv,
    exp.EQ: operator.eq,
    exp.NEQ: operator.ne,
    exp.LT: operator.lt,
    exp.LTE: operator.le,
    exp.GT: operator.gt,
    exp.GTE: operator.ge,
}


@dataclass(frozen=True, eq=False)
class ColumnIntervals:
    """The answer table's intervals, column by column from its ``dp`` columns (for its caption)."""

    frame: pd.DataFrame
    statistic: str

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) of every cell at coverage ``level`` each."""
        lows, highs = [], []
        for j in range(len(self.frame.columns)):
            try:
                low, high = self.frame.iloc[:, j].array.intervals(level)
            except DPError:  # a quantile: its accuracy is a rank error (NaN ends)
                low = high = np.full(len(self.frame), np.nan)
            lows.append(np.asarray(low, dtype=float))
            highs.append(np.asarray(high, dtype=float))
        return np.column_stack(lows), np.column_stack(highs)


def _meta(released: Any) -> Any:
    if isinstance(released, (pd.Series, pd.DataFrame)):
        return released.attrs.get("dpframe")
    return None


def _cells(compiled: Compiled, released: Any) -> tuple[pd.Index, list[Any]]:
    """The group index and each aggregate's released cells (a ``dp`` array), in cell order."""
    cells = compiled.cells
    if compiled.shape in ("single", "nunique", "grouped_nunique"):
        if isinstance(released, Release):
            return pd.RangeIndex(1), [answer_array([float(released)], released.intervals)]
        return released.index, [released.array]
    if compiled.shape == "levels":
        if compiled.group is None:
            return pd.RangeIndex(1), [released.array[[i]] for i in range(len(cells))]
        levels = released.index.get_level_values(-1).to_numpy(dtype=float)
        found, index = [], None
        for cell in cells:
            rows = np.flatnonzero(np.isclose(levels, float(cell.level or 0.0)))
            found.append(released.array[rows])
            if index is None:
                index = released.index[rows].droplevel(-1)
        assert index is not None
        return index, found
    names = {"quantile": "median"}
    if compiled.group is None:  # agg's table: aggregates x columns
        statistics, columns = list(released.index), list(released.columns)
        picked = []
        for cell in cells:
            i = statistics.index(names.get(cell.statistic, cell.statistic))
            picked.append(released.iloc[:, columns.index(column_name(cell))].array[[i]])
        return pd.RangeIndex(1), picked
    columns = list(released.columns)
    picked = []
    for cell in cells:
        j = columns.index((column_name(cell), names.get(cell.statistic, cell.statistic)))
        picked.append(released.iloc[:, j].array)
    return released.index, picked


def _evaluate(
    node: exp.Expression, columns: dict[str, pd.Series], compiled: Compiled, cells: list[pd.Series]
) -> Any:
    """A HAVING, ORDER BY or select-list formula on the released rows (a Series or a constant)."""
    text = str(node.sql(dialect="duckdb"))
    if text in compiled.texts:
        return cells[compiled.texts[text]]
    if isinstance(node, exp.Paren):
        return _evaluate(node.this, columns, compiled, cells)
    if isinstance(node, exp.Column):
        for key, values in columns.items():
            if key.lower() == node.name.lower():
                return values
        raise SQLRefusedError(
            f"{text}: HAVING and ORDER BY read the select list's names, the group keys and "
            "aggregates; name a column of the answer."
        )
    if isinstance(node, exp.Literal):
        return str(node.this) if node.is_string else float(str(node.this))
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Neg):
        return -_evaluate(node.this, columns, compiled, cells)
    if type(node) in _BINARY:
        left = _evaluate(node.this, columns, compiled, cells)
        right = _evaluate(node.expression, columns, compiled, cells)
        return _BINARY[type(node)](left, right)
    if isinstance(node, (exp.And, exp.Or)):
        left = _truth(_evaluate(node.this, columns, compiled, cells))
        right = _truth(_evaluate(node.expression, columns, compiled, cells))
        return left & right if isinstance(node, exp.And) else left | right
    if isinstance(node, exp.Not):
        return ~_truth(_evaluate(node.this, columns, compiled, cells))
    if isinstance(node, exp.In):
        subject = _evaluate(node.this, columns, compiled, cells)
        options = [_evaluate(v, columns, compiled, cells) for v in node.expressions]
        return subject.isin(options) if isinstance(subject, pd.Series) else subject in options
    if isinstance(node, exp.Between):
        subject = _evaluate(node.this, columns, compiled, cells)
        low = _evaluate(node.args["low"], columns, compiled, cells)
        high = _evaluate(node.args["high"], columns, compiled, cells)
        return _truth(subject >= low) & _truth(subject <= high)
    raise SQLRefusedError(
        f"{text}: HAVING, ORDER BY and arithmetic of aggregates take + - * /, comparisons, "
        "AND/OR/NOT, IN and BETWEEN of released values and keys."
    )


def _truth(value: Any) -> Any:
    if isinstance(value, pd.Series):
        return value.astype(bool)
    return bool(value)


def _columns(compiled: Compiled, index: pd.Index, cells: list[Any]) -> dict[str, pd.Series]:
    """The answer's columns by name (select-list names, then keys), before HAVING and ORDER BY."""
    series = [pd.Series(c, index=index) for c in cells]
    keys: dict[str, pd.Series] = {}
    for i, name in enumerate(compiled.keys):
        level = index.get_level_values(i) if isinstance(index, pd.MultiIndex) else index
        keys[name] = pd.Series(np.asarray(level, dtype=object), index=index)
    found: dict[str, pd.Series] = {}
    for output in compiled.outputs:
        if output.key is not None:
            found[output.name] = keys[output.key]
        elif output.cell is not None:
            found[output.name] = series[output.cell]
    for output in compiled.outputs:
        if output.formula is not None:
            value = _evaluate(output.formula, {**keys, **found}, compiled, series)
            if not isinstance(value, pd.Series):
                raise SQLRefusedError(f"{output.name}: a constant in the select list.")
            found[output.name] = value
    return {**keys, **found}


def _plain(values: Any) -> np.ndarray:
    series = values if isinstance(values, pd.Series) else pd.Series(values)
    try:
        return np.asarray(series.to_numpy(dtype=float))
    except (TypeError, ValueError):
        return np.asarray(series.to_numpy(dtype=object))


def _rows(compiled: Compiled, columns: dict[str, pd.Series], cells: list[Any], size: int) -> Any:
    """The rows HAVING keeps, in ORDER BY's order, after OFFSET and LIMIT."""
    rows = np.arange(size)
    index = next(iter(columns.values())).index if columns else pd.RangeIndex(size)
    cell_series = [pd.Series(c, index=index) for c in cells]
    if compiled.having is not None:
        keep = _evaluate(compiled.having, columns, compiled, cell_series)
        mask = np.asarray(_truth(keep), dtype=bool)
        rows = rows[mask] if mask.shape else (rows if mask else rows[:0])
    for node, desc in reversed(compiled.order):
        if isinstance(node, exp.Literal) and not node.is_string:
            position = int(str(node.this))
            if not 1 <= position <= len(compiled.outputs):
                count = len(compiled.outputs)
                raise SQLRefusedError(f"ORDER BY {position}: the select list has {count} items.")
            values: Any = columns[compiled.outputs[position - 1].name]
        else:
            values = _evaluate(node, columns, compiled, cell_series)
        if not isinstance(values, pd.Series):
            continue  # a constant orders nothing
        chosen = _plain(values)[rows]
        ranks = pd.Series(chosen).rank(method="first", ascending=not desc, na_option="bottom")
        rows = rows[np.argsort(ranks.to_numpy(), kind="stable")]
    stop = None if compiled.limit is None else compiled.offset + compiled.limit
    return rows[compiled.offset : stop]


def check_post_processing(compiled: Compiled) -> None:
    """Run HAVING, ORDER BY and the formulas on an empty answer: refuse what they cannot read."""
    empty = [np.zeros(0) for _ in compiled.cells]
    if len(compiled.keys) > 1:
        index: pd.Index = pd.MultiIndex.from_arrays([[]] * len(compiled.keys))
    else:
        index = pd.Index([])
    columns = _columns(compiled, index, empty)
    _rows(compiled, columns, empty, 0)


def answer(compiled: Compiled, released: Any) -> Any:
    """The released object as the query's answer (see the module docstring)."""
    single = (
        len(compiled.outputs) == 1 and compiled.outputs[0].cell == 0 and len(compiled.cells) == 1
    )
    if single and compiled.group is None and not compiled.post_processed:
        return released
    index, cells = _cells(compiled, released)
    columns = _columns(compiled, index, cells)
    rows = _rows(compiled, columns, cells, len(index))
    shown = [o for o in compiled.outputs if o.key is None]
    frame = pd.DataFrame(
        {j: columns[o.name].iloc[rows].array for j, o in enumerate(shown)},
        index=index[rows],
    )
    frame.columns = pd.Index([o.name for o in shown])
    renamed = {o.key: o.name for o in compiled.outputs if o.key is not None}
    if compiled.group is not None:
        frame.index = frame.index.set_names([renamed.get(k, k) for k in compiled.keys])
    else:
        frame.index = pd.RangeIndex(len(rows))
    meta = released if isinstance(released, Release) else _meta(released)
    counts = all(c.statistic == "count" for c in compiled.cells) and not any(
        o.formula is not None for o in shown
    )
    if isinstance(meta, (Release, GroupedRelease, FrameRelease)):
        intervals = ColumnIntervals(frame, "count" if counts else "mixed")
        query = " ".join(compiled.text.split())[:300]
        values = frame.to_numpy(dtype=float)
        frame.attrs["dpframe"] = FrameRelease(
            frame.index, frame.columns, meta.cost, meta.mechanism, query, intervals, values
        )
    return frame
