"""A merge with a public table whose key repeats: pinned exactly (docs/proofs/private_joins.md).

Each private row matches at most ``d`` rows of the public table (``d``: the
most rows one key has), all of its owner: a unit of ``m`` rows contributes at
most ``m·d`` rows, or ``max_rows`` per ID after the engine's truncation.  So a
release on the merge is the release on a frame of that many rows per unit:
its map must be exactly that one (checked against a plain source), and the
worst neighbour of a count is a shift of ``m·d`` (or ``max_rows``), at which the
map holds and is tight (over with 0.1% less noise).
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
from dpframe.plan.joins import public_join, public_name
from dpframe.plan.nodes import PUBLIC_VIEW, Aggregate, Source
from dpframe.plan.schema import Schema
from tests.privacy_maps.pins import Pin, assert_pinned, grid_shift, laplace_pin, register, zcdp_pin

FRAME = Schema((ColumnInfo("pid", "numeric", "int64"), ColumnInfo("x", "numeric", "float64")))
TABLE = Schema((ColumnInfo("pid", "numeric", "int64"), ColumnInfo("w", "numeric", "float64")))


def _merged(rows: int, repeats: int, max_rows: int | None, how: str = "left") -> Source:
    """A frame of ``rows`` rows per unit (an ID column when rows > 1) merged with a table."""
    unit = "pid" if rows > 1 else ""
    frame = Source("a", unit_rows=rows, view="u", unit_column=unit, id_space=unit)
    table = Source(public_name("f" * 32, repeats), unit_rows=repeats, view=PUBLIC_VIEW)
    source, _ = public_join(frame, FRAME, table, TABLE, how=how, on="pid", max_rows=max_rows)
    return source


def _count(plan: Source) -> Aggregate:
    return Aggregate(plan, "count", None, None, (), "q")


def _sum(plan: Source) -> Aggregate:
    return Aggregate(plan, "sum", Col("x"), (0.0, 5000.0), (), "q")


#: (rows per unit, most rows per key, max_rows, the stability)
CASES = [(1, 3, None, 3), (3, 2, None, 6), (5, 4, 7, 7), (2, 1, None, 2)]


@pytest.mark.parametrize(("rows", "repeats", "max_rows", "k"), CASES)
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("build", [_count, _sum], ids=["count", "sum"])
def test_the_map_of_a_repeating_merge_is_the_map_of_k_rows_per_unit(
    rows: int, repeats: int, max_rows: int | None, k: int, kind: str, build: object
) -> None:
    allocation = NoiseAllocation(kind, Fraction(1, 2))  # type: ignore[arg-type]
    merged = build(_merged(rows, repeats, max_rows))  # type: ignore[operator]
    plain = build(Source("c", unit_rows=k))  # type: ignore[operator]
    assert noise_plan(merged, allocation) == noise_plan(plain, allocation)


def test_a_smaller_stability_is_never_stated() -> None:
    for rows, repeats, max_rows, k in CASES:
        assert _merged(rows, repeats, max_rows).unit_rows == k
        assert _merged(rows, repeats, None, "semi").unit_rows == rows  # semi: no repeats


def _count_pin(kind: str, rows: int, repeats: int, max_rows: int | None, k: int) -> Pin:
    allocation = NoiseAllocation(kind, Fraction(1))  # type: ignore[arg-type]
    ((_, sens, quantum, part),) = noise_plan(_count(_merged(rows, repeats, max_rows)), allocation)
    grid, units, spec = noise_for(sens, quantum, part)
    shift = grid_shift(sens, grid)
    assert (sens, shift, units) == (k, k, k)  # one unit: up to k merged rows removed
    name = f"count on a merge with keys repeating {repeats}x ({rows} rows, max_rows={max_rows})"
    if kind == "laplace":
        return laplace_pin(f"{name}, laplace", spec.parameter, shift, part.parameter)
    return zcdp_pin(f"{name}, gaussian", spec.parameter, (shift,), part.parameter)


def _pin_builder(
    kind: str, rows: int, repeats: int, max_rows: int | None, k: int
) -> Callable[[], Pin]:
    return lambda: _count_pin(kind, rows, repeats, max_rows, k)


PINS = register(
    {
        f"count on a merge, keys repeating {repeats}x, {rows} rows, max_rows={max_rows}, {kind}": (
            _pin_builder(kind, rows, repeats, max_rows, k)
        )
        for rows, repeats, max_rows, k in CASES
        for kind in ("laplace", "gaussian")
    }
)


@pytest.mark.parametrize("name", PINS)
def test_a_count_on_a_repeating_merge_is_pinned(name: str) -> None:
    assert_pinned(name)
