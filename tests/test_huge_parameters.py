"""Huge privacy parameters release, for every kind: no computation fails after the charge.

At ε = 10^4 (and 10^6) e^ε overflows a float and noise scales underflow to 0:
randomized response divided by e^ε (OverflowError) and synthetic copies weighted
totals by 1/variance (ZeroDivisionError), both after the charge (issue 27:
computations total).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

import dpframe as dp

HUGE = [1e4, 1e6]
CATS = ["a", "b", "c"]


def _frame(accounting: str) -> dp.PrivateFrame:
    delta = 0.0 if accounting == "pure" else 1e-6
    session = dp.Session(epsilon=1e9, delta=delta, accounting=accounting, ledger=":memory:")
    gen = np.random.default_rng(7)
    data = pd.DataFrame(
        {
            "x": gen.uniform(0, 10, 300),
            "y": gen.integers(0, 5, 300),
            "g": gen.choice(CATS, 300),
        }
    )
    return session.private_frame(data, bounds={"x": (0, 10), "y": (0, 5)}, categories={"g": CATS})


QUERIES: dict[str, Callable[[dp.PrivateFrame, float], object]] = {
    "count": lambda pf, e: pf.count(epsilon=e),
    "sum": lambda pf, e: pf["x"].sum(epsilon=e),
    "mean": lambda pf, e: pf["x"].mean(epsilon=e),
    "std": lambda pf, e: pf["x"].std(epsilon=e),
    "median": lambda pf, e: pf["x"].median(epsilon=e),
    "quantiles": lambda pf, e: pf["x"].quantile([0.1, 0.9], epsilon=e),
    "hist": lambda pf, e: pf["x"].hist(bins=4, epsilon=e),
    "describe": lambda pf, e: pf.describe(epsilon=e),
    "grouped mean": lambda pf, e: pf.groupby("g")["x"].mean(epsilon=e),
    "grouped median": lambda pf, e: pf.groupby("g")["x"].median(epsilon=e),
    "value_counts": lambda pf, e: pf["g"].value_counts(epsilon=e),
    "mode": lambda pf, e: pf["g"].mode(epsilon=e),
    "argmax": lambda pf, e: pf.groupby("g")["x"].argmax(epsilon=e),
    "corr": lambda pf, e: pf[["x", "y"]].corr(epsilon=e),
    "approx_bounds": lambda pf, e: pf["x"].approx_bounds(epsilon=e),
    "laplace_copy": lambda pf, e: pf["x"].laplace_copy(epsilon=e),
    "randomized_response": lambda pf, e: pf["g"].randomized_response(epsilon=e),
    "synthesize mst": lambda pf, e: pf[["g", "y"]].synthesize(epsilon=e),
    "synthesize aim": lambda pf, e: pf[["g", "y", "x"]].synthesize(epsilon=e, method="aim"),
}


@pytest.mark.parametrize("epsilon", HUGE, ids=["1e4", "1e6"])
@pytest.mark.parametrize("accounting", ["pure", "gdp"])
@pytest.mark.parametrize("name", list(QUERIES))
def test_a_huge_parameter_releases(name: str, epsilon: float, accounting: str) -> None:
    pf = _frame(accounting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = QUERIES[name](pf, epsilon)
    assert result is not None
    assert set(pf.session.ledger["status"]) == {"released"}


def test_a_refusal_after_a_huge_spend_says_its_guarantee_without_overflowing() -> None:
    """e^ε overflows past ε = 709: the refusal's guarantee line said OverflowError instead."""
    session = dp.Session(epsilon=5000, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"x": [1.0] * 100}), bounds={"x": (0, 2)})
    pf.count(epsilon=4000)
    with pytest.raises(dp.BudgetExceededError, match=r"a factor of 10\^1,737"):
        pf["x"].sum(epsilon=2000)
    assert session.spent == dp.Budget(4000)  # the refusal charged nothing
