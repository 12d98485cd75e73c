"""Budget arithmetic: exact, immutable, validated (unit and Hypothesis property tests)."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpframe as dp
from dpframe.accounting import PrivacyRequest, to_fraction

small_floats = st.floats(min_value=1e-6, max_value=10.0, allow_nan=False, allow_infinity=False)
fractions = st.fractions(min_value=0, max_value=100, max_denominator=10**6)


def test_decimal_reading_of_floats() -> None:
    assert to_fraction(0.1, "epsilon") == Fraction(1, 10)
    total = sum((dp.Budget(0.1) for _ in range(10)), dp.Budget(0))
    assert total == dp.Budget(1.0)


@pytest.mark.fresh_releases
def test_numpy_float32_is_read_as_written() -> None:
    """np.float32(0.1) is 0.100000001490116... as a double: ten of them overran a budget of 1."""
    assert to_fraction(np.float32(0.1), "epsilon") == Fraction(1, 10)
    assert to_fraction(np.float16(0.25), "epsilon") == Fraction(1, 4)
    assert to_fraction(np.float64(0.1), "epsilon") == Fraction(1, 10)
    session = dp.Session(epsilon=1, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"x": [1.0, 2.0]}))
    for _ in range(10):
        pf.count(epsilon=np.float32(0.1))
    assert session.remaining == dp.Budget(0)
    with pytest.raises(dp.InvalidBudgetError, match="epsilon must be finite"):
        to_fraction(np.float32("inf"), "epsilon")


@given(st.floats(min_value=0.0009765625, max_value=1048576.0, width=32))
def test_a_float32_reads_as_a_short_decimal_that_rounds_back_to_it(value: float) -> None:
    single = np.float32(value)
    exact = to_fraction(single, "epsilon")
    assert np.float32(float(exact)) == single  # the same float32 (round trip)
    assert exact.denominator in {2**a * 5**b for a in range(40) for b in range(40)}  # a decimal
    digits = str(exact.numerator * (10**20 // exact.denominator)).rstrip("0")
    assert len(digits) <= 9  # at most 9 significant digits: float32's shortest repr


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (0, "epsilon must be > 0, got 0"),
        (-1, "epsilon must be > 0, got -1"),
        (float("nan"), "epsilon must be finite, got nan"),
        (float("inf"), "epsilon must be finite, got inf"),
        (-0.5, r"epsilon must be > 0, got -0\.5"),
        ("abc", "epsilon must be a number, not the string 'abc'"),
        ("0.1", r"epsilon must be a number, not the string '0\.1'"),
        (None, r"Give the privacy cost of a query as epsilon=\.\.\."),
        (True, "epsilon must be a number, got True"),
    ],
)
def test_request_rejects_bad_epsilon(bad: object, match: str) -> None:
    with pytest.raises(dp.InvalidBudgetError, match=match):
        PrivacyRequest(epsilon=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (-1e-9, r"delta must be in \[0, 1\), got -1e-09"),
        (1, r"delta must be in \[0, 1\), got 1\."),
        (1.5, r"delta must be in \[0, 1\), got 1\.5"),
        (float("nan"), "delta must be finite, got nan"),
        (float("inf"), "delta must be finite, got inf"),
    ],
)
def test_budget_rejects_bad_delta(bad: float, match: str) -> None:
    with pytest.raises(dp.InvalidBudgetError, match=match):
        dp.Budget(1, bad)


def test_budget_is_immutable() -> None:
    budget = dp.Budget(1)
    with pytest.raises(AttributeError, match="cannot assign to field 'epsilon'"):
        budget.epsilon = Fraction(2)  # type: ignore[misc]


def test_repr_and_str() -> None:
    assert repr(dp.Budget(0.5, 1e-6)) == "Budget(epsilon=0.5, delta=1e-06)"
    assert str(dp.Budget(2)) == "ε=2"


@given(st.lists(fractions, min_size=1, max_size=30))
def test_addition_is_exact_and_associative(values: list[Fraction]) -> None:
    budgets = [dp.Budget(v) for v in values]
    left = sum(budgets, dp.Budget(0))
    right = sum(reversed(budgets), dp.Budget(0))
    assert left == right
    assert left.epsilon == sum(values)


@given(fractions, fractions)
def test_subtraction_never_negative(a: Fraction, b: Fraction) -> None:
    diff = dp.Budget(a) - dp.Budget(b)
    assert diff.epsilon == max(a - b, 0)
    assert diff.epsilon >= 0


@given(small_floats)
def test_float_roundtrip_is_shortest_decimal(x: float) -> None:
    frac = to_fraction(x, "epsilon")
    assert float(frac) == x
    assert frac == Fraction(repr(x))


@given(fractions, fractions)
def test_ordering_is_componentwise(a: Fraction, b: Fraction) -> None:
    assert (dp.Budget(a) <= dp.Budget(b)) == (a <= b)
    assert not math.isnan(float(a))


ARRAY_MATCH = r"must be one number, not an array or a collection \(ndarray of shape \(1,\)\)"


def _array(value: float) -> Any:
    """A one-element numpy array (typed Any: the point is to pass it where a number goes)."""
    return np.array([value])


ONE_ELEMENT_ARRAYS: dict[str, Callable[[dp.PrivateFrame], object]] = {
    "session epsilon": lambda pf: dp.Session(epsilon=_array(1.0), ledger=":memory:"),
    "budget delta": lambda pf: dp.Budget(1, delta=_array(1e-6)),
    "privacy rho": lambda pf: dp.Privacy(rho=_array(0.1)),
    "count epsilon": lambda pf: pf.count(epsilon=_array(0.5)),
    "sum epsilon": lambda pf: pf["x"].sum(epsilon=_array(0.5)),
    "sum delta": lambda pf: pf["x"].sum(epsilon=0.5, delta=_array(1e-7)),
    "mean rho": lambda pf: pf["x"].mean(rho=_array(0.01)),
    "grouped mean epsilon": lambda pf: pf.groupby("g")["x"].mean(epsilon=_array(0.5)),
}


@pytest.mark.parametrize("case", sorted(ONE_ELEMENT_ARRAYS))
def test_a_one_element_array_is_refused_before_the_charge(case: str) -> None:
    """``float(np.array([0.5]))`` is 0.5 on numpy < 2.4: such a parameter was charged there."""
    accounting = "zcdp" if "rho" in case else "approx"
    session = dp.Session(epsilon=1, delta=1e-6, ledger=":memory:", accounting=accounting)
    df = pd.DataFrame({"g": ["a", "b"] * 5, "x": np.arange(10.0)})
    pf = session.private_frame(df, bounds={"x": (0, 10)}, categories={"g": ["a", "b"]})
    name = case.split()[-1]
    with pytest.raises(dp.InvalidBudgetError, match=f"{name} {ARRAY_MATCH}"):
        ONE_ELEMENT_ARRAYS[case](pf)
    assert session.spent.is_zero
    assert session.ledger.empty


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (np.array(0.5), r"not an array or a collection \(ndarray of shape \(\)\)"),
        (np.array([0.5, 0.5]), r"not an array or a collection \(ndarray of shape \(2,\)\)"),
        ([0.5], r"not an array or a collection \(list\)"),
        (pd.Series([0.5]), r"not an array or a collection \(Series of shape \(1,\)\)"),
        (np.True_, "epsilon must be a number, got np.True_|epsilon must be a number, got True"),
    ],
)
def test_request_rejects_arrays_and_numpy_booleans(bad: object, match: str) -> None:
    with pytest.raises(dp.InvalidBudgetError, match=match):
        PrivacyRequest(epsilon=bad)  # type: ignore[arg-type]
