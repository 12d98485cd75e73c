"""Drawing a copy's cells (synth_sampling): exact counts, spread evenly, each row a fair draw."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from dpframe.mechanisms.runtime.stopping import ReleaseStoppedError, stoppable
from dpframe.mechanisms.synth.synth_sampling import (
    _order,
    controlled_counts,
    draw_given,
    group_counts,
    shuffled_rows,
    spread_cells,
    spread_groups,
)
from tests.stats_helpers import ALPHA, pooled_pvalue


def _window_counts(cells: np.ndarray, size: int, length: int) -> np.ndarray:
    """Each cell's count in every cyclic run of ``length`` consecutive positions (runs × cells)."""
    hits = np.zeros((len(cells) * 2 + 1, size))
    hits[1:] = np.cumsum(np.eye(size)[np.concatenate([cells, cells])], axis=0)
    starts = np.arange(len(cells))
    counts: np.ndarray = hits[starts + length] - hits[starts]
    return counts


def test_spread_cells_keep_the_counts_and_fill_every_run_in_proportion() -> None:
    gen = np.random.default_rng(11)  # test randomness only
    for _ in range(20):
        counts = gen.multinomial(int(gen.integers(1, 400)), gen.dirichlet(np.ones(6)))
        m = int(counts.sum())
        cells = spread_cells(counts, gen)
        assert np.array_equal(np.bincount(cells, minlength=6), counts)
        for length in {1, 2, 7, m // 3 + 1, m // 2 + 1} & set(range(1, m + 1)):  # runs in m
            expected = length * counts / m
            slack = 1 + len(counts) * counts / m + 1e-9  # see spread_cells
            assert np.all(np.abs(_window_counts(cells, 6, length) - expected) <= slack)


def test_a_shuffle_would_not_fill_the_runs_in_proportion() -> None:
    """The bound above is not loose: i.i.d. order breaks it (so the test can fail)."""
    gen = np.random.default_rng(12)  # test randomness only
    counts = np.array([120, 80, 40, 10])
    cells = np.repeat(np.arange(4), counts)
    gen.shuffle(cells)
    length = 60
    slack = 1 + 4 * counts / 250
    assert np.any(np.abs(_window_counts(cells, 4, length) - length * counts / 250) > slack)


def test_every_position_is_a_fair_draw_from_the_counts() -> None:
    """Rotated at random: each position holds cell c with probability counts[c]/m."""
    gen = np.random.default_rng(13)  # test randomness only
    counts = np.array([5, 3, 1, 2])
    runs = 20_000
    seen = np.zeros((2, 4))
    for _ in range(runs):
        cells = spread_cells(counts, gen)
        seen[0, cells[0]] += 1
        seen[1, cells[6]] += 1
    fair = runs * counts / counts.sum()
    off = runs * np.array([5 * 1.3, 3, 1, 2]) / (counts.sum() + 5 * 0.3)  # 30% more of cell 0
    for row in seen:
        assert pooled_pvalue(row, fair) > ALPHA
        assert pooled_pvalue(row, off) < ALPHA


def test_draw_given_matches_each_group_and_each_context_value() -> None:
    gen = np.random.default_rng(14)  # test randomness only
    n = 30_000
    group = gen.integers(0, 3, n)
    context = gen.integers(0, 5, n)
    table = gen.dirichlet(np.ones(4), size=3)
    drawn = draw_given(table, group, [(context, 5)], gen)
    for g in range(3):
        rows = group == g
        got = np.bincount(drawn[rows], minlength=4)
        assert np.all(np.abs(got - rows.sum() * table[g]) < 1)  # controlled counts
        share = got / rows.sum()
        for x in range(5):
            inside = rows & (context == x)
            found = np.bincount(drawn[inside], minlength=4)
            # the rows of one context value are one run of the group's order
            assert np.all(np.abs(found - inside.sum() * share) <= 1 + 4 * share + 1e-9)


def test_a_row_of_draw_given_is_a_fair_draw_from_its_conditional() -> None:
    gen = np.random.default_rng(15)  # test randomness only
    table = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    group = np.array([0, 1, 0, 0, 1, 0, 0])
    context = np.array([1, 0, 1, 0, 0, 1, 0])
    runs = 20_000
    seen = np.zeros((2, 3))
    for _ in range(runs):
        drawn = draw_given(table, group, [(context, 2)], gen)
        seen[0, drawn[0]] += 1
        seen[1, drawn[4]] += 1
    for row, p in zip(seen, table, strict=True):
        assert pooled_pvalue(row, runs * p) > ALPHA
        off = np.array([p[0] * 1.3, *p[1:]])
        assert pooled_pvalue(row, runs * off / off.sum()) < ALPHA


def test_group_counts_are_within_one_row_of_each_group_and_sum_exactly() -> None:
    gen = np.random.default_rng(16)  # test randomness only
    table = gen.dirichlet(np.ones(7), size=3_000)
    table[5] = 0.0  # an empty row is uniform
    rows = gen.integers(0, 40, 3_000)
    counts = group_counts(table, rows, gen)
    assert np.array_equal(counts.sum(axis=1), rows)
    expected = table / np.maximum(table.sum(axis=1, keepdims=True), 1e-300) * rows[:, None]
    expected[5] = rows[5] / 7
    assert np.all(np.abs(counts - expected) < 1.0)
    assert np.array_equal(controlled_counts(np.zeros(3), 4, gen).sum(keepdims=True), [4])


def test_the_remainder_goes_to_each_cell_with_exactly_its_fraction() -> None:
    """Systematic sampling: E[count] = n·p; drawing the remainder one cell at a time
    in proportion to the fractions (numpy's ``choice`` without replacement) would not be."""
    gen = np.random.default_rng(17)  # test randomness only
    fractions = np.array([0.9, 0.6, 0.5])  # two rows to place among three cells
    groups = 20_000
    counts = group_counts(np.tile(fractions / 2, (groups, 1)), np.full(groups, 2), gen)
    share = counts.mean(axis=0)
    se = np.sqrt(fractions * (1 - fractions) / groups)
    assert np.all(np.abs(share - fractions) < 4 * se)
    # One at a time in proportion: P(c) = f_c/2 + Σ_{a≠c} f_a/2 · f_c/(2 − f_a).
    sequential = np.array(
        [
            f / 2 + sum(a / 2 * f / (2 - a) for j, a in enumerate(fractions) if j != c)
            for c, f in enumerate(fractions)
        ]
    )
    assert np.all(np.abs(share - sequential) > 10 * se)


def test_draw_given_keeps_every_small_group_within_one_row() -> None:
    """Thousands of groups of a few rows each (a large model's separator), drawn at once."""
    gen = np.random.default_rng(18)  # test randomness only
    groups = 5_000
    table = gen.dirichlet(np.ones(3), size=groups)
    group = gen.integers(0, groups, 12_000)
    drawn = draw_given(table, group, [(gen.integers(0, 4, 12_000), 4)], gen)
    got = np.zeros((groups, 3))
    np.add.at(got, (group, drawn), 1)
    sizes = np.bincount(group, minlength=groups)
    assert np.all(np.abs(got - sizes[:, None] * table) < 1.0)


def test_spread_groups_fills_each_groups_runs_in_proportion_and_keeps_its_counts() -> None:
    """Many groups at once (slots, no sort): each group's block is its own spread."""
    gen = np.random.default_rng(19)  # test randomness only
    counts = gen.integers(0, 30, (200, 5))
    counts[7] = 0  # an empty group takes no position
    counts[8] = [0, 0, 41, 0, 0]  # one cell: every slot its own
    cells = spread_groups(counts, gen)
    sizes = counts.sum(axis=1)
    starts = np.cumsum(sizes) - sizes
    for g in range(len(counts)):
        block = cells[starts[g] : starts[g] + sizes[g]]
        assert np.array_equal(np.bincount(block, minlength=5), counts[g])
        m = int(sizes[g])
        for length in {3, m // 2 + 1} & set(range(1, m + 1)):
            slack = 1 + 5 * counts[g] / m + 1e-9
            gap = np.abs(_window_counts(block, 5, length) - length * counts[g] / m)
            assert np.all(gap <= slack)


def test_every_position_of_a_group_is_a_fair_draw_from_its_counts() -> None:
    """Copies sharing a slot go in order of cell; the rotation still makes every position fair."""
    gen = np.random.default_rng(20)  # test randomness only
    counts = np.array([[4, 4, 1], [2, 1, 6]])
    runs = 20_000
    seen = np.zeros((2, 3))
    for _ in range(runs):
        cells = spread_groups(counts, gen)
        seen[0, cells[0]] += 1  # the first group's first position
        seen[1, cells[9]] += 1  # the second group's first position
    for row, want in zip(seen, counts, strict=True):
        assert pooled_pvalue(row, runs * want / want.sum()) > ALPHA
        off = np.array([want[0] * 1.3, *want[1:]])
        assert pooled_pvalue(row, runs * off / off.sum()) < ALPHA


def test_the_rows_order_is_by_key_with_ties_in_random_order() -> None:
    """Both ways of ordering (one packed sort; an argsort when the key leaves too few bits)."""
    gen = np.random.default_rng(21)  # test randomness only
    key = np.array([2, 0, 1, 0, 2, 0], dtype=np.int64)
    for cells in (3, 2**50):  # 2**50 cells leave under 16 random bits: the argsort
        order = _order(key, cells, gen)
        assert sorted(order.tolist()) == list(range(6))
        assert np.all(np.diff(key[order]) >= 0)
        runs = 6_000
        first = np.zeros(6)
        for _ in range(runs):
            first[_order(key, cells, gen)[0]] += 1  # one of rows 1, 3, 5 (key 0)
        assert first[[0, 2, 4]].sum() == 0
        assert pooled_pvalue(first[[1, 3, 5]], [runs / 3] * 3) > ALPHA
        assert pooled_pvalue(first[[1, 3, 5]], [runs * 0.4, runs * 0.3, runs * 0.3]) < ALPHA


def test_shuffled_rows_keep_each_row_whole() -> None:
    gen = np.random.default_rng(22)  # test randomness only
    cells = np.arange(30, dtype=np.int64).reshape(10, 3)
    out = shuffled_rows(cells, gen)
    assert out.flags["F_CONTIGUOUS"]
    assert sorted(map(tuple, out.tolist())) == sorted(map(tuple, cells.tolist()))
    assert not np.array_equal(out, cells)  # seeded: this draw moves rows


def test_drawing_a_column_is_a_stop_point() -> None:
    """A curator past its wall-clock limit stops a long draw (10**7 rows: ~2 s a column)."""
    gen = np.random.default_rng(23)  # test randomness only
    table, group = np.ones((1, 3)) / 3, np.zeros(10, dtype=np.int64)
    stop = threading.Event()
    with stoppable(stop):
        assert len(draw_given(table, group, [], gen)) == 10  # not told to stop: draws
        stop.set()
        with pytest.raises(ReleaseStoppedError, match="wall-clock limit"):
            draw_given(table, group, [], gen)
