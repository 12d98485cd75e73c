"""``.str.split(sep).str[i]`` (and ``rsplit``): one part of each text value, as pandas.

Each part is compared with pandas' own ``Series.str.split(...).str[i]`` on
random text (a property test) and on the CPS comments (released counts at a
huge ε, whole and chunked); the keys from declared categories; refusals with
nothing charged; the node's wire form and the curator's per-row cost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.backends.evaluate import Rows, text_values
from dpframe.curator.row_costs import TEXT_TAGS, row_seconds
from dpframe.plan.expr_codec import expr_from_dict
from dpframe.plan.expressions import col
from dpframe.plan.text import StrMap
from dpframe.plan.text_parts import StrPart
from tests.dated_cps import BOUNDS, CATEGORIES, DTYPES, dated_cps, truth

BIG = 1e9
TEXT = st.one_of(st.none(), st.integers(0, 3), st.text(alphabet="ab -,\t", max_size=12))


def _ours(node: StrPart, values: list[Any]) -> list[Any]:
    series = pd.Series(values, dtype=object)
    got = text_values(node.tag, node.params(), series, Rows(pd.DataFrame({"t": series})))
    return [None if pd.isna(g) else g for g in got]


@given(
    values=st.lists(TEXT, max_size=20),
    sep=st.sampled_from([None, " ", "-", ", ", "ab"]),
    n=st.integers(-1, 3),
    index=st.integers(-4, 4),
    reverse=st.booleans(),
)
@settings(max_examples=400, deadline=None)
def test_each_part_is_pandas_on_object_text(
    values: list[Any], sep: str | None, n: int, index: int, reverse: bool
) -> None:
    # pandas refuses .str on an object column without text: a text value is appended
    theirs = pd.Series([*values, ""], dtype=object).str
    split = theirs.rsplit(sep, n=n) if reverse else theirs.split(sep, n=n, regex=False)
    want = [None if not isinstance(v, list) and pd.isna(v) else v for v in split.str[index][:-1]]
    ours = StrPart(col("t"), sep, -1 if n == 0 else n, index, reverse)  # pandas: n=0 is every split
    assert _ours(ours, values) == want


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return dated_cps()


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda s: s.str.split(" ").str[0], lambda s: s.str.split(" ").str[0]),
        (lambda s: s.str.split().str[-1], lambda s: s.str.split().str[-1]),
        (lambda s: s.str.split(" ", n=1).str.get(1), lambda s: s.str.split(" ", n=1).str.get(1)),
        (lambda s: s.str.rsplit("-", n=1).str[0], lambda s: s.str.rsplit("-", n=1).str[0]),
    ],
    ids=["first", "last-whitespace", "n=1-get", "rsplit"],
)
def test_parts_of_free_text_count_as_pandas_does(
    data: pd.DataFrame,
    ours: Callable[[Any], Any],
    theirs: Callable[[pd.Series], pd.Series],
) -> None:
    session = dp.Session(epsilon=1e12, delta=1e-6, ledger=":memory:")
    frame = session.private_frame(data, bounds=BOUNDS, categories=CATEGORIES, dtypes=DTYPES)
    want = theirs(truth(data)["comment"]).value_counts()
    keys = [k for k, v in want.items() if v >= 200]  # common parts: declared as public keys
    part = ours(frame["comment"])
    got = frame.assign(part=part).with_categories(part=keys)["part"]
    released = got.value_counts(epsilon=BIG, sort=False)
    assert {k: round(float(v)) for k, v in released.items()} == {
        k: v for k, v in want.to_dict().items() if k in keys
    }


def test_keys_are_the_parts_of_the_declared_categories() -> None:
    data = pd.DataFrame({"code": ["a-1", "b-2", "c", None, "a-1"]})
    session = dp.Session(epsilon=1e12, ledger=":memory:")
    frame = session.private_frame(data, categories={"code": ["a-1", "b-2", "c"]})
    second = frame["code"].str.split("-").str[1]
    assert second.categories == ("1", "2")  # "c" has no second part: missing, no key
    assert frame["code"].str.split("-").str[0].categories == ("a", "b", "c")
    counts = second.value_counts(epsilon=BIG, sort=False)
    assert {k: round(float(v)) for k, v in counts.items()} == {"1": 2, "2": 1}
    assert len(session.ledger) == 1


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: s.str.split(" ", expand=True), r"expand=True\) would make one column per part"),
        (lambda s: s.str.split(" ").str[0:2], r"takes one whole number i"),
        (lambda s: s.str.split(" ").str["a"], r"takes one whole number i"),
        (lambda s: s.str.split(".*"), r"is a regular expression in pandas"),
        (lambda s: s.str.split("a", regex=True), r"regex=True\): splitting on a regular"),
        (lambda s: s.str.split(""), r"separator of 1 to 1000 characters"),
        (lambda s: s.str.split(" ", n=-2), r"n=\.\.\.\) must be a whole number from -1"),
        (lambda s: s.str.split(" ").tolist(), r"would reveal private rows"),
        (lambda s: s.str.split(" ").str.join("-"), r"read one part with \.str\[i\]"),
        (lambda s: s.str.split(" ").str[10_001], r"must be a whole number from 0 to 10000"),
        (lambda s: s.str.split(" ").str[True], r"takes one whole number i"),
    ],
)
def test_bad_splits_are_refused_before_any_charge(call: Callable[[Any], Any], match: str) -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    frame = session.private_frame(pd.DataFrame({"t": ["a b", "c"]}), dtypes={"t": "text"})
    with pytest.raises((dp.DPError, AttributeError), match=match):
        call(frame["t"])
    assert session.ledger.empty


def test_a_split_on_a_number_column_says_it_needs_text() -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    frame = session.private_frame(pd.DataFrame({"x": [1.0]}), bounds={"x": (0, 2)})
    with pytest.raises(dp.SchemaError, match=r"\.str needs a text column; 'x' is numeric"):
        frame["x"].str.split(" ")


def test_a_part_with_regex_false_splits_on_the_text_itself() -> None:
    node = StrPart(col("t"), ".*", -1, 1)
    assert _ours(node, ["a.*b", "ab"]) == ["b", None]


def test_the_node_travels_as_json_and_is_checked() -> None:
    for node in (
        StrPart(col("t"), " ", -1, 0),
        StrPart(StrMap(col("t"), "lower", None, 40), None, 2, -1, True, 40),
    ):
        back = expr_from_dict(json.loads(json.dumps(node.to_dict(), allow_nan=False)))
        assert back.key() == node.key() and type(back) is StrPart
        assert str(back) == str(node)
    data = StrPart(col("t"), " ", -1, 0).to_dict()
    with pytest.raises(dp.SchemaError, match="A str_part node has the fields operand, sep"):
        expr_from_dict({**data, "extra": 1})
    with pytest.raises(dp.SchemaError, match=r"\.str\[i\] must be a whole number"):
        expr_from_dict({**data, "index": True})


def test_the_curator_prices_a_part_as_a_text_node() -> None:
    assert "str_part" in TEXT_TAGS

    class Units:
        hash_row_seconds = list_item_seconds = regex_value_seconds = 0.0
        text_match_seconds = 0.0
        text_value_seconds = 1.0
        text_char_seconds = 0.0

    session = dp.Session(epsilon=1, ledger=":memory:")
    frame = session.private_frame(pd.DataFrame({"t": ["a b"]}), dtypes={"t": "text"})
    node = frame["t"].str.split(" ").str[0]._handle
    part = type("Part", (), {"plan": node.plan, "expressions": lambda self: (node.expr,)})()
    assert row_seconds(part, Units(), {}, 100) == 1.0  # one Python call per distinct value
