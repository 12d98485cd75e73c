"""Keys of a number computed from one keyed column: ``groupby(pf["age"] // 10 * 10)``, as pandas.

The keys are the expression evaluated on the source column's public keys
(declared numeric categories, or an integer column's whole numbers within
its bounds), so nothing is read from the rows; released groups are compared
with pandas' own ``groupby`` at a huge ε, and the keys' rule on its edges.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.plan.columns import ColumnInfo
from dpframe.plan.expressions import Col
from dpframe.plan.key_images import MAX_DERIVED_KEYS
from dpframe.plan.schema import Schema, infer_column

BIG = 1e9


@pytest.fixture
def pf(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=1e12, ledger=":memory:", name="derived-keys")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def _truth(cps: pd.DataFrame) -> pd.DataFrame:
    clipped: pd.DataFrame = cps.copy()
    for name, (low, high) in CPS1988_BOUNDS.items():
        clipped[name] = clipped[name].clip(low, high)
    return clipped


@pytest.mark.parametrize(
    ("derive", "pandas_derive"),
    [
        (lambda s: s // 4 * 4, lambda s: s // 4 * 4),
        (lambda s: s // 5, lambda s: s // 5),
        (lambda s: (s - 10).abs(), lambda s: (s - 10).abs()),
        (lambda s: np.floor(s / 3), lambda s: np.floor(s / 3)),
        (lambda s: s.clip(8, 16) * 2, lambda s: s.clip(8, 16) * 2),
    ],
    ids=["floordiv-times", "floordiv", "abs", "np.floor", "clip-times"],
)
def test_grouping_by_a_derived_integer_column_releases_pandas_groups(
    pf: dp.PrivateFrame,
    cps: pd.DataFrame,
    derive: Callable[[Any], Any],
    pandas_derive: Callable[[pd.Series], pd.Series],
) -> None:
    truth = _truth(cps)
    want = truth.groupby(pandas_derive(truth["education"]))["wage"].mean()
    got = pf.groupby(derive(pf["education"]))["wage"].mean(epsilon=BIG)
    assert set(want.index) <= set(got.index.astype(float))  # every pandas group is a key
    released = {float(k): float(v) for k, v in zip(got.index.astype(float), got, strict=True)}
    for key, value in zip(want.index.astype(float), want, strict=True):
        assert released[key] == pytest.approx(value, rel=1e-4), key
    empty = [k for k in released if k not in set(want.index)]
    assert all(np.isnan(released[k]) for k in empty)  # keys with no row: too thin, NaN
    assert len(pf.session.ledger) == 1  # the grouping column itself is free
    assert got.index.name == want.index.name == "education"  # pandas' name, not education_key


def test_a_derived_key_shows_its_column_name_in_every_grouped_result(
    pf: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    """``education_key`` (the name is taken) is what the plan holds; results say ``education``."""
    decade = pf["experience"] // 10 * 10
    grouped = pf.groupby(decade)
    mean = grouped["wage"].mean(epsilon=1)
    assert mean.index.name == "experience"
    assert mean.dp.ci(0.95).index.name == "experience"  # the intervals follow the name
    table = grouped.agg({"wage": ["mean", "count"]}, epsilon=1)
    assert table.index.name == "experience"
    median = grouped["wage"].median(epsilon=1)
    assert median.index.name == "experience"
    both = pf.groupby([decade, "region"]).size(epsilon=1)
    assert list(both.index.names) == ["experience", "region"]
    pandas_both = cps.groupby([cps["experience"] // 10 * 10, "region"]).size()
    assert list(both.index.names) == list(pandas_both.index.names)
    distinct = grouped["region"].nunique(epsilon=1)
    assert distinct.index.name == "experience"


def test_derived_keys_are_the_image_of_the_declared_keys(pf: dp.PrivateFrame) -> None:
    decades = pf["experience"] // 10 * 10
    low, high = CPS1988_BOUNDS["experience"]
    assert decades.categories == tuple(
        sorted({k // 10 * 10 for k in range(int(low), int(high) + 1)})
    )
    assert (pf["education"] * 0.5).categories == tuple(
        k * 0.5 if k % 2 else k // 2 for k in range(21)
    )


def test_the_keys_are_whole_numbers_shown_as_integers() -> None:
    info = ColumnInfo("g", "numeric", "float64", (1.0, 3.0), (1, 2, 3))
    derived = infer_column("d", Col("g") * 2.0 + 1.0, Schema((info,)))
    assert derived.categories == (3, 5, 7)
    assert all(type(k) is int for k in derived.categories)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda pf: pf["wage"] // 100, "a float column without declared keys"),
        (lambda pf: pf["education"] + pf["experience"], "two columns"),
    ],
    ids=["no-keys", "two-columns"],
)
def test_no_keys_without_one_keyed_source(pf: dp.PrivateFrame, make: Any, why: str) -> None:
    assert make(pf).categories is None, why


def test_a_source_with_too_many_keys_gives_none() -> None:
    info = ColumnInfo("n", "numeric", "Int64", (0.0, float(MAX_DERIVED_KEYS)))
    assert infer_column("d", Col("n") * 2.0, Schema((info,))).categories is None
    small = ColumnInfo("n", "numeric", "Int64", (0.0, float(MAX_DERIVED_KEYS - 1)))
    assert (
        len(infer_column("d", Col("n") * 2.0, Schema((small,))).categories or ())
        == MAX_DERIVED_KEYS
    )


def test_a_row_outside_the_keys_is_in_no_group() -> None:
    data = pd.DataFrame({"n": [1, 2, 3, 250], "x": [1.0, 1.0, 1.0, 1.0]})
    session = dp.Session(epsilon=1e12, ledger=":memory:")
    frame = session.private_frame(data, bounds={"n": (1, 3), "x": (0, 1)})
    got = frame.groupby(frame["n"] * 10)["x"].sum(epsilon=BIG)
    assert list(got.index) == [10, 20, 30]
    assert [round(float(v)) for v in got] == [1, 1, 1]
    assert round(float(got.dp.undeclared)) == 1  # 250 * 10 is not a key
