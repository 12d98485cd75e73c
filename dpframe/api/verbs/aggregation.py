"""pandas' ``agg`` on private frames, columns and group-bys: specs to one :class:`Agg` node.

The spec is read as pandas reads it — a name, a list of names, or a dict
``{column: name | [names]}`` — and every name is checked before anything is
charged.  The result has pandas' shape (see :data:`dpframe.plan.releases.aggregations.Layout`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dpframe.api.handle import FrameHandle, GroupHandle, SeriesHandle
from dpframe.api.teaching import COUNTERPARTS
from dpframe.api.verbs.quantiles import quantile_candidates
from dpframe.errors import SchemaError
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.nodes import GroupKey
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases.aggregations import AGGREGATES, Agg, AggCell, Layout

__all__ = [
    "AGG_DOC",
    "agg_node",
    "grouped_agg_node",
    "named_aggregate",
    "named_result",
    "named_spec",
    "names_of",
    "series_agg_node",
]


def _name(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise SchemaError(
            f"agg(): {where} must name aggregates as strings ({', '.join(AGGREGATES)}); "
            f"got {type(value).__name__}. Python functions cannot run on private rows."
        )
    if value not in AGGREGATES:
        hint = f" The private counterpart: {COUNTERPARTS[value]}." if value in COUNTERPARTS else ""
        raise SchemaError(
            f"agg(): unknown aggregate {value!r}; use one of {', '.join(AGGREGATES)}.{hint}"
        )
    return value


def names_of(func: object, where: str) -> tuple[list[str], bool]:
    """The aggregate names of a spec item (a name or a list), and whether it was a list."""
    if callable(func):
        _name(func, where)  # refused: names only
    if isinstance(func, str):
        return [_name(func, where)], False
    if isinstance(func, Sequence) and not isinstance(func, (bytes, bytearray)):
        names = [_name(f, where) for f in func]
        if not names:
            raise SchemaError(f"agg(): {where} is an empty list of aggregates.")
        if len(set(names)) != len(names):
            raise SchemaError(f"agg(): {where} names an aggregate twice.")
        return names, True
    raise SchemaError(
        f"agg(): {where} must be an aggregate name, a list of names or a dict "
        "{column: name or [names]}."
    )


def _cell(frame: FrameHandle, column: str, expr: Expr, statistic: str) -> AggCell:
    info = frame.schema.get(column) if isinstance(expr, Col) else None
    bounds = None if info is None else info.bounds
    if statistic != "count" and bounds is None:
        raise SchemaError(
            f"agg(): {statistic} of {column!r} needs public bounds: declare "
            f"bounds={{{column!r}: (low, high)}} when loading, or use pf.with_bounds(...)."
        )
    return (column, expr, statistic, bounds)  # type: ignore[return-value]


def agg_node(
    frame: FrameHandle,
    func: object,
    request: PrivacyRequest,
    *,
    column: tuple[str, Expr] | None = None,
    keys: tuple[GroupKey, ...] = (),
    weights: object = None,
) -> Agg:
    """The :class:`Agg` node of ``agg(func)`` on ``frame`` (a column of it, or grouped by keys)."""
    cells: list[AggCell] = []
    layout: Layout
    if column is not None:
        names, _ = names_of(func, "the aggregates")
        cells = [_cell(frame, column[0], column[1], n) for n in names]
        layout = "grouped_column" if keys else "column"
    else:
        if isinstance(func, Mapping):
            if not func:
                raise SchemaError("agg(): the dict of {column: aggregates} is empty.")
            listed = False
            for name, spec in func.items():
                if not isinstance(name, str):
                    raise SchemaError("agg(): the dict's keys must be column names.")
                frame.schema.get(name)  # an unknown column is refused here
                names, is_list = names_of(spec, f"the aggregates of {name!r}")
                listed = listed or is_list
                cells += [_cell(frame, name, Col(name), n) for n in names]
            layout = ("grouped_table" if listed else "grouped_flat") if keys else "table"
        else:
            names, is_list = names_of(func, "the aggregates")
            columns = [c.name for c in frame.schema.columns if c.kind == "numeric" and c.bounds]
            if not columns:
                raise SchemaError(
                    "agg() without a dict applies to the bounded numeric columns, and "
                    "there are none; name the columns: agg({column: aggregates})."
                )
            cells = [_cell(frame, c, Col(c), n) for c in columns for n in names]
            if keys:
                layout = "grouped_table" if is_list else "grouped_flat"
            else:
                layout = "table" if is_list else "row"
    if keys and any(not k.categories for k in keys):
        raise SchemaError(
            "agg() per group needs declared keys: pass categories={...} when loading, "
            "or find them first with pf.discover_keys(column, epsilon=..., delta=...)."
        )
    chosen = tuple(_median_candidates(frame, cell) for cell in cells)
    return Agg(
        plan=frame.plan,
        privacy=request,
        asked=tuple(cells),
        by=keys,
        weights=_weights(weights, len(cells)),
        layout=layout,
        candidates=chosen if any(chosen) else (),
    )


def _median_candidates(frame: FrameHandle, cell: AggCell) -> tuple[float, ...]:
    """A median's public candidates: the integers within the bounds for an integer column."""
    _, expr, statistic, bounds = cell
    if statistic != "median" or bounds is None or not isinstance(expr, Col):
        return ()
    return quantile_candidates(frame.schema.get(expr.name), bounds, None)


def _weights(weights: object, count: int) -> tuple[int, ...]:
    if weights is None:
        return ()
    if isinstance(weights, Sequence) and not isinstance(weights, (str, bytes)):
        items: list[Any] = list(weights)
        if all(isinstance(w, int) and not isinstance(w, bool) for w in items):
            return tuple(items)
    raise SchemaError(
        f"agg(): weights= needs {count} positive integers, one per (column, aggregate) "
        "in the order asked."
    )


#: The docstring of every ``agg`` method (frame, column, group-by).
AGG_DOC = """Several statistics at once, as pandas' ``agg``, for one budget.

        Example:
            >>> pf["wage"].agg(["mean", "std"], epsilon=0.5)  # doctest: +SKIP
            >>> pf.agg({{"wage": ["mean", "std"], "education": "sum"}}, epsilon=1)  # doctest: +SKIP
            >>> pf.groupby("region")["wage"].agg(["count", "mean"], epsilon=0.4)  # doctest: +SKIP

        The result has pandas' shape; ``dp.ci(result)`` gives every cell's
        interval (a median's: NaN).  On a group-by, named aggregation
        (``agg(n=("wage", "size"), m=("wage", "mean"))``) is one charge too.

        Args:
            func: an aggregate name ({names}), a list of names, or (on a frame
                or group-by) a dict ``{{column: name or [names]}}``.
            epsilon: the cost of the whole call (or ``rho=`` in zCDP sessions).
            delta: must be 0 except in approximate-DP sessions.
            rho: the cost as a zCDP ρ.
            privacy: the cost as one ``dp.Privacy(...)`` (instead of the three above).
            weights: positive integers, one per (column, aggregate) in the order
                asked, splitting the request; equal shares by default.

        Privacy: one charge of the request, split over the (column, aggregate)
        cells by the weights; each cell is the named release at its share
        (sequential composition; per group, disjoint cells compose in
        parallel). The split is in ``explain`` and in the ledger's parts
        (``dpframe/mechanisms/moments/agg_family.py``).

        Accuracy: each cell as its own release at its share: with k equal
        cells each gets ε/k, so k times the noise scale of the aggregate asked
        alone (ρ/k: √k times the Gaussian σ).
        """.format(names=", ".join(AGGREGATES))


def named_aggregate(func: str, weights: object) -> str:
    """``agg("mean")``: the name of the method whose result pandas gives for a single name."""
    names_of(func, "the aggregate")
    if weights is not None:
        raise SchemaError("agg(): weights= needs a list of aggregates.")
    return func


def series_agg_node(
    series: SeriesHandle, func: object, request: PrivacyRequest, weights: object = None
) -> Agg:
    """The :class:`Agg` node of ``column.agg([...])``."""
    column = (series.info.name, series.expr)
    return agg_node(series.frame, func, request, column=column, weights=weights)


def grouped_agg_node(
    grouped: GroupHandle, func: object, request: PrivacyRequest, weights: object = None
) -> Agg:
    """The :class:`Agg` node of ``grouped.agg(...)`` (of the selected column, or of the frame)."""
    if grouped.column is not None:
        column = (grouped.column, Col(grouped.column))
        return agg_node(
            grouped.frame, func, request, column=column, keys=grouped.keys, weights=weights
        )
    return agg_node(grouped.frame, func, request, keys=grouped.keys, weights=weights)


@dataclass(frozen=True)
class NamedSpec:
    """pandas' named aggregation as a dict spec, and each output column's (column, aggregate)."""

    spec: dict[str, list[str]]
    outputs: dict[str, tuple[str, str]]


def named_spec(grouped: GroupHandle, named: dict[str, Any]) -> NamedSpec:
    """``agg(n=("col", "size"), m=("col", "mean"))`` as ``{col: [aggregates]}`` (one charge).

    ``("col", "size")`` counts the group's rows: the count of a key column,
    which is never missing inside a group.  On a selected column
    (``grouped["col"].agg(m="mean")``) the values are aggregate names.
    """
    spec: dict[str, list[str]] = {}
    outputs: dict[str, tuple[str, str]] = {}
    for out, item in named.items():
        if isinstance(item, str) and grouped.column is not None:
            column, statistic = grouped.column, item
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            column, statistic = item
        else:
            raise SchemaError(
                f"agg({out}=...): named aggregation takes (column, aggregate) pairs, as "
                f"pandas: agg({out}=('col', 'mean'), epsilon=...)."
            )
        if statistic == "size":
            column, statistic = grouped.names[0], "count"  # a key is present in every row
        _name(statistic, f"the aggregate of {out!r}")
        listed = spec.setdefault(column, [])
        if statistic not in listed:
            listed.append(statistic)
        outputs[out] = (column, statistic)
    return NamedSpec(spec, outputs)


def named_result(table: pd.DataFrame, named: NamedSpec) -> pd.DataFrame:
    """The released table's columns under the names asked, in their order (post-processing)."""
    picked: pd.DataFrame = table.loc[:, list(named.outputs.values())]
    picked.columns = pd.Index(list(named.outputs))
    return picked
