"""Privacy parameters below float range are refused before the charge, for every kind (issue 16).

ε = 1e-400 (or a 700-digit fraction) is exact as a Fraction but 0.0 as a float: the
calibration divided by it (an internal ZeroDivisionError, after the charge for quantiles).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

import pandas as pd
import pytest

import dpframe as dp

# Exact values below float range: a Decimal and a Fraction (strings are refused in requests).
TINY = [Decimal("1e-400"), Fraction(1, int("7" * 700))]


def _frame(delta: float) -> dp.PrivateFrame:
    session = dp.Session(epsilon=1, delta=delta, ledger=":memory:")
    data = pd.DataFrame({"x": [1.0, 2.0, 3.0], "g": ["a", "b", "a"]})
    return session.private_frame(data, bounds={"x": (0, 10)}, categories={"g": ["a", "b"]})


QUERIES: dict[str, Callable[[dp.PrivateFrame, Decimal | Fraction], object]] = {
    "count": lambda pf, e: pf.count(epsilon=e),
    "mean": lambda pf, e: pf["x"].mean(epsilon=e),
    "hist": lambda pf, e: pf["x"].hist(bins=3, epsilon=e),
    "median": lambda pf, e: pf["x"].median(epsilon=e),
    "quartiles": lambda pf, e: pf["x"].quantile([0.25, 0.75], epsilon=e),
    "describe": lambda pf, e: pf.describe(epsilon=e),
    "approx_bounds": lambda pf, e: pf["x"].approx_bounds(epsilon=e),
    "laplace_copy": lambda pf, e: pf["x"].laplace_copy(epsilon=e),
}


@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("epsilon", TINY, ids=["1e-400", "700-digit fraction"])
@pytest.mark.parametrize("name", list(QUERIES))
def test_a_parameter_below_float_range_is_refused_before_the_charge(
    name: str, epsilon: Decimal | Fraction, delta: float
) -> None:
    pf = _frame(delta)
    with pytest.raises(dp.InvalidBudgetError, match="so small that"):
        QUERIES[name](pf, epsilon)
    assert pf.session.spent.is_zero and pf.session.ledger.empty
