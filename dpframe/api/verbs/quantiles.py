"""Quantile verbs: levels, public candidates and the quantile nodes (single and grouped).

The candidates are public: the 4,097-point grid over the declared bounds
(``()``), the integers within the bounds for an integer column, or the
analyst's own list; nothing here reads data or charges anything.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterable, Mapping, Sized
from fractions import Fraction

import numpy as np
import pandas as pd

from dpframe.api.handle import FrameHandle, SeriesHandle
from dpframe.api.keywords import declare_call
from dpframe.api.verbs.requests import is_integer_kind, require_bounds
from dpframe.errors import SchemaError
from dpframe.mechanisms.quantiles.quantiles import check_quantile, integer_candidates
from dpframe.plan.columns import ColumnInfo
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import GroupKey
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import MAX_CANDIDATES, GroupedQuantile, Quantile
from dpframe.plan.releases.selection import check_candidates

__all__ = ["grouped_quantile_node", "levels_of", "quantile_candidates", "quantile_node"]


def levels_of(qs: object) -> tuple[tuple[Fraction, ...], bool]:
    """The quantile levels asked, exactly, and whether ``q`` was a scalar (as pandas reads it)."""
    scalar = not isinstance(qs, (list, tuple, np.ndarray, pd.Index, pd.Series))
    levels_raw = [qs] if scalar else list(qs)  # type: ignore[call-overload]
    if not levels_raw:
        raise SchemaError("quantile() needs at least one level q in [0, 1].")
    return tuple(check_quantile(q) for q in levels_raw), scalar


def quantile_candidates(
    info: ColumnInfo, bounds: tuple[float, float], given: object
) -> tuple[float, ...]:
    """The public candidates of a quantile: ``given``, or integers for an integer column.

    ``()`` is the default 4,097-point grid over the bounds.  ``given`` must be
    sorted, finite and within the bounds (checked here and by the node, before
    anything is charged), at most :data:`~dpframe.plan.releases.MAX_CANDIDATES`.
    """
    if given is None:
        return integer_candidates(bounds) if is_integer_kind(info) else ()
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        raise SchemaError(
            "quantile(candidates=...) takes a sorted list of numbers within the column's bounds."
        )
    size = len(given) if isinstance(given, Sized) else None
    if size is not None and size > MAX_CANDIDATES:
        raise SchemaError(
            f"quantile(): at most {MAX_CANDIDATES:,} candidates, got {size:,}; choose fewer."
        )
    values = list(itertools.islice(given, MAX_CANDIDATES + 1))
    if not values:
        raise SchemaError("quantile(candidates=...) is empty; give at least one value.")
    if not all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in values):
        raise SchemaError("quantile(): candidates must be numbers (no text, booleans or None).")
    chosen = tuple(float(v) for v in values)
    check_candidates(chosen, bounds, "quantile()")
    return chosen


def quantile_node(
    series: SeriesHandle, qs: object, request: PrivacyRequest, candidates: object = None
) -> Quantile:
    """One or several quantiles of a bounded column."""
    levels, scalar = levels_of(qs)
    bounds = require_bounds(series.info, "quantile")
    return Quantile(
        plan=series.plan,
        privacy=request,
        expr=series.expr,
        bounds=bounds,
        levels=levels,
        scalar=scalar,
        candidates=quantile_candidates(series.info, bounds, candidates),
    )


def grouped_quantile_node(
    frame: FrameHandle,
    keys: tuple[GroupKey, ...],
    column: str | None,
    qs: object,
    request: PrivacyRequest,
    candidates: object = None,
) -> GroupedQuantile:
    """One or several quantiles of a bounded column per group of declared keys."""
    if column is None:
        raise SchemaError("Select a column first: grouped['column'].quantile(...) or .median(...).")
    undeclared = [k.name for k in keys if not k.categories]
    if undeclared:
        name = undeclared[0]
        raise SchemaError(
            f"A quantile per group needs the declared keys of {name!r}: pass "
            f"categories={{{name!r}: [...]}} when loading or "
            f"{declare_call('with_categories', name, '[...]')}. "
            f"To find them privately, run pf.discover_keys({name!r}, epsilon=..., delta=...) "
            "first and declare what it found."
        )
    levels, scalar = levels_of(qs)
    info = frame.schema.get(column)
    bounds = require_bounds(info, "quantile")
    return GroupedQuantile(
        plan=frame.plan,
        privacy=request,
        expr=Col(column),
        bounds=bounds,
        levels=levels,
        by=keys,
        scalar=scalar,
        candidates=quantile_candidates(info, bounds, candidates),
    )
