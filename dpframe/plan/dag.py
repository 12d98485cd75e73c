"""The computations a plan needs, each once: expressions resolved against the plan's steps.

A column ``name`` read at some position of a plan means the last
:class:`~dpframe.plan.nodes.Assign` of ``name`` before that position (its
expression read as of *its* position), or the source column when there is
none.  Inlining these definitions as trees repeats every derived column at
each use, which is exponential for chains like ``a1 = a0 + a0, a2 = a1 + a1``.

:class:`DagBuilder` instead resolves each column reference to the
computation that defines it and interns every computation by structure
(``(tag, params, args)``, as in :mod:`dpframe.plan.keys`, with columns read
from the source tagged ``"source"``): equal computations, however reached,
are one node of a flat DAG.  The walk is iterative and visits each pair
(expression object, bindings in force) once: bindings change only at an
``Assign``, so a node is revisited only when it is read again after a
redefinition.  The result is used by the backends (each node is evaluated
once per chunk of rows), by :func:`dpframe.plan.inline.resolved_key` and by
the resource estimate (:mod:`dpframe.plan.estimate`).  Nothing here reads data.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable
from typing import Any, TypeAlias

from dpframe.plan.expressions import Col, Expr
from dpframe.plan.keys import Entry, KeyTable, scalar_key
from dpframe.plan.nodes import Assign, Filter, Plan, Source, lineage

__all__ = ["DagBuilder", "Instruction", "TooLargeError"]

#: One computation: (tag, the node's own fields as given, positions of its arguments).
#: ``("source", (name,), ())`` reads a column of the source data.
Instruction: TypeAlias = tuple[str, tuple[Any, ...], tuple[int, ...]]


class TooLargeError(Exception):
    """Raised by :class:`DagBuilder` when ``max_visits`` is exceeded (internal)."""


class DagBuilder:
    """Resolve expressions against a plan into one shared, canonical DAG.

    Args:
        plan: the plan whose steps define the derived columns.
        max_visits: stop (raise :class:`TooLargeError`) after visiting more
            than this many (expression object, bindings) pairs; None: no limit.

    Example:
        >>> builder = DagBuilder(plan)  # doctest: +SKIP
        >>> masks = builder.filters()  # doctest: +SKIP
        >>> value = builder.add(expr)  # as read after the plan's last step  # doctest: +SKIP
    """

    def __init__(self, plan: Plan, *, max_visits: int | None = None) -> None:
        self.source: Source
        self.steps: tuple[Filter | Assign, ...]
        self.source, self.steps = lineage(plan)
        self._max_visits = max_visits
        self._assigned: dict[str, list[int]] = {}  # name -> positions of its assigns, ascending
        self._versions: list[int] = []  # position -> number of assigns before it
        version = 0
        for position, step in enumerate(self.steps):
            self._versions.append(version)
            if isinstance(step, Assign):
                self._assigned.setdefault(step.name, []).append(position)
                version += 1
        self._versions.append(version)
        self._table = KeyTable()
        self._instructions: list[Instruction] = []
        self._memo: dict[tuple[int, int], int] = {}  # (id(node), version) -> node position
        self._roots: list[Expr] = []  # keeps the walked objects alive (their ids are keys)

    @property
    def entries(self) -> tuple[Entry, ...]:
        """The canonical keys of the DAG's nodes, in order (arguments come first)."""
        return tuple(self._table.entries)

    @property
    def instructions(self) -> tuple[Instruction, ...]:
        """The DAG's nodes with their fields as given (for evaluation), in order."""
        return tuple(self._instructions)

    @property
    def visits(self) -> int:
        """Distinct (expression object, bindings) pairs walked so far."""
        return len(self._memo)

    @property
    def derived(self) -> frozenset[str]:
        """Names of the derived columns as of the plan's end."""
        return frozenset(self._assigned)

    def filters(self) -> tuple[int, ...]:
        """The DAG node of each filter's predicate (as of its position), in plan order."""
        return tuple(
            self.add(step.predicate, position)
            for position, step in enumerate(self.steps)
            if isinstance(step, Filter)
        )

    def assigns(self) -> tuple[int, ...]:
        """The DAG node of each derived column's definition (as of its position)."""
        return tuple(
            self.add(step.expr, position)
            for position, step in enumerate(self.steps)
            if isinstance(step, Assign)
        )

    def add(self, expr: Expr, position: int | None = None) -> int:
        """The DAG node of ``expr`` read before step ``position`` (None: after the last step)."""
        start = len(self.steps) if position is None else position
        self._roots.append(expr)
        memo, versions, steps = self._memo, self._versions, self.steps
        stack: list[tuple[Expr, int]] = [(expr, start)]
        while stack:
            node, at = stack[-1]
            slot = (id(node), versions[at])
            if slot in memo:
                stack.pop()
                continue
            if isinstance(node, Col):
                defined = self._definition(node.name, at)
                if defined is None:
                    self._set(slot, self._intern("source", (node.name,), ()))
                    stack.pop()
                    continue
                target = steps[defined]
                assert isinstance(target, Assign)
                found = memo.get((id(target.expr), versions[defined]))
                if found is None:
                    stack.append((target.expr, defined))
                    continue
                self._set(slot, found)
                stack.pop()
                continue
            children = node.children()
            version = versions[at]
            pending = [(c, at) for c in children if (id(c), version) not in memo]
            if pending:
                stack.extend(reversed(pending))
                continue
            stack.pop()
            args = tuple(memo[(id(c), version)] for c in children)
            self._set(slot, self._intern(node.tag, node.params(), args))
        return memo[(id(expr), versions[start])]

    def _definition(self, name: str, position: int) -> int | None:
        """The position of the last assign of ``name`` before ``position``, if any."""
        positions = self._assigned.get(name)
        if not positions:
            return None
        index = bisect.bisect_left(positions, position)
        return positions[index - 1] if index else None

    def _set(self, slot: tuple[int, int], node: int) -> None:
        self._memo[slot] = node
        if self._max_visits is not None and len(self._memo) > self._max_visits:
            raise TooLargeError

    def _intern(self, tag: str, params: tuple[Any, ...], args: tuple[int, ...]) -> int:
        keys: tuple[Hashable, ...] = tuple(scalar_key(p) for p in params)
        position = self._table.add((tag, keys, args))
        if position == len(self._instructions):
            self._instructions.append((tag, params, args))
        return position
