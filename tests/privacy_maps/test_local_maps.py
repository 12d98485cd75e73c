"""Randomized response and the Laplace copy: exact per-report divergences.

Stated guarantees (``dpframe.mechanisms.copies.local``): randomized response is
(ε, δ)-local DP, P(o | x) ≤ e^ε·P(o | x') + δ for every output and inputs
(including a missing value, which reports a uniform category); the Laplace
copy's report is ε'-DP with ε' = ε − ln(1 − δ), hence (ε, δ)-DP.  The
report probabilities of randomized response are exact dyadic rationals
(``RandomizedResponseSpec``); the sampler's map from uniform draws to
reports is checked on its boundary draws with a scripted random source.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any, cast

import numpy as np
import pytest

from dpframe.audit.exact_divergence import (
    dec,
    hockey_stick,
    laplace_max_loss,
    laplace_shift_hockey,
    max_log_ratio,
    precise,
)
from dpframe.mechanisms.copies.local import (
    RandomizedResponseSpec,
    laplace_copy_spec,
    randomized_response,
    rr_spec,
)
from dpframe.noise import SecureRandom
from tests.privacy_maps.pins import LESS, Pin, assert_pinned, register


def _reports(spec: RandomizedResponseSpec, other_units: Fraction) -> dict[int, dict[int, Fraction]]:
    """P(report | input) for every input 0..m and −1 (missing: uniform)."""
    cats = spec.categories
    other = other_units / spec.denominator
    out = {-1: {o: Fraction(1, cats) for o in range(cats)}}
    for x in range(cats):
        out[x] = {o: (1 - (cats - 1) * other if o == x else other) for o in range(cats)}
    return out


def _worst(dists: dict[int, dict[int, Fraction]], epsilon: float, pure: bool) -> Decimal:
    worst = Decimal(0)
    for x, p in dists.items():
        for y, q in dists.items():
            if x != y:
                value = max_log_ratio(p, q) if pure else hockey_stick(p, q, Fraction(epsilon))
                worst = max(worst, value)
    return worst


def _rr_pin(epsilon: float, delta: float, categories: int) -> Pin:
    spec = rr_spec(epsilon, delta, categories)
    pure = delta == 0
    at = _worst(_reports(spec, Fraction(spec.other_units)), epsilon, pure)
    less = _worst(_reports(spec, spec.other_units * LESS), epsilon, pure)
    stated = dec(Fraction(epsilon)) if pure else dec(Fraction(delta))
    name = f"randomized response, {categories} categories, (ε, δ)=({epsilon:g}, {delta:g})"
    return Pin(name, "max loss" if pure else "δ(ε)", stated, at, less)


RR = register(
    {
        "rr 4 categories pure": lambda: _rr_pin(1.0, 0.0, 4),
        "rr 2 categories pure": lambda: _rr_pin(2.0, 0.0, 2),
        "rr 5 categories delta": lambda: _rr_pin(0.5, 1e-3, 5),
        "rr 3 categories delta": lambda: _rr_pin(1.0, 0.15, 3),
    }
)


@pytest.mark.parametrize("name", RR)
def test_randomized_response_is_exact(name: str) -> None:
    assert_pinned(name)


class _Scripted:
    """A stand-in random source returning scripted uniform draws."""

    def __init__(self, draws: list[int]) -> None:
        self.draws = draws

    def uniform_below(self, bound: int, size: int) -> np.ndarray[Any, Any]:
        out, self.draws = self.draws[:size], self.draws[size:]
        assert all(0 <= d < bound for d in out)
        return np.array(out, dtype=np.int64)


def test_randomized_response_sampler_realises_the_spec() -> None:
    """Boundary draws: [0, keep) keeps the truth; then `other_units` draws per other category."""
    spec = rr_spec(1.0, 0.0, 4)
    keep = spec.denominator - 3 * spec.other_units
    cases = {
        0: 2,
        keep - 1: 2,
        keep: 0,
        keep + spec.other_units - 1: 0,
        keep + spec.other_units: 1,
        keep + 2 * spec.other_units: 3,
        spec.denominator - 1: 3,
    }
    draws = list(cases)
    reports = randomized_response(
        np.full(len(draws), 2, dtype=np.int64), spec, cast(SecureRandom, _Scripted(draws))
    )
    assert reports.tolist() == list(cases.values())


def _copy_shift(low: float, high: float, epsilon: float, delta: float) -> tuple[Any, int]:
    spec = laplace_copy_spec(low, high, epsilon, delta)
    units = np.rint(np.array([low, high]) / spec.grid)  # clamped values at the bounds
    shift = int(units[1] - units[0])
    assert shift <= spec.sensitivity_units
    return spec, shift


# Declared slack: the sensitivity floor(diam/g) + 1 covers rounding both ends; with bounds on
# the grid the values move by diam/g exactly.
COPY_SLACK = {(0.0, 100.0): Fraction(1638401, 1638400), (-1.5, 7.25): Fraction(1146881, 1146880)}


def _copy_pin(low: float, high: float, epsilon: float, delta: float) -> Pin:
    spec, shift = _copy_shift(low, high, epsilon, delta)
    slack = COPY_SLACK[low, high]
    assert Fraction(spec.sensitivity_units, shift) == slack
    with precise():
        eps_prime = dec(Fraction(epsilon)) - (1 - dec(Fraction(delta))).ln()
    at = laplace_max_loss(spec.scale_units, shift)
    less = laplace_max_loss(spec.scale_units * LESS / slack, shift)
    name = f"Laplace copy ({low:g}, {high:g}), (ε, δ)=({epsilon:g}, {delta:g}): ε' = ε − ln(1−δ)"
    return Pin(name, "max loss", eps_prime, dec(at), dec(less), slack)


COPY = register(
    {
        "laplace copy pure": lambda: _copy_pin(0.0, 100.0, 1.0, 0.0),
        "laplace copy delta": lambda: _copy_pin(-1.5, 7.25, 0.5, 1e-3),
    }
)


@pytest.mark.parametrize("name", COPY)
def test_laplace_copy_is_exact_in_epsilon_prime(name: str) -> None:
    assert_pinned(name)


def test_laplace_copy_with_delta_is_within_delta() -> None:
    """δ(ε) of the ε'-DP report against δ: the conversion 1 − e^(ε−ε') is not tight."""
    epsilon, delta = 0.5, 1e-3
    spec, shift = _copy_shift(-1.5, 7.25, epsilon, delta)
    value = laplace_shift_hockey(spec.scale_units, shift, Fraction(epsilon))
    assert value.upper <= dec(Fraction(delta))
    assert value.lower > dec(Fraction(delta)) / 3  # (e^ε' − e^ε)/(1 + e^ε') of the docstring
