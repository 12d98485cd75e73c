"""describe(include="all"): categorical columns join with count, unique, top and freq from one
noisy histogram each, in the same single charge; unique counts keys above a stated threshold."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.mechanisms.describe_family import unique_threshold

CATEGORIES = {**CPS1988_CATEGORIES, "region": [*CPS1988_CATEGORIES["region"], "mars"]}


def _frame(cps: pd.DataFrame, epsilon: float = 1e7) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:", name="describe-all")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CATEGORIES)


def test_pandas_shape_and_values_near_the_truth(cps: pd.DataFrame) -> None:
    table = _frame(cps).describe(include="all", epsilon=1e5)
    truth = cps.describe(include="all")
    assert list(table.index) == [
        "count",
        "unique",
        "top",
        "freq",
        "mean",
        "std",
        "25%",
        "50%",
        "75%",
    ]
    assert list(table.columns) == list(truth.columns)
    for column in ("ethnicity", "smsa", "region", "parttime"):
        assert table.loc["top", column] == truth.loc["top", column]
        assert table.loc["freq", column] == pytest.approx(truth.loc["freq", column], abs=2)
        assert table.loc["count", column] == pytest.approx(len(cps), abs=10)
        assert table.loc["unique", column] == truth.loc["unique", column]  # mars has no row
        assert table[column].isna()["mean"]
    for column in CPS1988_BOUNDS:
        assert table[column].isna()["top"]
        assert table.loc["mean", column] == pytest.approx(
            cps[column].clip(*CPS1988_BOUNDS[column]).mean(), rel=1e-3
        )


def test_one_charge_with_one_part_per_histogram(cps: pd.DataFrame) -> None:
    pf = _frame(cps, epsilon=10)
    pf.describe(include="all", epsilon=1)
    ledger = pf.session.ledger
    assert len(ledger) == 1 and ledger["epsilon"].iloc[0] == 1
    parts = json.loads(ledger["parts"].iloc[0])
    assert len(parts) == 2 * 3 + 4  # var + quartiles per numeric column, a histogram each
    assert {Fraction(p["epsilon"]) for p in parts} == {Fraction(1, 10)}
    assert parts[-1]["name"] == "count() by parttime"
    assert pf.session.spent == dp.Budget(1)


def test_intervals_cover_numeric_cells_and_leave_categorical_ones_empty(cps: pd.DataFrame) -> None:
    table = _frame(cps).describe(include="all", epsilon=100)
    intervals = dp.ci(table)
    low, high = intervals.loc["mean", ("wage", "low")], intervals.loc["mean", ("wage", "high")]
    assert low <= table.loc["mean", "wage"] <= high
    assert intervals.loc[:, ("region", "low")].isna().all()
    with pytest.raises(dp.DPError, match="not the released one"):
        dp.ci(table.fillna(0))


def test_unique_threshold_is_the_count_noise_one_sided_95_quantile(cps: pd.DataFrame) -> None:
    """A key with no rows passes in about 5% of releases, and never more than its bound.

    At ε = 0.4 over 10 parts each histogram has discrete Laplace noise of scale 25;
    the threshold is the smallest k with P(Y > k) ≤ 5%.  Over 300 releases the
    empty key "mars" passes at most ~5% (binomial test at the 1e-3 level), and with
    a threshold 30% lower it would pass about 11% of the time and fail the test.
    """
    pf = _frame(cps)
    passes, runs = 0, 300
    for _ in range(runs):
        table = pf.describe(include="all", epsilon=0.4)
        passes += 1 if table.loc["unique", "region"] == 5 else 0
    scale = 25.0
    a = np.exp(-1 / scale)
    k = next(k for k in range(10_000) if a ** (k + 1) / (1 + a) <= 0.05)
    histogram = pf.groupby("region").size(epsilon=0.04)
    assert unique_threshold(histogram) == pytest.approx(k, abs=1)
    assert stats.binomtest(passes, runs, 0.05, alternative="greater").pvalue > 1e-3, passes


@pytest.mark.parametrize(
    ("include", "match"),
    [("object", r"describe\(include=\.\.\.\) takes None"), (["all"], "takes None")],
)
def test_bad_include_is_refused_before_the_charge(
    cps: pd.DataFrame, include: object, match: str
) -> None:
    pf = _frame(cps, epsilon=10)
    with pytest.raises(dp.SchemaError, match=match):
        pf.describe(include=include, epsilon=1)  # type: ignore[arg-type]
    assert pf.session.ledger.empty


def test_a_frame_of_categories_only_needs_include_all(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=10, ledger=":memory:", name="cats")
    pf = session.private_frame(cps[["region"]], categories={"region": CATEGORIES["region"]})
    with pytest.raises(dp.SchemaError, match=r"numeric columns with declared bounds\.$"):
        pf.describe(epsilon=1)
    table = pf.describe(include="all", epsilon=1)
    assert list(table.columns) == ["region"] and table.loc["top", "region"] == "south"
