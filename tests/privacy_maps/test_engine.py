"""The exact-divergence checker against closed forms (so the pins below can be trusted)."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest

from dpframe.audit.exact_divergence import (
    dec,
    discrete_gaussian,
    discrete_laplace,
    gaussian_shift_renyi,
    gaussian_theta,
    hockey_stick,
    hockey_stick_shift,
    laplace_max_loss,
    laplace_shift_hockey,
    max_log_ratio,
    precise,
    renyi,
)


def test_discrete_laplace_matches_its_normalised_closed_form() -> None:
    t = Fraction(7, 3)
    pmf = discrete_laplace(t)
    a = math.exp(-1 / float(t))
    for k in (-20, -1, 0, 1, 5, 30):
        expected = (1 - a) / (1 + a) * a ** abs(k)
        assert float(pmf.at(k)) == pytest.approx(expected, rel=1e-13)
    assert pmf.outside < Decimal("1e-30")
    with precise():
        assert abs(sum(pmf.masses, Decimal(0)) - 1) < Decimal("1e-40")


def test_discrete_gaussian_is_normalised_with_a_bounded_tail() -> None:
    pmf = discrete_gaussian(Fraction(9, 2))
    with precise():
        assert abs(sum(pmf.masses, Decimal(0)) - 1) < Decimal("1e-40")
    assert pmf.outside < Decimal("1e-30")
    ratio = pmf.at(3) / pmf.at(0)
    assert float(ratio) == pytest.approx(math.exp(-9 / 9), rel=1e-14)


def test_laplace_hockey_stick_matches_the_closed_form() -> None:
    """P = Y + 3, Q = Y, scale 2, ε = 1: the loss (|k| − |k−3|)/2 exceeds 1 for k ≥ 3 only."""
    t, s, eps = Fraction(2), 3, Fraction(1)
    pmf = discrete_laplace(t)
    got = hockey_stick_shift(pmf.shifted(s), pmf, eps)
    a = math.exp(-1 / 2)
    # Σ_{k ≥ 3} P_Y(k − 3)·(1 − e^{1 − 3/2}) = P(Y ≥ 0)·(1 − e^{−1/2}) = (1 − e^{−1/2})/(1 + a)
    expected = (1 - math.exp(1 - 1.5)) / (1 + a)
    assert float(got.value) == pytest.approx(expected, rel=1e-12)
    assert got.error < Decimal("1e-20")


@pytest.mark.parametrize(
    ("scale", "shift", "epsilon"),
    [(Fraction(2), 3, Fraction(1)), (Fraction(7, 3), 10, Fraction(1, 2)), (Fraction(5), 5, 1)],
)
def test_laplace_closed_form_hockey_stick_matches_the_summed_pmf(
    scale: Fraction, shift: int, epsilon: Fraction
) -> None:
    pmf = discrete_laplace(scale)
    summed = hockey_stick_shift(pmf.shifted(shift), pmf, epsilon)
    closed = laplace_shift_hockey(scale, shift, epsilon)
    assert abs(summed.value - closed.value) <= summed.error + closed.error
    assert closed.value >= 0


def test_laplace_max_loss_is_shift_over_scale() -> None:
    assert laplace_max_loss(Fraction(5, 2), 3) == Fraction(6, 5)
    assert laplace_max_loss(Fraction(5, 2), -3) == Fraction(6, 5)
    assert laplace_max_loss(Fraction(1), 0) == 0


@pytest.mark.parametrize("sigma2", [Fraction(1, 3), Fraction(2), Fraction(30)])
@pytest.mark.parametrize("shift", [1, 4])
def test_gaussian_renyi_at_integer_orders_is_alpha_s2_over_2sigma2(
    sigma2: Fraction, shift: int
) -> None:
    """At integer α and integer shifts the discrete Gaussian's D_α is exactly αs²/(2σ²)."""
    for alpha in (2, 3, 10, 1000):
        got = gaussian_shift_renyi(sigma2, shift, alpha)
        exact = dec(Fraction(alpha * shift * shift) / (2 * sigma2))
        assert abs(got.value - exact) <= got.error + Decimal("1e-45")


def test_gaussian_renyi_against_the_definition_on_the_pmf() -> None:
    """Non-integer α: the closed form against Σ P^α Q^(1−α) summed over the pmf window."""
    sigma2, shift = Fraction(3, 2), 2
    pmf = discrete_gaussian(sigma2, tail=Decimal("1e-45"))
    window = range(pmf.start + shift, pmf.stop)  # both masses known (the rest < 1e-45)
    p = {k: pmf.at(k) for k in window}
    q = {k: pmf.at(k - shift) for k in window}
    for alpha in (Fraction(5, 4), Fraction(13, 4)):  # (1 − α)s not an integer
        direct = renyi(p, q, alpha)
        closed = gaussian_shift_renyi(sigma2, shift, alpha)
        assert abs(direct - closed.value) < Decimal("1e-30")
        assert closed.value < dec(alpha * shift * shift / (2 * sigma2))  # below the bound


def test_theta_direct_sum_and_poisson_summation_agree() -> None:
    """σ² = 400 is summed directly, 400 + 10⁻⁵⁰ by Poisson summation: the same function."""
    for c in (Fraction(0), Fraction(3, 10), Fraction(-12345, 7)):
        direct = gaussian_theta(c, 400)
        poisson = gaussian_theta(c, Fraction(400) + Fraction(1, 10**50))
        assert abs(direct.value - poisson.value) < Decimal("1e-35") * direct.value


def test_finite_divergences() -> None:
    p = {"a": Fraction(3, 4), "b": Fraction(1, 4)}
    q = {"a": Fraction(1, 4), "b": Fraction(3, 4)}
    with precise():
        assert abs(max_log_ratio(p, q) - dec(3).ln()) < Decimal("1e-58")
    assert hockey_stick(p, q, 0) == Decimal("0.5")
    assert hockey_stick(p, q, dec(3).ln()) < Decimal("1e-55")
    assert max_log_ratio({"a": 1}, {"b": 1}) == Decimal("Infinity")
    expected = math.log((0.75**2 / 0.25) + (0.25**2 / 0.75))  # α = 2
    assert float(renyi(p, q, 2)) == pytest.approx(expected, rel=1e-14)
