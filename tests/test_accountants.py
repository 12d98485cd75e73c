"""Accountants as privacy filters: unit tests and Hypothesis properties of the spend."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.accounting import (
    ApproxDPAccountant,
    Charge,
    PrivacyRequest,
    PureDPAccountant,
    ZCDPAccountant,
    make_accountant,
    rho_from_epsilon_delta,
    zcdp_epsilon,
)

eps_strategy = st.fractions(min_value=Fraction(1, 1000), max_value=2, max_denominator=1000)


def test_default_kinds() -> None:
    assert make_accountant(dp.Budget(1), None).kind == "pure"
    assert make_accountant(dp.Budget(1, 1e-6), None).kind == "gdp"
    assert make_accountant(dp.Budget(1, 1e-6), "approx").kind == "approx"
    with pytest.raises(dp.InvalidBudgetError, match="accounting must be 'pure', 'approx' or"):
        make_accountant(dp.Budget(1), "renyi")
    with pytest.raises(dp.InvalidBudgetError, match="zCDP accounting needs delta > 0"):
        make_accountant(dp.Budget(1), "zcdp")
    with pytest.raises(dp.InvalidBudgetError, match="Pure-DP accounting needs delta=0"):
        make_accountant(dp.Budget(1, 1e-6), "pure")


def test_pure_refuses_delta_and_rho() -> None:
    acc = PureDPAccountant(dp.Budget(1))
    with pytest.raises(dp.InvalidBudgetError, match="a query cannot spend delta"):
        acc.allocate(PrivacyRequest(epsilon=0.1, delta=1e-6))
    with pytest.raises(dp.InvalidBudgetError, match="rho= is only accepted in a zCDP session"):
        acc.allocate(PrivacyRequest(rho=0.1))


def test_budget_exceeded_message_names_requested_remaining_difference() -> None:
    acc = PureDPAccountant(dp.Budget(1))
    request = PrivacyRequest(epsilon=0.5)
    charge, _ = acc.allocate(request)
    with pytest.raises(dp.BudgetExceededError, match="Privacy budget exceeded") as info:
        acc.check(Charge(epsilon=Fraction(7, 10)), charge, request)
    message = str(info.value)
    assert "Requested:  ε=0.5" in message
    assert "Remaining:  ε=0.3" in message
    assert "Difference: ε=0.2" in message


def test_zcdp_conversion_roundtrip() -> None:
    rho = rho_from_epsilon_delta(Fraction(1), Fraction(1, 10**6))
    assert zcdp_epsilon(float(rho), 1e-6) <= 1.0
    assert zcdp_epsilon(float(rho), 1e-6) > 1.0 - 1e-6
    assert abs(float(rho) - 0.0174689) < 1e-6


def test_zcdp_shares_add_up_to_the_total() -> None:
    acc = ZCDPAccountant(dp.Budget(1, 1e-6))
    spent = Charge()
    for _ in range(10):
        request = PrivacyRequest(epsilon=0.1)
        charge, allocation = acc.allocate(request)
        assert allocation.kind == "gaussian"
        acc.check(spent, charge, request)
        spent = spent + charge
    assert spent.rho == acc.rho_total
    assert acc.remaining(spent).epsilon == 0
    assert float(acc.spent(spent).epsilon) <= 1.0
    request = PrivacyRequest(epsilon=0.001)
    with pytest.raises(dp.BudgetExceededError, match="Remaining:  ε=0"):
        acc.check(spent, acc.allocate(request)[0], request)


def test_zcdp_mechanism_delta_shrinks_rho() -> None:
    acc = ZCDPAccountant(dp.Budget(1, 1e-6))
    with_delta = Charge(delta=Fraction(1, 2 * 10**6))
    assert acc.remaining(with_delta).epsilon < 1
    assert acc.admits(with_delta, Charge(rho=acc.rho_total / 2))
    assert not acc.admits(with_delta, Charge(rho=acc.rho_total))


def test_approx_uses_gaussian_only_with_delta() -> None:
    acc = ApproxDPAccountant(dp.Budget(1, 1e-5))
    assert acc.allocate(PrivacyRequest(epsilon=0.5))[1].kind == "laplace"
    charge, alloc = acc.allocate(PrivacyRequest(epsilon=0.5, delta=1e-6))
    assert alloc.kind == "gaussian"
    assert charge.delta == Fraction(1, 10**6)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(eps_strategy, min_size=1, max_size=40),
    st.sampled_from(["pure", "approx", "zcdp", "gdp"]),
)
def test_filter_properties(requests: list[Fraction], kind: str) -> None:
    """Spent never decreases, never exceeds the total, equals the sum of admitted charges."""
    total = dp.Budget(3, 0 if kind == "pure" else Fraction(1, 10**6))
    acc = make_accountant(total, kind)
    spent = Charge()
    admitted = Charge()
    previous = acc.spent(spent)
    for eps in requests:
        request = PrivacyRequest(epsilon=eps)
        charge, _ = acc.allocate(request)
        try:
            acc.check(spent, charge, request)
        except dp.BudgetExceededError:
            assert not acc.admits(spent, charge)
            continue
        spent = spent + charge
        admitted = admitted + charge
        now = acc.spent(spent)
        assert now.epsilon >= previous.epsilon
        assert float(now.epsilon) <= float(total.epsilon) * (1 + 1e-12)
        assert now.delta <= total.delta
        previous = now
    assert spent == admitted
    if kind not in ("zcdp", "gdp"):  # the Gaussian ones report a conversion, not a sum
        assert acc.spent(spent).epsilon == admitted.epsilon
        assert acc.spent(spent) + acc.remaining(spent) == total


@settings(max_examples=100, deadline=None)
@given(st.lists(eps_strategy, min_size=1, max_size=30))
def test_pure_spent_is_exact_sum_of_admitted(requests: list[Fraction]) -> None:
    acc = PureDPAccountant(dp.Budget(2))
    spent = Charge()
    expected = Fraction(0)
    for eps in requests:
        charge, _ = acc.allocate(PrivacyRequest(epsilon=eps))
        if acc.admits(spent, charge):
            spent = spent + charge
            expected += eps
    assert acc.spent(spent).epsilon == expected
    assert expected <= 2
