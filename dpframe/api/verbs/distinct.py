"""Distinct counts: ``pf["id"].nunique()``, ``pf.nunique()`` and ``grouped[col].nunique()``.

A key "occurs" when its noisy count clears the count noise's one-sided 95%
quantile (:func:`dpframe.mechanisms.moments.describe_family.unique_threshold`), as
``pf["col"].nunique()`` and ``describe(include="all")``'s unique.  The keys
are public (declared categories, or the whole numbers in an integer
column's bounds), so the counts are one histogram and the distinct count is
post-processing.  A column without public keys (an ID column) gets a
distinct-count release of its own (:class:`~dpframe.plan.releases.DistinctCount`:
one noisy count, sensitivity the privacy unit's row limit, 1 for the unit's
own ID column; per group, that limit in total).  ``pf.nunique()`` still
needs public keys for every column (one histogram each).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dpframe.api.handle import FrameHandle, GroupHandle, SeriesHandle
from dpframe.api.keywords import declare_call
from dpframe.api.verbs.frames import assign
from dpframe.api.verbs.grouping import aggregate_node, group, warn_undeclared
from dpframe.api.verbs.requests import public_keys
from dpframe.errors import SchemaError
from dpframe.mechanisms.answers.results import Release
from dpframe.mechanisms.moments.describe_family import unique_threshold
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import GroupKey
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import Describe, DistinctCount, FrameDistinct

__all__ = [
    "distinct_count",
    "distinct_count_node",
    "frame_nunique",
    "grouped_nunique",
    "grouped_nunique_node",
    "keys_found",
    "without_keys",
]


def without_keys(column: str, what: str) -> SchemaError:
    """The refusal for a distinct count of a column with no public keys."""
    return SchemaError(
        f"{what} counts the distinct values of {column!r}, which has no public keys: its "
        f"values are private, so only declared keys can be counted. Declare them "
        f"(categories={{{column!r}: [...]}} when loading, or "
        f"{declare_call('with_categories', column, '[...]')}; an integer column's bounds "
        "declare its whole numbers), or, with a delta, "
        f"find the common ones first: pf.discover_keys({column!r}, epsilon=..., delta=...); "
        f"or count its distinct values alone: pf[{column!r}].nunique(epsilon=...). "
        "Nothing was charged."
    )


def distinct_count(series: SeriesHandle, request: PrivacyRequest) -> Release:
    """The noisy number of distinct non-missing values of a column without public keys.

    Privacy and Accuracy: :mod:`dpframe.mechanisms.moments.distinct_family`
    (sensitivity the privacy unit's row limit; 1 for its own ID column).
    """
    released: Release = series.runner.run(distinct_count_node(series, request))
    return released


def distinct_count_node(series: SeriesHandle, request: PrivacyRequest) -> DistinctCount:
    """The :class:`DistinctCount` node of a column (a derived one is assigned first)."""
    frame, name = series.frame, series.info.name
    if not (isinstance(series.expr, Col) and series.expr.name == name):
        name = name if name not in frame.schema.names else f"{name}_values"
        frame = assign(frame, {name: series.expr})
    return DistinctCount(plan=frame.plan, privacy=request, column=name)


def frame_nunique(frame: FrameHandle, request: PrivacyRequest) -> pd.Series:
    """``pf.nunique()``: the distinct values per column (one charge, split evenly).

    A column with public keys: the declared keys that occur, from one noisy
    histogram (``describe(include="all")``'s unique); any other column: a
    noisy distinct count (:func:`distinct_count`), rounded to a whole number.
    """
    keys = []
    for info in frame.schema.columns:
        declared = public_keys(info)
        if declared is not None:
            keys.append(GroupKey(info.name, Col(info.name), declared))
    if len(keys) < len(frame.schema.columns):  # keyless columns: a distinct count each
        columns = tuple(frame.schema.names)
        counts: pd.Series = frame.runner.run(
            FrameDistinct(plan=frame.plan, privacy=request, columns=columns, keyed=tuple(keys))
        )
        return counts
    node = Describe(plan=frame.plan, privacy=request, columns=(), categorical=tuple(keys))
    table = frame.runner.run(node)
    unique = table.loc["unique"]
    return pd.Series([int(v) for v in unique], index=pd.Index(frame.schema.names), dtype="int64")


def grouped_nunique_node(grouped: GroupHandle, request: PrivacyRequest) -> tuple[Any, bool]:
    """The node ``grouped[col].nunique()`` releases, and whether its counts are thresholded.

    A column with public keys: one grouped count over the (group key, column
    key) cells (True: :func:`keys_found` thresholds it).  A column without
    them (an ID column): one :class:`DistinctCount` per group (False).
    Refused (before any charge) without a selected column, over a ``keys=``
    table, for a group key itself, or for undeclared group keys.
    """
    column = grouped.column
    if column is None:
        raise SchemaError("Select a column first: pf.groupby(key)[column].nunique(epsilon=...).")
    if grouped.index is not None:
        raise SchemaError(
            "nunique() per group takes declared keys, not a keys= table: "
            f"pf.groupby([...])[{column!r}].nunique(epsilon=...)."
        )
    if column in grouped.names:
        raise SchemaError(f"nunique(): {column!r} is a group key (one value per group).")
    if public_keys(grouped.frame.schema.get(column)) is None:
        for key in grouped.keys:
            if not key.categories:
                raise SchemaError(
                    f"groupby({list(grouped.names)!r})[{column!r}].nunique() needs the public "
                    f"keys of {key.name!r}: declare them (categories= when loading, or "
                    f"pf.with_categories). Nothing was charged."
                )
        node = DistinctCount(
            plan=grouped.frame.plan, privacy=request, column=column, by=grouped.keys
        )
        return node, False
    pairs = group(grouped.frame, (*grouped.names, column))
    return aggregate_node(pairs, "count", request), True


def keys_found(grouped: GroupHandle, counts: pd.Series) -> pd.Series:
    """Per group, how many of the column's keys have a noisy count over the threshold.

    Post-processing of the (group key, column key) counts that
    :func:`grouped_nunique_node` releases.
    """
    warn_undeclared(counts)
    occurs = pd.Series(counts.to_numpy(dtype=float) > unique_threshold(counts), index=counts.index)
    levels = list(range(len(grouped.names)))
    found: pd.Series = occurs.groupby(level=levels, sort=False).sum().astype("int64")
    found.name = grouped.column
    return found


def grouped_nunique(grouped: GroupHandle, request: PrivacyRequest) -> pd.Series:
    """``pf.groupby(key)[col].nunique()``: per group, the declared keys of ``col`` that occur.

    Privacy: one grouped count over the (group key, column key) cells, which
    are disjoint (sensitivity 1 each): the cost of the request once; the
    thresholding is post-processing.  A column without public keys: one
    distinct count per group (:class:`DistinctCount`).
    """
    node, thresholded = grouped_nunique_node(grouped, request)
    released: pd.Series = grouped.frame.runner.run(node)
    return keys_found(grouped, released) if thresholded else released
