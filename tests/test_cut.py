"""``cut`` and ``qcut``: public bins as pandas draws them, keys without declarations.

Released answers are compared with plain pandas (``pd.cut(...).value_counts()``,
``groupby``) at a large ε, the ledger with the stated costs, bad inputs with
their refusals (nothing charged), and the expressions with their wire forms.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.backends import PandasBackend
from dpframe.backends.evaluate import bin_codes, recode_values
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.plan.codec import NodeFormatError, decode_node, encode_node
from dpframe.plan.estimate import estimate
from dpframe.plan.expr_codec import expr_from_dict
from dpframe.plan.expressions import Col, col
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, GroupKey, Source
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.recode import Bin, Recode, encode_label
from dpframe.plan.schema import infer_column, schema_from_frame

BIG = 1e5  # ε of a query whose value is checked: counts are off by about 1e-5
EDGES = [0, 300, 600, 1000, 2000, 20000]


def _frame(cps: pd.DataFrame, epsilon: float = 1e6, **kwargs: Any) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:", **kwargs)
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def _counts(released: pd.Series, expected: pd.Series) -> None:
    """Released counts per key equal pandas' counts per key (to the noise of ε = 1e5)."""
    want = expected.to_dict()
    assert len(released) == len(want)
    for key, value in released.items():
        assert value == pytest.approx(want[key], abs=1)


# -- released answers against pandas -------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"right": False},
        {"include_lowest": True},
        {"right": False, "include_lowest": True},
        {"precision": 1},
    ],
)
def test_value_counts_of_a_cut_match_pandas(cps: pd.DataFrame, options: dict[str, Any]) -> None:
    pf = _frame(cps)
    bands = pf["wage"].cut(EDGES, **options)
    expected = pd.cut(cps["wage"], EDGES, **options)
    assert bands.categories == tuple(expected.cat.categories)
    assert bands.name == "wage" and bands.dtype == "category"
    counts = bands.value_counts(epsilon=BIG, sort=False)
    assert list(counts.index) == list(expected.cat.categories)
    _counts(counts, expected.value_counts(sort=False))
    assert list(counts.sort_values(ascending=False).index) == list(
        bands.value_counts(epsilon=BIG).index
    )


def test_labels_and_integer_codes(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    names = ["low", "mid", "high", "top", "very top"]
    labelled = pf["wage"].cut(EDGES, labels=names)
    assert labelled.categories == tuple(names)
    _counts(
        labelled.value_counts(epsilon=BIG, sort=False),
        pd.cut(cps["wage"], EDGES, labels=names).value_counts(sort=False),
    )
    codes = pf["wage"].cut(EDGES, labels=False)
    assert codes.categories == (0, 1, 2, 3, 4) and codes.bounds == (0.0, 4.0)
    expected = pd.Series(pd.cut(cps["wage"], EDGES, labels=False))
    _counts(codes.value_counts(epsilon=BIG, sort=False), expected.value_counts())
    assert codes.mean(epsilon=BIG) == pytest.approx(expected.mean(), abs=1e-3)
    merged = pf["wage"].cut(EDGES, labels=["a", "b", "b", "c", "c"], ordered=False)
    assert merged.categories == ("a", "b", "c")
    _counts(
        merged.value_counts(epsilon=BIG, sort=False),
        pd.cut(cps["wage"], EDGES, labels=["a", "b", "b", "c", "c"], ordered=False).value_counts(),
    )
    numbers = pf["wage"].cut(EDGES, labels=[150, 450, 800, 1500, 11000])
    assert numbers.dtype == "float64" and numbers.bounds == (150.0, 11000.0)
    expected_mean = pd.cut(cps["wage"], EDGES, labels=[150, 450, 800, 1500, 11000]).astype(float)
    assert numbers.mean(epsilon=BIG) == pytest.approx(expected_mean.mean(), abs=1e-2)


def test_a_number_of_bins_cuts_the_declared_bounds_as_pandas_cuts_the_range(
    cps: pd.DataFrame,
) -> None:
    pf = _frame(cps)
    bands, edges = pf["wage"].cut(4, retbins=True)
    span = pd.Series([0.0, 5000.0])  # data whose range is the declared bounds
    reference, reference_edges = pd.cut(span, 4, retbins=True)
    assert np.array_equal(edges, reference_edges)
    assert edges[0] == pytest.approx(-5.0) and edges[-1] == 5000.0
    assert bands.categories == tuple(reference.cat.categories)
    # Values beyond the declared bounds are in no bin (the data's range is never used).
    assert (cps["wage"] > 5000).sum() > 0
    _counts(
        bands.value_counts(epsilon=BIG, sort=False),
        pd.cut(cps["wage"], edges).value_counts(sort=False),
    )
    left, left_edges = pf["education"].cut(5, right=False, retbins=True)
    reference, reference_edges = pd.cut(pd.Series([0, 20]), 5, right=False, retbins=True)
    assert np.array_equal(left_edges, reference_edges)
    assert left.categories == tuple(reference.cat.categories)
    clipped = pf["wage"].clip(0, 5000).cut(4)  # clip first to count every row
    assert clipped.value_counts(epsilon=BIG).sum() == pytest.approx(len(cps), abs=5)


def test_groupby_and_assign_need_no_declaration(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    bands = pf["education"].cut([0, 8, 12, 16, 20], include_lowest=True)
    banded = pf.assign(band=bands)
    assert banded.categories["band"] == bands.categories
    means = banded.groupby("band")["wage"].mean(epsilon=BIG)
    clamped = cps["wage"].clip(0, 5000)  # a mean clamps to the declared bounds
    expected = clamped.groupby(
        pd.cut(cps["education"], [0, 8, 12, 16, 20], include_lowest=True), observed=False
    ).mean()
    assert list(means.index) == list(expected.index)
    for value, want in zip(means, expected, strict=True):
        assert value == pytest.approx(want, rel=1e-3)
    both = banded.groupby(["band", "region"]).size(epsilon=BIG)
    truth = cps.groupby(
        [pd.cut(cps["education"], [0, 8, 12, 16, 20], include_lowest=True), "region"],
        observed=False,
    ).size()
    assert len(both) == 16
    sizes = truth.to_dict()
    for key, value in both.items():
        assert value == pytest.approx(sizes[key], abs=1)
    codes = pf["education"].cut([0, 8, 12, 16, 20], include_lowest=True, labels=False)
    share = pf[codes >= 2].count(epsilon=BIG)
    assert float(share) == pytest.approx((cps["education"] > 12).sum(), abs=1)
    named = pf.assign(band=pf["education"].cut([0, 12, 20], labels=["school", "college"]))
    college = named[named["band"].isin(["college"])].count(epsilon=BIG)
    assert float(college) == pytest.approx((cps["education"] > 12).sum(), abs=1)
    assert bands.mode(epsilon=BIG)[0] == expected.index[1]  # the (8, 12] band is the largest


def test_missing_and_outside_values_are_in_no_bin() -> None:
    df = pd.DataFrame({"x": [np.nan, -np.inf, np.inf, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 3.5]})
    session = dp.Session(epsilon=1e6, ledger=":memory:")
    pf = session.private_frame(df, bounds={"x": (0, 3)})
    bands = pf["x"].cut([0, 1, 2, 3])
    _counts(
        bands.value_counts(epsilon=BIG, sort=False),
        pd.cut(df["x"], [0, 1, 2, 3]).value_counts(sort=False),
    )
    banded = pf.assign(band=bands)
    missing = banded[banded["band"].isna()].count(epsilon=BIG)
    assert float(missing) == pytest.approx(pd.cut(df["x"], [0, 1, 2, 3]).isna().sum(), abs=1)
    assert float(bands.count(epsilon=BIG)) == pytest.approx(4, abs=1)  # 0.5, 1, 2, 3


def test_comparing_two_cut_columns_compares_their_labels() -> None:
    df = pd.DataFrame({"a": [0.5, 1.5, 2.5, 0.5], "b": [0.5, 2.5, 2.5, np.nan]})
    session = dp.Session(epsilon=1e6, ledger=":memory:")
    pf = session.private_frame(df, bounds={"a": (0, 3), "b": (0, 3)})
    banded = pf.assign(p=pf["a"].cut([0, 1, 2, 3], labels=["x", "y", "z"]))
    banded = banded.assign(q=banded["b"].cut([0, 1, 3], labels=["x", "z"]))
    same = banded[banded["p"] == banded["q"]].count(epsilon=BIG)
    assert float(same) == pytest.approx(2, abs=1)  # rows 0 and 2
    either = banded[(banded["p"] == "x") | (banded["q"] == "z")].count(epsilon=BIG)
    assert float(either) == pytest.approx(4, abs=1)


# -- costs -----------------------------------------------------------------------------


def test_cut_is_free_and_each_release_charges_its_epsilon(cps: pd.DataFrame) -> None:
    pf = _frame(cps, epsilon=1.0)
    session = pf.session
    bands = pf["wage"].cut(EDGES, labels=["a", "b", "c", "d", "e"])
    pf.assign(band=bands)
    assert session.spent == dp.Budget(0) and session.ledger.empty
    bands.value_counts(epsilon=0.25)
    pf.assign(band=bands).groupby("band")["education"].mean(epsilon=0.5)
    assert session.spent == dp.Budget(0.75)
    assert list(session.ledger["epsilon"]) == [0.25, 0.5]
    assert "cut(wage, [0, 300, 600, 1000, 2000, 20000])" in session.ledger["query"].iloc[0]


def test_qcut_charges_one_quantile_release_then_cuts_for_free(cps: pd.DataFrame) -> None:
    pf = _frame(cps, epsilon=10.0)
    session = pf.session
    quartiles, edges = pf["wage"].qcut(4, epsilon=2, retbins=True)
    assert session.spent == dp.Budget(2)
    assert list(session.ledger["query"]) == ["quantile(wage, q=[0.25, 0.5, 0.75])"]
    assert edges[0] == 0.0 and edges[-1] == 5000.0
    truth = np.quantile(cps["wage"], [0.25, 0.5, 0.75])
    assert np.allclose(edges[1:-1], truth, rtol=0.05)
    reference = pd.cut(pd.Series([], dtype=float), edges, include_lowest=True)
    assert quartiles.categories == tuple(reference.cat.categories)
    counts = quartiles.value_counts(epsilon=5, sort=False)
    assert session.spent == dp.Budget(7)
    near = pd.cut(cps["wage"], edges, include_lowest=True).value_counts(sort=False)
    for key, value in counts.items():
        assert value == pytest.approx(near[key], abs=10)
        assert value == pytest.approx(len(cps) / 4, rel=0.1)  # wages tie: 400 rows at 308.64


def test_qcut_edges_carry_their_intervals(cps: pd.DataFrame) -> None:
    pf = _frame(cps, epsilon=1e6)
    quartiles, edges = pf["wage"].qcut(4, epsilon=1e5, retbins=True)
    numbers = np.asarray(edges)
    assert numbers.dtype == np.float64 and len(edges) == 5
    assert float(edges[0]) == numbers[0] == 0.0 and float(edges[-1]) == numbers[-1] == 5000.0
    reference = pd.cut(pd.Series([], dtype=float), list(numbers), include_lowest=True)
    assert quartiles.categories == tuple(reference.cat.categories)
    ends = dp.ci(edges)
    assert (ends.iloc[[0, -1]]["low"] == ends.iloc[[0, -1]]["high"]).all()  # declared: exact
    low, high = ends["low"].to_numpy()[1:-1], ends["high"].to_numpy()[1:-1]
    assert (low <= numbers[1:-1]).all() and (numbers[1:-1] <= high).all() and (low < high).all()
    # at ε = 10⁵ the intervals are a few grid steps (5000/4096) around the true quartiles
    truth = np.quantile(cps["wage"], [0.25, 0.5, 0.75])
    step = 5000 / 4096
    assert ((low - step <= truth) & (truth <= high + step)).all() and (high - low < 20 * step).all()


def test_qcut_explain_shows_the_quantile_charge_and_spends_nothing(cps: pd.DataFrame) -> None:
    pf = _frame(cps, epsilon=1.0)
    explained = pf.session.explain(lambda: pf["wage"].qcut(4, epsilon=0.3))
    assert str(explained).startswith("quantile(wage, q=[0.25, 0.5, 0.75]) = a value whose rank")
    assert explained.plain().endswith("; cost ε=0.3; ε=0.7 left")
    assert pf.session.spent == dp.Budget(0) and pf.session.ledger.empty


def test_qcut_levels_labels_and_free_levels(cps: pd.DataFrame) -> None:
    pf = _frame(cps, epsilon=10.0)
    halves = pf["wage"].qcut([0, 0.5, 1], labels=["low", "high"], epsilon=1)
    assert halves.categories == ("low", "high")
    assert list(pf.session.ledger["query"]) == ["quantile(wage, q=[0.5])"]
    counts = halves.value_counts(epsilon=5, sort=False)
    assert counts["low"] == pytest.approx(len(cps) / 2, rel=0.05)
    assert pf.session.spent == dp.Budget(6)
    whole = dp.qcut(pf["education"], 1, epsilon=1, labels=False)  # no interior level: free
    assert whole.categories == (0,) and pf.session.spent == dp.Budget(6)


def _mostly_zero() -> pd.DataFrame:
    values = np.zeros(2000)
    values[1500:] = np.linspace(1, 100, 500)
    frame: pd.DataFrame = pd.DataFrame({"x": values})
    return frame


def test_qcut_merges_coinciding_edges_by_default() -> None:
    session = dp.Session(epsilon=100, ledger=":memory:")
    pf = session.private_frame(_mostly_zero(), bounds={"x": (0, 100)})
    bins, edges = pf["x"].qcut(4, epsilon=50, retbins=True)
    assert edges[0] == 0.0 and edges[-1] == 100.0
    assert len(edges) <= 4  # the 0.25 and 0.5 quantiles coincide (three quarters are 0)
    assert len(bins.categories) == len(edges) - 1
    assert session.spent == dp.Budget(50)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"duplicates": "raise"}, r"two released quantile edges coincide \(duplicates='raise'\)"),
        ({"labels": ["a", "b", "c", "d"]}, "leaving [0-9] bins for 4 labels"),
    ],
)
def test_qcut_refusals_after_the_charge_say_so(options: dict[str, Any], match: str) -> None:
    session = dp.Session(epsilon=100, ledger=":memory:")
    pf = session.private_frame(_mostly_zero(), bounds={"x": (0, 100)})
    with pytest.raises(dp.SchemaError, match=match) as refused:
        pf["x"].qcut(4, epsilon=50, **options)
    assert "the quantiles were charged" in str(refused.value)
    assert session.spent == dp.Budget(50)


# -- bad input: a clear DPError before any charge -----------------------------------

Call = Callable[[dp.PrivateFrame], object]

BAD: list[tuple[str, Call, type[dp.DPError], str]] = [
    ("bins not increasing", lambda pf: pf["wage"].cut([0, 10, 5]), dp.SchemaError, "monoton"),
    ("repeated edges", lambda pf: pf["wage"].cut([0, 10, 10, 20]), dp.SchemaError, "unique"),
    ("one edge", lambda pf: pf["wage"].cut([5]), dp.SchemaError, "at least two bin edges"),
    ("nan edge", lambda pf: pf["wage"].cut([0, np.nan, 5]), dp.SchemaError, "finite"),
    ("inf edge", lambda pf: pf["wage"].cut([0, 5, np.inf]), dp.SchemaError, "finite"),
    ("text edges", lambda pf: pf["wage"].cut(["a", "b"]), dp.SchemaError, "must be numbers"),
    ("bins as text", lambda pf: pf["wage"].cut("5"), dp.SchemaError, "a number of bins or"),
    ("bins True", lambda pf: pf["wage"].cut(True), dp.SchemaError, "a number of bins or"),
    ("zero bins", lambda pf: pf["wage"].cut(0), dp.SchemaError, "between 1 and"),
    (
        "no bounds for a number of bins",
        lambda pf: pf.assign(w=pf["wage"] * pf["wage"] / pf["education"])["w"].cut(4),
        dp.SchemaError,
        r"cut\(bins=4\) of 'w' needs public bounds",
    ),
    (
        "labels of the wrong length",
        lambda pf: pf["wage"].cut([0, 1, 2], labels=["a"]),
        dp.SchemaError,
        "one fewer than the number of bin edges: 2 bins, 1 labels",
    ),
    (
        "repeated labels",
        lambda pf: pf["wage"].cut([0, 1, 2], labels=["a", "a"]),
        dp.SchemaError,
        "labels must be unique if ordered=True",
    ),
    (
        "missing label",
        lambda pf: pf["wage"].cut([0, 1, 2], labels=["a", None]),
        dp.SchemaError,
        "finite number or a boolean",
    ),
    (
        "labels True",
        lambda pf: pf["wage"].cut([0, 1, 2], labels=True),
        dp.SchemaError,
        "labels= takes None, False",
    ),
    (
        "unordered intervals",
        lambda pf: pf["wage"].cut([0, 1, 2], ordered=False),
        dp.SchemaError,
        "needs labels",
    ),
    ("text column", lambda pf: pf["region"].cut([0, 1]), dp.SchemaError, "'region' is categorical"),
    (
        "boolean column",
        lambda pf: (pf["wage"] > 3).cut([0, 1]),
        dp.SchemaError,
        "needs a numeric column",
    ),
    (
        "bad duplicates",
        lambda pf: pf["wage"].cut([0, 1], duplicates="keep"),
        dp.SchemaError,
        r"duplicates=\.\.\.\) must be one of",
    ),
    ("bad precision", lambda pf: pf["wage"].cut(3, precision=-1), dp.SchemaError, "precision"),
    ("bad flag", lambda pf: pf["wage"].cut(3, right="no"), dp.SchemaError, "right= must be"),
    (
        "a pandas Series",
        lambda pf: dp.cut(cast("Any", pd.Series([1.0])), 2),
        dp.SchemaError,
        r"for a public pandas Series use pandas\.cut",
    ),
    (
        "qcut without bounds",
        lambda pf: pf.assign(w=pf["wage"] / pf["experience"])["w"].qcut(4, epsilon=1),
        dp.SchemaError,
        r"qcut\(\) of 'w' needs public clamping bounds",
    ),
    ("qcut of text", lambda pf: pf["region"].qcut(4, epsilon=1), dp.SchemaError, "numeric"),
    ("qcut zero bins", lambda pf: pf["wage"].qcut(0, epsilon=1), dp.SchemaError, "between 1"),
    (
        "qcut levels decreasing",
        lambda pf: pf["wage"].qcut([0.5, 0.2], epsilon=1),
        dp.SchemaError,
        "strictly increasing",
    ),
    (
        "qcut level outside [0, 1]",
        lambda pf: pf["wage"].qcut([0, 1.5], epsilon=1),
        dp.SchemaError,
        r"must be in \[0, 1\]",
    ),
    (
        "qcut labels of the wrong length",
        lambda pf: pf["wage"].qcut(4, labels=["a", "b"], epsilon=1),
        dp.SchemaError,
        "4 bins, 2 labels",
    ),
    (
        "qcut without epsilon",
        lambda pf: pf["wage"].qcut(4),
        dp.InvalidBudgetError,
        r"Give the privacy cost of a query as epsilon=",
    ),
    (
        "qcut over budget",
        lambda pf: pf["wage"].qcut(4, epsilon=100),
        dp.BudgetExceededError,
        "Requested",
    ),
    (
        "qcut on equal bounds",
        lambda pf: pf.with_bounds(wage=(3, 3))["wage"].qcut(2, epsilon=1),
        dp.SchemaError,
        "low < high",
    ),
]


@pytest.mark.parametrize(("name", "call", "error", "match"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_before_any_charge(
    cps: pd.DataFrame, name: str, call: Call, error: type[dp.DPError], match: str
) -> None:
    pf = _frame(cps, epsilon=10.0)
    with pytest.raises(error, match=match):
        call(pf)
    assert pf.session.spent == dp.Budget(0) and pf.session.ledger.empty


# -- expressions: evaluation, keys, wire ---------------------------------------------


@given(
    values=st.lists(
        st.one_of(st.integers(-6, 6).map(float), st.sampled_from([np.nan, np.inf, -np.inf, 0.5])),
        max_size=40,
    ),
    edges=st.lists(st.integers(-5, 5), min_size=2, max_size=6, unique=True).map(sorted),
    right=st.booleans(),
    include_lowest=st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_bin_codes_are_pandas_codes(
    values: list[float], edges: list[int], right: bool, include_lowest: bool
) -> None:
    array = np.asarray(values, dtype=np.float64)
    floats = tuple(float(e) for e in edges)
    expected = pd.cut(array, floats, right=right, include_lowest=include_lowest, labels=False)
    got = bin_codes(array, floats, right, include_lowest)
    assert np.array_equal(np.where(np.isnan(expected), -1, expected), got)


def test_recoded_values_are_map_and_replace() -> None:
    values = pd.Series(["a", "b", None, "c", "a"], index=[3, 4, 5, 6, 7])
    mapped = recode_values(values, ("a", "c"), ("x", "y"), False, False)
    assert mapped.index.equals(values.index)
    assert mapped.astype(object).where(mapped.notna(), None).tolist() == [
        "x",
        None,
        None,
        "y",
        "x",
    ]
    replaced = recode_values(values, ("a",), ("x",), True, False)
    assert replaced.tolist()[:2] == ["x", "b"] and replaced.tolist()[3:] == ["c", "x"]
    numbers = recode_values(pd.Series([1, 2, 3]), (1, 3), (10, 30.5), False, False)
    assert numbers.dtype == np.float64 and np.allclose(numbers, [10, np.nan, 30.5], equal_nan=True)
    kept = recode_values(pd.Series([1.0, 2.0]), (1,), (5,), True, False)
    assert kept.tolist() == [5.0, 2.0]
    interval = encode_label(pd.Interval(0, 1))
    labelled = recode_values(pd.Series([0.0, 1.0, np.nan]), (0, 1), (interval, "b"), False, True)
    assert list(labelled.cat.categories) == [pd.Interval(0, 1), "b"] and labelled.cat.ordered


def test_recode_gives_public_keys_and_kinds() -> None:
    df = pd.DataFrame({"k": ["a", "b"], "x": [1.0, 2.0]})
    schema = schema_from_frame(df, {"x": (0, 5)}, {"k": ["a", "b", "c"]})
    mapped = infer_column("m", Recode(col("k"), ("a", "b"), (1, 2.5)), schema)
    assert (mapped.kind, mapped.bounds, mapped.categories) == ("numeric", (1.0, 2.5), (1, 2.5))
    replaced = infer_column("r", Recode(col("k"), ("a",), ("z",), keep=True), schema)
    assert replaced.categories == ("b", "c", "z") and replaced.kind == "categorical"
    widened = infer_column("w", Recode(col("x"), (1.0,), (9,), keep=True), schema)
    assert widened.kind == "numeric" and widened.bounds == (0.0, 9.0)
    binned = infer_column("b", Bin(col("x"), (0.0, 1.0, 5.0)) * 10, schema)
    assert binned.bounds == (0.0, 10.0)
    with pytest.raises(dp.SchemaError, match="Arithmetic needs numbers"):
        infer_column("t", Recode(col("k"), ("a",), ("x",)) + 1, schema)
    with pytest.raises(dp.SchemaError, match="cut\\(\\) needs numbers"):
        infer_column("t", Bin(col("k"), (0.0, 1.0)), schema)


def test_recode_refuses_malformed_maps() -> None:
    cases: list[tuple[tuple[tuple[Any, ...], tuple[Any, ...]], str]] = [
        ((("a", "a"), (1, 2)), "must be distinct"),
        (((1, True), (1, 2)), "must be distinct"),
        ((("a",), (1, 2)), "as many labels as values"),
        (((), ()), "as many labels as values"),
        ((("a",), (None,)), "finite number or a boolean"),
        ((("a",), (float("inf"),)), "finite number"),
        (((None,), ("x",)), "not missing"),
    ]
    for (sources, targets), match in cases:
        with pytest.raises(dp.SchemaError, match=match):
            Recode(col("k"), sources, targets)
    with pytest.raises(dp.SchemaError, match="must increase strictly"):
        Bin(col("x"), (1.0, 0.0))


def test_keys_and_printed_forms() -> None:
    assert Bin(col("x"), (0, 1, 2)).key() == Bin(col("x"), (0.0, 1.0, 2.0)).key()
    assert Bin(col("x"), (0, 1)).key() != Bin(col("x"), (0, 1), right=False).key()
    one = Recode(col("x"), (0,), (pd.Interval(0, 1),))
    assert one.key() != Recode(col("x"), (0,), (pd.Interval(0, 1, closed="left"),)).key()
    assert one.key() != Recode(col("x"), (0,), ("(0, 1]",)).key()
    assert str(Bin(col("x"), (0, 1, 2), right=False)) == "cut(x, [0, 1, 2], right=False)"
    assert str(Bin(col("x"), tuple(range(10)))) == "cut(x, 9 bins)"
    assert str(one) == "x.map({0: (0, 1]})"
    assert str(Recode(col("k"), ("a",), ("b",), keep=True)) == "k.replace({'a': 'b'})"


def test_resource_estimate_counts_edges_and_labels() -> None:
    expr = Recode(Bin(col("x"), (0.0, 1.0, 2.0, 3.0)), (0, 1, 2), ("a", "b", "c"))
    assert estimate(Source("d"), [expr], 3).literal_values == 4 + 6


def test_expressions_travel_as_json() -> None:
    bins = Bin(col("wage"), (0.0, 10.5, 20.0), right=False, include_lowest=True)
    labelled = Recode(bins, (0, 1), (pd.Interval(0, 10.5, closed="left"), "top"), ordered=True)
    replaced = Recode(col("k"), ("a", 3, 2.5, True), ("x", 2, -1.5, False), keep=True)
    for expr in (bins, labelled, replaced):
        back = expr_from_dict(json.loads(json.dumps(expr.to_dict(), allow_nan=False)))
        assert back.key() == expr.key()
        assert type(back) is type(expr)


def test_release_nodes_with_interval_keys_travel_as_json() -> None:
    intervals = tuple(pd.cut(pd.Series([], dtype=float), [0, 500.5, 5000]).cat.categories)
    expr = Recode(Bin(Col("wage"), (0.0, 500.5, 5000.0)), (0, 1), intervals)
    node = Aggregate(
        Source("cps"),
        "count",
        None,
        None,
        (GroupKey("wage", expr, intervals),),
        "count() by cut",
        PrivacyRequest(epsilon=Fraction(1, 10)),
    )
    wire = json.loads(json.dumps(encode_node(node), allow_nan=False))
    assert wire["node"]["by"][0]["categories"][1] == {"$interval": [500.5, 5000.0, "right"]}
    back = decode_node(wire, Source("cps"))
    assert isinstance(back, Aggregate) and back == node
    assert back.by[0].categories == intervals


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda e: e.update(edges=[0, 2, 1]), "must increase strictly"),
        (lambda e: e.update(edges=[0, True]), "Bin edges must be numbers"),
        (lambda e: e.update(right=1), "right must be true or false"),
        (lambda e: e.update(extra=1), "A bin node has the fields"),
        (lambda e: e.update(edges=[0, 10**400]), "finite"),
    ],
)
def test_malformed_bin_nodes_are_refused(
    change: Callable[[dict[str, Any]], None], match: str
) -> None:
    data = Bin(col("x"), (0.0, 1.0)).to_dict()
    change(data)
    with pytest.raises(dp.SchemaError, match=match):
        expr_from_dict(data)


@pytest.mark.parametrize(
    ("target", "match"),
    [
        ({"$interval": [0, 1]}, r"must be a scalar or \{'\$interval'"),
        ({"$interval": [0, 1, "up"]}, "closed on one of"),
        ({"$interval": [2, 1, "right"]}, "left <= right"),
        ({"$interval": [0, "1", "right"]}, "right end must be a finite number"),
        (None, "must be a string, a finite number or a boolean"),
        ([1], "must be a string, a finite number or a boolean"),
    ],
)
def test_malformed_labels_are_refused_in_expressions(target: object, match: str) -> None:
    data = Recode(col("x"), (0,), ("a",)).to_dict()
    data["target"] = [target]
    with pytest.raises(dp.SchemaError, match=match):
        expr_from_dict(data)


@pytest.mark.parametrize(
    ("key", "match"),
    [
        ({"$interval": [0, 1]}, r"categories\[0\] must be a scalar or"),
        ({"$interval": [0, 1, "up"]}, r"categories\[0\]: an interval is closed on one of"),
        ({"$interval": [1, 0, "left"]}, "left <= right"),
        ([1], r"categories\[0\] must be a string, number, boolean, null or interval"),
    ],
)
def test_malformed_interval_keys_are_refused_on_the_wire(key: object, match: str) -> None:
    node = {
        "v": 1,
        "node": {
            "type": "aggregate",
            "plan": [],
            "privacy": {"epsilon": "1", "delta": "0", "rho": None},
            "statistic": "count",
            "expr": None,
            "bounds": None,
            "by": [{"name": "x", "expr": {"op": "col", "name": "x"}, "categories": [key]}],
            "label": "count",
            "undeclared": False,
        },
    }
    with pytest.raises(NodeFormatError, match=match):
        decode_node(node, Source("d"))


def test_chunked_evaluation_of_cut_keys_equals_whole_frame_and_pandas() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(0, 2, 500)
    x[::17] = np.nan
    frame = pd.DataFrame({"x": x, "k": rng.choice(["a", "b", "c"], 500)})
    edges = (-3.0, -1.0, 0.0, 1.0, 3.0)
    intervals = tuple(pd.cut(pd.Series([], dtype=float), edges).cat.categories)
    bins = Bin(Col("x"), edges)
    keys = (
        GroupKey("band", Recode(bins, (0, 1, 2, 3), intervals), intervals),
        GroupKey("code", bins, (0, 1, 2, 3)),
        GroupKey("k", Recode(Col("k"), ("a", "b"), ("ab", "ab")), ("ab",)),
    )
    measures = (Measure("rows"),)
    truth = pd.cut(frame["x"], edges).value_counts(sort=False).to_numpy()
    for key in keys[:2]:
        whole = PandasBackend(frame).compute(Source("d"), measures, (key,))
        chunked = PandasBackend(frame, chunk_rows=37).compute(Source("d"), measures, (key,))
        assert whole[0].tobytes() == chunked[0].tobytes()
        assert whole[0].tolist() == truth.tolist()
    (pairs,) = PandasBackend(frame, chunk_rows=41).compute(Source("d"), measures, keys[::2])
    expected = (
        frame.assign(band=pd.cut(frame["x"], edges), ab=frame["k"].isin(["a", "b"]))
        .query("ab")
        .groupby("band", observed=False)
        .size()
    )
    assert pairs.tolist() == expected.tolist()
