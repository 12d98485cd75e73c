"""pf.query (parsed, never evaluated), pf.rename and pf.dropna, as pandas spells them (free)."""

from __future__ import annotations

import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

BIG = 1e6


@pytest.fixture
def data(cps: pd.DataFrame) -> pd.DataFrame:
    renamed: pd.DataFrame = cps.rename(columns={"parttime": "part time"})
    return renamed


@pytest.fixture
def pf(data: pd.DataFrame) -> dp.PrivateFrame:
    categories = {k: v for k, v in CPS1988_CATEGORIES.items() if k != "parttime"}
    categories["part time"] = CPS1988_CATEGORIES["parttime"]
    session = dp.Session(epsilon=1e9, ledger=":memory:", name="transforms")
    return session.private_frame(data, bounds=CPS1988_BOUNDS, categories=categories)


@pytest.mark.parametrize(
    "condition",
    [
        "education >= 12 and region == 'south'",
        "education >= 12 & region == 'south' | `part time` == 'yes'",
        "8 <= experience < 20 and region in ['south', 'west']",
        "not (region == 'west') and wage / 40 > 15",
        "region not in ('south',) or -experience > 0",
        "smsa == 'yes' and ~(education < 16)",
    ],
)
def test_query_keeps_the_rows_pandas_keeps(
    pf: dp.PrivateFrame, data: pd.DataFrame, condition: str
) -> None:
    got = pf.query(condition).count(epsilon=BIG)
    assert int(got) == len(data.query(condition))


def test_query_never_evaluates_and_literals_keep_their_operators(pf: dp.PrivateFrame) -> None:
    keyed = pf.with_categories(region=[*pf.categories["region"], "a&b|~c"])
    assert int(keyed.query("region == 'a&b|~c'").count(epsilon=BIG)) == 0
    assert pf.session.ledger["epsilon"].tolist() == [BIG]
    with pytest.raises(dp.SchemaError, match=r"'a&b\|~c' is not a declared key of 'region'"):
        pf.query("region == 'a&b|~c'")  # one literal, refused before any charge
    assert pf.session.ledger["epsilon"].tolist() == [BIG]


@pytest.mark.parametrize(
    ("condition", "match"),
    [
        ("wage.max() > 3", "query\\(\\) understands comparisons"),
        ("__import__('os').system('true')", "query\\(\\) understands comparisons"),
        ("wage ** 2 > 3", "query\\(\\) understands comparisons"),
        ("x if y else z", "query\\(\\) understands comparisons"),
        ("wage >", "is not a condition dpframe can read"),
        ("nope > 3", "Unknown column 'nope'"),
        ("wage + 1", "A filter needs a condition"),
        ("", "a non-empty string"),
        ("region in region", "query\\(\\) understands comparisons"),
    ],
)
def test_query_refuses_what_it_cannot_read_before_any_charge(
    pf: dp.PrivateFrame, condition: str, match: str
) -> None:
    with pytest.raises(dp.SchemaError, match=match):
        pf.query(condition)
    assert pf.session.ledger.empty


def test_rename_keeps_the_declared_facts(pf: dp.PrivateFrame, data: pd.DataFrame) -> None:
    renamed = pf.rename(columns={"wage": "earnings", "region": "area"})
    assert list(renamed.columns) == [
        "earnings",
        "education",
        "experience",
        "ethnicity",
        "smsa",
        "area",
        "part time",
    ]
    assert renamed.bounds["earnings"] == CPS1988_BOUNDS["wage"]
    assert renamed.categories["area"] == tuple(sorted(CPS1988_CATEGORIES["region"]))
    mean = renamed["earnings"].mean(epsilon=BIG)
    assert mean.value == pytest.approx(data["wage"].clip(0, 5000).mean(), rel=1e-4)
    with pytest.raises(dp.SchemaError, match="Unknown column 'wage'"):
        renamed["wage"]
    with pytest.raises(dp.SchemaError, match="two columns would have the same name"):
        pf.rename(columns={"wage": "education"})
    with pytest.raises(dp.SchemaError, match=r"rename\(\) takes columns="):
        pf.rename()


def test_dropna_keeps_complete_rows(pf: dp.PrivateFrame) -> None:
    session = dp.Session(epsilon=1e9, ledger=":memory:", name="dropna")
    frame = pd.DataFrame({"x": [1.0, None, 3.0, None], "y": ["a", "b", None, None]})
    private = session.private_frame(frame, bounds={"x": (0, 5)}, categories={"y": ["a", "b"]})
    assert int(private.dropna().count(epsilon=BIG)) == 1
    assert int(private.dropna(subset=["x"]).count(epsilon=BIG)) == 2
    with pytest.raises(dp.SchemaError, match="takes a list of column names"):
        private.dropna(subset=[])
