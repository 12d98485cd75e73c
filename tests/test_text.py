"""Text: ``.str`` methods as expressions, with a declared maximum length and RE2 for regex.

Released answers are compared with plain pandas (``Series.str`` on ``object``
text, the values truncated to the declared maximum length) at a large ε, on
the CPS rows plus synthetic free text (:mod:`tests.dated_cps`); the ledger
with the stated costs; bad inputs with their refusals (nothing charged);
the expressions with their wire forms; each per-value function with pandas'
own on random text (property tests).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.backends import PandasBackend
from dpframe.backends.evaluate import Rows, text_values
from dpframe.plan.columns import ColumnInfo
from dpframe.plan.estimate import estimate
from dpframe.plan.expr_codec import expr_from_dict
from dpframe.plan.expressions import Col, col
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, GroupKey, Source
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.schema import infer_column, schema_from_frame
from dpframe.plan.text import StrLen, StrMap, StrMatch, StrReplace
from tests.dated_cps import BOUNDS, CATEGORIES, DTYPES, MAX_LENGTH, dated_cps, truth
from tests.sessions import local

BIG = 1e5
REGIONS = ["northeast", "midwest", "south", "west"]


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return dated_cps()


@pytest.fixture(scope="module")
def comment(data: pd.DataFrame) -> pd.Series:
    """The comments as pandas holds them once read (object text, truncated)."""
    return truth(data)["comment"]


def _frame(data: pd.DataFrame, epsilon: float = 1e7) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:")
    return session.private_frame(data, bounds=BOUNDS, categories=CATEGORIES, dtypes=DTYPES)


def _counts(released: pd.Series, want: dict[Any, int]) -> None:
    for key, value in released.items():
        assert value == pytest.approx(want.get(key, 0), abs=1), key


# -- released answers against pandas -------------------------------------------------


@pytest.mark.parametrize(
    ("method", "keys"),
    [
        (lambda s: s.str.upper(), [r.upper() for r in REGIONS]),
        (lambda s: s.str.lower(), REGIONS),
        (lambda s: s.str.strip("ts"), ["northea", "midwe", "outh", "we"]),
        (lambda s: s.str.replace("th", "TH"), ["norTHeast", "midwest", "souTH", "west"]),
        (lambda s: s.str.replace("west", "w"), ["northeast", "midw", "south", "w"]),
        (lambda s: s.str.replace("s", "", n=1), ["northeat", "midwet", "outh", "wet"]),
        (lambda s: s.str.replace("[aeiou]", "", regex=True), ["nrthst", "mdwst", "sth", "wst"]),
    ],
    ids=["upper", "lower", "strip", "replace", "shorter", "n=1", "regex"],
)
def test_text_keys_are_the_declared_categories_mapped(
    data: pd.DataFrame, method: Callable[[Any], Any], keys: list[str]
) -> None:
    pf = _frame(data)
    mapped = method(pf["region"])
    # pandas' group-by order: sorted, whatever order the source keys were declared in
    assert mapped.categories == tuple(sorted(keys))
    counts = mapped.value_counts(epsilon=BIG, sort=False)
    assert list(counts.index) == sorted(keys)
    grouped_keys = data["wage"].groupby(method(data["region"].astype(object))).size().index
    assert list(counts.index) == list(grouped_keys)
    _counts(counts, method(data["region"].astype(object)).value_counts().to_dict())
    grouped = pf.assign(r=mapped).groupby("r")["wage"].mean(epsilon=BIG)
    want = data["wage"].clip(0, 5000).groupby(method(data["region"].astype(object))).mean()
    for key, value in grouped.items():
        assert value == pytest.approx(want.to_dict()[key], rel=1e-3)


def test_keys_that_map_together_merge() -> None:
    frame = pd.DataFrame({"k": ["South", "south", "SOUTH ", "west", None]})
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(frame, categories={"k": ["South", "south", "SOUTH ", "west"]})
    upper = pf["k"].str.strip().str.upper()
    assert upper.categories == ("SOUTH", "WEST")
    assert upper.value_counts(epsilon=BIG, sort=False).round().tolist() == [3, 1]


def _matches(s: Any) -> list[tuple[str, Any]]:
    """Conditions on a comment column, built the same way on a PrivateSeries and on pandas."""
    return [
        ("contains", s.str.contains("worker")),
        ("contains case=False", s.str.contains("night", case=False)),
        ("contains regex=False", s.str.contains("(cauc", regex=False)),
        ("contains regex", s.str.contains(r"^\s*(steady|union)\b", case=False, regex=True)),
        ("contains regex classes", s.str.contains(r"[A-Z]{5} [a-z]+", regex=True)),
        ("startswith", s.str.startswith("Steady")),
        ("startswith tuple", s.str.startswith(("Steady", "union", "  "))),
        ("endswith", s.str.endswith("south")),
        ("stripped endswith", s.str.strip().str.lower().str.endswith(("south", "west"))),
        ("na=True", s.str.startswith("NIGHT", na=True)),
        ("upper contains", s.str.upper().str.contains("SHIFT WORKER")),
    ]


def test_matches_count_as_pandas_does(data: pd.DataFrame, comment: pd.Series) -> None:
    pf = _frame(data)
    truths = dict(_matches(comment))
    for name, condition in _matches(pf["comment"]):
        want = truths[name].fillna(False).astype(bool)
        assert float(pf[condition].count(epsilon=BIG)) == pytest.approx(want.sum(), abs=1), name
        assert condition.categories == (False, True)
    pandas_means = truths["contains"].astype(float).mean()  # missing stays missing
    assert float(pf["comment"].str.contains("worker").mean(epsilon=BIG)) == pytest.approx(
        pandas_means, rel=1e-3
    )
    counts = pf["comment"].str.endswith("south").value_counts(epsilon=BIG, sort=False)
    _counts(counts, truths["endswith"].value_counts().to_dict())


def test_replaced_and_cased_text_counts_as_pandas_does(
    data: pd.DataFrame, comment: pd.Series
) -> None:
    pf = _frame(data)
    made: list[tuple[Any, pd.Series]] = [
        (pf["comment"].str.lower().str.strip(), comment.str.lower().str.strip()),
        (
            pf["comment"].str.replace("worker", "hand", case=False).str.strip(),
            comment.str.replace("worker", "hand", case=False).str.strip(),
        ),
        (
            pf["comment"].str.replace(r"(\w+) worker", r"[\1]", regex=True),
            comment.str.replace(r"(\w+) worker", r"[\1]", regex=True).str.slice(0, MAX_LENGTH),
        ),
    ]
    for mine, theirs in made:
        for value in (
            "steady worker in the south",
            "steady hand in the south",
            "[Steady] in the west",
        ):
            count = float(pf[mine == value].count(epsilon=BIG))
            assert count == pytest.approx((theirs == value).sum(), abs=1)


def test_length_has_bounds_from_the_declared_maximum(
    data: pd.DataFrame, comment: pd.Series
) -> None:
    pf = _frame(data)
    length = pf["comment"].str.len()
    assert length.bounds == (0.0, float(MAX_LENGTH)) and length.dtype == "int64"
    assert length.categories == tuple(range(MAX_LENGTH + 1))
    lengths = comment.str.len()
    assert lengths.max() == MAX_LENGTH  # longer comments were truncated when read
    assert float(length.mean(epsilon=BIG)) == pytest.approx(lengths.mean(), rel=1e-4)
    assert float(length.sum(epsilon=BIG)) == pytest.approx(lengths.sum(), rel=1e-4)
    _counts(length.value_counts(epsilon=BIG, sort=False), lengths.value_counts().to_dict())
    stripped = pf["comment"].str.strip().str.len()
    assert stripped.bounds == (0.0, float(MAX_LENGTH))
    assert float(stripped.mean(epsilon=BIG)) == pytest.approx(
        comment.str.strip().str.len().mean(), rel=1e-4
    )
    long = pf[pf["comment"].str.len() >= 30].count(epsilon=BIG)
    assert float(long) == pytest.approx((lengths >= 30).sum(), abs=1)


def test_lengthening_text_is_cut_to_the_maximum_length() -> None:
    frame = pd.DataFrame({"t": ["straße", "abcdefghij", "a", None, "ab" * 10]})
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(frame, dtypes={"t": "text(6)"})
    assert pf.column_info("t").max_length == 6
    lengths = pf["t"].str.len().value_counts(epsilon=BIG, sort=False).round()
    assert {k: v for k, v in lengths.items() if v} == {1: 1, 6: 3}  # "ab"*10 read as "ababab"
    upper = pf["t"].str.upper()  # "STRASSE" has 7 characters: cut to 6
    assert float(pf[upper == "STRASS"].count(epsilon=BIG)) == pytest.approx(1, abs=0.01)
    grown = pf["t"].str.replace("a", "aaa")
    assert grown.expr.to_dict()["max_length"] == 6
    assert float(pf[grown == "aaa"].count(epsilon=BIG)) == pytest.approx(1, abs=0.01)
    assert float(pf[grown == "aaabcd"].count(epsilon=BIG)) == pytest.approx(1, abs=0.01)
    assert grown.str.len().bounds == (0.0, 6.0)


def test_missing_and_non_text_values() -> None:
    frame = pd.DataFrame({"t": pd.Series(["apple", None, 5, "Avocado", np.nan], dtype=object)})
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(frame, categories={"t": ["apple", "Avocado"]})
    flags = pf["t"].str.startswith("a").value_counts(epsilon=BIG, sort=False).round()
    assert flags.to_dict() == {False: 1, True: 1}  # missing and the number: neither
    filled = pf["t"].str.startswith("a", na=False).value_counts(epsilon=BIG, sort=False).round()
    assert filled.to_dict() == {False: 4, True: 1}
    assert float(pf["t"].str.lower().count(epsilon=BIG)) == pytest.approx(2, abs=0.01)
    assert pf["t"].str.lower().categories == ("apple", "avocado")


def test_free_expressions_and_the_ledger_charged_as_stated(data: pd.DataFrame) -> None:
    pf = _frame(data, epsilon=1.0)
    session = pf.session
    night = pf["comment"].str.contains("night", case=False)
    pf.assign(night=night, length=pf["comment"].str.len(), region=pf["region"].str.upper())
    assert session.spent == dp.Budget(0) and session.ledger.empty
    pf[night].count(epsilon=0.25)
    pf["region"].str.upper().value_counts(epsilon=0.5)
    pf["comment"].str.len().mean(epsilon=0.125)
    assert session.spent == dp.Budget(0.875)
    assert list(session.ledger["epsilon"]) == [0.25, 0.5, 0.125]
    assert list(session.ledger["query"]) == [
        "count() where comment.str.contains('night', case=False, regex=True)",
        "count() by region.str.upper()",
        "mean(comment.str.len())",
    ]


# -- bad input: a clear DPError before any charge -----------------------------------

Call = Callable[[dp.PrivateFrame], object]


def _load(dtypes: dict[str, str], categories: dict[str, list[str]] | None = None) -> Call:
    def load(pf: dp.PrivateFrame) -> object:
        frame = pd.DataFrame({"t": ["abc", "de"]})
        return local(pf).private_frame(frame, categories=categories, dtypes=dtypes)

    return load


BAD: list[tuple[str, Call, type[dp.DPError], str]] = [
    (
        ".str on a number",
        lambda pf: pf["wage"].str.lower(),
        dp.SchemaError,
        r"\.str needs a text column; 'wage' is numeric",
    ),
    (
        ".str on dates",
        lambda pf: pf["date"].str.len(),
        dp.SchemaError,
        r"\.str needs a text column; 'date' is datetime",
    ),
    (
        ".str on a boolean",
        lambda pf: (pf["wage"] > 1).str.upper(),
        dp.SchemaError,
        r"\.str needs a text column; .* is boolean",
    ),
    (
        "len without a maximum length",
        lambda pf: pf["region"].str.len(),
        dp.SchemaError,
        r"\.str\.len\(\) needs a maximum length for its bounds; 'region' has no declared "
        r"maximum length: declare it with dtypes=\{'region': 'text\(40\)'\}",
    ),
    (
        "len of a part of a split names the column to declare",
        lambda pf: pf["region"].str.split("o").str[1].str.len(),
        dp.SchemaError,
        r"\.str\.len\(\) needs a maximum length for its bounds; \"region\.str\.split\('o'\)"
        r"\.str\[1\]\" is at most as long as 'region', which has no declared maximum length: "
        r"declare it with dtypes=\{'region': 'text\(40\)'\}",
    ),
    (
        "a lengthening replace without a maximum length",
        lambda pf: pf["region"].str.replace("s", "ss"),
        dp.SchemaError,
        r"can make values longer, so it needs a maximum length; 'region' has no declared",
    ),
    (
        "a regex replace without a maximum length",
        lambda pf: pf["region"].str.replace("s+", "s", regex=True),
        dp.SchemaError,
        r"can make values longer",
    ),
    (
        "a pattern that is not a string",
        lambda pf: pf["comment"].str.contains(5),
        dp.SchemaError,
        "The pattern must be a string, not a int",
    ),
    (
        "a prefix that is not a string",
        lambda pf: pf["comment"].str.startswith(("a", None)),
        dp.SchemaError,
        "The pattern must be a string, not a NoneType",
    ),
    (
        "a replacement that is not a string",
        lambda pf: pf["comment"].str.replace("a", 1),
        dp.SchemaError,
        "The replacement must be a string, not a int",
    ),
    (
        "a replacement function",
        lambda pf: pf["comment"].str.replace("a", str.upper),
        dp.SchemaError,
        "takes a replacement string, not a function",
    ),
    (
        "a huge pattern",
        lambda pf: pf["comment"].str.contains("a" * 1001),
        dp.SchemaError,
        "has more than 1000 characters",
    ),
    (
        "flags",
        lambda pf: pf["comment"].str.contains("a", flags=2),
        dp.SchemaError,
        r"contains\(\) takes flags=0 only",
    ),
    (
        "case not a boolean",
        lambda pf: pf["comment"].str.contains("a", case="no"),
        dp.SchemaError,
        r"contains\(case=...\) takes True or False",
    ),
    (
        "na not a boolean",
        lambda pf: pf["comment"].str.endswith("a", na="x"),
        dp.SchemaError,
        "na must be True or False",
    ),
    (
        "n not an integer",
        lambda pf: pf["comment"].str.replace("a", "b", n=1.5),
        dp.SchemaError,
        "n must be an integer",
    ),
    (
        "a regex RE2 refuses",
        lambda pf: pf["comment"].str.contains(r"(a)\1", regex=True),
        dp.SchemaError,
        r"The pattern is not a regular expression RE2 accepts \(invalid escape sequence: \\1\); "
        "RE2 has no backreferences or lookaround",
    ),
    (
        "a lookahead",
        lambda pf: pf["comment"].str.contains("a(?=b)"),
        dp.SchemaError,
        "RE2 accepts",
    ),
    (
        "a template group the pattern lacks",
        lambda pf: pf["comment"].str.replace("(a)", r"\2", regex=True),
        dp.SchemaError,
        r"refers to a group the pattern lacks \(2\)",
    ),
    (
        "an unsupported escape in a template",
        lambda pf: pf["comment"].str.replace("a", r"\q", case=False),
        dp.SchemaError,
        r"A replacement may use \\1\.\.\\99",
    ),
    (
        "an unknown kind",
        _load({"t": "text(abc)"}),
        dp.SchemaError,
        r"dtypes\['t'\] must be 'numeric'",
    ),
    (
        "a zero maximum length",
        _load({"t": "text(0)"}),
        dp.SchemaError,
        "The maximum length of 't' must be between 1 and 1000000",
    ),
    (
        "a huge maximum length",
        _load({"t": "text(1000001)"}),
        dp.SchemaError,
        "must be between 1 and 1000000",
    ),
    (
        "a category longer than the maximum length",
        _load({"t": "text(2)"}, {"t": ["abc", "de"]}),
        dp.SchemaError,
        r"categories for 't' include a key longer than its maximum length \(2\)",
    ),
]


@pytest.mark.parametrize(("name", "call", "error", "match"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_before_any_charge(
    data: pd.DataFrame, name: str, call: Call, error: type[dp.DPError], match: str
) -> None:
    pf = _frame(data.head(50), epsilon=10.0)
    with pytest.raises(error, match=match):
        call(pf)
    assert pf.session.spent == dp.Budget(0) and pf.session.ledger.empty


def test_regex_without_the_engine_is_refused_naming_the_extra(
    data: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    pf = _frame(data.head(50), epsilon=10.0)
    monkeypatch.setitem(sys.modules, "re2", None)  # as if google-re2 were not installed
    plain = pf["comment"].str.contains("worker", case=False)  # plain text: no engine needed
    pf["comment"].str.replace("worker", "hand", regex=True)
    assert str(plain.expr) == "comment.str.contains('worker', case=False, regex=True)"
    calls: list[Callable[[], object]] = [
        lambda: pf["comment"].str.contains("w.rker"),
        lambda: pf["comment"].str.contains(r"\d", regex=True),
        lambda: pf["comment"].str.replace(r"\s+", " ", regex=True),
        lambda: pf[plain | pf["comment"].str.contains("a|b")].count(epsilon=1),
    ]
    for call in calls:
        with pytest.raises(
            dp.SchemaError,
            match=r"regex=True needs a linear-time regular expression engine: pip install "
            r"'dpframe\[regex\]' \(google-re2\)",
        ):
            call()
    assert pf.session.ledger.empty


def test_a_regex_sent_to_a_data_side_without_the_engine_is_refused_before_the_charge(
    data: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    pf = _frame(data.head(50), epsilon=10.0)
    wire = pf["comment"].str.contains("a+b").expr.to_dict()  # built where RE2 is installed
    monkeypatch.setitem(sys.modules, "re2", None)
    with pytest.raises(dp.SchemaError, match="needs a linear-time regular expression engine"):
        expr_from_dict(wire)


# -- expressions: facts, evaluation, wire --------------------------------------------


def test_facts_of_text_expressions() -> None:
    frame = pd.DataFrame({"t": ["a"], "k": ["x"]})
    schema = schema_from_frame(frame, None, {"k": ["x", "Y"]})
    limited = schema.with_column(ColumnInfo("t", "text", "string", max_length=9))
    upper = infer_column("u", StrMap(Col("k"), "upper"), schema)
    assert (upper.kind, upper.categories, upper.max_length) == ("categorical", ("X", "Y"), None)
    assert infer_column("m", StrMatch(Col("k"), "contains", ("x",)), schema).kind == "boolean"
    length = infer_column("n", StrLen(StrMap(Col("t"), "strip", None, 9)), limited)
    assert (length.kind, length.bounds, length.max_length) == ("numeric", (0.0, 9.0), None)
    doubled = infer_column("d", StrLen(Col("t")) * 2, limited)
    assert doubled.bounds == (0.0, 18.0)
    with pytest.raises(
        dp.SchemaError, match="truncates to 5 characters, but 't' has a maximum length of 9"
    ):
        infer_column("x", StrMap(Col("t"), "lower", None, 5), limited)
    with pytest.raises(
        dp.SchemaError, match=r"\.str\.lower\(\) needs text; \(t > 'a'\) is not a text column"
    ):
        infer_column("x", StrMap(Col("t") > "a", "lower"), limited)


def test_printed_forms_and_keys() -> None:
    assert str(StrMap(col("t"), "strip", " x")) == "t.str.strip(' x')"
    assert (
        str(StrReplace(col("t"), "a", "b", 2, False, False, 5))
        == "t.str.replace('a', 'b', n=2, case=False)"
    )
    assert (
        str(StrMatch(col("t"), "startswith", ("a", "b"), na=False))
        == "t.str.startswith(('a', 'b'), na=False)"
    )
    assert str(StrLen(col("t"))) == "t.str.len()"
    one = StrMatch(col("t"), "contains", ("a",), False, True)
    assert one.key() == StrMatch(col("t"), "contains", ("a",), False, True).key()
    assert one.key() != StrMatch(col("t"), "contains", ("a",), True, True).key()
    assert StrMap(col("t"), "lower", None, 5).key() != StrMap(col("t"), "lower").key()


def test_resource_estimate_counts_patterns() -> None:
    exprs = [
        StrMatch(col("t"), "startswith", ("a", "b", "c")),
        StrReplace(col("t"), "a", "", max_length=4),
    ]
    assert estimate(Source("d"), exprs, 1).literal_values == 3 + 2


def test_expressions_travel_as_json() -> None:
    exprs = [
        StrMap(col("t"), "rstrip", ".", 40),
        StrReplace(StrMap(col("t"), "upper"), "(?P<w>a+)", r"\g<w>-\1\n", 3, False, True, 40),
        StrMatch(col("t"), "endswith", ("x", "y"), na=True),
        StrMatch(col("t"), "contains", ("a.c",), False, True, False),
        StrLen(StrMap(col("t"), "lower", None, 40)) > 3,
    ]
    for expr in exprs:
        back = expr_from_dict(json.loads(json.dumps(expr.to_dict(), allow_nan=False)))
        assert back.key() == expr.key() and type(back) is type(expr)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"method": "title"}, "Unknown text method 'title'"),
        ({"chars": 5}, "chars must be a string"),
        ({"max_length": 0}, "max_length must be between 1"),
        ({"max_length": True}, "max_length must be an integer"),
        ({"extra": 1}, "A str_map node has the fields operand, method, chars, max_length"),
    ],
)
def test_malformed_text_nodes_are_refused(change: dict[str, Any], match: str) -> None:
    data = StrMap(col("t"), "strip", None, 10).to_dict()
    data.update(change)
    with pytest.raises(dp.SchemaError, match=match):
        expr_from_dict(data)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (
            {"how": "contains", "pats": ["a", "b"], "case": True, "regex": False, "na": None},
            "contains\\(\\) takes one pattern",
        ),
        (
            {"how": "startswith", "pats": ["a"], "case": False, "regex": False, "na": None},
            "takes neither case= nor regex=",
        ),
        (
            {"how": "endswith", "pats": [], "case": True, "regex": False, "na": None},
            "takes a pattern",
        ),
        (
            {"how": "matches", "pats": ["a"], "case": True, "regex": False, "na": None},
            "Unknown text match",
        ),
        (
            {"how": "contains", "pats": "a", "case": True, "regex": False, "na": None},
            "pats must be a list",
        ),
        (
            {"how": "contains", "pats": ["a"], "case": 1, "regex": False, "na": None},
            "case must be True or False",
        ),
    ],
)
def test_malformed_match_nodes_are_refused(data: dict[str, Any], match: str) -> None:
    with pytest.raises(dp.SchemaError, match=match):
        expr_from_dict({"op": "str_match", "operand": {"op": "col", "name": "t"}, **data})


def test_a_node_with_another_maximum_length_is_refused_by_the_engine(data: pd.DataFrame) -> None:
    pf = _frame(data.head(50), epsilon=10.0)
    forged = StrReplace(Col("comment"), "", "x" * 100, max_length=None)  # no truncation
    node = Aggregate(pf.plan, "count", forged, None, (), "forged", PrivacyRequest(Fraction(1)))
    with pytest.raises(
        dp.SchemaError,
        match="truncates to None characters, but 'comment' has a maximum length of 36",
    ):
        pf.session.run(node)
    assert pf.session.ledger.empty


TEXT = st.one_of(
    st.none(),
    st.text(alphabet=st.sampled_from("aAbB ßİxX.-\u00e9\u212a\t"), max_size=12),
    st.text(max_size=8),
    st.integers(0, 3),
)
PATTERNS = st.text(alphabet=st.sampled_from("aAbx. -"), max_size=3)


def _ours(node: Any, values: list[Any]) -> pd.Series:
    series = pd.Series(values, dtype=object)
    frame = pd.DataFrame({"t": series})
    return text_values(node.tag, node.params(), series, Rows(frame))


@given(values=st.lists(TEXT, max_size=25), pat=PATTERNS, repl=PATTERNS, n=st.integers(-1, 2))
@settings(max_examples=300, deadline=None)
def test_each_text_function_is_pandas_on_object_text(
    values: list[Any], pat: str, repl: str, n: int
) -> None:
    # pandas refuses .str on an object column without text: a text value is appended, and
    # its result dropped (pandas gives missing values for non-text values, as dpframe does)
    theirs = pd.Series([*values, ""], dtype=object).str
    pairs: list[tuple[Any, pd.Series]] = [
        (StrMap(col("t"), "lower"), theirs.lower()),
        (StrMap(col("t"), "upper"), theirs.upper()),
        (StrMap(col("t"), "strip"), theirs.strip()),
        (StrMap(col("t"), "lstrip", pat or None), theirs.lstrip(pat or None)),
        (StrMap(col("t"), "rstrip", pat or None), theirs.rstrip(pat or None)),
        (StrLen(col("t")), theirs.len()),
        (StrMatch(col("t"), "contains", (pat,)), theirs.contains(pat, regex=False)),
        (
            StrMatch(col("t"), "contains", (pat,), False),
            theirs.contains(pat, case=False, regex=False),
        ),
        (StrMatch(col("t"), "startswith", (pat, repl)), theirs.startswith((pat, repl))),
        (StrMatch(col("t"), "endswith", (pat,), na=False), theirs.endswith(pat, na=False)),
        (StrReplace(col("t"), pat, repl, n), theirs.replace(pat, repl, n=n, regex=False)),
        (StrReplace(col("t"), pat, repl, n, False), theirs.replace(pat, repl, n=n, case=False)),
    ]
    if pat:
        pairs.append(
            (StrMatch(col("t"), "contains", (pat,), False, True), theirs.contains(pat, case=False))
        )
    for node, want in pairs:
        got = _ours(node, values)
        expected = [None if pd.isna(w) else w for w in want[:-1]]
        assert [None if pd.isna(g) else g for g in got] == expected, str(node)


REGEXES = [
    r"a+",
    r"^a",
    r"b$",
    r"[ab]x?",
    r"(a|b)(x)",
    r"\s+",
    r"x*",
    r"a.b",
    r"(?i)ab",
    r"(a)|(b)",
]


@given(
    values=st.lists(st.one_of(st.none(), st.text(alphabet="abxAB \t", max_size=10)), max_size=20),
    pattern=st.sampled_from(REGEXES),
    case=st.booleans(),
    n=st.integers(-1, 2),
)
@settings(max_examples=300, deadline=None)
def test_re2_matches_and_replaces_as_python_re_does(
    values: list[str | None], pattern: str, case: bool, n: int
) -> None:
    theirs = pd.Series(values, dtype=object).str
    repl = r"<\1>" if "(" in pattern and "(?i)" not in pattern else "<>"
    pairs: list[tuple[Any, pd.Series]] = [
        (
            StrMatch(col("t"), "contains", (pattern,), case, True),
            theirs.contains(pattern, case=case),
        ),
        (
            StrReplace(col("t"), pattern, repl, n, case, True),
            theirs.replace(pattern, repl, n=n, case=case, regex=True),
        ),
    ]
    for node, want in pairs:
        got = _ours(node, values)
        assert [None if pd.isna(g) else g for g in got] == [None if pd.isna(w) else w for w in want]


def _contains(pattern: str, value: str) -> list[Any]:
    return _ours(StrMatch(col("t"), "contains", (pattern,), True, True), [value]).tolist()


def test_re2_differs_from_python_re_where_documented() -> None:
    # RE2's $ is the end of the text; Python's also matches before a final newline
    assert _contains("b$", "b\n") == [False]
    assert pd.Series(["b\n"]).str.contains("b$").tolist() == [True]
    # RE2's \d and \s are ASCII
    assert _contains(r"\d", "\u0663") == [False]  # an Arabic-Indic digit
    assert _contains(r"\s", "\v") == [False]


def test_text_the_engine_cannot_read_gives_a_missing_value() -> None:
    got = _ours(StrMatch(col("t"), "contains", ("a+",), True, True), ["\ud800a", "ba", None])
    assert got.isna().tolist() == [True, False, True] and bool(got.iloc[1]) is True


def test_chunked_evaluation_equals_whole_frame_and_pandas(
    data: pd.DataFrame, comment: pd.Series
) -> None:
    frame = pd.DataFrame({"c": comment.astype("string").head(3000)})
    keys = tuple(sorted(set(comment.head(3000).dropna().str.strip().str.lower())))
    key = GroupKey("k", StrMap(StrMap(Col("c"), "strip", None, 36), "lower", None, 36), keys)
    flag = GroupKey("f", StrMatch(Col("c"), "contains", ("e.s",), False, True), (False, True))
    for group in (key, flag):
        whole = PandasBackend(frame).compute(Source("d"), (Measure("rows"),), (group,))
        chunked = PandasBackend(frame, chunk_rows=97).compute(
            Source("d"), (Measure("rows"),), (group,)
        )
        assert whole[0].tobytes() == chunked[0].tobytes()
    truth_counts = comment.head(3000).str.strip().str.lower().value_counts()
    whole = PandasBackend(frame, chunk_rows=97).compute(Source("d"), (Measure("rows"),), (key,))
    assert dict(zip(keys, whole[0].tolist(), strict=True)) == truth_counts.to_dict()


def test_declaring_categories_later_keeps_the_maximum_length(data: pd.DataFrame) -> None:
    pf = _frame(data.head(200)).with_categories(comment=["union worker in the south"])
    assert pf.column_info("comment").max_length == MAX_LENGTH
    assert pf["comment"].str.len().bounds == (0.0, float(MAX_LENGTH))
    assert pf["comment"].str.upper().categories == ("UNION WORKER IN THE SOUTH",)
    with pytest.raises(dp.SchemaError, match="categories for 'date', which holds dates"):
        pf.with_categories(date=[pd.Timestamp("2010-01-01")])
    assert pf.session.ledger.empty


def test_a_derived_expression_must_define_its_kind_and_facts() -> None:
    from dpframe.plan.columns import Derived

    with pytest.raises(TypeError, match="must define value_kind"):

        class Incomplete(Derived):
            pass
