"""Plans compiled to flat programs: each derived column evaluated once per chunk of rows.

:meth:`Program.compile` resolves the filters of a plan and the expressions a
release reads into one DAG (:class:`~dpframe.plan.dag.DagBuilder`): a column
reference becomes the node that defines it as of the reading step (a later
``Assign`` of the same name shadows the earlier one only for the steps after
it), and equal computations are one node.  A :class:`Run` evaluates the
program on one chunk of rows: each node once, in order, dropping every value
after its last reader, so derived columns are computed once and reused by
later filters, assigns, measures and group keys, and temporaries stay few.

A program and a :class:`Query` are flat tuples of plain values (no nested
expression objects), so they pickle without recursion to Dask workers
however deep the plan.  Both are built from public inputs only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.backends.evaluate import Rows, apply, mask_values
from dpframe.plan.dag import DagBuilder, Instruction
from dpframe.plan.expressions import Bucket, Expr
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import GroupKey, Plan

__all__ = ["KeySpec", "Program", "Query", "Run", "compile_query"]


@dataclass(frozen=True)
class Program:
    """The DAG of a plan's filters and some expressions read after its last step.

    Attributes:
        instructions: the nodes, arguments before their readers.
        uses: readers of each node: instructions (once per argument slot)
            plus requests (filters and outputs).
        filters: the node of each filter's predicate, in plan order.
        outputs: the node of each requested expression, in the order given.
        columns: the source columns read, in order of first use.
    """

    instructions: tuple[Instruction, ...]
    uses: tuple[int, ...]
    filters: tuple[int, ...]
    outputs: tuple[int, ...]
    columns: tuple[str, ...]

    @classmethod
    def compile(cls, plan: Plan, exprs: Sequence[Expr]) -> Program:
        """Compile ``plan``'s filters, then ``exprs`` (as of the plan's end), in that order."""
        builder = DagBuilder(plan)
        filters = builder.filters()
        outputs = tuple(builder.add(expr) for expr in exprs)
        instructions = builder.instructions
        uses = [0] * len(instructions)
        for _, _, args in instructions:
            for arg in args:
                uses[arg] += 1
        for node in (*filters, *outputs):
            uses[node] += 1
        columns = tuple(params[0] for tag, params, _ in instructions if tag == "source")
        return cls(instructions, tuple(uses), filters, outputs, columns)


class Run:
    """One evaluation of a :class:`Program` on ``rows`` (one chunk).

    Nodes are computed in program order up to the one asked for; a value is
    dropped once every reader counted in :attr:`Program.uses` has read it
    (instructions release their arguments themselves; callers release the
    requests they are done with, see :meth:`release`).
    """

    __slots__ = ("_left", "_next", "_program", "_values", "rows")

    def __init__(self, program: Program, rows: Rows) -> None:
        self._program = program
        self.rows = rows
        self._values: dict[int, Any] = {}
        self._left = list(program.uses)
        self._next = 0

    def value(self, node: int) -> Any:
        """The value of ``node`` on the rows (computing the nodes before it as needed)."""
        instructions = self._program.instructions
        while self._next <= node:
            instruction = instructions[self._next]
            args = instruction[2]
            self._values[self._next] = apply(
                instruction, [self._values[a] for a in args], self.rows
            )
            for arg in args:
                self.release(arg)
            self._next += 1
        return self._values[node]

    def release(self, node: int) -> None:
        """One reader of ``node`` is done with it (the value is dropped after the last)."""
        self._left[node] -= 1
        if self._left[node] <= 0:
            self._values.pop(node, None)

    def mask(self) -> npt.NDArray[np.bool_] | None:
        """The rows every filter keeps (None: no filter); releases the filters' values."""
        mask: npt.NDArray[np.bool_] | None = None
        n = len(self.rows)
        for node in self._program.filters:
            keep = mask_values(self.value(node), n)
            self.release(node)
            mask = keep if mask is None else (mask & keep)
        return mask


@dataclass(frozen=True)
class KeySpec:
    """A group key, compiled: where its values come from and how they map to cells.

    Attributes:
        categories: the declared keys (a row in none of them is in no cell; one
            whose key is present but undeclared may be counted apart).
        node: the program output holding the key's values (a bucket's operand).
        bucket: ``(edges, clamp)`` for a bucket key (bins of the operand), else None.
        source: the source column when the key is one read as is (its codes
            may be cached across releases), else ``""``.
    """

    categories: tuple[Hashable, ...]
    node: int
    bucket: tuple[tuple[float, ...], bool] | None
    source: str


@dataclass(frozen=True)
class Query:
    """What :meth:`PandasBackend.compute` evaluates: a program, measures and group keys.

    ``measures`` are the requested measures without their expressions;
    ``nodes`` holds the program output of each measure's expression (-1 for
    a row count).  With ``undeclared``, one more total follows the measures':
    the number of kept rows whose key is present but not declared (in no
    cell; see :func:`~dpframe.backends.chunks.slot_codes`).
    """

    program: Program
    measures: tuple[Measure, ...]
    nodes: tuple[int, ...]
    keys: tuple[KeySpec, ...]
    undeclared: bool = False

    @property
    def cells(self) -> int:
        """Number of cells (product of the keys' category counts)."""
        size = 1
        for key in self.keys:
            size *= len(key.categories)
        return size


def compile_query(
    plan: Plan, measures: Sequence[Measure], by: Sequence[GroupKey], undeclared: bool = False
) -> Query:
    """Compile a release's exact aggregation: filters first, then keys, then measures.

    With ``undeclared`` (and keys), the query also counts the kept rows whose
    key is present but not declared (see :class:`Query`).
    """
    key_exprs = [k.expr.operand if isinstance(k.expr, Bucket) else k.expr for k in by]
    measure_exprs = [m.expr for m in measures if m.kind != "rows" and m.expr is not None]
    program = Program.compile(plan, [*key_exprs, *measure_exprs])
    key_nodes = program.outputs[: len(key_exprs)]
    value_nodes = iter(program.outputs[len(key_exprs) :])
    keys = []
    for key, node in zip(by, key_nodes, strict=True):
        bucket = (key.expr.edges, key.expr.clamp) if isinstance(key.expr, Bucket) else None
        tag, params, _ = program.instructions[node]
        source = params[0] if tag == "source" and bucket is None else ""
        keys.append(KeySpec(tuple(key.categories), node, bucket, source))
    nodes = tuple(
        next(value_nodes) if m.kind != "rows" and m.expr is not None else -1 for m in measures
    )
    bare = tuple(dataclasses.replace(m, expr=None) for m in measures)
    return Query(program, bare, nodes, tuple(keys), undeclared and bool(keys))
