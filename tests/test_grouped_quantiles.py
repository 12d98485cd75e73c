"""Quantiles per group (``groupby(k)[x].median/quantile``): pandas' shapes, one charge over
disjoint groups, near the truth at a large ε, refusals before the charge, ``explain``."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
import dpframe.mechanisms.core.explanations
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.mechanisms.quantiles import quantile_family
from dpframe.mechanisms.quantiles.quantiles import QUANTILE_BINS, rank_error, utility_sensitivity
from dpframe.mechanisms.selection.grouped_selection import permute_and_flip_rows

BIG = 1e5
WIDTH = 5000 / QUANTILE_BINS  # the default grid's spacing over the wage bounds
INTEGERS = {"education": "integer", "experience": "integer"}


def _rank_gap(values: np.ndarray, released: float, q: float) -> float:
    """How far the released value's rank misses q·n, beyond the best default candidate's."""
    data = np.sort(np.clip(values, 0, 5000))
    edges = np.linspace(0, 5000, QUANTILE_BINS + 1)
    best = np.min(np.abs(np.searchsorted(data, edges) - q * len(data)))
    return float(abs(np.searchsorted(data, released) - q * len(data)) - best)


def _frame(
    cps: pd.DataFrame, epsilon: float = 1e7, dtypes: dict[str, str] | None = None
) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:", name="grouped-quantiles")
    return session.private_frame(
        cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, dtypes=dtypes
    )


def test_grouped_median_is_near_pandas_with_its_shape(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    got = pf.groupby("region")["wage"].median(epsilon=BIG)
    want = cps.groupby("region")["wage"].median()
    assert isinstance(got, pd.Series) and got.name == "wage" and got.index.name == "region"
    assert list(got.index) == list(want.index)  # pandas' order (sorted), as every group-by
    np.testing.assert_allclose(got.to_numpy(), want[got.index].to_numpy(), atol=4 * WIDTH)
    for region, value in got.items():
        wages = cps.loc[cps["region"] == region, "wage"].to_numpy()
        assert _rank_gap(wages, value, 0.5) <= 1  # the best candidate, at ε = 10⁵
    assert got.attrs["dpframe"].mechanism == "exponential mechanism (permute-and-flip)"


def test_a_list_of_levels_gives_a_key_by_q_multiindex(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    got = pf.groupby("region")["wage"].quantile([0.1, 0.9], epsilon=BIG)
    want = cps.groupby("region")["wage"].quantile(np.array([0.1, 0.9]))
    assert list(got.index.names) == list(want.index.names) == ["region", None]
    assert list(got.index) == [
        (r, q) for r in sorted(CPS1988_CATEGORIES["region"]) for q in (0.1, 0.9)
    ]
    np.testing.assert_allclose(got.to_numpy(), want[got.index].to_numpy(), atol=4 * WIDTH)
    for key, value in got.items():
        region, q = cast("tuple[str, float]", key)
        wages = cps.loc[cps["region"] == region, "wage"].to_numpy()
        assert _rank_gap(wages, value, q) <= 1
    assert got.loc[("south", 0.9)] > got.loc[("south", 0.1)]


def test_several_keys_give_pandas_multiindex(cps: pd.DataFrame) -> None:
    pf = _frame(cps, dtypes=INTEGERS)
    got = pf.groupby(["region", "smsa"])["education"].median(epsilon=BIG)
    want = cps.groupby(["region", "smsa"])["education"].median()
    assert list(got.index.names) == ["region", "smsa"] and len(got) == 8
    assert got.to_dict() == want.to_dict()  # an integer column: whole numbers, exactly


def test_an_integer_column_answers_with_pandas_integers(cps: pd.DataFrame) -> None:
    pf = _frame(cps, dtypes=INTEGERS)
    assert pf["education"].dtype == "Int64"  # the declaration, shown in the public schema
    got = pf.groupby("region")["education"].median(epsilon=BIG)
    assert got.to_dict() == cps.groupby("region")["education"].median().to_dict()
    experience = pf.groupby("region")["experience"].median(epsilon=BIG)
    assert experience.to_dict() == cps.groupby("region")["experience"].median().to_dict()
    assert float(pf["education"].median(epsilon=BIG)) == cps["education"].median() == 12
    assert "21 candidates" in pf.session.ledger["query"].iloc[0]  # the integers 0..20


def test_one_charge_of_exactly_the_request_for_all_groups(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=3, ledger=":memory:")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    pf.groupby("region")["wage"].quantile([0.25, 0.5, 0.75], epsilon=Fraction(7, 10))
    assert session.spent == dp.Budget(Fraction(7, 10))
    ledger = session.ledger
    assert len(ledger) == 1
    assert ledger["query"].iloc[0] == "quantile(wage, q=[0.25, 0.5, 0.75]) by region"
    assert ledger["mechanism"].iloc[0] == "exponential mechanism (permute-and-flip)"


def test_a_list_of_levels_splits_each_groups_epsilon(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    one = pf.groupby("region")["wage"].median(epsilon=2)
    two = pf.groupby("region")["wage"].quantile([0.5, 0.9], epsilon=2)
    half = Fraction(1, 2)
    # each level's point gets half its ε (the rest selects its interval's ends)
    assert one.attrs["dpframe"].scales[0] == pytest.approx(rank_error(1.0, 0.95, half))
    assert two.attrs["dpframe"].scales[0] == pytest.approx(rank_error(0.5, 0.95, half))
    text = pf.session.explain(
        lambda: pf.groupby("region")["wage"].quantile([0.5, 0.9], epsilon=2)
    ).plain()
    assert "ε split over 2 levels" in text and "one charge for all groups" in text


def test_explain_states_each_groups_rank_error(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    text = pf.session.explain(lambda: pf.groupby("region")["wage"].median(epsilon=0.5)).plain()
    expected = dp.mechanisms.core.explanations.plain_number(rank_error(0.25, 0.95, Fraction(1, 2)))
    assert text.startswith(
        f"quantile(wage, q=[0.5]) by region = in each of 4 groups, a value whose rank in its "
        f"group is within ±{expected} rows"
    )
    assert "4,097-point public grid" in text
    assert pf.session.ledger.empty


def test_released_values_are_a_pandas_series_for_idxmax(cps: pd.DataFrame) -> None:
    """``groupby(k)[x].mean(...).idxmax()``: pandas' names on the released values, free."""
    pf = _frame(cps)
    means = pf.groupby("region")["wage"].mean(epsilon=BIG)
    assert means.idxmax() == cps.groupby("region")["wage"].mean().idxmax() == "northeast"
    medians = pf.groupby("region")["wage"].median(epsilon=BIG)
    assert medians.idxmax() == "northeast" and medians.idxmin() == "south"
    assert list(medians.nlargest(2).index) == ["northeast", "midwest"]
    assert len(pf.session.ledger) == 2  # post-processing charged nothing more
    assert not hasattr(pf.groupby("region"), "idxmax")  # not pandas' API on a group-by


def test_agg_takes_a_median_per_group(cps: pd.DataFrame) -> None:
    pf = _frame(cps, dtypes=INTEGERS)
    got = pf.groupby("region").agg({"wage": ["mean", "median"], "education": "median"}, epsilon=BIG)
    assert list(got.columns) == [("wage", "mean"), ("wage", "median"), ("education", "median")]
    want = cps.groupby("region").agg({"wage": ["median"], "education": "median"})
    np.testing.assert_allclose(
        got[("wage", "median")], want[("wage", "median")][got.index], atol=4 * WIDTH
    )
    assert got[("education", "median")].to_dict() == want[("education", "median")].to_dict()
    intervals = dp.ci(got)
    medians = got[("wage", "median")].to_numpy(dtype=float)
    assert (intervals[(("wage", "median"), "low")].to_numpy() <= medians).all()
    assert (intervals[(("wage", "median"), "high")].to_numpy() >= medians).all()
    parts = json.loads(pf.session.ledger["parts"].iloc[-1])
    assert [p["name"] for p in parts][1] == "quantile(wage, q=[0.5]) by region"
    single = pf.groupby("region")["wage"].agg("median", epsilon=BIG)
    assert isinstance(single, pd.Series) and single.name == "wage"


def test_zcdp_sessions_charge_rho(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1, delta=1e-6, ledger=":memory:")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    pf.groupby("region")["wage"].median(epsilon=0.5)
    assert session.remaining.epsilon == Fraction(1, 2)


def test_undeclared_keys_are_counted_and_warned_about(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(
        cps, bounds=CPS1988_BOUNDS, categories={"region": ["northeast", "midwest", "west"]}
    )
    with pytest.warns(UserWarning, match="about 8,800 rows have a region outside"):
        got = pf.groupby("region")["wage"].median(epsilon=BIG)
    assert list(got.index) == ["midwest", "northeast", "west"]
    assert float(got.dp.undeclared) == pytest.approx((cps["region"] == "south").sum(), abs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean = _frame(cps).groupby("region")["wage"].median(epsilon=BIG)
    assert abs(float(clean.dp.undeclared)) < 5


def test_privacy_units_calibrate_each_group_to_the_units_rows(
    cps: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Fraction, int]] = []
    real = permute_and_flip_rows

    def spy(utilities: Any, epsilon: Fraction, sensitivity: int, rng: Any) -> Any:
        calls.append((epsilon, sensitivity))
        return real(utilities, epsilon, sensitivity, rng)

    monkeypatch.setattr(quantile_family, "permute_and_flip_rows", spy)
    data = cps.assign(person=np.arange(len(cps)) // 3)
    session = dp.Session(epsilon=10, ledger=":memory:")
    pf = session.private_frame(
        data,
        bounds=CPS1988_BOUNDS,
        categories=CPS1988_CATEGORIES,
        privacy_unit=dp.PrivacyUnit("person", max_rows=3, max_groups=2),
    )
    got = pf.groupby("region")["wage"].quantile([0.5, 0.9], epsilon=2)
    half, ninety = Fraction(1, 2), Fraction(9, 10)
    # each level's ε = 1: half selects the point
    assert calls == [(half, utility_sensitivity(half) * 3), (half, 9 * 3)]
    assert got.attrs["dpframe"].scales[1] == pytest.approx(rank_error(0.5, 0.95, ninety, 3))
    assert session.spent == dp.Budget(2)
    explained = session.explain(lambda: pf.groupby("region")["wage"].median(epsilon=2)).plain()
    expected = dp.mechanisms.core.explanations.plain_number(rank_error(1.0, 0.95, half, 3))
    assert f"±{expected} rows" in explained


CASES: list[tuple[Callable[[dp.PrivateFrame], object], str]] = [
    (lambda pf: pf.groupby("smsa")["wage"].median(epsilon=1), "declared keys of 'smsa'"),
    (lambda pf: pf.groupby("region").median(epsilon=1), "Select a column first"),
    (lambda pf: pf.groupby("region")["experience"].median(epsilon=1), "bounds"),
    (lambda pf: pf.groupby("region")["parttime"].median(epsilon=1), "numeric column"),
    (lambda pf: pf.groupby("region")["wage"].quantile(1.5, epsilon=1), r"\[0, 1\]"),
    (lambda pf: pf.groupby("region")["wage"].quantile([], epsilon=1), "at least one"),
    (lambda pf: pf.groupby("region")["wage"].median(epsilon=-1), "epsilon"),
    (lambda pf: pf.groupby("region")["wage"].median(epsilon=11), "Requested"),
    (
        lambda pf: pf.groupby("region")["wage"].median(epsilon=1, candidates=[3, 2]),
        "sorted in increasing order",
    ),
    (
        lambda pf: pf.groupby("region")["wage"].median(epsilon=1, candidates=[1, 6000]),
        r"within the column's bounds \[0, 5000\]",
    ),
]


@pytest.mark.parametrize(("call", "match"), CASES)
def test_bad_grouped_quantiles_are_refused_before_the_charge(
    cps: pd.DataFrame, call: Callable[[dp.PrivateFrame], object], match: str
) -> None:
    session = dp.Session(epsilon=10, ledger=":memory:")
    pf = session.private_frame(
        cps, bounds={"wage": (0, 5000)}, categories={"region": CPS1988_CATEGORIES["region"]}
    )
    with pytest.raises(dp.DPError, match=match):
        call(pf)
    assert session.spent == dp.Budget(0) and session.ledger.empty


def test_too_many_histogram_cells_are_refused_before_the_charge() -> None:
    keys = [f"k{i}" for i in range(5000)]
    frame = pd.DataFrame({"k": keys[:10], "x": np.arange(10.0)})
    session = dp.Session(epsilon=10, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"x": (0, 9)}, categories={"k": keys})
    with pytest.raises(dp.DPError, match=r"at most 16,777,216 at once|limit"):
        pf.groupby("k")["x"].median(epsilon=1)
    assert session.ledger.empty
