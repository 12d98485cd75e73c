"""pandas' ``agg`` on private frames, columns and group-bys: pandas' shapes, one charge split
over the (column, aggregate) cells, every cell's interval from ``dp.ci``."""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

BIG = 1e5


def _frame(cps: pd.DataFrame, epsilon: float = 1e7) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:", name="agg")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def _clipped(cps: pd.DataFrame) -> pd.DataFrame:
    out: pd.DataFrame = cps.copy()
    for name, (low, high) in CPS1988_BOUNDS.items():
        out[name] = out[name].clip(low, high)
    return out


def _close(got: pd.DataFrame | pd.Series, want: pd.DataFrame | pd.Series) -> None:
    assert type(got) is type(want)
    assert list(got.index) == list(want.index)
    if isinstance(got, pd.DataFrame):
        assert list(got.columns) == list(want.columns)
    np.testing.assert_allclose(
        np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=2e-3, atol=0.5
    )


def test_a_dict_gives_pandas_table_of_aggregates_by_columns(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    got = pf.agg({"wage": ["mean", "std"], "education": "mean"}, epsilon=BIG)
    want = _clipped(cps).agg({"wage": ["mean", "std"], "education": "mean"})
    want.loc["std", "wage"] = _clipped(cps)["wage"].std(ddof=0)  # dpframe's std is ddof=0
    _close(got, want)
    assert got.loc["mean", "wage"] == pytest.approx(_clipped(cps)["wage"].mean(), rel=1e-3)
    assert np.isnan(got.loc["std", "education"])  # not asked, as in pandas


def test_a_column_list_gives_a_series_and_a_name_gives_a_release(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    got = pf["education"].agg(["mean", "count", "sum"], epsilon=BIG)
    want = _clipped(cps)["education"].agg(["mean", "count", "sum"])
    _close(got, want)
    assert got.name == "education"
    single = pf["education"].agg("mean", epsilon=BIG)
    assert isinstance(single, dp.Release) and single.query == "mean(education)"


def test_a_median_cell_is_a_quantile_within_its_rank_error(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    got = pf.agg({"wage": ["median", "mean"]}, epsilon=BIG)
    assert got.loc["median", "wage"] == pytest.approx(cps["wage"].median(), rel=0.01)


def test_frame_agg_of_a_name_covers_the_bounded_columns(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    got = pf.agg("mean", epsilon=BIG)
    want = _clipped(cps)[list(CPS1988_BOUNDS)].agg("mean")
    _close(got, want)
    table = pf.agg(["mean", "count"], epsilon=BIG)
    _close(table, _clipped(cps)[list(CPS1988_BOUNDS)].agg(["mean", "count"]))


GROUPED: list[tuple[str, Callable[[Any], Any], Callable[[pd.DataFrame], Any]]] = [
    (
        "column list",
        lambda g: g["wage"].agg(["mean", "count"], epsilon=BIG),
        lambda g: g["wage"].agg(["mean", "count"]),
    ),
    (
        "dict with a list",
        lambda g: g.agg({"wage": ["mean", "sum"], "education": "mean"}, epsilon=BIG),
        lambda g: g.agg({"wage": ["mean", "sum"], "education": "mean"}),
    ),
    (
        "dict of names",
        lambda g: g.agg({"wage": "mean", "education": "sum"}, epsilon=BIG),
        lambda g: g.agg({"wage": "mean", "education": "sum"}),
    ),
]


@pytest.mark.parametrize(("what", "private", "plain"), GROUPED, ids=[g[0] for g in GROUPED])
def test_grouped_agg_has_pandas_shape(
    cps: pd.DataFrame, what: str, private: Callable[[Any], Any], plain: Callable[[Any], Any]
) -> None:
    pf = _frame(cps)
    got = private(pf.groupby("region"))
    want = plain(_clipped(cps).groupby("region"))
    want.index.name = "region"
    _close(got, want)
    assert got.index.name == "region"
    single = pf.groupby("region")["wage"].agg("mean", epsilon=BIG)
    assert isinstance(single, pd.Series) and single.name == "wage"  # as pandas (issue 30)


def test_one_charge_split_over_the_cells_in_the_ledger_and_explain(cps: pd.DataFrame) -> None:
    pf = _frame(cps, epsilon=10)
    spec = {"wage": ["mean", "median"], "education": "mean"}
    explained = pf.session.explain(lambda: pf.agg(spec, epsilon=2, weights=[2, 1, 1]))
    assert "split over 3 cells: mean(wage) 2/4, median(wage) 1/4, mean(education) 1/4" in str(
        explained
    )
    assert pf.session.spent.is_zero
    pf.agg(spec, epsilon=2, weights=[2, 1, 1])
    ledger = pf.session.ledger
    assert len(ledger) == 1 and ledger["epsilon"].iloc[0] == 2
    parts = json.loads(ledger["parts"].iloc[0])
    assert [(p["name"], Fraction(p["epsilon"])) for p in parts] == [
        ("mean(wage)", Fraction(1)),
        ("quantile(wage, q=[0.5])", Fraction(1, 2)),
        ("mean(education)", Fraction(1, 2)),
    ]
    assert pf.session.spent == dp.Budget(2)


def test_weights_set_each_cells_noise(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    even = pf["wage"].agg(["sum", "count"], epsilon=1)
    skewed = pf["wage"].agg(["sum", "count"], epsilon=1, weights=[3, 1])
    scales = even.attrs["dpframe"].scales, skewed.attrs["dpframe"].scales
    # ε/2 each, then 3ε/4 and ε/4: the sum's scale x 2/3, the count's x 2 (±0.2% grid)
    assert scales[1][0] / scales[0][0] == pytest.approx(2 / 3, rel=3e-3)
    assert scales[1][1] / scales[0][1] == pytest.approx(2, rel=3e-3)


def test_every_cell_has_its_interval(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    table = pf.agg({"wage": ["mean", "median"], "education": ["mean", "sum"]}, epsilon=50)
    intervals = dp.ci(table)
    assert list(intervals.columns) == [
        ("wage", "low"),
        ("wage", "high"),
        ("education", "low"),
        ("education", "high"),
    ]
    for column in ("wage", "education"):
        low, high = intervals.loc["mean", (column, "low")], intervals.loc["mean", (column, "high")]
        assert low <= table.loc["mean", column] <= high
    median = table.loc["median", "wage"]  # its interval was released with it
    assert (
        intervals.loc["median", ("wage", "low")]
        <= median
        <= intervals.loc["median", ("wage", "high")]
    )
    assert intervals.loc["median", "education"].isna().all()  # no median asked there
    assert intervals.loc["sum", ("wage", "low")] != intervals.loc["sum", ("wage", "low")]  # NaN
    grouped = pf.groupby("region")["wage"].agg(["mean", "count"], epsilon=50)
    per_group = dp.ci(grouped)
    assert list(per_group.index) == sorted(CPS1988_CATEGORIES["region"])  # pandas' order
    assert (per_group[("count", "low")] <= grouped["count"]).all()
    series = pf["wage"].agg(["mean", "count"], epsilon=50)
    assert list(dp.ci(series).columns) == ["low", "high"]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda pf: pf.agg({"wage": "max"}, epsilon=1), r"unknown aggregate 'max'.*quantile\(1\.0"),
        (lambda pf: pf.agg({"wage": np.mean}, epsilon=1), "Python functions cannot run"),
        (lambda pf: pf.agg({"nope": "mean"}, epsilon=1), "nope"),
        (lambda pf: pf.agg({}, epsilon=1), "dict of .column: aggregates. is empty"),
        (lambda pf: pf.agg({"wage": []}, epsilon=1), "empty list of aggregates"),
        (lambda pf: pf.agg({"wage": ["mean", "mean"]}, epsilon=1), "names an aggregate twice"),
        (lambda pf: pf.agg({"region": "mean"}, epsilon=1), "mean of 'region' needs public bounds"),
        (
            lambda pf: pf.agg({"wage": ["mean", "sum"]}, epsilon=1, weights=[1]),
            r"weights= needs 2 positive integers",
        ),
        (
            lambda pf: pf.agg({"wage": ["mean", "sum"]}, epsilon=1, weights=[1, 0]),
            r"weights= needs 2 positive integers",
        ),
        (
            lambda pf: pf["wage"].agg("mean", epsilon=1, weights=[1]),
            "weights= needs a list of aggregates",
        ),
        (
            lambda pf: pf.groupby("region")["parttime"].agg(["median"], epsilon=1),
            "median of 'parttime' needs public bounds",
        ),
        (lambda pf: pf.agg({"wage": "mean"}), "epsilon"),
    ],
)
def test_bad_input_is_refused_before_any_charge(
    cps: pd.DataFrame, call: Callable[[dp.PrivateFrame], Any], match: str
) -> None:
    pf = _frame(cps, epsilon=10)
    with pytest.raises(dp.DPError, match=match):
        call(pf)
    assert pf.session.spent.is_zero and pf.session.ledger.empty
