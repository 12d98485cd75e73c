"""Handles: what a private frame, column or group-by *is*, as plain frozen data.

The facade's classes (:class:`~dpframe.PrivateFrame`,
:class:`~dpframe.PrivateSeries`, :class:`~dpframe.PrivateGroupBy`) are thin
shells over these handles, and every verb (:mod:`dpframe.api.verbs`) is a
function of a handle: to a release node, to a new handle (free verbs), or,
for the few verbs that post-process a release, to the released result.

* :class:`FrameHandle`: the plan (source and row-level steps), the public
  schema, and the session that runs releases (a :class:`Runner`);
* :class:`SeriesHandle`: a frame handle, a column expression and its public
  facts (:class:`~dpframe.plan.columns.ColumnInfo`);
* :class:`GroupHandle`: a frame handle and its group keys.

A handle never holds a row: the plan names its data only by the source's
key, and the runner (a local or remote session) is the one place that can
release anything.  This module imports nothing of dpframe but :mod:`dpframe.plan`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from dpframe.plan.columns import ColumnInfo
from dpframe.plan.estimate import ResourceLimits
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import GroupKey, Plan
from dpframe.plan.privacy import Budget
from dpframe.plan.schema import Schema

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FrameHandle", "GroupHandle", "Runner", "SeriesHandle", "handle_of"]


@runtime_checkable
class Runner(Protocol):
    """What a private frame needs of its session: release, explain, and the budget's state.

    :class:`dpframe.Session` (embedded) and :class:`dpframe.RemoteSession`
    (curator mode) both implement it.
    """

    def run(self, node: Any) -> Any:
        """Validate, charge and release ``node``; the released result."""

    def explain(self, query: Any, detail: bool = False) -> Any:
        """What a release would cost and how accurate it would be; nothing spent.

        ``detail=True`` adds every noisy measure behind the answer.
        """

    @property
    def limits(self) -> ResourceLimits:
        """The largest request this session evaluates (checked before the charge)."""

    @property
    def name(self) -> str:
        """The session's name in the ledger."""

    @property
    def total(self) -> Budget:
        """The session's total budget."""

    @property
    def spent(self) -> Budget:
        """The guarantee of everything released so far."""

    @property
    def remaining(self) -> Budget:
        """The largest request a next release may make."""

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per release."""


@dataclass(frozen=True, eq=False)
class FrameHandle:
    """A private frame: its plan, its public schema and the session that releases from it.

    Compared by identity (as the frames it stands for): two handles are the
    same frame only if they are the same object.
    """

    runner: Runner
    plan: Plan
    schema: Schema

    def derive(self, plan: Plan | None = None, schema: Schema | None = None) -> FrameHandle:
        """A new frame over the same session with another plan and/or schema."""
        return FrameHandle(
            self.runner,
            self.plan if plan is None else plan,
            self.schema if schema is None else schema,
        )

    def column(self, name: str) -> SeriesHandle:
        """The handle of column ``name`` (refused, naming the columns, when unknown)."""
        from dpframe.plan.expressions import Col

        return SeriesHandle(self, Col(name), self.schema.get(name))


@dataclass(frozen=True, eq=False)
class SeriesHandle:
    """A column expression over a frame, with its public facts."""

    frame: FrameHandle
    expr: Expr
    info: ColumnInfo

    @property
    def plan(self) -> Plan:
        """The frame's plan."""
        return self.frame.plan

    @property
    def schema(self) -> Schema:
        """The frame's schema."""
        return self.frame.schema

    @property
    def runner(self) -> Runner:
        """The frame's session."""
        return self.frame.runner

    def with_expr(self, expr: Expr, info: ColumnInfo) -> SeriesHandle:
        """Another expression over the same frame."""
        return replace(self, expr=expr, info=info)


@dataclass(frozen=True, eq=False)
class GroupHandle:
    """A frame split by group keys, with an optional selected column.

    Attributes:
        frame: the grouped frame (derived key columns already assigned).
        keys: one :class:`~dpframe.plan.nodes.GroupKey` per key column, or
            one combined key for a public key set (``keys=``).
        names: the key columns' names, as the analyst gave them.
        column: the selected column (``grouped["wage"]``), or None.
        table: the public key set given as ``keys=`` (a pandas DataFrame), or None.
        index: the key set's combinations (the result's index), or None.
        shown: the names the result's index shows, when they differ from
            ``names``: a derived key added as ``age_key`` (``age`` being taken)
            shows as ``age``, as pandas names ``df.groupby(df.age // 10)``'s index.
    """

    frame: FrameHandle
    keys: tuple[GroupKey, ...]
    names: tuple[str, ...]
    column: str | None = None
    table: Any = None
    index: Any = None
    shown: tuple[str, ...] = ()

    def selecting(self, column: str | None) -> GroupHandle:
        """The same groups with ``column`` selected (None: the whole frame)."""
        if column is not None:
            self.frame.schema.get(column)  # an unknown column is refused here
        return replace(self, column=column)


def handle_of(value: object) -> FrameHandle | SeriesHandle | GroupHandle | None:
    """The handle of a private frame, column or group-by (``__dpframe__``), else None."""
    method = getattr(type(value), "__dpframe__", None)
    if method is None:
        return None
    found = method(value)
    if isinstance(found, FrameHandle | SeriesHandle | GroupHandle):
        return found
    return None
