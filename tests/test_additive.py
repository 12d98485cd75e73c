"""Exact checks of the additive mechanism's calibration: no sampling, so any under-noising fails."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.accounting import NoiseAllocation
from dpframe.mechanisms.calibration.additive import GRID_BITS, noise_for, release_integer_sums
from dpframe.noise import SecureRandom

sensitivities = st.integers(min_value=1, max_value=2**40)
quanta = st.integers(min_value=-30, max_value=10).map(lambda e: 2.0**e)
epsilons = st.fractions(min_value=Fraction(1, 1000), max_value=100, max_denominator=10**6)
rhos = st.fractions(min_value=Fraction(1, 10**6), max_value=50, max_denominator=10**6)


def _check_grid(sensitivity: int, grid_q: int, units: int) -> None:
    assert grid_q >= 1 and grid_q & (grid_q - 1) == 0  # a power of two
    if grid_q == 1:
        assert units == sensitivity
    else:
        # Rounding both neighbours to the grid moves their difference by < 1 grid unit.
        assert units >= math.ceil(sensitivity / grid_q)
        assert sensitivity / grid_q >= 2**GRID_BITS  # so the widening is at most 2**-10


@settings(max_examples=300, deadline=None)
@given(sensitivities, quanta, epsilons)
def test_laplace_scale_is_never_below_sensitivity_over_epsilon(
    sensitivity: int, quantum: float, epsilon: Fraction
) -> None:
    grid_q, units, spec = noise_for(sensitivity, quantum, NoiseAllocation("laplace", epsilon))
    _check_grid(sensitivity, grid_q, units)
    assert spec.parameter >= Fraction(units) / epsilon  # exact: scale t >= Δ_u/ε
    assert spec.grid == grid_q * quantum
    # Accuracy claim: at most (1 + 2**-10) from the grid and 2**-19 from coarsening.
    assert spec.parameter * grid_q <= Fraction(sensitivity) / epsilon * (1 + Fraction(1, 1000))


@settings(max_examples=300, deadline=None)
@given(sensitivities, quanta, rhos)
def test_gaussian_variance_is_never_below_the_zcdp_calibration(
    sensitivity: int, quantum: float, rho: Fraction
) -> None:
    grid_q, units, spec = noise_for(sensitivity, quantum, NoiseAllocation("gaussian", rho))
    _check_grid(sensitivity, grid_q, units)
    assert spec.parameter >= Fraction(units**2) / (2 * rho)  # exact: σ² >= Δ_u²/(2ρ)
    assert spec.parameter * grid_q**2 <= Fraction(sensitivity**2) / (2 * rho) * Fraction(1003, 1000)


def test_released_values_sit_on_the_grid() -> None:
    exact = np.array([123456789.0, -5.0, 0.0, 2.0**40])
    values, spec = release_integer_sums(
        exact, 2**25, 2.0**-10, NoiseAllocation("laplace", Fraction(1, 2)), SecureRandom()
    )
    units = values / spec.grid
    assert np.array_equal(units, np.round(units))
    assert spec.rounding == spec.grid / 2
