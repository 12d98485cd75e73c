"""The released answer as a SQL table, and HAVING, ORDER BY, LIMIT on it (post-processing, free).

A query with one aggregate and no GROUP BY answers with the facade's own
release (a :class:`~dpframe.Release`, or the key of ``MODE``).  Any other
answer is a DataFrame, one row per group (the keys are its index, named as
the query names them) and one column per select item, carrying the
release's intervals as the facade's released tables do
(``attrs["dpframe"]``, a :class:`~dpframe.mechanisms.results.FrameRelease`):
``dp.ci(answer)`` gives each cell's interval and the notebook shows
``value ± half-width``.  Arithmetic of released values in the select list
(``SUM(x) / COUNT(*)``) has no interval (NaN) here.

HAVING, ORDER BY and LIMIT select and order the released rows; they read
released values and public keys only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlglot import exp

from dpframe.api.sql.aggregates import Cell, column_name
from dpframe.api.sql.compiler import Compiled
from dpframe.api.sql.errors import SQLRefusedError
from dpframe.errors import DPError
from dpframe.mechanisms.results import FrameRelease, GroupedRelease, Intervals, Release

__all__ = ["Part", "Picked", "answer", "check_post_processing"]


@dataclass(frozen=True)
class Part:
    """One aggregate's released values: where its intervals are in the release's own arrays."""

    values: np.ndarray
    intervals: Intervals | None
    column: int | None = None
    rows: np.ndarray | None = None
    count: bool = False


@dataclass(frozen=True)
class Picked:
    """Intervals of an answer table: each column's part, at the rows kept (in order)."""

    parts: tuple[Part | None, ...]
    rows: np.ndarray

    @property
    def statistic(self) -> str:
        """``"count"`` when every column is a count (shown as whole numbers)."""
        every = all(p is not None and p.count for p in self.parts)
        return "count" if every else "mixed"

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """(low, high) of every cell at coverage ``level`` each (NaN: no value interval)."""
        low = np.full((len(self.rows), len(self.parts)), np.nan)
        high = np.full_like(low, np.nan)
        for j, part in enumerate(self.parts):
            if part is None or part.intervals is None:
                continue
            try:
                lo, hi = part.intervals.interval(level)
            except DPError:  # a quantile: its accuracy is a rank error
                continue
            lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
            if part.column is not None:
                lo, hi = lo[:, part.column], hi[:, part.column]
            if part.rows is not None:
                lo, hi = lo[part.rows], hi[part.rows]
            low[:, j], high[:, j] = lo[self.rows], hi[self.rows]
        return low, high


def _is_count(intervals: object) -> bool:
    return getattr(intervals, "statistic", None) == "count"


def _meta(released: Any) -> Any:
    return (
        released.attrs.get("dpframe") if isinstance(released, (pd.Series, pd.DataFrame)) else None
    )


def _parts(compiled: Compiled, released: Any) -> tuple[pd.Index, list[Part]]:
    """The group index and one part per cell, from the facade's released object."""
    cells = compiled.cells
    if compiled.shape in ("single", "nunique"):
        if isinstance(released, Release):
            part = Part(
                np.array([float(released)]), released.intervals, count=_is_count(released.intervals)
            )
            return pd.RangeIndex(1), [part]
        meta = _meta(released)
        intervals = meta.intervals if isinstance(meta, GroupedRelease) else None
        part = Part(released.to_numpy(dtype=float), intervals, count=_is_count(intervals))
        return released.index, [part]
    if compiled.shape == "levels":
        meta = _meta(released)
        intervals = meta.intervals if isinstance(meta, GroupedRelease) else None
        values = released.to_numpy(dtype=float)
        if compiled.group is None:
            return pd.RangeIndex(1), [
                Part(values[[i]], intervals, rows=np.array([i])) for i in range(len(cells))
            ]
        levels = released.index.get_level_values(-1).to_numpy(dtype=float)
        parts = []
        index: pd.Index | None = None
        for cell in cells:
            rows = np.flatnonzero(np.isclose(levels, float(cell.level or 0.0)))
            parts.append(Part(values[rows], intervals, rows=rows))
            if index is None:
                index = released.index[rows].droplevel(-1)
        assert index is not None
        return index, parts
    meta = _meta(released)
    intervals = meta.intervals if isinstance(meta, FrameRelease) else None
    names = {"quantile": "median"}
    parts = []
    if compiled.group is None:
        for cell in cells:
            stat = names.get(cell.statistic, cell.statistic)
            i = list(released.index).index(stat)
            j = list(released.columns).index(_label(cell))
            parts.append(
                Part(
                    released.to_numpy(dtype=float)[[i], j],
                    intervals,
                    column=j,
                    rows=np.array([i]),
                    count=cell.statistic == "count",
                )
            )
        return pd.RangeIndex(1), parts
    columns = list(released.columns)
    for cell in cells:
        j = columns.index((_label(cell), names.get(cell.statistic, cell.statistic)))
        parts.append(
            Part(
                released.to_numpy(dtype=float)[:, j],
                intervals,
                column=j,
                count=cell.statistic == "count",
            )
        )
    return released.index, parts


def _label(cell: Cell) -> str:
    return column_name(cell)


def _evaluate(
    node: exp.Expression,
    columns: dict[str, np.ndarray],
    compiled: Compiled,
    cells: list[np.ndarray],
    size: int,
) -> np.ndarray:
    """The value of a HAVING, ORDER BY or select-list formula on the released rows."""
    text = str(node.sql(dialect="duckdb"))
    if text in compiled.texts:
        return cells[compiled.texts[text]]
    if isinstance(node, exp.Paren):
        return _evaluate(node.this, columns, compiled, cells, size)
    if isinstance(node, exp.Column):
        for name in (node.name, node.name.lower()):
            for key, values in columns.items():
                if key == name or key.lower() == name.lower():
                    return values
        raise SQLRefusedError(
            f"{text}: HAVING and ORDER BY read the select list's names, the group keys and "
            "aggregates; name a column of the answer."
        )
    if isinstance(node, exp.Literal):
        value: Any = str(node.this) if node.is_string else float(str(node.this))
        return np.full(size, value, dtype=object if node.is_string else float)
    if isinstance(node, exp.Boolean):
        return np.full(size, bool(node.this))
    if isinstance(node, exp.Neg):
        return -_evaluate(node.this, columns, compiled, cells, size)
    binary: dict[type[exp.Expression], Any] = {
        exp.Add: np.add,
        exp.Sub: np.subtract,
        exp.Mul: np.multiply,
        exp.Div: np.divide,
        exp.EQ: np.equal,
        exp.NEQ: np.not_equal,
        exp.LT: np.less,
        exp.LTE: np.less_equal,
        exp.GT: np.greater,
        exp.GTE: np.greater_equal,
        exp.And: np.logical_and,
        exp.Or: np.logical_or,
    }
    if type(node) in binary:
        left = _evaluate(node.this, columns, compiled, cells, size)
        right = _evaluate(node.expression, columns, compiled, cells, size)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(binary[type(node)](left, right))
    if isinstance(node, exp.Not):
        inner = _evaluate(node.this, columns, compiled, cells, size)
        return np.asarray(np.logical_not(inner.astype(bool)))
    if isinstance(node, exp.In):
        subject = _evaluate(node.this, columns, compiled, cells, size)
        options = [_evaluate(v, columns, compiled, cells, size) for v in node.expressions]
        if not options:
            return np.zeros(size, bool)
        return np.asarray(np.any([subject == o for o in options], axis=0))
    if isinstance(node, exp.Between):
        subject = _evaluate(node.this, columns, compiled, cells, size)
        low = _evaluate(node.args["low"], columns, compiled, cells, size)
        high = _evaluate(node.args["high"], columns, compiled, cells, size)
        return np.asarray((subject >= low) & (subject <= high))
    raise SQLRefusedError(
        f"{text}: HAVING, ORDER BY and arithmetic of aggregates take + - * /, comparisons, "
        "AND/OR/NOT, IN and BETWEEN of released values and keys."
    )


def _key_columns(compiled: Compiled, index: pd.Index) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    for i, name in enumerate(compiled.keys):
        level = index.get_level_values(i) if isinstance(index, pd.MultiIndex) else index
        found[name] = np.asarray(level, dtype=object)
    return found


def _columns(compiled: Compiled, index: pd.Index, cells: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The answer's columns by name (select-list names, then keys), before HAVING and ORDER BY."""
    keys = _key_columns(compiled, index)
    found: dict[str, np.ndarray] = {}
    for output in compiled.outputs:
        if output.key is not None:
            found[output.name] = keys[output.key]
        elif output.cell is not None:
            found[output.name] = cells[output.cell]
    for output in compiled.outputs:
        if output.formula is not None:
            found[output.name] = _evaluate(
                output.formula, {**keys, **found}, compiled, cells, len(index)
            )
    return {**keys, **found}


def _rows(
    compiled: Compiled, columns: dict[str, np.ndarray], cells: list[np.ndarray], size: int
) -> np.ndarray:
    """The rows HAVING keeps, in ORDER BY's order, after OFFSET and LIMIT."""
    rows = np.arange(size)
    if compiled.having is not None:
        keep = _evaluate(compiled.having, columns, compiled, cells, size).astype(bool)
        rows = rows[keep]
    for node, desc in reversed(compiled.order):
        if isinstance(node, exp.Literal) and not node.is_string:
            position = int(str(node.this))
            if not 1 <= position <= len(compiled.outputs):
                raise SQLRefusedError(
                    f"ORDER BY {position}: the select list has {len(compiled.outputs)} items."
                )
            values = columns[compiled.outputs[position - 1].name]
        else:
            values = _evaluate(node, columns, compiled, cells, size)
        chosen = values[rows]
        order = pd.Series(chosen).rank(method="first", ascending=not desc, na_option="bottom")
        rows = rows[np.argsort(order.to_numpy(), kind="stable")]
    stop = None if compiled.limit is None else compiled.offset + compiled.limit
    return rows[compiled.offset : stop]


def check_post_processing(compiled: Compiled) -> None:
    """Run HAVING, ORDER BY and the formulas on an empty answer: refuse what they cannot read."""
    empty = [np.zeros(0) for _ in compiled.cells]
    index = (
        pd.MultiIndex.from_arrays([[]] * len(compiled.keys))
        if len(compiled.keys) > 1
        else pd.Index([])
    )
    columns = _columns(compiled, index, empty)
    _rows(compiled, columns, empty, 0)


def answer(compiled: Compiled, released: Any) -> Any:
    """The released object as the query's answer (see the module docstring)."""
    single = (
        len(compiled.outputs) == 1 and compiled.outputs[0].cell == 0 and len(compiled.cells) == 1
    )
    if single and compiled.group is None and not compiled.post_processed:
        return released
    index, parts = _parts(compiled, released)
    cells = [p.values for p in parts]
    columns = _columns(compiled, index, cells)
    rows = _rows(compiled, columns, cells, len(index))
    shown = [o for o in compiled.outputs if o.key is None]
    names = [o.name for o in shown]
    values = np.column_stack([np.asarray(columns[n], dtype=float)[rows] for n in names])
    kept = index[rows]
    renamed = {o.key: o.name for o in compiled.outputs if o.key is not None}
    if compiled.group is not None:
        kept = kept.set_names([renamed.get(k, k) for k in compiled.keys])
    else:
        kept = pd.RangeIndex(len(rows))
    frame = pd.DataFrame(values, index=kept, columns=pd.Index(names))
    picked = Picked(tuple(parts[o.cell] if o.cell is not None else None for o in shown), rows)
    meta = _meta(released)
    source = released if isinstance(released, Release) else meta
    cost, mechanism = source.cost, source.mechanism
    query = " ".join(compiled.text.split())
    frame.attrs["dpframe"] = FrameRelease(
        frame.index,
        frame.columns,
        cost,
        mechanism,
        query[:300],
        picked,
        frame.to_numpy(dtype=float),
    )
    return frame
