"""Exact per-cell totals of measures over one chunk of rows.

The pandas backend evaluates a plan over row ranges of :data:`CHUNK_ROWS`
rows and adds the per-chunk totals (see
:meth:`~dpframe.backends.pandas_backend.PandasBackend.compute`), so that its
temporaries (a column's float64 values, its clamped copy, masks, slot arrays)
are chunk-sized instead of frame-sized.

Adding per-chunk totals gives bit-identical results to one pass over all the
rows: every term is an integer-valued float64 of magnitude at most 2**22
(:class:`~dpframe.plan.measures.Measure`) and one frame holds at most
:data:`~dpframe.backends.base.MAX_ROWS` = 2**31 rows, so the total of *any*
subset of the rows (a cell of a chunk, or the running total of the chunks
so far) is an integer of magnitude at most 2**53.  Every such integer is a
float64, so every addition is exact and the order of the additions does not
matter.  Totals are never -0.0: ``np.bincount`` and the masked sums start
from +0.0.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.backends.evaluate import factorized, float_values, present
from dpframe.backends.program import Run
from dpframe.plan.measures import Measure

__all__ = [
    "CHUNK_ROWS",
    "Cells",
    "MeasurePlan",
    "add_totals",
    "chunk_bounds",
    "code_dtype",
    "combine_slots",
    "measure_totals",
    "outside_bins",
    "slot_codes",
    "undeclared_rows",
]

#: Rows per chunk: float64 temporaries of 8 MiB.
CHUNK_ROWS = 1 << 20

#: Rows per block of a sum's fused pass (:func:`_fused_total`): a 256 KiB buffer, in cache.
_BLOCK_ROWS = 1 << 15

#: Cell of each row: slot codes (0 = no cell), a boolean mask (one cell), or None (one cell).
Cells = npt.NDArray[np.intp] | npt.NDArray[np.bool_] | None

_CODE_DTYPES = (np.uint8, np.uint16, np.uint32)


def chunk_bounds(n: int, chunk_rows: int) -> list[tuple[int, int]]:
    """The row ranges ``[start, stop)`` of ``n`` rows; one range (maybe empty) if it fits."""
    if n <= chunk_rows:
        return [(0, n)]
    return [(start, min(start + chunk_rows, n)) for start in range(0, n, chunk_rows)]


def code_dtype(slots: int, n: int, chunk_rows: int) -> np.dtype[Any]:
    """The integer dtype of cached slot codes ``0..slots`` of ``n`` rows.

    A frame of one chunk keeps ``intp`` codes, which ``np.bincount`` reads
    without a conversion (at most ``chunk_rows`` × 8 bytes per key column).
    Larger frames keep the smallest unsigned dtype that holds the slots
    (uint8 up to 255 categories, uint16 up to 65,535) and convert one chunk
    at a time.
    """
    if n <= chunk_rows:
        return np.dtype(np.intp)
    for dtype in _CODE_DTYPES:
        if slots <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.intp)


def combine_slots(
    slots: npt.NDArray[np.intp] | None,
    key_slots: npt.NDArray[np.intp],
    categories: int,
    cells: int | None = None,
) -> npt.NDArray[np.intp]:
    """Slots of the cells of the keys so far crossed with one more key of ``categories``.

    Slot ``1 + i * categories + j`` for cell ``i`` of the keys so far and
    category ``j`` of the new key; 0 where either is 0 (no cell: a missing
    key, or a row the filters drop).  With ``cells`` (the number of cells of
    the keys so far), a slot above ``cells`` or a key slot above
    ``categories`` marks a row whose key is present but not declared (see
    :func:`slot_codes`); such a row gets the combined undeclared slot
    ``cells * categories + 1`` unless some key is missing (then 0).  Neither
    input is modified (cached codes are read-only).
    """
    if slots is None:
        return key_slots
    invalid = (slots == 0) | (key_slots == 0)
    outside = None if cells is None else (slots > cells) | (key_slots > categories)
    combined = slots - 1  # one new array, then in place
    combined *= categories
    combined += key_slots
    if outside is not None and cells is not None:
        combined[outside] = cells * categories + 1
    combined[invalid] = 0
    return combined


def slot_codes(values: pd.Series, categories: tuple[Hashable, ...]) -> npt.NDArray[np.intp]:
    """Each value's slot: 1 + its position among ``categories``, 0 if missing, else k + 1.

    ``k + 1`` (k declared categories) marks a value that is present but not
    declared: the rows of the undeclared cell.  The declared slots are
    :func:`~dpframe.backends.evaluate.category_codes` + 1 (the same
    factorization and lookup), so declared cells are unchanged.
    """
    row_codes, uniques = factorized(values)  # a categorical's own codes
    declared = pd.Index(list(categories), dtype=object)
    mapping = np.asarray(declared.get_indexer(pd.Index(uniques).astype(object)), dtype=np.intp)
    mapping += 1
    mapping[mapping == 0] = len(categories) + 1  # present, not declared
    mapping = np.append(mapping, 0)  # row code -1 (missing) maps to the last slot: 0
    return np.asarray(mapping[row_codes], dtype=np.intp)


def outside_bins(
    codes: npt.NDArray[np.intp], values: npt.NDArray[np.float64], bins: int
) -> npt.NDArray[np.intp]:
    """Bucket slots (``bucket_codes`` + 1), a present value outside every bin set to bins + 1."""
    codes[(codes == 0) & ~np.isnan(values)] = bins + 1
    return codes


@dataclass(frozen=True)
class MeasurePlan:
    """What the measures of one release share (see :func:`measure_totals`).

    A numeric value read (and its missing-value mask) and its clamped,
    centred values are computed once per chunk for all the measures that use
    them (a mean's count and sum; a variance's three measures).  ``nodes``
    holds the program node of each measure's expression (-1: a row count;
    equal expressions, however written, share a node); ``summed`` the nodes
    that some sum reads; ``reused`` the clamping keys that more than one sum uses.
    """

    measures: tuple[Measure, ...]
    nodes: tuple[int, ...]
    summed: frozenset[int]
    reused: frozenset[Any]

    @classmethod
    def of(cls, measures: tuple[Measure, ...], nodes: tuple[int, ...]) -> MeasurePlan:
        """The sharing plan of ``measures`` whose expressions are the program ``nodes``."""
        sums = [(m, node) for m, node in zip(measures, nodes, strict=True) if m.kind == "sum"]
        clamps = [_clamp_key(m, node) for m, node in sums]
        return cls(
            measures,
            nodes,
            frozenset(node for _, node in sums),
            frozenset(k for k in clamps if clamps.count(k) > 1),
        )


@dataclass
class _ChunkWork:
    """Work shared by the measures of one release on one chunk; dropped after it.

    ``values``: each node's float64 values; ``present``: its missing-value
    mask, computed only when a measure needs it; ``clean``: the nodes that a
    sum found free of missing values among the rows of ``cells`` (their
    non-null counts are row counts); ``centred``: clamped values shared by
    several sums.
    """

    values: dict[int, npt.NDArray[np.float64]] = field(default_factory=dict)
    present: dict[int, npt.NDArray[np.bool_]] = field(default_factory=dict)
    clean: set[int] = field(default_factory=set)
    centred: dict[Any, npt.NDArray[np.float64]] = field(default_factory=dict)


def measure_totals(
    run: Run, plan: MeasurePlan, cells: Cells, size: int
) -> list[npt.NDArray[np.float64]]:
    """Per-cell totals of every measure of ``plan`` over the rows of ``run`` (one chunk).

    Sums go first: a sum that meets no missing value among the rows of
    ``cells`` tells its node's non-null count (a mean's count) that it is a
    row count, so no missing-value mask is built.
    """
    work = _ChunkWork()
    pairs = list(zip(plan.measures, plan.nodes, strict=True))
    order = sorted(range(len(pairs)), key=lambda i: pairs[i][0].kind != "sum")
    totals: dict[int, npt.NDArray[np.float64]] = {}
    for i in order:
        measure, node = pairs[i]
        totals[i] = _measure(run, measure, node, plan, cells, size, work)
    return [totals[i] for i in range(len(pairs))]


def add_totals(
    totals: list[npt.NDArray[np.float64]] | None, partial: list[npt.NDArray[np.float64]]
) -> list[npt.NDArray[np.float64]]:
    """``totals + partial`` per measure, in place (exact: see the module docstring)."""
    if totals is None:
        return partial
    for total, part in zip(totals, partial, strict=True):
        total += part
    return totals


def _measure(
    run: Run,
    measure: Measure,
    node: int,
    plan: MeasurePlan,
    cells: Cells,
    size: int,
    work: _ChunkWork,
) -> npt.NDArray[np.float64]:
    n = len(run.rows)
    if measure.kind == "rows":
        if cells is None:
            return np.array([float(n)])
        return bincount(cells, None, size)
    if measure.kind == "nonnull":
        if node in work.clean:  # its sum met no missing value in these cells
            return np.array([float(n)]) if cells is None else bincount(cells, None, size)
        if node in plan.summed:  # numeric: the same mask as its sum's
            is_present = _present_mask(run, node, work)
        else:
            is_present = present(run.value(node), n)
        if is_present.all():  # no missing value: the row count
            return np.array([float(n)]) if cells is None else bincount(cells, None, size)
        return _count_present(cells, is_present, size)
    values = _float_values(run, node, work)
    clamp_key = _clamp_key(measure, node)
    centred = work.centred.get(clamp_key)
    if centred is None and clamp_key not in plan.reused:
        total = _fused_total(values, measure, cells, size)
        if total is not None:  # no missing value among the rows of the cells
            work.clean.add(node)
            return total
    is_present = _present_mask(run, node, work)
    if centred is None:
        centred = np.clip(values, measure.lower, measure.upper)
        if measure.center != 0.0:
            centred -= measure.center
        if clamp_key not in plan.reused:  # its only user may work in place
            _grid_terms(centred, measure)
            if not is_present.all():
                centred[~is_present] = 0.0
            return bincount(cells, centred, size)
        work.centred[clamp_key] = centred
    if measure.power == 2:
        terms = centred * centred
        terms *= 1.0 / measure.quantum
    else:  # one pass (the same values as copying, then scaling in place)
        terms = centred * (1.0 / measure.quantum)
    np.rint(terms, out=terms)
    if not is_present.all():
        terms[~is_present] = 0.0
    return bincount(cells, terms, size)


def _grid_terms(centred: npt.NDArray[np.float64], measure: Measure) -> None:
    """Clamped (and centred) values to grid units in place: rint(x**power / quantum)."""
    if measure.power == 2:
        np.multiply(centred, centred, out=centred)
    centred *= 1.0 / measure.quantum
    np.rint(centred, out=centred)


def _fused_total(
    values: npt.NDArray[np.float64], measure: Measure, cells: Cells, size: int
) -> npt.NDArray[np.float64] | None:
    """A sum's per-cell totals in one read of the values, or None if a kept value is missing.

    The values are clamped, centred, raised and rounded to the grid block by
    block in a cache-sized buffer (the same operations in the same order per
    row as the general path, so the same terms) and summed per block; the
    totals are exact in any order (module docstring).  A missing value (NaN)
    survives every step and makes its cell's total NaN, so a NaN-free result
    is the total of the present values, and a NaN means the caller must zero
    the missing rows (the general path).  Rows outside every cell (slot 0, a
    filter's False) are read but never counted.  Grouped cells (slot codes)
    are summed by one ``np.bincount`` over the chunk.
    """
    if cells is not None and cells.dtype != np.bool_:
        centred = np.clip(values, measure.lower, measure.upper)
        if measure.center != 0.0:
            centred -= measure.center
        _grid_terms(centred, measure)
        full = np.bincount(cells, weights=centred, minlength=size + 1)
        if np.isnan(full.sum()):  # a missing value in some row, kept or not: the general path
            return None
        return np.asarray(full[1 : size + 1], dtype=np.float64)
    mask = None if cells is None else np.asarray(cells, dtype=np.bool_)
    n = len(values)
    buffer = np.empty(min(n, _BLOCK_ROWS))
    total = 0.0
    for start in range(0, n, _BLOCK_ROWS):
        block = values[start : start + _BLOCK_ROWS]
        terms = buffer[: len(block)]
        np.clip(block, measure.lower, measure.upper, out=terms)
        if measure.center != 0.0:
            terms -= measure.center
        _grid_terms(terms, measure)
        if mask is None:
            total += float(terms.sum())
        else:
            total += float(np.sum(terms, where=mask[start : start + _BLOCK_ROWS]))
    if math.isnan(total):
        return None
    return np.array([total + 0.0])  # + 0.0: never -0.0


def _count_present(
    cells: Cells, is_present: npt.NDArray[np.bool_], size: int
) -> npt.NDArray[np.float64]:
    """Per-cell counts of the rows where ``is_present`` holds (integer counting, no weights)."""
    if cells is None:
        return np.array([float(np.count_nonzero(is_present))])
    if cells.dtype == np.bool_:
        return np.array([float(np.count_nonzero(cells & is_present))])
    counts = np.bincount(cells[is_present], minlength=size + 1)
    return np.asarray(counts[1 : size + 1], dtype=np.float64)


def _float_values(run: Run, node: int, work: _ChunkWork) -> npt.NDArray[np.float64]:
    found = work.values.get(node)
    if found is None:
        found = np.asarray(float_values(run.value(node), len(run.rows)), dtype=np.float64)
        work.values[node] = found
    return found


def _present_mask(run: Run, node: int, work: _ChunkWork) -> npt.NDArray[np.bool_]:
    found = work.present.get(node)
    if found is None:
        found = ~np.isnan(_float_values(run, node, work))
        work.present[node] = found
    return found


def _clamp_key(measure: Measure, node: int) -> tuple[Hashable, ...]:
    return (node, measure.lower, measure.upper, measure.center)


def bincount(
    slots: Cells, weights: npt.NDArray[np.float64] | None, size: int
) -> npt.NDArray[np.float64]:
    """Per-cell totals; slot 0 (rows in no cell) and the undeclared slot ``size + 1`` are dropped.

    ``slots`` may also be a boolean row mask (a single cell: the rows kept by
    the filters), or None (a single cell: every row).  The weights are
    integer-valued (grid units), so every summation order gives the same total.
    """
    if slots is None:
        assert weights is not None
        return np.array([float(weights.sum()) + 0.0])  # + 0.0: never -0.0, as below
    if slots.dtype == np.bool_:
        mask = np.asarray(slots, dtype=np.bool_)
        if weights is None:
            return np.array([float(np.count_nonzero(mask))])
        return np.array([float(np.sum(weights, where=mask))])
    counts = np.bincount(slots, weights=weights, minlength=size + 1)
    return np.asarray(counts[1 : size + 1], dtype=np.float64)


def undeclared_rows(cells: Cells, size: int) -> npt.NDArray[np.float64]:
    """The number of rows in the undeclared slot ``size + 1`` (as a one-cell total)."""
    if cells is None or cells.dtype == np.bool_:
        return np.array([0.0])  # no group key: no undeclared cell
    return np.array([float(np.count_nonzero(cells == size + 1))])
