"""The undeclared cell of a group-by: pinned exactly (docs/proofs/undeclared_cell.md).

One row per person (k = 1): the cell is a row count at the *whole* allocation,
whatever the statistic (a count cell even in a sum, a mean or a variance).
A row is in exactly one cell, so a neighbour moves either the declared
releases or this count, never both; the count's worst neighbour (one
undeclared row added) is a shift of 1, and the pins below show that its loss
is the allocation exactly (within at the stated noise, over with 0.1% less).

A privacy unit of k > 1 rows: the cell is one more cell of the first
measure's vector, whose noise covers ⌊kw/g⌋ + min(k, C + 1) grid units; the
pins put a unit's rows one per cell on C declared cells and the undeclared
one (the L1 worst case) and show the map holds, is tight, and would fail
without the extra cell in the spread.
"""

from __future__ import annotations

from fractions import Fraction
from functools import partial

import pytest

from dpframe.accounting.accountants import ApproxDPAccountant
from dpframe.mechanisms.calibration.additive import noise_for
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.moments.aggregates import aggregate_noise
from dpframe.mechanisms.moments.undeclared import UndeclaredNoise, first_spread
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, GroupKey, Source
from dpframe.plan.privacy import Budget, PrivacyRequest
from tests.privacy_maps.pins import (
    Pin,
    assert_pinned,
    gaussian_hockey_pin,
    grid_shift,
    laplace_pin,
    register,
    zcdp_pin,
)

BOUNDS = {"count": None, "sum": (0.0, 5000.0), "mean": (0.0, 5000.0), "var": (-3.0, 7.5)}


def _grouped(statistic: str, cells: int = 4, unit_rows: int = 1) -> Aggregate:
    bounds = BOUNDS[statistic]
    expr = None if bounds is None else Col("x")
    key = GroupKey("g", Col("g"), tuple(f"k{i}" for i in range(cells)))
    source = Source("d", unit_rows=unit_rows)
    return Aggregate(source, statistic, expr, bounds, (key,), "q", undeclared=True)  # type: ignore[arg-type]


def _cell(agg: Aggregate, allocation: NoiseAllocation) -> UndeclaredNoise:
    planned = aggregate_noise(agg, allocation).undeclared
    assert planned is not None
    return planned


# -- one row per person: the whole allocation, a shift of one row ----------------------


def _alone_laplace(statistic: str, epsilon: Fraction) -> Pin:
    allocation = NoiseAllocation("laplace", epsilon)
    cell = _cell(_grouped(statistic), allocation)
    grid, units, spec = cell.noise
    assert (grid, units, cell.weight, cell.shared) == (1, 1, 1, False)
    assert cell.allocation == allocation  # the whole allocation, not a measure's share
    name = f"undeclared cell of a grouped {statistic}, Laplace, ε={epsilon}"
    return laplace_pin(name, spec.parameter, 1, epsilon)


def _alone_zcdp(statistic: str, rho: Fraction) -> Pin:
    cell = _cell(_grouped(statistic), NoiseAllocation("gaussian", rho))
    grid, units, spec = cell.noise
    assert (grid, units, cell.shared) == (1, 1, False)
    name = f"undeclared cell of a grouped {statistic}, Gaussian, ρ={rho}"
    return zcdp_pin(name, spec.parameter, (1,), rho)


def _alone_approx() -> Pin:
    epsilon, delta = Fraction(1), Fraction(1, 10**6)
    accountant = ApproxDPAccountant(Budget(10, Fraction(1, 1000)))
    _, allocation = accountant.allocate(PrivacyRequest(epsilon=epsilon, delta=delta))
    cell = _cell(_grouped("mean"), allocation)
    assert cell.noise == noise_for(1, 1.0, allocation)
    name = "undeclared cell of a grouped mean, approx-DP Gaussian, (1, 1e-06)"
    # The same declared slack as every approximate-DP Gaussian count (zCDP conversion).
    return gaussian_hockey_pin(
        name, cell.noise[2].parameter, 1, epsilon, delta, Fraction(1264, 1000)
    )


ALONE = register(
    {
        **{
            f"undeclared cell, grouped {s}, Laplace, ε={e}": partial(_alone_laplace, s, e)
            for s in ("count", "sum", "mean", "var")
            for e in (Fraction(1), Fraction(1, 10))
        },
        **{
            f"undeclared cell, grouped {s}, Gaussian, ρ=1/2": partial(
                _alone_zcdp, s, Fraction(1, 2)
            )
            for s in ("count", "mean")
        },
        "undeclared cell, grouped mean, approx-DP (1, 1e-6)": _alone_approx,
    }
)


@pytest.mark.parametrize("name", ALONE)
def test_the_cell_alone_spends_the_whole_allocation_exactly(name: str) -> None:
    """At the stated noise the loss of one undeclared row is within the charge; with 0.1%
    less noise it is over: the cell uses the per-cell budget, no more and no less."""
    assert_pinned(name)


@pytest.mark.parametrize("statistic", ["count", "sum", "mean", "var"])
def test_the_declared_cells_keep_their_noise(statistic: str) -> None:
    """With one row per person the declared measures' noise is what it was without the cell."""
    allocation = NoiseAllocation("laplace", Fraction(1))
    agg = _grouped(statistic)
    plain = Aggregate(agg.plan, agg.statistic, agg.expr, agg.bounds, agg.by, agg.label)
    assert aggregate_noise(agg, allocation).noise == aggregate_noise(plain, allocation).noise
    assert aggregate_noise(plain, allocation).undeclared is None


# -- a privacy unit of k rows: one more cell of the first measure -------------------------


def _unit_sum(k: int, kind: str, spread: int | None = None) -> tuple[int, int, Fraction, Fraction]:
    """(worst move over the C = k − 1 declared cells and the undeclared one, Δ_u, noise, share).

    Each of the unit's k rows sits in its own cell at the upper bound (an
    undeclared row weighs the sum's per-row sensitivity, like a row there).
    ``spread`` overrides the cell's spread (to show the map without the extra cell).
    """
    param = Fraction(1) if kind == "laplace" else Fraction(1, 10)
    allocation = NoiseAllocation(kind, param)  # type: ignore[arg-type]
    agg = _grouped("sum", cells=k - 1, unit_rows=k)
    cell = _cell(agg, allocation)
    assert cell.shared and cell.allocation == allocation
    assert first_spread(agg) == k  # min(k, C + 1): the undeclared cell is reached too
    planned = aggregate_noise(agg, allocation)
    assert planned.noise[0] == cell.noise  # the undeclared cell is a cell of the sum's vector
    per_row = planned.sensitivities[0] // k
    assert cell.weight == per_row
    reach = first_spread(agg) if spread is None else spread
    grid, units, spec = noise_for(cell.sensitivity, cell.quantum, allocation, reach)
    return k * grid_shift(per_row, grid), units, spec.parameter, param


def _unit_laplace(k: int) -> Pin:
    shift, units, parameter, epsilon = _unit_sum(k, "laplace")
    assert shift == units  # the worst move is exactly the calibrated sensitivity
    name = f"grouped sum + undeclared cell, unit of {k} rows over {k} cells, Laplace"
    return laplace_pin(name, parameter, shift, epsilon)


UNITS = register({"undeclared cell, unit of 2 rows, Laplace": lambda: _unit_laplace(2)})


@pytest.mark.parametrize("name", UNITS)
def test_a_unit_over_declared_cells_and_the_undeclared_one_stays_within_epsilon(name: str) -> None:
    """k = 2, one declared cell: a row at the bound in it and one undeclared row move the
    rounded sum vector by exactly Δ_u = ⌊2w/g⌋ + 2 (tight)."""
    assert_pinned(name)


@pytest.mark.parametrize("k", [3, 10, 100])
def test_larger_units_over_every_cell_stay_within_epsilon(k: int) -> None:
    """One row per cell (C = k − 1 declared cells and the undeclared one): within ε."""
    shift, units, parameter, epsilon = _unit_sum(k, "laplace")
    assert shift <= units
    pin = laplace_pin(f"unit of {k}", parameter, shift, epsilon)
    assert pin.within(), pin


def test_without_the_extra_cell_in_the_spread_the_unit_would_exceed_epsilon() -> None:
    """The +1 cell is needed: calibrated to min(k, C) = 1 cell, the same move is over ε."""
    shift, units, parameter, epsilon = _unit_sum(2, "laplace", spread=1)
    assert shift == units + 1
    pin = laplace_pin("without the extra cell", parameter, shift, epsilon)
    assert not pin.within(), pin


@pytest.mark.parametrize("k", [2, 10])
def test_a_unit_over_declared_cells_and_the_undeclared_one_is_within_rho(k: int) -> None:
    shift, units, parameter, rho = _unit_sum(k, "gaussian")
    per_cell = shift // k
    assert k * per_cell**2 <= units**2  # L2 of the spread move, far below Δ_u
    pin = zcdp_pin(f"grouped sum + undeclared, unit of {k}", parameter, (per_cell,) * k, rho)
    assert pin.within(), pin


@pytest.mark.parametrize("statistic", ["count", "mean", "var"])
def test_with_units_the_cell_joins_the_first_count_at_its_share(statistic: str) -> None:
    """count: the row count at the whole ε; mean and var: the first count at ε/20."""
    allocation = NoiseAllocation("laplace", Fraction(1))
    agg = _grouped(statistic, cells=4, unit_rows=3)
    cell = _cell(agg, allocation)
    share = {"count": Fraction(1), "var": Fraction(1, 20), "mean": Fraction(1, 20)}[statistic]
    assert (cell.weight, cell.sensitivity, cell.quantum) == (1, 3, 1.0)
    assert cell.allocation == NoiseAllocation("laplace", share)
    assert cell.noise == noise_for(3, 1.0, cell.allocation, 3)
    # A count has no grid: its loss for the unit's rows over C + 1 cells is 3/(3/share) = share.
    pin = laplace_pin("first count", cell.noise[2].parameter, 3, share)
    assert pin.within() and pin.over(), pin
