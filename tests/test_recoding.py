"""Series.map(dict) and Series.replace on private columns, as pandas (free public recodings)."""

from __future__ import annotations

import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

BIG = 1e6


@pytest.fixture
def pf(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=1e9, ledger=":memory:", name="recoding")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def test_map_labels_the_listed_values_and_misses_the_others(
    pf: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    mapped = pf["region"].map({"south": "S", "west": "W"})
    assert mapped.categories == ("S", "W") and mapped.name == "region"
    got = mapped.value_counts(epsilon=BIG, sort=False)
    want = cps["region"].map({"south": "S", "west": "W"}).value_counts()
    assert {k: round(v) for k, v in got.items()} == want.to_dict()
    assert pf.session.ledger["epsilon"].tolist() == [BIG]  # the recoding itself is free


def test_replace_keeps_the_other_keys(pf: dp.PrivateFrame, cps: pd.DataFrame) -> None:
    replaced = pf["region"].replace({"south": "sud"})
    assert replaced.categories == ("midwest", "northeast", "sud", "west")  # pandas' order
    got = replaced.value_counts(epsilon=BIG, sort=False)
    want = cps["region"].replace({"south": "sud"}).value_counts()
    assert {k: round(v) for k, v in got.items()} == want.to_dict()
    pair = pf["region"].replace(["south", "west"], "sunbelt")
    assert pair.categories == ("midwest", "northeast", "sunbelt")


def test_numeric_labels_give_a_numeric_column(pf: dp.PrivateFrame, cps: pd.DataFrame) -> None:
    share = pf.assign(part=pf["parttime"].map({"yes": 1, "no": 0}))["part"].mean(epsilon=BIG)
    assert share.value == pytest.approx((cps["parttime"] == "yes").mean(), abs=1e-6)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: s.map(str.upper), "Python functions cannot run on private rows"),
        (lambda s: s.map(["a"]), r"map\(\) takes a dict"),
        (lambda s: s.map({}), "at least one value"),
        (lambda s: s.map({"south": "S"}, na_action="drop"), "na_action"),
        (lambda s: s.replace({"south": "S"}, "x"), "takes no value="),
        (lambda s: s.map({"south": ["S"]}), "label"),
    ],
)
def test_bad_recodings_are_refused(pf: dp.PrivateFrame, call: object, match: str) -> None:
    with pytest.raises(dp.SchemaError, match=match):
        call(pf["region"])  # type: ignore[operator]
    assert pf.session.ledger.empty
