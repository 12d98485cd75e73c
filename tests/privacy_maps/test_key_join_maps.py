"""A private join on another key (household, store): pinned exactly (docs/proofs/private_joins.md).

Each side keeps at most k rows per key value; one person (m_L left rows,
m_R right rows) changes at most S = 2·(m_L·k_R + m_R·k_L) joined rows
(semi/anti: 2·(m_L + m_R·k_L)).  So a release on the join is the release on
a source of S rows per unit: its map must be exactly that one (checked
against a plain source), and the worst neighbour of a count is a shift of S,
at which the map holds and is tight (over with 0.1% less noise).  A smaller
stability (the one without the factor 2, or without a side) is never stated.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import pytest

from dpframe.mechanisms.calibration.additive import noise_for
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.moments.aggregates import noise_plan
from dpframe.plan.columns import ColumnInfo
from dpframe.plan.expressions import Col
from dpframe.plan.joins import id_join
from dpframe.plan.nodes import Aggregate, Source
from dpframe.plan.schema import Schema
from tests.privacy_maps.pins import Pin, assert_pinned, grid_shift, laplace_pin, register, zcdp_pin

LEFT = Schema((ColumnInfo("pid", "numeric", "int64"), ColumnInfo("hh", "numeric", "int64")))
RIGHT = Schema((ColumnInfo("id", "numeric", "int64"), ColumnInfo("hh", "numeric", "int64")))


def _joined(m_l: int, m_r: int, k_l: int, k_r: int, how: str = "inner") -> Source:
    left = Source("a", unit_rows=m_l, view="u", unit_column="pid", id_space="persons")
    right = Source("b", unit_rows=m_r, view="u", unit_column="id", id_space="persons")
    source, _ = id_join(
        left,
        LEFT,
        right,
        RIGHT,
        how=how,
        on="hh",
        k_left=k_l,
        k_right=k_r,
        suffixes=("_l", "_r"),
    )
    return source


def _count(plan: Source) -> Aggregate:
    return Aggregate(plan, "count", None, None, (), "q")


def _sum(plan: Source) -> Aggregate:
    return Aggregate(plan, "sum", Col("hh"), (0.0, 50.0), (), "q")


#: (m_L, m_R, k_L, k_R, S = 2·(m_L·k_R + m_R·k_L))
CASES = [(1, 1, 1, 1, 4), (1, 2, 3, 3, 18), (3, 1, 2, 5, 34), (2, 2, 1, 4, 20)]


@pytest.mark.parametrize(("m_l", "m_r", "k_l", "k_r", "s"), CASES)
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("build", [_count, _sum], ids=["count", "sum"])
def test_the_map_of_a_key_join_is_the_map_of_s_rows_per_person(
    m_l: int, m_r: int, k_l: int, k_r: int, s: int, kind: str, build: object
) -> None:
    allocation = NoiseAllocation(kind, Fraction(1, 2))  # type: ignore[arg-type]
    joined = build(_joined(m_l, m_r, k_l, k_r))  # type: ignore[operator]
    plain = build(Source("c", unit_rows=s))  # type: ignore[operator]
    assert noise_plan(joined, allocation) == noise_plan(plain, allocation)


def test_semi_and_anti_count_one_row_per_left_row() -> None:
    for how in ("semi", "anti"):
        assert _joined(3, 2, 4, 7, how).unit_rows == 2 * (3 * 1 + 2 * 4)
    for m_l, m_r, k_l, k_r, s in CASES:
        joined = _joined(m_l, m_r, k_l, k_r, "outer")
        assert joined.unit_rows == s and s > m_l * k_r + m_r * k_l  # never the half


def _count_pin(kind: str, m_l: int, m_r: int, k_l: int, k_r: int, s: int) -> Pin:
    allocation = NoiseAllocation(kind, Fraction(1))  # type: ignore[arg-type]
    ((_, sens, quantum, part),) = noise_plan(_count(_joined(m_l, m_r, k_l, k_r)), allocation)
    grid, units, spec = noise_for(sens, quantum, part)
    shift = grid_shift(sens, grid)
    assert (sens, shift, units) == (s, s, s)
    name = f"count on a key join (m={m_l},{m_r}; k={k_l},{k_r}), {kind}"
    if kind == "laplace":
        return laplace_pin(name, spec.parameter, shift, part.parameter)
    return zcdp_pin(name, spec.parameter, (shift,), part.parameter)


def _pin_builder(kind: str, *case: int) -> Callable[[], Pin]:
    return lambda: _count_pin(kind, *case)


PINS = register(
    {
        f"count on a key join m={c[0]},{c[1]} k={c[2]},{c[3]}, {kind}": _pin_builder(kind, *c)
        for c in CASES
        for kind in ("laplace", "gaussian")
    }
)


@pytest.mark.parametrize("name", PINS)
def test_a_count_on_a_key_join_is_pinned(name: str) -> None:
    assert_pinned(name)
