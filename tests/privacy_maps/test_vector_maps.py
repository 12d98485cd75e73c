"""The Gaussian vector mechanism, the KDE and the regressions: exact Rényi divergences.

Stated guarantees: ``gaussian_vector`` is ρ-zCDP for a vector of ℓ2
sensitivity Δ (rounded to a grid g, the integer move is at most
Δ/g + √k grid units, ≤ ``sensitivity_units``, and σ² ≥ units²/(2ρ));
``release_kernel_sums`` releases the whitened kernel sums with it (RKHS
sensitivity (2πh²)^(−1/2), widened by 1%); ``fit_composition`` makes T such
releases at ρ/T; ``fit_iteration`` adds γ·(K + U) noise (K discrete
Gaussian (σ/γ)², U uniform on 2³² points of [−½, ½)) whose Rényi divergence
at a shift a is claimed to be at most that of N(0, σ²) at ‖a‖ + γ√d.

The worst integer move of a rounded coordinate that moves by x (in grid
units) is ⌊|x|⌋ + 1 (both ends rounding apart); the pins use that vector.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from functools import partial

import numpy as np
import pytest
from scipy.linalg import solve_triangular

from dpframe.audit.exact_divergence import dec, gaussian_shift_renyi, precise
from dpframe.mechanisms.calibration.gaussian_vector import vector_noise
from dpframe.mechanisms.models.kde import _cholesky, kde_noise, kernel_sums
from dpframe.mechanisms.models.regression import iteration_sigma, loss_spec, smoothed_gaussian
from dpframe.noise import SecureRandom, coarsen_up
from tests.privacy_maps.pins import ALPHAS, LESS, Pin, assert_pinned, register, zcdp_pin


def _worst_moves(move: np.ndarray, grid: float) -> tuple[int, ...]:
    return tuple(math.floor(abs(x) / grid) + 1 if x else 0 for x in move)


# Declared slack: sensitivity_units / ‖worst integer move‖₂, rounded down to 6 digits.  For
# the vector it is the ceiling in sensitivity_units and the √k term (an axis move gains at
# most 1, not √k); for the KDE also the 1% widening for floating-point error in L⁻¹ and
# the RKHS bound (the grid's sums move by a little less than the RKHS norm).
SLACK = {
    "vector axis": Fraction(40039, 40000),
    "vector spread 8": Fraction(1000503, 1000000),
    "vector spread 16": Fraction(1000243, 1000000),
    "regression rdp step": Fraction(250109, 250000),
    "kde h=1": Fraction(252677, 250000),
    "kde h=5": Fraction(252627, 250000),
}


def _slack(units: int, moves: tuple[int, ...]) -> Fraction:
    """sensitivity_units / ‖moves‖₂, rounded down to 6 digits (checked against ``SLACK``)."""
    norm = math.sqrt(sum(m * m for m in moves))
    return Fraction(math.floor(units / norm * 10**6), 10**6)


def _vector_pin(sensitivity: float, size: int, rho: Fraction, spread: bool) -> Pin:
    noise = vector_noise(sensitivity, size, rho)
    if spread:  # the same move in every coordinate: the rounding adds √k in ℓ2
        move = np.full(size, sensitivity / math.sqrt(size))
    else:
        move = np.zeros(size)
        move[0] = sensitivity
    moves = _worst_moves(move, noise.grid)
    units = noise.sensitivity_units
    assert math.sqrt(sum(m * m for m in moves)) <= units
    slack = _slack(units, moves)
    kind = "spread" if spread else "axis"
    name = f"Gaussian vector Δ={sensitivity:g}, {size} coords, ρ={rho}, {kind} move"
    return zcdp_pin(name, noise.sigma2_units, moves, rho, slack)


VECTOR = register(
    {
        "vector axis": lambda: _vector_pin(1.0, 1, Fraction(1, 2), False),
        "vector spread 8": lambda: _vector_pin(3.7, 8, Fraction(1, 10), True),
        "vector spread 16": lambda: _vector_pin(1.0, 16, Fraction(1, 2), True),
        # fit_composition's per-step release: L = R + 1 = 3 (radius 2), d + 1 = 3, ρ/T = (9/20)/50
        "regression rdp step": lambda: _vector_pin(3.0, 3, Fraction(9, 20) / 50, True),
    }
)


@pytest.mark.parametrize("name", VECTOR)
def test_gaussian_vector_map_is_exact(name: str) -> None:
    assert assert_pinned(name).slack == SLACK[name]


def _kde_pin(h: float, size: int, rho: Fraction) -> Pin:
    grid = np.linspace(0, 20, size)
    factor = _cholesky(grid, h)
    noise = kde_noise(h, 1, size, rho)
    worst: tuple[int, ...] = ()
    for x in np.linspace(-2, 22, 97):  # one row added at x: the whitened move
        move = solve_triangular(factor, kernel_sums(np.array([x]), grid, h), lower=True)
        moves = _worst_moves(move, noise.vector.grid)
        if sum(m * m for m in moves) > sum(m * m for m in worst):
            worst = moves
    units = noise.vector.sensitivity_units
    slack = _slack(units, worst)
    name = f"KDE h={h:g}, {size} grid points, ρ={rho} (worst of 97 positions)"
    return zcdp_pin(name, noise.vector.sigma2_units, worst, rho, slack)


KDE = register(
    {
        "kde h=1": lambda: _kde_pin(1.0, 32, Fraction(1, 10)),
        "kde h=5": lambda: _kde_pin(5.0, 16, Fraction(1, 2)),
    }
)


@pytest.mark.parametrize("name", KDE)
def test_kde_map_is_within_rho_with_its_rkhs_slack(name: str) -> None:
    """Declared slack: the 1% float widening and the RKHS bound (the move of a grid's sums)."""
    from tests.privacy_maps.pins import CASES

    pin = CASES[name]()
    assert pin.within(), pin
    assert pin.slack == SLACK[name]
    assert pin.over(), pin


# -- amplification by iteration: the smoothed discrete Gaussian ----------------------------


def _smoothed_renyi(sigma2_units: Fraction, shift: Fraction, alpha: Fraction) -> Decimal:
    """D_α(X + b ‖ X), X = K + U, b = m + f on U's lattice (f = i/2³²), in grid units.

    X + b = K + m + I + V with V uniform on U's lattice again and I = 1 on a
    fraction f of V's values, so D_α = ln((1−f)e^{(α−1)D(m)} + f·e^{(α−1)D(m+1)})/(α−1),
    D(j) the discrete Gaussian's divergence at the integer shift j.
    """
    assert (shift * 2**32).denominator == 1, "the shift must lie on U's lattice"
    m = math.floor(shift)
    f = dec(shift - m)
    a = dec(alpha)
    with precise():
        d0 = gaussian_shift_renyi(sigma2_units, m, alpha).value if m else Decimal(0)
        d1 = gaussian_shift_renyi(sigma2_units, m + 1, alpha).value
        mix = (1 - f) * ((a - 1) * d0).exp() + f * ((a - 1) * d1).exp()
        return mix.ln() / (a - 1)


def _iteration_case(dim: int) -> tuple[float, float, Fraction, float]:
    spec = loss_spec("squared", 2.0)
    rho, passes = Fraction(1, 5), 2
    sigma, grid = iteration_sigma(spec, dim, rho, passes)
    sigma2_units = coarsen_up(Fraction(sigma / grid) ** 2)  # as smoothed_gaussian computes it
    return spec.lipschitz, grid, sigma2_units, float(rho / passes)


@pytest.mark.parametrize("dim", [1, 3])
def test_iteration_sigma_spends_rho_per_pass_tightly(dim: int) -> None:
    spec = loss_spec("squared", 2.0)
    sigma, grid = iteration_sigma(spec, dim, Fraction(1, 5), 2)
    per_pass = (2 * spec.lipschitz + grid * math.sqrt(dim)) ** 2 / (2 * sigma**2)
    assert 2 * per_pass <= 0.2 * (1 + 1e-12)
    assert 2 * per_pass / float(LESS) ** 2 > 0.2


def _aligned_pin(dim: int) -> Pin:
    """A gradient move of norm 2L spread over the coordinates, rounded down to U's lattice."""
    lipschitz, grid, sigma2_units, per_pass = _iteration_case(dim)
    per = Fraction(math.floor(2 * lipschitz / math.sqrt(dim) / grid * 2**32), 2**32)

    def curve(sigma2: Fraction) -> Decimal:
        return max(dim * _smoothed_renyi(sigma2, per, a) / dec(a) for a in ALPHAS[:9])

    name = f"smoothed Gaussian step, d={dim}, lattice-aligned move 2L/√d per coordinate"
    stated = dec(Fraction(per_pass))
    return Pin(name, "max_α D_α/α", stated, curve(sigma2_units), curve(sigma2_units * LESS**2))


ALIGNED = register({f"smoothed step d={d}": partial(_aligned_pin, d) for d in (1, 3)})


@pytest.mark.parametrize("name", ALIGNED)
def test_smoothed_noise_within_the_claim_for_lattice_shifts(name: str) -> None:
    from tests.privacy_maps.pins import CASES

    assert CASES[name]().within()
    assert_pinned(name)


def test_real_shifts_are_rounded_onto_the_noise_lattice() -> None:
    """The noise lives on γ·2⁻³³·(odd integers): a real gradient shift would leave its
    support (infinite divergence), so fit_iteration rounds gradients to γ·2⁻³² first."""
    sigma, grid = iteration_sigma(loss_spec("squared", 2.0), 1, Fraction(1, 5), 2)
    draws = smoothed_gaussian(sigma, grid, 2000, SecureRandom())
    lattice = draws / grid * 2**33
    assert np.all(lattice == np.round(lattice)) and np.all(np.round(lattice) % 2 == 1)
    real = grid * 2**-34  # a real move of the gradient, a quarter of the lattice step
    assert not np.any(np.isin((draws + real) / grid * 2**33, lattice))  # disjoint, unrounded
    unit = grid * 2.0**-32
    for shift in (real, 3 * real, 0.7 * grid, 5.3 * grid):
        rounded = np.rint(shift / unit) * unit
        moved = (draws + rounded) / grid * 2**33
        assert np.all(moved == np.round(moved)) and np.all(np.round(moved) % 2 == 1)
        assert abs(rounded - shift) <= unit / 2
