"""fillna, where, mask, astype, round and numpy functions on private columns (free expressions).

Each released answer is compared with pandas' on the same rows at a large ε
(noise about 1e-6 of the answer), each derived column's public bounds with
what interval arithmetic gives, and each refusal happens before anything is
charged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.plan.elementwise import UFunc, Where
from dpframe.plan.expr_codec import expr_from_dict
from dpframe.plan.expressions import Col

BIG = 1e7


@pytest.fixture
def holes(cps: pd.DataFrame) -> pd.DataFrame:
    """CPS with missing wages (every 7th row) and missing regions (every 11th)."""
    data: pd.DataFrame = cps.copy()
    data.loc[data.index % 7 == 0, "wage"] = np.nan
    data.loc[data.index % 11 == 0, "region"] = None
    return data


@pytest.fixture
def pf(holes: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=1e12, ledger=":memory:", name="elementwise")
    return session.private_frame(holes, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def test_numpy_functions_give_bounded_expressions_matching_numpy(
    pf: dp.PrivateFrame, holes: pd.DataFrame
) -> None:
    wage = pf["wage"]
    assert np.log1p(wage).bounds == pytest.approx((0.0, np.log1p(5000.0)))
    assert np.sqrt(wage).bounds == pytest.approx((0.0, np.sqrt(5000.0)))
    assert np.log(wage).bounds is None  # log(0) = -inf: no finite lower bound
    assert np.log(wage.clip(1, 5000)).bounds == pytest.approx((0.0, np.log(5000.0)))
    assert np.exp(pf["education"] / 10).bounds == pytest.approx((1.0, np.exp(2.0)))
    assert np.square(pf["experience"]).bounds == (0.0, 64.0**2)
    assert np.sin(wage).bounds == (-1.0, 1.0)
    assert np.floor(wage / 3).bounds == (0.0, 1666.0)
    assert np.clip(wage, 100, 200).bounds == (100.0, 200.0)
    assert np.round(wage / 3).bounds == (0.0, 1667.0)
    for function in (np.log1p, np.sqrt, np.floor, np.cbrt):
        got = function(wage).mean(epsilon=BIG).value
        want = function(holes["wage"].clip(0, 5000)).mean()
        assert got == pytest.approx(want, rel=1e-4), function.__name__
    assert pf.session.ledger["epsilon"].tolist() == [BIG] * 4  # the functions are free


def test_unboundable_numpy_functions_are_refused_naming_those_that_work(
    pf: dp.PrivateFrame,
) -> None:
    with pytest.raises(dp.DPError, match=r"np\.tan\(\).*cannot be given public bounds.*log1p"):
        np.tan(pf["wage"])
    with pytest.raises(dp.DPError, match=r"np\.log\(\) was given a private frame"):
        np.log(pf)
    with pytest.raises(dp.SchemaError, match=r"np\.gamma cannot be given public bounds"):
        UFunc(Col("wage"), "gamma")
    with pytest.raises(dp.SchemaError, match="needs numbers"):
        np.sqrt(pf["region"]).count(epsilon=1)
    assert pf.session.ledger.empty


def test_fillna_replaces_missing_values_with_a_public_constant(
    pf: dp.PrivateFrame, holes: pd.DataFrame
) -> None:
    filled = pf["wage"].fillna(-100)
    assert filled.bounds == (-100.0, 5000.0) and filled.name == "wage"
    got = filled.sum(epsilon=BIG).value
    assert got == pytest.approx(holes["wage"].clip(0, 5000).fillna(-100).sum(), abs=1)
    region = pf["region"].fillna("unknown")
    assert region.categories == ("midwest", "northeast", "south", "unknown", "west")  # sorted in
    counts = region.value_counts(epsilon=BIG, sort=False)
    want = holes["region"].fillna("unknown").value_counts()
    assert {k: round(v) for k, v in counts.items()} == want.to_dict()
    whole = pf.fillna({"wage": 0})
    assert whole["wage"].count(epsilon=BIG).value == pytest.approx(len(holes), abs=1)


def test_where_and_mask_follow_pandas(pf: dp.PrivateFrame, holes: pd.DataFrame) -> None:
    wage, clipped = pf["wage"], holes["wage"].clip(0, 5000)
    kept = wage.where(wage > 1000, 0)
    assert kept.bounds == (0.0, 5000.0)
    want = clipped.where(holes["wage"] > 1000, 0).sum()
    assert kept.sum(epsilon=BIG).value == pytest.approx(want, abs=1)
    masked = wage.mask(pf["region"] == "south")  # default: missing
    assert masked.count(epsilon=BIG).value == pytest.approx(
        holes["wage"].mask(holes["region"] == "south").count(), abs=1
    )
    chosen: Any = np.where(pf["education"] >= 12, pf["education"], 0)
    want_mean = np.where(holes["education"] >= 12, holes["education"], 0).mean()
    assert chosen.mean(epsilon=BIG).value == pytest.approx(want_mean, rel=1e-4)


@pytest.mark.parametrize(
    ("dtype", "check"),
    [
        (float, lambda s: s.bounds == (0.0, 5000.0)),
        ("int64", lambda s: s.bounds == (0.0, 5000.0)),
        (bool, lambda s: s.dtype == "bool"),
    ],
)
def test_astype_between_numeric_kinds(
    pf: dp.PrivateFrame, dtype: object, check: Callable[[Any], bool]
) -> None:
    assert check(pf["wage"].astype(dtype))


def test_astype_uses_declared_keys_and_refuses_otherwise(pf: dp.PrivateFrame) -> None:
    codes = pf.with_categories(education=list(range(21)))["education"].astype(str)
    assert codes.categories == tuple(sorted(str(k) for k in range(21)))  # as pandas sorts text
    with pytest.raises(dp.SchemaError, match="needs its public keys"):
        pf["wage"].astype(str)
    with pytest.raises(dp.SchemaError, match="only declared keys that are numbers convert"):
        pf["region"].astype(float)
    with pytest.raises(dp.SchemaError, match="converts to float, int, bool, str or category"):
        pf["wage"].astype("complex128")


def test_astype_int_truncates_toward_zero_as_pandas() -> None:
    data = pd.DataFrame({"w": [1.7, -1.7, 2.2, -2.9]})
    session = dp.Session(epsilon=1e12, ledger=":memory:", name="astype")
    frame = session.private_frame(data, bounds={"w": (-5.0, 5.0)})
    got = frame["w"].astype(int).sum(epsilon=BIG).value
    assert got == pytest.approx(data["w"].astype(int).sum(), abs=1e-3)


def test_bad_replacements_are_refused_before_any_charge(pf: dp.PrivateFrame) -> None:
    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: pf["wage"].fillna("none"), "mix numbers and text"),
        (lambda: pf["region"].fillna(3), "mix text and numbers"),
        (lambda: pf["wage"].fillna(pf["education"]), "public constant"),
        (lambda: pf["wage"].fillna(), "needs a value"),
        (lambda: pf["wage"].where(lambda s: s > 1), "Python functions"),
        (lambda: pf["wage"].where(pf["wage"] * 2), "needs a condition"),
        (lambda: pf["wage"].fillna(float("inf")), "finite"),
    ]
    for call, match in cases:
        with pytest.raises(dp.SchemaError, match=match):
            call()
    assert pf.session.ledger.empty


def test_the_nodes_round_trip_through_their_json_form() -> None:
    where = Where(UFunc(Col("wage"), "log1p"), Col("wage") > 3, 0.5)
    again = expr_from_dict(where.to_dict())
    assert again.key() == where.key()
    with pytest.raises(dp.SchemaError, match="fields operand and name"):
        expr_from_dict({"op": "ufunc", "operand": {"op": "col", "name": "x"}, "name": 3})
    with pytest.raises(dp.SchemaError, match="string, a number, a boolean or null"):
        expr_from_dict(
            {
                "op": "where",
                "operand": {"op": "col", "name": "x"},
                "cond": {"op": "col", "name": "y"},
                "other": [1],
            }
        )


def test_floor_division_by_a_public_number(pf: dp.PrivateFrame, holes: pd.DataFrame) -> None:
    decades = pf["experience"] // 10
    assert decades.bounds == (-1.0, 6.0)
    got = decades.mean(epsilon=BIG).value
    assert got == pytest.approx((holes["experience"] // 10).mean(), rel=1e-4)
    with pytest.raises(dp.SchemaError, match="division by zero"):
        pf["wage"] // 0
    with pytest.raises(dp.SchemaError, match="public number"):
        pf["wage"] // pf["education"]


def test_modulo_by_a_public_number(pf: dp.PrivateFrame, holes: pd.DataFrame) -> None:
    rest = pf["experience"] % 5
    assert rest.bounds == (0.0, 5.0)
    got = rest.mean(epsilon=BIG).value
    assert got == pytest.approx((holes["experience"] % 5).mean(), rel=1e-4)
    with pytest.raises(dp.SchemaError, match="positive number"):
        pf["wage"] % -2


def test_an_integer_column_filled_with_a_fraction_is_no_longer_integer(
    cps: pd.DataFrame,
) -> None:
    session = dp.Session(epsilon=1e12, ledger=":memory:", name="int-fill")
    frame = session.private_frame(cps, bounds=CPS1988_BOUNDS, dtypes={"education": "integer"})
    assert frame["education"].dtype == "Int64"
    assert frame["education"].fillna(2).dtype == "Int64"
    assert frame["education"].fillna(2.5).dtype == "float64"


def test_a_where_node_sent_with_a_condition_that_is_not_boolean_never_fails() -> None:
    """A hand-made node (the curator's wire) reads any condition by its truth, missing as false."""
    from dpframe.plan.elementwise import evaluate

    index = pd.RangeIndex(4)
    values = pd.Series([1.0, 2.0, 3.0, 4.0], index=index)
    text = pd.Series(["a", "", None, "b"], index=index, dtype=object)
    got = evaluate("where", (0.0,), [values, text], index)
    assert got.tolist() == [1.0, 0.0, 0.0, 4.0]
    numbers = pd.Series([0.0, np.nan, 5.0, -1.0], index=index)
    assert evaluate("where", (None,), [values, numbers], index).isna().tolist() == [
        True,
        True,
        False,
        False,
    ]
