"""groupby(keys=public combinations) and key discovery over several columns."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.plan.combine import Combine, read_combination
from dpframe.plan.expr_codec import expr_from_dict
from dpframe.plan.expressions import Col

BIG = 1e7
ALLOWED = pd.DataFrame(
    {"region": ["south", "south", "west"], "ethnicity": ["cauc", "afam", "cauc"]}
)


@pytest.fixture
def pf(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=1e12, delta=1e-5, ledger=":memory:", name="keysets")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def _truth(cps: pd.DataFrame) -> pd.DataFrame:
    frame: pd.DataFrame = cps.merge(ALLOWED, on=["region", "ethnicity"], how="inner")
    return frame


def test_a_public_key_set_gives_one_row_per_listed_combination(
    pf: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    with pytest.warns(UserWarning, match="region, ethnicity outside the declared"):
        sizes = pf.groupby(["region", "ethnicity"], keys=ALLOWED).size(epsilon=BIG)
    want: Any = _truth(cps).groupby(["region", "ethnicity"]).size()
    assert list(sizes.index) == list(ALLOWED.itertuples(index=False, name=None))
    assert sizes.index.names == ["region", "ethnicity"]
    for key, value in sizes.items():
        assert value == pytest.approx(want[key], abs=1)
    outside = len(cps) - len(_truth(cps))
    assert float(sizes.dp.undeclared) == pytest.approx(outside, abs=1)
    assert pf.session.ledger["epsilon"].tolist() == [BIG]


def test_means_agg_and_quantiles_over_a_key_set(pf: dp.PrivateFrame, cps: pd.DataFrame) -> None:
    grouped = pf.groupby(["region", "ethnicity"], keys=ALLOWED)
    clipped = _truth(cps).assign(wage=lambda d: d["wage"].clip(0, 5000))
    want = clipped.groupby(["region", "ethnicity"])["wage"].mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        means = grouped["wage"].mean(epsilon=BIG)
        table = grouped.agg({"wage": ["mean", "count"]}, epsilon=BIG)
        medians = grouped["wage"].median(epsilon=BIG)
        top = grouped.argmax("count", epsilon=BIG)
    for key, value in means.items():
        assert value == pytest.approx(want[key], rel=1e-4)
    assert list(table.index) == list(means.index)
    assert table.loc[("west", "cauc"), ("wage", "mean")] == pytest.approx(
        want[("west", "cauc")], rel=1e-4
    )
    assert medians.index.equals(means.index)
    assert top == ("south", "cauc")
    low_high = means.dp.ci(0.95)
    assert list(low_high.index) == list(means.index)


def test_key_sets_need_no_declared_categories(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1e12, ledger=":memory:", name="keysets-free")
    frame = session.private_frame(cps, bounds=CPS1988_BOUNDS)
    keys = pd.DataFrame({"region": ["south"], "education": [12]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sizes = frame.groupby(["region", "education"], keys=keys).size(epsilon=BIG)
    want = ((cps["region"] == "south") & (cps["education"] == 12)).sum()
    assert sizes[("south", 12)] == pytest.approx(want, abs=1)


def test_several_columns_discovered_at_once(pf: dp.PrivateFrame, cps: pd.DataFrame) -> None:
    found = pf.discover_keys(["region", "education"], epsilon=1.0, delta=1e-6)
    assert list(found.columns) == ["region", "education"]
    assert str(found["education"].dtype) == "int64"
    truth = cps.groupby(["region", "education"]).size()
    combos = set(found.itertuples(index=False, name=None))
    assert combos <= set(truth.index)
    assert {k for k, n in truth.items() if n >= 200} <= combos  # large cells always pass
    assert len(pf.session.ledger) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sizes = pf.groupby(["region", "education"], keys=found).size(epsilon=BIG)
    assert len(sizes) == len(found)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda pf: pf.groupby(["region", "ethnicity"], keys=[("south", "cauc")]), "DataFrame"),
        (lambda pf: pf.groupby(["region", "ethnicity"], keys=ALLOWED[["region"]]), "exactly"),
        (
            lambda pf: pf.groupby(["region", "ethnicity"], keys=pd.concat([ALLOWED, ALLOWED])),
            "repeats",
        ),
        (
            lambda pf: pf.groupby(
                ["region", "ethnicity"], keys=pd.DataFrame({"region": [None], "ethnicity": ["a"]})
            ),
            "no missing value",
        ),
        (
            lambda pf: pf.groupby(
                ["region", "nope"], keys=ALLOWED.rename(columns={"ethnicity": "nope"})
            ),
            "Unknown column",
        ),
        (lambda pf: pf.discover_keys(["region"], epsilon=1, delta=1e-6), "two or more"),
        (
            lambda pf: pf.discover_keys(["region", "region"], epsilon=1, delta=1e-6),
            "each column once",
        ),
    ],
)
def test_bad_key_sets_are_refused_before_any_charge(
    pf: dp.PrivateFrame, call: Callable[[Any], Any], match: str
) -> None:
    with pytest.raises(dp.SchemaError, match=match):
        call(pf)
    assert pf.session.ledger.empty


def test_the_combined_key_round_trips_and_reads_back() -> None:
    node = Combine(Col("a"), (Col("b"), Col("c")))
    assert expr_from_dict(node.to_dict()).key() == node.key()
    assert read_combination('["south", 12.0]', 2) == ("south", 12.0)
    assert read_combination('["south"]', 2) is None
    assert read_combination("not json", 2) is None
    with pytest.raises(dp.SchemaError, match="2 to 8 columns"):
        Combine(Col("a"), ())


def test_groupby_takes_derived_columns_and_sums_every_bounded_column(
    pf: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    edges = [0, 8, 12, 16, 20]
    means = pf.groupby(pf["education"].cut(edges))["wage"].mean(epsilon=BIG)
    bands = pd.cut(cps["education"], edges)
    want = cps.assign(wage=cps["wage"].clip(0, 5000)).groupby(bands, observed=False)["wage"]
    # As pandas: the bands are named after their column (the plan adds them as education_key).
    assert means.index.name == want.mean().index.name == "education"
    for key, value in want.mean().items():
        assert means[key] == pytest.approx(value, rel=1e-4)
    sums = pf.groupby("region").sum(epsilon=BIG)
    assert list(sums.columns) == ["wage", "education", "experience"]
    truth = cps.groupby("region")["education"].sum()
    assert sums.loc["south", "education"] == pytest.approx(truth["south"], rel=1e-4)
    with pytest.raises(dp.SchemaError, match="or derived columns"):
        pf.groupby(3)


def test_grouped_columns_by_attribute_and_dates_compared_with_text(
    pf: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    means = pf.groupby("region").wage.mean(epsilon=BIG)  # grouped.wage, as pandas
    want = cps.assign(wage=cps["wage"].clip(0, 5000)).groupby("region")["wage"].mean()
    assert means["south"] == pytest.approx(want["south"], rel=1e-4)
    assert "wage" in dir(pf.groupby("region"))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        pf.groupby("region").nope  # noqa: B018
    dated = pd.DataFrame({"d": pd.to_datetime(["2009-05-01", "2011-02-03", "2012-12-31"])})
    session = dp.Session(epsilon=1e12, ledger=":memory:", name="dates-text")
    frame = session.private_frame(dated)
    later = frame[frame["d"] >= "2011-01-01"].count(epsilon=BIG).value
    assert later == pytest.approx(2, abs=0.01)
    inside = frame[frame["d"].between("2009-01-01", "2011-12-31")].count(epsilon=BIG).value
    assert inside == pytest.approx(2, abs=0.01)
