"""Drawing a copy's cells from a fitted model with little sampling error (MST and AIM).

Both samplers (:func:`~dpframe.mechanisms.synth.synth_model.sample_tree`,
:func:`~dpframe.mechanisms.synth.synth_junction.sample_junction`) draw the
columns one clique at a time: the rows of each cell of the columns already
drawn that the model conditions on (the *group*) get the new columns' cells.

* **How many** rows of a group get each new cell: :func:`controlled_counts`,
  a controlled rounding as in private-pgm's ``synthetic_data`` (⌊m·p⌋ each,
  the remainder by systematic sampling of the fractional parts, so each
  count is m·p in expectation): each count within one row of m·p, so the
  cliques the model holds come out within a row or so per cell.  Every
  group at once (:func:`group_counts`, :func:`spread_groups`): no Python
  step per group, so a copy's drawing time grows with its rows, not with
  its model's cells.
* **Which** rows get them: :func:`draw_given`.  Drawn i.i.d. (or shuffled), the
  new column's joint with every *other* column already drawn would carry
  the full multinomial error of n rows (as large as drawing the copy from
  the true table: measured on CPS, 0.012 to 0.024 TV for pairs the model
  links only through a path).  Instead the group's rows are put in order
  by the other columns already drawn (random order among equal rows) and
  each new cell's rows are spread evenly along that order (its j-th row near
  position (j + u)·m/count of the group's m, u uniform; by slots, without a
  sort: :func:`spread_groups`), then rotated by a uniform random offset:
  every run of consecutive rows, in particular the rows of each value of
  the leading other columns, gets each new cell in proportion, within
  a row or two.  The rotation makes each row's cell exactly as likely as
  the model's conditional given the counts, so the copy's expected tables
  are the model's; only their spread shrinks.

Post-processing of a fitted model (no data read, no privacy cost).  The
numpy generator is seeded from the secure source
(:func:`~dpframe.mechanisms.synth.synth_rows.sampling_generator`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from dpframe.mechanisms.runtime.stopping import check_stop

__all__ = [
    "controlled_counts",
    "draw_given",
    "group_counts",
    "shuffled_rows",
    "spread_cells",
    "spread_groups",
]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: The sort key of a group's rows holds the group and the other columns already drawn
#: (the columns with more cells first) while the product of their cells stays below this:
#: an exact integer in a float64 with 20 bits left for the random tie-break.
KEY_CELLS = 2**32


def controlled_counts(
    probabilities: Array,
    n: int,
    gen: np.random.Generator,  # not privacy noise
) -> IntArray:
    """Counts of n draws close to n·p: the integer parts, the remainder by systematic sampling.

    Each cell gets ⌊n·p⌋; the n − Σ⌊n·p⌋ remaining rows go to distinct
    cells, cell c with probability exactly its fractional part (systematic
    sampling: one uniform offset along the fractions' running sum), so each
    count is within one row of n·p and its expectation is n·p.  One group of
    :func:`group_counts`.
    """
    table = np.asarray(probabilities, dtype=np.float64).reshape(1, -1)
    counts: IntArray = group_counts(table, np.array([n], dtype=np.int64), gen)[0]
    return counts


def group_counts(
    table: Array,
    rows: IntArray,
    gen: np.random.Generator,  # not privacy noise
) -> IntArray:
    """:func:`controlled_counts` of every group at once: ``rows[g]`` draws from ``table[g]``.

    A row of ``table`` that sums to 0 (or less) is taken as uniform.  The
    remainder of group g is drawn by systematic sampling: with R_c the
    running sum of the fractional parts up to cell c and u_g uniform, cell c
    gets one more row when ⌊R_c + u_g⌋ > ⌊R_{c-1} + u_g⌋, which happens with
    probability exactly its fractional part; R ends at the remainder, an
    integer, so exactly that many cells get one.
    """
    p = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)
    total = p.sum(axis=1, keepdims=True)
    p = np.divide(p, total, out=np.full_like(p, 1.0 / p.shape[1]), where=total > 0)
    expected = p * rows[:, None]
    whole = np.floor(expected)
    extra = rows - whole.sum(axis=1)
    # The fractions' running sum ends at the remainder (up to float error): set it exactly.
    running = np.minimum(np.cumsum(expected - whole, axis=1), extra[:, None])
    running[:, -1] = extra
    u = gen.random((len(rows), 1))
    passed = np.floor(running + u)
    hits = np.diff(passed, axis=1, prepend=np.floor(u))
    counts: IntArray = (whole + hits).astype(np.int64)
    return counts


def spread_cells(counts: IntArray, gen: np.random.Generator) -> IntArray:  # not privacy noise
    """``counts[c]`` copies of each cell c, each cell's copies spread evenly, rotated at random.

    Of the m positions, copy j of cell c takes slot ⌊(j·m + v_c)/counts[c]⌋
    (v_c uniform in 0 .. m − 1: its time (j + v_c/m)/counts[c] on m slots);
    the copies are put in order of slot (a cell has at most one copy per
    slot; the few that share a slot in order of cell), then rotated by a
    uniform offset.  Any run of L consecutive positions holds
    L·counts[c]/m copies of c within about two, and every position holds cell
    c with probability counts[c]/m.  One group of :func:`spread_groups`.
    """
    return spread_groups(np.asarray(counts, dtype=np.int64).reshape(1, -1), gen)


def spread_groups(counts: IntArray, gen: np.random.Generator) -> IntArray:  # not privacy noise
    """:func:`spread_cells` of every group (row of ``counts``), the groups one after another.

    No sort: slots are integers (exact), the copies that share a slot are
    ranked by one pass per cell (a cell's copies never share one), and each
    copy's position is its slot's start plus its rank, so the work is a few
    passes over the m copies.
    """
    groups, width = counts.shape
    sizes = counts.sum(axis=1).astype(np.int64)
    m = int(sizes.sum())
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    flat = np.ascontiguousarray(counts.T, dtype=np.int64).ravel()  # (cell, group): cell first
    pair_size, pair_start = np.tile(sizes, width), np.tile(starts, width)
    first = np.cumsum(flat) - flat
    offset = np.minimum((gen.random(len(flat)) * pair_size).astype(np.int64), pair_size - 1)
    # Slot of copy j of (cell, group): ⌊(j·m_g + v)/k⌋ < m_g, distinct for one cell (m_g ≥ k).
    slot = np.arange(m, dtype=np.int64)
    slot *= np.repeat(pair_size, flat)
    slot += np.repeat(offset - first * pair_size, flat)
    slot //= np.repeat(flat, flat)
    slot += np.repeat(pair_start, flat)
    rank = np.empty(m, dtype=np.int64)
    taken = np.zeros(m, dtype=np.int64)
    begin = 0
    for end in np.cumsum(counts.sum(axis=0)):  # one cell's copies: distinct slots
        here = slot[begin:end]
        rank[begin:end] = taken[here]
        taken[here] += 1
        begin = int(end)
    position = (np.cumsum(taken) - taken)[slot]
    position += rank
    # Each group rotated by a uniform offset: every position a fair draw from its counts.
    shift = np.minimum(np.floor(gen.random(groups) * sizes).astype(np.int64), sizes - 1)
    group_start = np.repeat(pair_start, flat)
    position -= group_start
    position += np.repeat(np.tile(shift, width), flat)
    position %= np.repeat(pair_size, flat)
    position += group_start
    out = np.empty(m, dtype=np.int64)
    out[position] = np.repeat(np.arange(width, dtype=np.int64), counts.sum(axis=0))
    return out


def _order(key: IntArray, cells: int, gen: np.random.Generator) -> IntArray:  # not privacy noise
    """The rows in order of ``key`` (0 ≤ key < cells), random order among equal keys.

    One sort of int64 values holding the key, random bits and the row
    (faster than an argsort) when they fit 63 bits with at least 16 random
    bits; else an argsort of the key plus a random fraction (exact below
    :data:`KEY_CELLS`).
    """
    n = len(key)
    row_bits = max(1, (n - 1).bit_length())
    key_bits = max(1, (cells - 1).bit_length())
    spare = 63 - row_bits - key_bits
    if spare < 16:
        order: IntArray = np.argsort(key + 0.5 * gen.random(n))
        return order
    tie_bits = min(spare, 32)
    packed = key << (tie_bits + row_bits)
    packed |= gen.integers(0, 1 << tie_bits, n, dtype=np.int64) << row_bits
    packed |= np.arange(n, dtype=np.int64)
    packed.sort()
    packed &= (1 << row_bits) - 1
    return packed


def draw_given(
    table: Array,
    group: IntArray,
    context: Sequence[tuple[IntArray, int]],
    gen: np.random.Generator,  # not privacy noise
) -> IntArray:
    """Each row's new cell given its group: ``table[g]`` ∝ p(new | group g) (see the module).

    ``group`` holds each row's group (``0 .. len(table) - 1``); ``context``
    the other columns already drawn with their cell counts.  Rows of a group
    are ordered by the context (columns with more cells first, as many as fit
    :data:`KEY_CELLS`; random order among equal rows) and get the group's
    :func:`controlled_counts` by :func:`spread_cells`, all groups at once
    (vectorized: no step per group).
    """
    check_stop()  # a curator past its wall-clock limit stops here (10**7 rows: ~2 s a column)
    n, groups = len(group), len(table)
    key = group.astype(np.int64)
    cells = groups
    for column, size in sorted(context, key=lambda c: -c[1]):
        if cells * size > KEY_CELLS:
            break
        key = key * size + column
        cells *= size
    order = _order(key, cells, gen)
    rows = np.bincount(group, minlength=groups).astype(np.int64)
    out = np.zeros(n, dtype=np.int64)
    out[order] = spread_groups(group_counts(np.asarray(table), rows, gen), gen)
    return out


def shuffled_rows(cells: IntArray, gen: np.random.Generator) -> IntArray:  # not privacy noise
    """The rows of ``cells`` (n × columns) in a uniformly random order, columns contiguous.

    Gathered one column at a time (a 10⁷-row gather of whole rows took
    2.3 s, of its seven columns one by one 0.9 s).
    """
    order = gen.permutation(len(cells))
    out: IntArray = np.empty(cells.shape, dtype=np.int64, order="F")
    for j in range(cells.shape[1]):
        np.take(cells[:, j], order, out=out[:, j])
    return out
