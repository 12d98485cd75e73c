"""Every aggregate and mechanism, through the public API, on every adversarial neighbour.

Each query runs as a user would write it (``lambda pf: ...``), in fresh
sessions with an in-memory ledger, on the base frame and on each neighbour
from ``dp.audit.neighbours``; the auditor must not find a violation of the ε
(and δ) the query spends.  The fast tier (CI) draws 120 releases per dataset
(one vote) and catches gross leaks (outputs reachable from one side only:
inf/NaN, new keys, unclamped values); ``--audit-heavy`` draws 600 per vote in
three votes (see tests/AUDIT.md for its numbers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting.accountants import rho_from_epsilon_delta
from tests.audit.conftest import Tier, summary
from tests.audit.variants import CATEGORIES, SVT_EXPRESSIONS, base_frame

BOUNDS = {"x": (0.0, 10.0)}
DECLARED = {"g": list(CATEGORIES)}
DELTA = 1e-6
RHO = rho_from_epsilon_delta(Fraction(1), Fraction(DELTA))


@dataclass(frozen=True)
class Case:
    """A query, the claim it makes, and how its data is loaded."""

    query: Callable[[Any], object]
    epsilon: float = 1.0
    delta: float = 0.0
    accounting: str | None = None
    declare: bool = True  # declare the categories of g
    unit: bool = False  # load with privacy_unit="pid", max_rows_per_unit=2


def _svt(pf: Any, numeric: bool) -> object:
    conditions = {"c": pf["g"] == "c", "x_high": pf["x"] > 7.3}
    return pf.above_threshold(conditions, 10.5, epsilon=1, numeric=numeric)


CASES: dict[str, Case] = {
    "count": Case(lambda pf: pf.count(epsilon=1)),
    "column_count": Case(lambda pf: pf["x"].count(epsilon=1)),
    "sum": Case(lambda pf: pf["x"].sum(epsilon=1)),
    "mean": Case(lambda pf: pf["x"].mean(epsilon=1)),
    # At ε = 8 the 40-row frame's noisy count clears 10 noise SDs: the adaptive-centre path.
    "mean_adaptive_centre": Case(lambda pf: pf["x"].mean(epsilon=8), epsilon=8.0),
    "var": Case(lambda pf: pf["x"].var(epsilon=1)),
    "std": Case(lambda pf: pf["x"].std(epsilon=1)),
    "filtered_mean": Case(lambda pf: pf[pf["g"] == "a"]["x"].mean(epsilon=1)),
    "grouped_mean": Case(lambda pf: pf.groupby("g")["x"].mean(epsilon=1)),
    "grouped_sum": Case(lambda pf: pf.groupby("g")["x"].sum(epsilon=1)),
    "value_counts": Case(lambda pf: pf["g"].value_counts(epsilon=1, sort=False)),
    # The noisy count of the rows with undeclared keys alone (the new_key pair moves it).
    "undeclared_cell": Case(lambda pf: pf.groupby("g")["x"].sum(epsilon=1).dp.undeclared),
    "hist": Case(lambda pf: pf["x"].hist(bins=3, epsilon=1)),
    "median": Case(lambda pf: pf["x"].median(epsilon=1)),
    "mode": Case(lambda pf: pf["g"].mode(epsilon=1)),
    "argmax_mean": Case(lambda pf: pf.groupby("g").argmax("mean", "x", epsilon=1)),
    "above_threshold": Case(lambda pf: _svt(pf, numeric=False)),
    "above_threshold_numeric": Case(lambda pf: _svt(pf, numeric=True)),
    # In a zCDP session an epsilon= request is a share of the session's total; ask for the
    # rho that the claim (1, 1e-6) converts to, so the claim does not depend on the total.
    "gaussian_sum": Case(lambda pf: pf["x"].sum(rho=RHO), delta=DELTA, accounting="zcdp"),
    "gaussian_grouped_mean": Case(
        lambda pf: pf.groupby("g")["x"].mean(rho=RHO), delta=DELTA, accounting="zcdp"
    ),
    "discover_keys": Case(
        lambda pf: pf.discover_keys("g", epsilon=1, delta=DELTA),
        delta=DELTA,
        accounting="approx",
        declare=False,
    ),
    "grouped_count_discovered": Case(
        lambda pf: pf.groupby("g").count(epsilon=1, delta=DELTA),
        delta=DELTA,
        accounting="approx",
        declare=False,
    ),
    "unit_sum": Case(lambda pf: pf["x"].sum(epsilon=1), unit=True),
    "unit_mean": Case(lambda pf: pf["x"].mean(epsilon=1), unit=True),
    # A unit's rows over the declared cells and the undeclared one (one more cell of the sum).
    "unit_grouped_sum": Case(lambda pf: pf.groupby("g")["x"].sum(epsilon=1), unit=True),
    "unit_discover_keys": Case(
        lambda pf: pf.discover_keys("g", epsilon=1, delta=DELTA),
        delta=DELTA,
        accounting="approx",
        declare=False,
        unit=True,
    ),
}


def _frame(unit: bool) -> pd.DataFrame:
    df = base_frame()
    if unit:
        # 40 rows of 25 people: people 0-14 have two rows, 15-24 one.
        df = df.assign(pid=np.concatenate([np.repeat(np.arange(15), 2), np.arange(15, 25)]))
    return df


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_correct_release_passes_on_every_neighbour(
    name: str, tier: Tier, record: Callable[[str, dict[str, object]], None]
) -> None:
    case = CASES[name]
    df = _frame(case.unit)
    categories = DECLARED if case.declare else None
    unit, limit = ("pid", 2) if case.unit else (None, None)
    pairs = dp.audit.neighbours(
        df,
        bounds=BOUNDS,
        categories=DECLARED,
        queries=list(SVT_EXPRESSIONS),
        privacy_unit=unit,
        max_rows_per_unit=limit,
    )
    results = dp.audit.audit_query(
        case.query,
        pairs,
        epsilon=case.epsilon,
        delta=case.delta,
        bounds=BOUNDS,
        categories=categories,
        accounting=case.accounting,
        samples=tier.api_samples,
        votes=tier.api_votes,
        privacy_unit=unit,
        max_rows_per_unit=limit,
    )
    expected = {p.name for p in pairs}
    assert set(results) == expected
    if case.unit:
        assert {"unit_at_limit", "unit_over_limit"} <= expected
    for result in results.values():
        record("api", {"mechanism": name, **summary(result)})
    failed = [repr(r) for r in results.values() if r.violation]
    assert not failed, "\n".join(failed)
