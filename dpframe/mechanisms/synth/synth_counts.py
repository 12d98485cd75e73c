"""The exact marginals of a synthetic copy, from one pass over the rows.

Every marginal a copy may measure (MST: every column and every pair; AIM:
its whole workload, triples included) is counted in a single
:meth:`~dpframe.backends.base.Backend.row_reduce` over the plan's rows: the
plan's derived columns and each column's cell code
(:meth:`~dpframe.plan.releases.Synthesize.code`) are evaluated once per row
and release, whatever the number of marginals, and :class:`CellCounts`
turns the codes of each block of rows (the frame, a chunk, or a Dask
partition on its worker) into counts.  When the full contingency table has
at most :data:`FULL_TABLE_CELLS` cells it is counted instead (one
``bincount``) and every marginal is a sum of it.

A row counts in a marginal when each of its columns has a cell: a missing
value goes to the column's missing cell when it has one and otherwise leaves
the row out of every marginal; a value not among a keyed column's declared
keys leaves it out too.  Values beyond a binned column's edges count in its
end bins.  So every row adds one to one cell of every marginal, or to none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.mechanisms.core.family import Released
from dpframe.plan.releases import Synthesize

__all__ = ["FULL_TABLE_CELLS", "CellCounts", "Clique", "MarginalTables"]

#: The most cells of the full contingency table counted at once (32 MiB of int64); a
#: larger domain is counted marginal by marginal (from the same codes, in the same pass).
FULL_TABLE_CELLS = 2**22

Clique = tuple[int, ...]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class CellCounts:
    """A row reducer: each clique's cell counts over a block of rows (public parameters only).

    Attributes:
        sizes: cells per column (the missing cell last, when it has one).
        missing: per column, True when it has a missing cell.
        nulls: per column, the position among the block's arrays of its
            "is missing" flags (−1: its code is missing exactly when the value is).
        cliques: the marginals counted (sorted column positions); empty: the
            full table, one array.
    """

    sizes: tuple[int, ...]
    missing: tuple[bool, ...]
    nulls: tuple[int, ...]
    cliques: tuple[Clique, ...]

    def partial(self, columns: Sequence[FloatArray]) -> tuple[Any, ...]:
        """Each clique's counts (int64, flattened row-major) over the block's rows."""
        d = len(self.sizes)
        n = len(columns[0]) if d else 0
        keep = np.ones(n, dtype=bool)
        codes: list[npt.NDArray[np.intp]] = []
        for i, size in enumerate(self.sizes):
            values = np.asarray(columns[i], dtype=np.float64)
            absent = np.isnan(values)
            code = np.where(absent, 0, values).astype(np.intp)
            if self.missing[i]:
                null = absent
                if self.nulls[i] >= 0:
                    null = absent & (np.asarray(columns[self.nulls[i]]) > 0)
                code[null] = size - 1
                keep &= ~absent | null
            else:
                keep &= ~absent
            codes.append(code)
        if not keep.all():
            codes = [c[keep] for c in codes]
        if not self.cliques:
            return (_count(codes, self.sizes),)
        return tuple(
            _count([codes[a] for a in q], tuple(self.sizes[a] for a in q)) for q in self.cliques
        )


def _count(codes: list[npt.NDArray[np.intp]], sizes: tuple[int, ...]) -> npt.NDArray[np.int64]:
    cells = math.prod(sizes)
    if not codes or not len(codes[0]):
        return np.zeros(cells, dtype=np.int64)
    index = np.ravel_multi_index(tuple(codes), sizes) if len(codes) > 1 else codes[0]
    return np.bincount(index, minlength=cells).astype(np.int64, copy=False)


class MarginalTables:
    """The exact counts of every marginal a copy may measure, counted in one pass.

    Args:
        run: the release (its backend and node).
        cliques: the marginals wanted (sorted column positions).
    """

    def __init__(self, run: Released[Synthesize], cliques: Sequence[Clique]) -> None:
        node = run.node
        self.sizes = node.sizes()
        d = len(self.sizes)
        exprs = [node.code(i) for i in range(d)]
        nulls = []
        for i in range(d):
            flag = node.null(i)
            nulls.append(-1 if flag is None else len(exprs))
            if flag is not None:
                exprs.append(flag)
        wanted = tuple(dict.fromkeys(tuple(sorted(q)) for q in cliques))
        full = math.prod(self.sizes) <= FULL_TABLE_CELLS
        reducer = CellCounts(self.sizes, node.missing, tuple(nulls), () if full else wanted)
        found = run.backend.row_reduce(node.plan, exprs, reducer)
        self._tables: dict[Clique, FloatArray] = {}
        if full:
            table = np.asarray(found[0], dtype=np.float64).reshape(self.sizes)
            for q in wanted:
                others = tuple(a for a in range(d) if a not in q)
                self._tables[q] = table.sum(axis=others)
        else:
            for q, counts in zip(wanted, found, strict=True):
                shape = tuple(self.sizes[a] for a in q)
                self._tables[q] = np.asarray(counts, dtype=np.float64).reshape(shape)

    @staticmethod
    def passes(node: Synthesize, cliques: int) -> int:
        """The counting passes over the rows' codes: 1 (the full table) or one per clique."""
        return 1 if math.prod(node.sizes()) <= FULL_TABLE_CELLS else cliques

    def table(self, clique: Clique) -> FloatArray:
        """The exact counts of ``clique`` (sorted), shaped by its columns' sizes."""
        return self._tables[clique]
