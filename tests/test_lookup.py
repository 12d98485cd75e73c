"""merge/join with a public lookup table: public columns added by key (free), as pandas."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

BIG = 1e7

REGIONS = pd.DataFrame(
    {
        "region": ["northeast", "midwest", "south"],  # no row for west
        "pop_m": [57.6, 68.9, 126.3],
        "division": ["NE", "MW", "S"],
    }
)


@pytest.fixture
def pf(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=1e12, ledger=":memory:", name="lookup")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def test_left_merge_adds_public_columns_with_their_keys_and_bounds(
    pf: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    merged = pf.merge(REGIONS, on="region", how="left")
    truth = cps.merge(REGIONS, on="region", how="left")
    assert list(merged.columns) == list(truth.columns)
    assert merged["pop_m"].bounds == (57.6, 126.3)
    assert merged["division"].categories == ("MW", "NE", "S")  # pandas' order
    got = merged["pop_m"].mean(epsilon=BIG).value
    assert got == pytest.approx(truth["pop_m"].mean(), rel=1e-4)
    counts = merged["division"].value_counts(epsilon=BIG, sort=False)
    assert {k: round(v) for k, v in counts.items()} == truth["division"].value_counts().to_dict()
    assert merged["pop_m"].count(epsilon=BIG).value == pytest.approx(truth["pop_m"].count(), abs=1)
    assert pf.session.ledger["epsilon"].tolist() == [BIG] * 3  # the merge itself is free


def test_inner_merge_and_join_keep_only_matched_rows(
    pf: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    inner = pf.merge(REGIONS, on="region", how="inner")
    want = len(cps.merge(REGIONS, on="region", how="inner"))
    assert inner.count(epsilon=BIG).value == pytest.approx(want, abs=1)
    joined = pf.join(REGIONS.set_index("region"), on="region")
    grouped = joined.groupby("region")["pop_m"].mean(epsilon=BIG)
    assert grouped["south"] == pytest.approx(126.3, abs=1e-3)
    assert np.isnan(grouped["west"]) or grouped["west"] == pytest.approx(57.6, abs=100)


def test_a_missing_key_matches_the_tables_missing_key_as_pandas() -> None:
    data = pd.DataFrame({"k": ["a", None, "b", None], "x": [1.0, 2.0, 3.0, 4.0]})
    table = pd.DataFrame({"k": ["a", None], "v": [10.0, 20.0]})
    session = dp.Session(epsilon=1e12, ledger=":memory:", name="nan-key")
    frame = session.private_frame(data, bounds={"x": (0, 5)}, categories={"k": ["a", "b"]})
    got = frame.merge(table, on="k")["v"].sum(epsilon=BIG).value
    assert got == pytest.approx(data.merge(table, on="k", how="left")["v"].sum(), abs=1e-3)


@pytest.mark.parametrize("how", ["left", "inner"])
def test_left_on_right_on_keeps_both_keys_as_pandas(
    pf: dp.PrivateFrame, cps: pd.DataFrame, how: Literal["left", "inner"]
) -> None:
    table = REGIONS.rename(columns={"region": "area"})
    merged = pf.merge(table, left_on="region", right_on="area", how=how)
    truth = cps.merge(table, left_on="region", right_on="area", how=how)
    assert list(merged.columns) == list(truth.columns)
    truth["wage"] = truth["wage"].clip(*CPS1988_BOUNDS["wage"])  # as the frame reads it
    counts = merged["area"].value_counts(epsilon=BIG, sort=False)
    assert {k: round(v) for k, v in counts.items()} == truth["area"].value_counts().to_dict()
    got = merged.groupby("division")["wage"].mean(epsilon=BIG)
    want = truth.groupby("division")["wage"].mean()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-3), key
    assert merged.count(epsilon=BIG).value == pytest.approx(len(truth), abs=1)
    assert pf.session.ledger["epsilon"].tolist() == [BIG] * 3  # the merge itself is free


def test_left_on_right_on_with_the_same_name_is_on(pf: dp.PrivateFrame) -> None:
    merged = pf.merge(REGIONS, left_on="region", right_on="region")
    assert list(merged.columns) == list(pf.merge(REGIONS, on="region").columns)


def test_clashing_names_take_pandas_suffixes(pf: dp.PrivateFrame) -> None:
    table = pd.DataFrame({"region": ["south"], "wage": [1.0]})
    merged = pf.merge(table, on="region")
    assert "wage_x" in merged.columns and "wage_y" in merged.columns
    assert merged["wage_x"].bounds == (0.0, 5000.0)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda pf: pf.merge(pf, on="region"), "has no ID space .* cannot be joined privately"),
        (lambda pf: pf.join(pf, on="region"), "two private frames is refused"),
        (
            lambda pf: pf.merge(pd.concat([REGIONS, REGIONS]), on="region", validate="m:1"),
            "repeats in the public table, so the merge is not many-to-one",
        ),
        (
            lambda pf: pf.merge(pd.concat([REGIONS, REGIONS]), on="region", how="outer"),
            "only 'left' and 'inner'",
        ),
        (
            lambda pf: pf.merge(
                pd.concat([REGIONS, REGIONS, REGIONS.assign(region=None)]), on="region"
            ),
            "repeats and has missing values",
        ),
        (
            lambda pf: pf.merge(pd.concat([REGIONS, REGIONS]), on="region", max_rows=1),
            "has no ID column",
        ),
        (lambda pf: pf.merge(REGIONS, on="region", how="outer"), "only 'left' and 'inner'"),
        (lambda pf: pf.merge(REGIONS, on="nope"), "Unknown column 'nope'"),
        (lambda pf: pf.merge(REGIONS.rename(columns={"region": "r"}), on="region"), "no column"),
        (
            lambda pf: pf.merge(pd.DataFrame({"wage": ["a"], "v": [1]}), on="wage"),
            "keys are text",
        ),
        (lambda pf: pf.merge(REGIONS, on="region", validate="1:1"), "many-to-one"),
        (lambda pf: pf.join(REGIONS.set_index("region")), "needs on=column"),
        (lambda pf: pf.merge(REGIONS[["region"]], on="region"), "no column besides the key"),
        (
            lambda pf: pf.merge(REGIONS, on="region", left_on="region", right_on="region"),
            "on= or left_on= with right_on=, not both",
        ),
        (lambda pf: pf.merge(REGIONS, left_on="region"), "needs both left_on="),
        (lambda pf: pf.merge(REGIONS, right_on="region"), "needs both left_on="),
        (lambda pf: pf.merge(REGIONS, left_on="nope", right_on="region"), "Unknown column 'nope'"),
        (lambda pf: pf.merge(REGIONS, left_on="region", right_on="nope"), "no column 'nope'"),
        (
            lambda pf: pf.merge(REGIONS, left_on=["region", "wage"], right_on=["region", "x"]),
            "takes one key column: left_on=",
        ),
        (
            lambda pf: pf.merge(
                REGIONS.assign(area=REGIONS["region"]), left_on="region", right_on="area"
            ),
            "has a column 'region' besides its key 'area'",
        ),
        (lambda pf: pf.merge(REGIONS, on="region", max_rows=2), "for a table whose key repeats"),
        (lambda pf: pf.merge(REGIONS, on="region", rows="dropped"), "for merging two private"),
    ],
)
def test_bad_merges_are_refused_before_any_charge(
    pf: dp.PrivateFrame, call: Callable[[Any], Any], match: str
) -> None:
    with pytest.raises(dp.DPError, match=match):
        call(pf)
    assert pf.session.ledger.empty
