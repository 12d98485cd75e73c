"""Typed privacy parameters: dp.Privacy, dp.PrivacyUnit, named choices, analysis=."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import dpframe as dp

BOUNDS = {"wage": (0, 5000), "education": (0, 20), "experience": (0, 60)}
CATEGORIES = {"region": ["northeast", "midwest", "south", "west"]}
COST = dp.Privacy(epsilon=0.2)

CALLS: dict[str, Callable[[dp.PrivateFrame], Any]] = {
    "count": lambda pf: pf.count(privacy=COST),
    "mean": lambda pf: pf["wage"].mean(privacy=COST),
    "grouped mean": lambda pf: pf.groupby("region")["wage"].mean(privacy=COST),
    "size": lambda pf: pf.groupby("region").size(privacy=COST),
    "median": lambda pf: pf["wage"].median(privacy=COST),
    "value_counts": lambda pf: pf["region"].value_counts(privacy=COST),
    "hist": lambda pf: pf["wage"].hist(4, privacy=COST),
    "mode": lambda pf: pf["region"].mode(privacy=COST),
    "argmax": lambda pf: pf.groupby("region").argmax(privacy=COST),
    "describe": lambda pf: pf.describe(privacy=COST),
    "above_threshold": lambda pf: pf.above_threshold([pf["wage"] > 100], 10, privacy=COST),
    "randomized_response": lambda pf: pf["region"].randomized_response(privacy=COST),
    "laplace_copy": lambda pf: pf["wage"].laplace_copy(privacy=COST),
}


@pytest.fixture
def pf(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=10, ledger=":memory:")
    return session.private_frame(cps, bounds=BOUNDS, categories=CATEGORIES)


@pytest.mark.parametrize("call", CALLS.values(), ids=list(CALLS))
def test_privacy_charges_exactly_its_cost(pf: dp.PrivateFrame, call: Any) -> None:
    call(pf)
    assert pf.session.spent == dp.Budget("0.2")
    assert len(pf.session.ledger) == 1


def test_privacy_with_the_shorthands_is_refused_before_anything(pf: dp.PrivateFrame) -> None:
    with pytest.raises(dp.InvalidBudgetError, match="not both"):
        pf.count(epsilon=0.1, privacy=COST)
    with pytest.raises(dp.InvalidBudgetError, match="not both"):
        pf["wage"].laplace_copy(delta=0, privacy=COST)
    with pytest.raises(dp.InvalidBudgetError, match=r"takes dp\.Privacy"):
        pf.count(privacy="0.1")  # type: ignore[arg-type]
    assert pf.session.ledger.empty


def test_privacy_validates_like_the_shorthands() -> None:
    with pytest.raises(dp.InvalidBudgetError, match="epsilon must be > 0"):
        dp.Privacy(epsilon=-1)
    with pytest.raises(dp.InvalidBudgetError, match="exactly one of them"):
        dp.Privacy(epsilon=1, rho=1)


def test_a_privacy_unit_object_equals_the_keyword_form(cps: pd.DataFrame) -> None:
    data = cps.assign(person=cps.index // 3)
    typed = dp.Session(epsilon=10, ledger=":memory:").private_frame(
        data, BOUNDS, privacy_unit=dp.PrivacyUnit("person", max_rows=2)
    )
    words = dp.Session(epsilon=10, ledger=":memory:").private_frame(
        data, BOUNDS, privacy_unit="person", max_rows_per_unit=2
    )
    assert typed["wage"].sum(epsilon=1).scale == words["wage"].sum(epsilon=1).scale
    with pytest.raises(dp.SchemaError, match="alone"):
        dp.Session(epsilon=1, ledger=":memory:").private_frame(
            data, privacy_unit=dp.PrivacyUnit("person", 2), max_rows_per_unit=2
        )
    with pytest.raises(dp.SchemaError, match="max_rows"):
        dp.PrivacyUnit("person", max_rows=0)


def test_named_choices_are_their_strings() -> None:
    session = dp.Session(epsilon=1, delta=1e-6, ledger=":memory:", accounting=dp.Accounting.APPROX)
    assert session.accounting == "approx"
    assert isinstance(dp.Accounting.ZCDP, str) and dp.Accounting.ZCDP.value == "zcdp"
    assert str(dp.Analysis.ITERATION) == "iteration"


def test_regression_analysis_and_its_deprecated_alias(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=20, delta=1e-6, ledger=":memory:")
    pf = session.private_frame(cps, BOUNDS)
    model = pf.linear_regression(
        ["education"], "wage", epsilon=2, analysis=dp.Analysis.RDP, steps=5, progress=False
    )
    assert "rdp" in model.query
    with pytest.warns(FutureWarning, match="now analysis="):
        old = pf.linear_regression(
            ["education"], "wage", epsilon=2, accounting="rdp", steps=5, progress=False
        )
    assert old.query == model.query
    with pytest.raises(dp.InvalidArgumentError, match="analysis= must be"):
        pf.linear_regression(["education"], "wage", epsilon=2, analysis="bayes")
