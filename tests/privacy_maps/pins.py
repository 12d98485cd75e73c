"""Pins of privacy maps: the exact divergence at the stated noise and at 0.1% less noise.

A *pin* is one privacy map evaluated on its worst-case neighbouring inputs:

* ``at_stated``: an upper bound on the exact divergence at the noise the
  library uses; the map holds when it is at most the stated cost;
* ``at_less``: a lower bound on the exact divergence with 0.1% less noise
  (beyond any declared slack: the noise is multiplied by 0.999 / slack);
  the map is tight when that exceeds the stated cost.

Three measures are used: the exact largest privacy loss (pure ε-DP: at most
ε), the hockey-stick divergence δ(ε) (approximate DP: at most δ), and
max over a grid of α of D_α/α (ρ-zCDP: at most ρ).  Every pin registers
itself in :data:`CASES`, so ``python -m tests.privacy_maps.report`` can
print the table of all of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpframe.audit.exact_divergence import (
    Bound,
    Pmf,
    dec,
    discrete_gaussian,
    gaussian_shift_renyi,
    hockey_stick_shift,
    laplace_max_loss,
    laplace_shift_hockey,
)

IntArray = npt.NDArray[np.int64]

#: 0.1% less noise.
LESS = Fraction(999, 1000)
#: The orders α of every zCDP check (D_α ≤ ρα must hold for all α > 1).
ALPHAS: tuple[Fraction, ...] = tuple(
    Fraction(a)
    for a in ("1.001", "1.01", "1.1", "1.5", "2", "3", "5", "10", "50", "100", "1000", "100000")
)


@dataclass(frozen=True)
class Pin:
    """One privacy map on its worst-case neighbours (see the module docstring)."""

    name: str
    measure: str
    stated: Decimal
    at_stated: Decimal
    at_less: Decimal
    slack: Fraction = Fraction(1)
    note: str = ""

    def within(self) -> bool:
        """The exact divergence at the stated noise is within the stated cost."""
        return self.at_stated <= self.stated

    def over(self) -> bool:
        """With 0.1% less noise (beyond the declared slack) it is over the stated cost."""
        return self.at_less > self.stated


#: Every registered pin, by name (filled as the test modules are imported).
CASES: dict[str, Callable[[], Pin]] = {}


def case(name: str) -> Callable[[Callable[[], Pin]], Callable[[], Pin]]:
    """Register a pin-building function under ``name``."""

    def register(build: Callable[[], Pin]) -> Callable[[], Pin]:
        CASES[name] = build
        return build

    return register


def register(builds: dict[str, Callable[[], Pin]]) -> list[str]:
    """Register several pin-building functions; return their names (to parametrize a test)."""
    CASES.update(builds)
    return list(builds)


def assert_pinned(name: str) -> Pin:
    """Build a registered pin and assert it holds at the stated noise and is tight."""
    pin = CASES[name]()
    assert pin.within(), pin
    assert pin.over(), pin
    return pin


def grid_shift(sensitivity: int, grid: int) -> int:
    """The largest change of a grid-rounded sum when the exact sum moves by ``sensitivity``.

    Enumerates every residue of the exact sum modulo 2·grid under both of the
    library's roundings: half up (``floor((x + g/2)/g)``, the int64 path) and
    half to even (``rint(x/g)``, the float path); a neighbour moves the sum
    by at most Δ and the roundings are monotone, so Δ is the worst move.
    """
    if grid == 1:
        return sensitivity
    x = np.arange(2 * grid, dtype=np.int64)

    def half_up(v: IntArray) -> IntArray:
        return np.floor_divide(v + grid // 2, grid)

    def half_even(v: IntArray) -> IntArray:
        return np.rint(v / grid).astype(np.int64)

    up = int((half_up(x + sensitivity) - half_up(x)).max())
    even = int((half_even(x + sensitivity) - half_even(x)).max())
    return max(up, even)


def laplace_pin(
    name: str,
    scale: Fraction,
    shift: int,
    epsilon: Fraction,
    slack: Fraction = Fraction(1),
    note: str = "",
) -> Pin:
    """Pure ε-DP of discrete Laplace noise of scale t on a worst-case integer shift.

    The measure is the exact largest privacy loss (a rational number); 0.1%
    less noise is the scale t·0.999/slack.
    """
    stated = laplace_max_loss(scale, shift)
    less = laplace_max_loss(scale * LESS / slack, shift)
    return Pin(name, "max loss", dec(epsilon), dec(stated), dec(less), slack, note)


def laplace_hockey_pin(
    name: str,
    scale: Fraction,
    shift: int,
    epsilon: Fraction,
    delta: Fraction = Fraction(0),
    slack: Fraction = Fraction(1),
    note: str = "",
) -> Pin:
    """δ(ε) of discrete Laplace noise on a worst-case integer shift (closed form).

    Both directions are equal (reflection k ↦ s − k maps one onto the other);
    the closed form is checked against the summed pmf in ``test_engine.py``.

    For a pure-DP map (δ = 0) the stated δ is twice the computation's error
    bound, so the map holds when the computed divergence is numerically zero
    (at most the error bound), and 0.1% less noise must give a divergence well
    above it.
    """
    at = laplace_shift_hockey(scale, shift, epsilon)  # symmetric: one direction suffices
    low = laplace_shift_hockey(scale * LESS / slack, shift, epsilon)
    stated = dec(delta) if delta > 0 else 2 * at.error
    measure = "δ(ε)" if delta > 0 else "δ(ε) (stated 0: tolerance 2× error bound)"
    return Pin(name, measure, stated, at.upper, low.lower, slack, note)


def _hockey(noise: Pmf, shift: int, epsilon: Fraction) -> Bound:
    forward = hockey_stick_shift(noise.shifted(shift), noise, epsilon)
    backward = hockey_stick_shift(noise, noise.shifted(shift), epsilon)
    return max(forward, backward, key=lambda b: b.value)


def gaussian_hockey_pin(
    name: str,
    sigma2: Fraction,
    shift: int,
    epsilon: Fraction,
    delta: Fraction,
    slack: Fraction = Fraction(1),
    note: str = "",
) -> Pin:
    """(ε, δ)-DP of discrete Gaussian noise σ² on a worst-case integer shift (both directions)."""
    at = _hockey(discrete_gaussian(sigma2), shift, epsilon)
    low = _hockey(discrete_gaussian(sigma2 * (LESS / slack) ** 2), shift, epsilon)
    return Pin(name, "δ(ε)", dec(delta), at.upper, low.lower, slack, note)


def renyi_curve(sigma2: Fraction, shifts: tuple[int, ...], alpha: Fraction) -> Bound:
    """D_α of a product of discrete Gaussians σ² shifted by ``shifts`` (Rényi adds up)."""
    value, error = Decimal(0), Decimal(0)
    for s, times in Counter(abs(s) for s in shifts if s).items():
        b = gaussian_shift_renyi(sigma2, s, alpha)
        value, error = value + times * b.value, error + times * b.error
    return Bound(value, error)


def zcdp_pin(
    name: str,
    sigma2: Fraction,
    shifts: tuple[int, ...],
    rho: Fraction,
    slack: Fraction = Fraction(1),
    note: str = "",
) -> Pin:
    """ρ-zCDP of discrete Gaussian noise σ² per coordinate on worst-case integer shifts.

    The measure is max over :data:`ALPHAS` of D_α/α (upper bounds at the
    stated σ², lower bounds with σ·0.999/slack).  The discrete Gaussian is
    symmetric and the shift is integer, so D_α(P‖Q) = D_α(Q‖P).
    """
    less = sigma2 * (LESS / slack) ** 2
    at = max(renyi_curve(sigma2, shifts, a).upper / dec(a) for a in ALPHAS)
    low = max(renyi_curve(less, shifts, a).lower / dec(a) for a in ALPHAS)
    return Pin(name, "max_α D_α/α", dec(rho), at, low, slack, note)
