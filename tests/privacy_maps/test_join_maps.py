"""Releases on a private join: pinned exactly (docs/proofs/private_joins.md).

A join of two frames of one ID space on the ID, truncated to k rows per ID,
is k-stable: removing one person from every table removes at most k joined
rows and changes no other row.  So a release on the join is the release on a
frame of k rows per person: its map must be exactly that one (checked
against a plain source with ``unit_rows=k``), and the worst neighbour of a
count is a shift of k, at which the map holds and is tight (over with 0.1%
less noise).  The default k is the product of the two sides' limits.
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
from tests.privacy_maps.pins import (
    Pin,
    assert_pinned,
    grid_shift,
    laplace_pin,
    register,
    zcdp_pin,
)

LEFT = Schema((ColumnInfo("pid", "numeric", "int64"), ColumnInfo("x", "numeric", "float64")))
RIGHT = Schema((ColumnInfo("id", "numeric", "int64"), ColumnInfo("y", "numeric", "float64")))


def _joined(
    left_rows: int, right_rows: int, max_rows: int | None, how: str = "inner", rows: str = "kept"
) -> Source:
    left = Source("a", unit_rows=left_rows, view="u", unit_column="pid", id_space="persons")
    right = Source("b", unit_rows=right_rows, view="u", unit_column="id", id_space="persons")
    source, _ = id_join(
        left,
        LEFT,
        right,
        RIGHT,
        how=how,
        left_on="pid",
        right_on="id",
        max_rows=max_rows,
        rows=rows,
    )
    return source


def _count(plan: Source) -> Aggregate:
    return Aggregate(plan, "count", None, None, (), "q")


def _sum(plan: Source) -> Aggregate:
    return Aggregate(plan, "sum", Col("x"), (0.0, 5000.0), (), "q")


CASES = [(3, 2, None, 6), (5, 5, 4, 4), (1, 1, None, 1), (4, 3, None, 12)]


@pytest.mark.parametrize(("left", "right", "max_rows", "k"), CASES)
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("build", [_count, _sum], ids=["count", "sum"])
def test_the_map_of_a_join_is_the_map_of_k_rows_per_person(
    left: int, right: int, max_rows: int | None, k: int, kind: str, build: object
) -> None:
    allocation = NoiseAllocation(kind, Fraction(1, 2))  # type: ignore[arg-type]
    joined = build(_joined(left, right, max_rows))  # type: ignore[operator]
    plain = build(Source("c", unit_rows=k))  # type: ignore[operator]
    assert noise_plan(joined, allocation) == noise_plan(plain, allocation)


def _count_pin(kind: str, left: int, right: int, max_rows: int | None, k: int) -> Pin:
    epsilon = Fraction(1)
    allocation = NoiseAllocation(kind, epsilon)  # type: ignore[arg-type]
    ((_, sens, quantum, part),) = noise_plan(_count(_joined(left, right, max_rows)), allocation)
    grid, units, spec = noise_for(sens, quantum, part)
    shift = grid_shift(sens, grid)
    assert (sens, shift, units) == (k, k, k)  # one person: k joined rows removed
    name = f"count on a join ({left}x{right} rows, max_rows={max_rows}), {kind}"
    if kind == "laplace":
        return laplace_pin(name, spec.parameter, shift, part.parameter)
    return zcdp_pin(name, spec.parameter, (shift,), part.parameter)


def _pin_builder(
    kind: str, left: int, right: int, max_rows: int | None, k: int
) -> Callable[[], Pin]:
    return lambda: _count_pin(kind, left, right, max_rows, k)


PINS = register(
    {
        f"count on a join {left}x{right}, max_rows={max_rows}, {kind}": _pin_builder(
            kind, left, right, max_rows, k
        )
        for left, right, max_rows, k in CASES
        for kind in ("laplace", "gaussian")
    }
)


@pytest.mark.parametrize("name", PINS)
def test_a_count_on_a_join_is_pinned(name: str) -> None:
    assert_pinned(name)


def test_semi_and_anti_joins_count_the_left_limit() -> None:
    for how in ("semi", "anti"):
        assert _joined(3, 7, None, how).unit_rows == 3
    assert _joined(3, 7, None, "outer").unit_rows == 21


def test_the_dropped_rows_count_the_product_minus_the_bound() -> None:
    """One person has at most m_L·m_R joined rows, k kept: at most m_L·m_R − k dropped."""
    allocation = NoiseAllocation("laplace", Fraction(1))
    dropped = _count(_joined(5, 3, 4, rows="dropped"))
    assert dropped.plan.unit_rows == 11  # type: ignore[union-attr]
    assert noise_plan(dropped, allocation) == noise_plan(
        _count(Source("c", unit_rows=11)), allocation
    )
