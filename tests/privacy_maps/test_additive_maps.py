"""Counts, sums and variances: discrete Laplace (pure DP), discrete Gaussian (zCDP, approx DP).

Every scale is the library's own: ``noise_plan`` (measures, sensitivities in
quanta, shares) then ``noise_for`` (grid, sensitivity in grid units Δ_u, and
the noise).  The worst-case neighbouring inputs are the exact sums x and
x + Δ (Δ the measure's sensitivity in quanta, one row added at the bound
furthest from the centre); the worst move of the *rounded* sum over every
residue of x is :func:`~tests.privacy_maps.pins.grid_shift`.  Declared slack
(``SLACK``): when Δ is a multiple of the grid g, no residue moves the
rounded sum by Δ_u = Δ/g + 1, only by Δ/g, so the noise is Δ_u/(Δ/g) larger
than needed (at most 1 + 2⁻¹⁰, the grid widening the docstrings state).
"""

from __future__ import annotations

from fractions import Fraction
from functools import partial

import pytest

from dpframe.accounting.accountants import ApproxDPAccountant
from dpframe.mechanisms.calibration.additive import NoiseSpec, noise_for
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.moments.aggregates import aggregate_noise, noise_plan
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, GroupKey, Source
from dpframe.plan.privacy import Budget, PrivacyRequest
from tests.privacy_maps.pins import (
    Pin,
    assert_pinned,
    gaussian_hockey_pin,
    grid_shift,
    laplace_hockey_pin,
    laplace_pin,
    register,
    zcdp_pin,
)

# Declared slack of the sum's grid widening, per (bounds, ε or ρ): Δ_u / worst achievable shift.
SLACK = {
    ((0.0, 5000.0), Fraction(1)): Fraction(1251, 1250),
    ((-3.0, 7.5), Fraction(3)): Fraction(3841, 3840),
    ((0.0, 100000.0), Fraction(1)): Fraction(1),
    ((0.0, 5000.0), Fraction(1, 10)): Fraction(1251, 1250),  # zCDP ρ = 1/10
}
# Declared slack of the approximate-DP Gaussian (ρ from (ε, δ) by the zCDP conversion,
# Bun & Steinke 2016 Prop. 1.3): the exact δ(ε) of the discrete Gaussian stays below δ
# with σ divided by this factor (found by bisection on the exact divergence).
APPROX_SLACK = {
    (Fraction(1), Fraction(1, 10**6)): Fraction(1264, 1000),
    (Fraction(1, 10), Fraction(1, 10**6)): Fraction(1450, 1000),
    (Fraction(3), Fraction(1, 10**9)): Fraction(1139, 1000),
}


def _aggregate(
    statistic: str, bounds: tuple[float, float] | None, unit_rows: int = 1, cells: int = 1
) -> Aggregate:
    by = (GroupKey("g", Col("g"), tuple(range(cells))),) if cells > 1 else ()
    expr = None if bounds is None else Col("x")
    source = Source("d", unit_rows=unit_rows)
    return Aggregate(source, statistic, expr, bounds, by, "q")  # type: ignore[arg-type]


def _one_part(
    statistic: str, bounds: tuple[float, float] | None, allocation: NoiseAllocation
) -> tuple[int, int, NoiseSpec, NoiseAllocation]:
    """(worst shift in grid units, Δ_u, noise, share) of a one-measure statistic."""
    ((_, sens, quantum, part),) = noise_plan(_aggregate(statistic, bounds), allocation)
    grid, units, spec = noise_for(sens, quantum, part)
    return grid_shift(sens, grid), units, spec, part


# -- pure DP: discrete Laplace ---------------------------------------------------------


def _count_laplace(epsilon: Fraction) -> Pin:
    shift, units, spec, part = _one_part("count", None, NoiseAllocation("laplace", epsilon))
    assert (shift, units) == (1, 1)
    return laplace_pin(f"count, Laplace, ε={epsilon}", spec.parameter, shift, part.parameter)


def _sum_laplace(bounds: tuple[float, float], epsilon: Fraction) -> Pin:
    shift, units, spec, part = _one_part("sum", bounds, NoiseAllocation("laplace", epsilon))
    slack = SLACK[bounds, epsilon]
    assert Fraction(units, shift) == slack  # the declared slack is the enumerated one
    return laplace_pin(
        f"sum {bounds}, Laplace, ε={epsilon}", spec.parameter, shift, part.parameter, slack
    )


def _count_hockey() -> Pin:
    shift, _, spec, part = _one_part("count", None, NoiseAllocation("laplace", Fraction(1, 2)))
    return laplace_hockey_pin("count, Laplace, ε=1/2, δ(ε)", spec.parameter, shift, part.parameter)


def _sum_hockey() -> Pin:
    bounds = (0.0, 100000.0)
    shift, _, spec, part = _one_part("sum", bounds, NoiseAllocation("laplace", Fraction(1)))
    name = "sum (0, 1e5), Laplace, ε=1, δ(ε)"
    return laplace_hockey_pin(name, spec.parameter, shift, part.parameter)


LAPLACE = register(
    {
        "count, Laplace, ε=1": lambda: _count_laplace(Fraction(1)),
        "count, Laplace, ε=1/10": lambda: _count_laplace(Fraction(1, 10)),
        "count, Laplace, ε=3": lambda: _count_laplace(Fraction(3)),
        "sum (0, 5000), Laplace, ε=1": lambda: _sum_laplace((0.0, 5000.0), Fraction(1)),
        "sum (-3, 7.5), Laplace, ε=3": lambda: _sum_laplace((-3.0, 7.5), Fraction(3)),
        "sum (0, 1e5), Laplace, ε=1": lambda: _sum_laplace((0.0, 100000.0), Fraction(1)),
    }
)
HOCKEY = register(
    {"count, Laplace, ε=1/2, δ(ε)": _count_hockey, "sum (0, 1e5), Laplace, δ(ε)": _sum_hockey}
)


@pytest.mark.parametrize("name", LAPLACE)
def test_laplace_map_is_exact(name: str) -> None:
    assert_pinned(name)


@pytest.mark.parametrize("name", HOCKEY)
def test_laplace_hockey_stick_is_zero_at_the_stated_scale_only(name: str) -> None:
    pin = assert_pinned(name)
    assert pin.at_less > 10**-4  # 0.1% less noise leaks about ε·0.1%/2 of δ, both directions


# var and std: every release on both paths, composed exactly, is in
# tests/privacy_maps/test_variance_maps.py (the centre is chosen privately).


# -- zCDP: discrete Gaussian -------------------------------------------------------------


def _count_zcdp(rho: Fraction) -> Pin:
    shift, _, spec, part = _one_part("count", None, NoiseAllocation("gaussian", rho))
    return zcdp_pin(f"count, Gaussian, ρ={rho}", spec.parameter, (shift,), part.parameter)


def _sum_zcdp(bounds: tuple[float, float], rho: Fraction, slack: Fraction) -> Pin:
    shift, units, spec, _ = _one_part("sum", bounds, NoiseAllocation("gaussian", rho))
    assert Fraction(units, shift) == slack
    return zcdp_pin(f"sum {bounds}, Gaussian, ρ={rho}", spec.parameter, (shift,), rho, slack)


ZCDP = register(
    {
        "count, Gaussian, ρ=1/2": lambda: _count_zcdp(Fraction(1, 2)),
        "count, Gaussian, ρ=1/1000": lambda: _count_zcdp(Fraction(1, 1000)),
        "sum (0, 5000), Gaussian, ρ=1/10": lambda: _sum_zcdp(
            (0.0, 5000.0), Fraction(1, 10), SLACK[(0.0, 5000.0), Fraction(1, 10)]
        ),
        "sum (0, 1e5), Gaussian, ρ=1/2": lambda: _sum_zcdp(
            (0.0, 100000.0), Fraction(1, 2), Fraction(1)
        ),
    }
)


@pytest.mark.parametrize("name", ZCDP)
def test_gaussian_map_is_exact_in_renyi(name: str) -> None:
    assert_pinned(name)


def _approx(epsilon: Fraction, delta: Fraction) -> Pin:
    accountant = ApproxDPAccountant(Budget(10, Fraction(1, 1000)))
    _, allocation = accountant.allocate(PrivacyRequest(epsilon=epsilon, delta=delta))
    assert allocation.kind == "gaussian"
    grid, units, spec = noise_for(1, 1.0, allocation)
    assert (grid, units) == (1, 1)
    slack = APPROX_SLACK[epsilon, delta]
    name = f"count, approx-DP Gaussian, (ε, δ)=({epsilon}, {float(delta):g})"
    return gaussian_hockey_pin(name, spec.parameter, 1, epsilon, delta, slack)


APPROX = register(
    {
        f"count, approx-DP Gaussian, ({e}, {float(d):g})": partial(_approx, e, d)
        for e, d in APPROX_SLACK
    }
)


@pytest.mark.parametrize("name", APPROX)
def test_approximate_dp_gaussian_within_delta_with_declared_slack(name: str) -> None:
    assert_pinned(name)


# -- privacy units: k rows of one unit in k different cells ------------------------------


def _unit_spread(k: int, kind: str) -> tuple[int, int, NoiseSpec, Fraction]:
    """The L1 (Laplace) or squared L2 (Gaussian) move of k grouped sums and the noise."""
    param = Fraction(1) if kind == "laplace" else Fraction(1, 10)
    agg = _aggregate("sum", (0.0, 5000.0), unit_rows=k, cells=k)
    planned = aggregate_noise(agg, NoiseAllocation(kind, param))  # type: ignore[arg-type]
    (sens,), ((grid, units, spec),) = planned.sensitivities, planned.noise
    # The release's own map: each of the k reached cells may round one more grid unit.
    allocation = NoiseAllocation(kind, param)  # type: ignore[arg-type]
    assert (grid, units, spec) == noise_for(sens, planned.measures[0].quantum, allocation, k)
    per_cell = grid_shift(sens // k, grid)  # one row of the unit in each cell
    return per_cell, units, spec, param


@pytest.mark.parametrize("k", [2, 10, 100])
def test_unit_rows_spread_over_cells_stay_within_epsilon(k: int) -> None:
    """Fixed: Δ_u = ⌊kΔ/g⌋ + min(k, cells) (was + 1: 1.0008ε at k=2, 1.0235ε at k=100)."""
    per_cell, _, spec, epsilon = _unit_spread(k, "laplace")
    pin = laplace_pin(f"grouped sum, unit of {k} rows", spec.parameter, k * per_cell, epsilon)
    assert pin.within(), pin


@pytest.mark.parametrize("k", [2, 10, 100])
def test_unit_rows_spread_over_cells_are_within_rho(k: int) -> None:
    """Under zCDP the L2 norm of the spread move is far below Δ_u: no violation."""
    per_cell, units, spec, rho = _unit_spread(k, "gaussian")
    assert k * per_cell**2 <= units**2
    pin = zcdp_pin(f"grouped sum, unit of {k}", spec.parameter, (per_cell,) * k, rho)
    assert pin.within(), pin


@pytest.mark.parametrize("k", [1, 2, 10, 100])
def test_unit_rows_in_one_cell_are_within_epsilon(k: int) -> None:
    agg = _aggregate("sum", (0.0, 5000.0), unit_rows=k)
    ((_, sens, quantum, part),) = noise_plan(agg, NoiseAllocation("laplace", Fraction(1)))
    grid, _, spec = noise_for(sens, quantum, part)
    pin = laplace_pin("sum, one cell", spec.parameter, grid_shift(sens, grid), Fraction(1))
    assert pin.within(), pin
