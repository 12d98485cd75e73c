"""Group-by verbs: the groups' keys, grouped aggregates, argmax, and the results' labels.

Keys are declared (``categories=``), the whole numbers within an integer
column's bounds (:func:`~dpframe.api.verbs.requests.public_keys`), derived
with public keys (``pf["age"].cut(bins)``), a public key set (``keys=``), or, for one column
and a δ, discovered privately at release time.  Groups are disjoint, so one
charge of ε covers every group (parallel composition).  Rows whose key is not
declared are in no group; they are revealed only as a noisy count, free
(``result.dp.undeclared``), with a warning when that count is clearly above
its noise (see :func:`warn_undeclared`).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pandas as pd

from dpframe.api.handle import FrameHandle, GroupHandle, Runner, SeriesHandle, handle_of
from dpframe.api.keywords import declare_call
from dpframe.api.verbs.columns import to_expr
from dpframe.api.verbs.frames import assign
from dpframe.api.verbs.keysets import combination_key, relabel
from dpframe.api.verbs.requests import public_keys, require_bounds
from dpframe.errors import SchemaError, caller_stacklevel
from dpframe.mechanisms.answers.results import GroupedRelease
from dpframe.mechanisms.answers.winner import winner
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, GroupKey, Statistic, describe_plan
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import ArgMax, DiscoverKeys, DiscoverThenAggregate, Mode

__all__ = [
    "aggregate_node",
    "argmax_node",
    "argmax_result",
    "group",
    "group_columns",
    "grouped_result",
    "warn_undeclared",
]


def group_columns(frame: FrameHandle, by: object) -> tuple[FrameHandle, list[str], list[str]]:
    """The frame, the column names to group by, and the names the result shows.

    ``by`` holds names, or derived columns (``groupby(s.cut(...))``).  A derived
    column (e.g. ``pf["age"].cut(bins)``, as pandas' ``df.groupby(pd.cut(df.age,
    bins))``) is added under its name, or under ``<name>_key`` when that name is
    taken by another column; the result's index still shows its name, as pandas'.
    """
    items = list(by) if isinstance(by, (list, tuple)) else [by]
    names: list[str] = []
    shown: list[str] = []
    derived: dict[str, Any] = {}
    for item in items:
        found = handle_of(item)
        if isinstance(item, str):
            names.append(item)
            shown.append(item)
        elif isinstance(found, SeriesHandle):
            to_expr(item, frame)  # a column of another frame is refused unless it means the same
            if isinstance(found.expr, Col) and found.expr.name in frame.schema.names:
                names.append(found.expr.name)
                shown.append(found.expr.name)
                continue
            name = found.info.name
            added = name
            while added in frame.schema.names or added in derived or added in names:
                added = f"{added}_key"
            derived[added] = item
            names.append(added)
            shown.append(_pandas_name(found.expr, name))
        else:
            raise SchemaError(
                "groupby() takes a column name or a list of column names (or derived columns, "
                "e.g. pf['age'].cut(bins))."
            )
    if not names:
        raise SchemaError("groupby() takes a column name or a list of column names.")
    return (assign(frame, derived) if derived else frame), names, shown


def _pandas_name(expr: Any, name: str) -> str:
    """The name pandas gives a series computed from one column: that column's.

    pandas keeps a Series' name through arithmetic with constants, ``abs``,
    ``clip``, numpy ufuncs and ``pd.cut``, so ``df.groupby(df.age // 10 * 10)``
    is indexed by ``age``; an expression of several columns keeps its text.
    """
    read = expr.columns()
    return next(iter(read)) if len(read) == 1 else name


def group(
    frame: FrameHandle,
    names: tuple[str, ...],
    column: str | None = None,
    table: Any = None,
    shown: tuple[str, ...] = (),
) -> GroupHandle:
    """The groups of ``frame`` by the columns ``names`` (or by the public key set ``table``).

    ``shown``: the names the result's index shows, when they differ (see
    :func:`group_columns`).
    """
    if not names:
        raise SchemaError("groupby() needs at least one column.")
    keys = []
    index = None
    if table is not None:
        key, index = combination_key(frame, names, table)
        names_left: tuple[str, ...] = ()
        keys.append(key)
    else:
        names_left = names
    for name in names_left:
        info = frame.schema.get(name)
        declared = public_keys(info)
        if declared is None and len(names) > 1:
            raise SchemaError(
                f"groupby({list(names)!r}) needs the public keys of {name!r} when grouping "
                f"by several columns: pass categories={{{name!r}: [...]}} when loading, or "
                f"call {declare_call('with_categories', name, '[...]')}, or give the allowed "
                "combinations as keys= (a public DataFrame; "
                f"pf.discover_keys({list(names)!r}, epsilon=..., delta=...) finds them privately)."
            )
        # Undeclared keys (one column): found privately at release time.
        keys.append(GroupKey(name, Col(name), declared or ()))
    if column is not None:
        frame.schema.get(column)
    shown = shown if shown != names else ()
    return GroupHandle(frame, tuple(keys), names, column, table, index, shown)


def aggregate_node(grouped: GroupHandle, statistic: Statistic, request: PrivacyRequest) -> Any:
    """The node of a grouped ``count``/``sum``/``mean``/``var``/``std`` of the selected column.

    Without a selected column only ``count`` is a single node (the caller
    turns ``sum``, ``mean``... into an ``agg`` over the bounded columns).
    Undeclared keys of one column are discovered privately in the same
    release (needs a δ).
    """
    frame = grouped.frame
    if grouped.column is None:
        if statistic != "count":
            raise SchemaError(f"Select a column first: grouped['column'].{statistic}(...).")
        expr, bounds = None, None
        what = "count()"
    else:
        info = frame.schema.get(grouped.column)
        expr = Col(grouped.column)
        bounds = None if statistic == "count" else require_bounds(info, statistic)
        what = f"{statistic}({grouped.column})"
    if not grouped.keys[0].categories:
        name = grouped.keys[0].name
        _check_discovery(grouped, name)
        if statistic == "count" and expr is None:
            return DiscoverKeys(plan=frame.plan, privacy=request, column=name)
        return DiscoverThenAggregate(
            plan=frame.plan,
            privacy=request,
            column=name,
            statistic=statistic,
            value=expr,
            bounds=bounds,
        )
    by = ", ".join(k.name for k in grouped.keys)
    label = f"{what} by {by}{describe_plan(frame.plan)}"
    return Aggregate(
        frame.plan, statistic, expr, bounds, grouped.keys, label, request, undeclared=True
    )


def _check_discovery(grouped: GroupHandle, name: str) -> None:
    """Refuse, before anything is charged, key discovery that a pure-DP session cannot pay for.

    Finding undeclared keys privately spends a δ; in a session without one
    the refusal says how to declare the keys of this group-by (and names no
    other kind of release).
    """
    if grouped.frame.runner.total.delta > 0:
        return
    info = grouped.frame.schema.get(name)
    if not name.isidentifier():  # a derived key: an expression of other columns
        way = (
            "group by public bins instead, e.g. pf['col'].cut(range(low, high + step, step), "
            "right=False) for multiples of step (as pd.cut: its keys are the bins)"
        )
    elif info.kind == "numeric" and info.bounds is not None:
        way = (
            f"bin it into public bins, pf[{name!r}].cut(bins) (e.g. "
            f"range(low, high + step, step)), or declare its keys: "
            f"{declare_call('with_categories', name, '[...]')}; a whole-number column declared "
            f"integer (dtypes={{{name!r}: 'integer'}}) gets the whole numbers within its bounds "
            "as keys"
        )
    else:
        way = (
            f"declare its keys: categories={{{name!r}: [...]}} when loading, or "
            f"{declare_call('with_categories', name, '[...]')}"
        )
    raise SchemaError(
        f"groupby({name!r}) needs the public keys of {name!r}, which has none declared: {way}. "
        "Without declared keys they can only be found privately, which spends a delta, and "
        "this session is pure DP (delta=0): a session with delta > 0 can do that "
        "(groupby(...).mean(epsilon=..., delta=...)). Nothing was charged."
    )


def grouped_result(grouped: GroupHandle, result: Any) -> Any:
    """A grouped release as the analyst sees it: warned about undeclared keys, relabelled."""
    warn_undeclared(result)
    return relabelled(grouped, result)


def relabelled(grouped: GroupHandle, result: Any) -> Any:
    """A grouped release as pandas indexes it (post-processing).

    Over a ``keys=`` set, indexed by its combinations; a derived key added as
    ``age_key`` is named ``age`` (:attr:`GroupHandle.shown`).
    """
    if grouped.index is not None:
        return relabel(result, grouped.index, grouped.keys[0].categories)
    if not grouped.shown or not isinstance(result, (pd.Series, pd.DataFrame)):
        return result
    index = result.index
    names = dict(zip(grouped.names, grouped.shown, strict=True))
    renamed = index.set_names([names.get(n, n) if isinstance(n, str) else n for n in index.names])
    shown = result.copy()
    shown.index = renamed
    shown.attrs = dict(result.attrs)
    meta = result.attrs.get("dpframe")
    if meta is not None and hasattr(meta, "index") and meta.index is not None:
        shown.attrs["dpframe"] = dataclasses.replace(
            meta, index=meta.index.set_names(renamed.names)
        )
    return shown


def argmax_node(
    grouped: GroupHandle, agg: str, column: str | None, request: PrivacyRequest
) -> ArgMax:
    """The key whose count, sum or mean is largest."""
    if not grouped.keys[0].categories:
        raise SchemaError(
            f"argmax needs declared keys for {grouped.keys[0].name!r}; find them first with "
            f"pf.discover_keys({grouped.keys[0].name!r}, ...)."
        )
    if agg not in ("count", "sum", "mean"):
        raise SchemaError("argmax(agg=...) must be 'count', 'sum' or 'mean'.")
    if agg != "count" and column is None:
        raise SchemaError(f"argmax('{agg}') needs a column: argmax('{agg}', column='...').")
    frame = grouped.frame
    bounds = None
    if column is not None:
        info = frame.schema.get(column)
        bounds = None if agg == "count" else require_bounds(info, f"argmax('{agg}')")
    return ArgMax(
        plan=frame.plan,
        privacy=request,
        keys=grouped.keys,
        agg=agg,  # type: ignore[arg-type]  # checked above
        expr=None if column is None else Col(column),
        column=column,
        bounds=bounds,
    )


def argmax_result(grouped: GroupHandle, found: Any, statement: str) -> Any:
    """The released key (a combination of a ``keys=`` set where one was given), with ``statement``.

    See :mod:`dpframe.mechanisms.answers.winner`.
    """
    if grouped.index is not None:
        found = grouped.index[list(grouped.keys[0].categories).index(found)]
    return winner(found, statement)


def chosen_statement(runner: Runner, node: ArgMax | Mode) -> str:
    """How sure a selection's key is, in words: ``explain``'s headline (public; no data read)."""
    return str(getattr(runner.explain(node), "headline", ""))


def warn_undeclared(result: Any) -> None:
    """Warn when a group-by's noisy count of rows with undeclared keys is clearly above noise.

    The message names the key columns and a rounded noisy count, never a value
    (see :class:`~dpframe.mechanisms.answers.results.UndeclaredRows`).  It is raised in
    the analyst's process (also in curator mode: the count crosses the wire).
    """
    meta = result.attrs.get("dpframe") if isinstance(result, pd.Series) else None
    if not isinstance(meta, GroupedRelease) or meta.undeclared is None:
        return
    if meta.undeclared.clearly_present:
        warnings.warn(meta.undeclared.message(), UserWarning, stacklevel=caller_stacklevel())
