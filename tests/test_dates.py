"""Dates: declared date bounds, ``.dt`` fields and ``to_period`` whose keys need no declaration.

Released answers are compared with plain pandas on the same data (the CPS
rows plus synthetic dates, :mod:`tests.dated_cps`) at a large ε; the ledger
with the stated costs; bad inputs with their refusals (nothing charged); the
expressions with their wire forms; the per-chunk evaluation with pandas' own.
"""

from __future__ import annotations

import datetime
import json
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
from dpframe.backends.declared import DeclaredKind, apply_declared_kinds
from dpframe.plan.codec import NodeFormatError, decode_node, encode_node
from dpframe.plan.expr_codec import expr_from_dict
from dpframe.plan.expressions import Col, col
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, GroupKey, Source
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.schema import infer_column, schema_from_frame
from dpframe.plan.temporal import DateLit, DtField, PeriodOf
from tests.dated_cps import BOUNDS, CATEGORIES, DATE_BOUNDS, DTYPES, dated_cps, truth
from tests.sessions import local

BIG = 1e5  # ε of a query whose value is checked: counts are off by about 1e-5
LOW, HIGH = DATE_BOUNDS


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return dated_cps()


@pytest.fixture(scope="module")
def expected(data: pd.DataFrame) -> pd.DataFrame:
    return truth(data)


def _frame(data: pd.DataFrame, epsilon: float = 1e7) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:")
    return session.private_frame(data, bounds=BOUNDS, categories=CATEGORIES, dtypes=DTYPES)


def _counts(released: pd.Series, want: dict[Any, int]) -> None:
    """Released counts per key equal pandas' counts per key (0 where pandas has none)."""
    for key, value in released.items():
        assert value == pytest.approx(want.get(key, 0), abs=1), key


# -- released answers against pandas -------------------------------------------------


def test_years_between_the_bounds_are_keys_without_declaration(
    data: pd.DataFrame, expected: pd.DataFrame
) -> None:
    pf = _frame(data)
    year = pf["date"].dt.year
    assert year.categories == tuple(range(2006, 2014)) and year.bounds == (2006.0, 2013.0)
    assert year.dtype == "int32"
    by_year = pf.assign(year=year).groupby("year")
    sizes = by_year.size(epsilon=BIG)
    assert list(sizes.index) == list(range(2006, 2014)) and sizes.index.name == "year"
    years = expected["date"].dt.year
    _counts(sizes, years.value_counts().to_dict())
    means = by_year["wage"].mean(epsilon=BIG)
    want = expected["wage"].clip(0, 5000).groupby(years).mean().to_dict()
    for key, value in means.items():
        assert value == pytest.approx(want[key], rel=1e-3)
    both = pf.assign(year=year).groupby(["year", "region"]).size(epsilon=BIG)
    assert len(both) == 8 * 4
    _counts(both, expected.groupby([years, "region"]).size().to_dict())


@pytest.mark.parametrize(
    ("field", "keys"),
    [
        ("quarter", range(1, 5)),
        ("month", range(1, 13)),
        ("day", range(1, 32)),
        ("day_of_week", range(7)),
        ("day_of_year", range(1, 367)),
        ("hour", range(24)),
        ("minute", range(60)),
        ("second", range(60)),
    ],
)
def test_calendar_fields_match_pandas(
    data: pd.DataFrame, expected: pd.DataFrame, field: str, keys: range
) -> None:
    pf = _frame(data)
    column = getattr(pf["date"].dt, field)
    assert column.categories == tuple(keys)
    counts = column.value_counts(epsilon=BIG, sort=False)
    assert list(counts.index) == list(keys)
    values = getattr(expected["date"].dt, field)
    _counts(counts, values.value_counts().to_dict())  # every date: its field is a key
    assert float(column.mean(epsilon=BIG)) == pytest.approx(values.mean(), rel=1e-3, abs=1e-3)


def test_aliases_are_pandas_names(data: pd.DataFrame) -> None:
    dt = _frame(data)["date"].dt
    assert dt.day_of_week.expr.key() == dt.weekday.expr.key() == dt.dayofweek.expr.key()
    assert dt.day_of_year.expr.key() == dt.dayofyear.expr.key()
    assert str(dt.weekday.expr) == "date.dt.day_of_week"


def test_months_between_the_bounds_are_period_keys(
    data: pd.DataFrame, expected: pd.DataFrame
) -> None:
    pf = _frame(data)
    months = pf["date"].dt.to_period("M")
    reference = pd.period_range(LOW, HIGH, freq="M")
    assert months.categories == tuple(reference) and months.dtype == "period[M]"
    counts = months.value_counts(epsilon=BIG, sort=False)
    assert all(isinstance(k, pd.Period) for k in counts.index)
    assert list(counts.index) == list(reference)
    pandas_counts = expected["date"].dt.to_period("M").value_counts()
    assert isinstance(pandas_counts.index, pd.PeriodIndex)  # the keys pandas gives
    _counts(counts, pandas_counts.to_dict())
    ordered = months.value_counts(epsilon=BIG)
    assert list(ordered.index[:3]) == list(counts.sort_values(ascending=False).index[:3])
    by_month = pf.assign(month=months).groupby("month")["education"].mean(epsilon=BIG)
    want = expected["education"].groupby(expected["date"].dt.to_period("M")).mean().to_dict()
    for key, value in by_month.items():
        assert value == pytest.approx(want[key], rel=1e-3)


@pytest.mark.parametrize(("freq", "first"), [("Y", "2006"), ("Q", "2006Q1"), ("W", None)])
def test_other_period_frequencies(
    data: pd.DataFrame, expected: pd.DataFrame, freq: str, first: str | None
) -> None:
    pf = _frame(data)
    periods = pf["date"].dt.to_period(freq)
    reference = pd.period_range(LOW, HIGH, freq=freq)
    assert periods.categories == tuple(reference)
    if first is not None:
        assert str(reference[0]) == first
    counts = periods.value_counts(epsilon=BIG, sort=False)
    _counts(counts, expected["date"].dt.to_period(freq).value_counts().to_dict())


def test_a_date_outside_the_bounds_is_in_no_year_and_no_edge_key() -> None:
    dates = [
        "2005-12-31T23:59:59",  # below: its year 2005 is not a key
        "2006-01-01",  # the low edge
        "2010-06-15T12:00",
        "2013-12-31T23:59",  # the high edge
        "2014-01-01",  # above
        None,
        "not a date",
    ]
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"date": dates}), bounds={"date": DATE_BOUNDS})
    years = pf["date"].dt.year.value_counts(epsilon=BIG, sort=False)
    assert years.round().to_dict() == {y: int(y in (2006, 2010, 2013)) for y in range(2006, 2014)}
    months = pf["date"].dt.to_period("M").value_counts(epsilon=BIG, sort=False)
    assert months.sum() == pytest.approx(3, abs=0.01)
    assert months[pd.Period("2006-01", "M")] == pytest.approx(1, abs=0.01)  # not 2 (2005)
    assert months[pd.Period("2013-12", "M")] == pytest.approx(1, abs=0.01)  # not 2 (2014)
    missing = pf[pf["date"].dt.year.isna()].count(epsilon=BIG)
    assert float(missing) == pytest.approx(2, abs=0.01)  # None and "not a date"
    # a field whose keys hold for every date counts every present date
    assert pf["date"].dt.month.value_counts(epsilon=BIG).sum() == pytest.approx(5, abs=0.01)


@pytest.mark.parametrize(
    "stamp",
    [
        pd.Timestamp("2010-03-01"),
        datetime.datetime(2010, 3, 1),
        datetime.date(2010, 3, 1),
        np.datetime64("2010-03-01"),
    ],
    ids=["Timestamp", "datetime", "date", "datetime64"],
)
def test_comparisons_and_between_with_date_literals_filter(
    data: pd.DataFrame, expected: pd.DataFrame, stamp: object
) -> None:
    pf = _frame(data)
    dates = expected["date"]
    cut = pd.Timestamp("2010-03-01")
    checks: list[tuple[dp.PrivateSeries, pd.Series]] = [
        (pf["date"] >= stamp, dates >= cut),
        (pf["date"] < stamp, dates < cut),
        (pf["date"] == stamp, dates == cut),
        (pf["date"] != stamp, dates != cut),
        (pf["date"].between(stamp, pd.Timestamp("2011-01-01")), dates.between(cut, "2011-01-01")),
        (
            (pf["date"] > stamp) & (pf["region"] == "south"),
            (dates > cut) & (data["region"] == "south"),
        ),
    ]
    if not isinstance(stamp, np.datetime64):  # numpy would turn the series into an array
        checks.append((stamp <= pf["date"], dates >= cut))
    for condition, want in checks:
        assert float(pf[condition].count(epsilon=BIG)) == pytest.approx(want.sum(), abs=1)


def test_dates_compare_with_dates_of_another_column() -> None:
    frame = pd.DataFrame(
        {"a": ["2010-01-01", "2010-01-05", None], "b": ["2010-01-03", "2010-01-03", "2010-01-03"]}
    )
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"a": DATE_BOUNDS, "b": DATE_BOUNDS})
    assert float(pf[pf["a"] < pf["b"]].count(epsilon=BIG)) == pytest.approx(1, abs=0.01)


def test_free_expressions_and_the_ledger_charged_as_stated(data: pd.DataFrame) -> None:
    pf = _frame(data, epsilon=1.0)
    session = pf.session
    year = pf["date"].dt.year
    recent = pf[pf["date"] >= pd.Timestamp("2010-01-01")]
    pf.assign(year=year, month=pf["date"].dt.to_period("M"))
    assert session.spent == dp.Budget(0) and session.ledger.empty
    year.value_counts(epsilon=0.25)
    recent.assign(month=pf["date"].dt.to_period("M")).groupby("month").size(epsilon=0.5)
    assert session.spent == dp.Budget(0.75)
    assert list(session.ledger["epsilon"]) == [0.25, 0.5]
    assert session.ledger["query"].iloc[0] == "count() by date.dt.year"
    assert "where (date >= Timestamp('2010-01-01 00:00:00'))" in session.ledger["query"].iloc[1]


# -- reading dates ---------------------------------------------------------------------


def test_a_column_with_date_bounds_is_read_as_dates_each_value_on_its_own() -> None:
    values = [
        "01/02/2010",  # not ISO 8601: missing (a first value never sets a format)
        "2010-01-05",
        "2010-01-05T10:30:00",
        "2010-01-05T10:30:00+02:00",  # an offset: converted to UTC (08:30)
        datetime.date(2010, 1, 7),
        pd.Timestamp("2010-01-08 06:00"),
        "3000-01-01",  # beyond the nanosecond range
        None,
    ]
    frame = pd.DataFrame({"d": pd.Series(values, dtype=object)})
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"d": DATE_BOUNDS})
    info = pf.column_info("d")
    assert (info.kind, info.dtype, info.date_bounds) == ("datetime", "datetime64[ns]", DATE_BOUNDS)
    assert float(pf["d"].count(epsilon=BIG)) == pytest.approx(5, abs=0.01)
    hours = pf["d"].dt.hour.value_counts(epsilon=BIG, sort=False).round()
    assert {k: v for k, v in hours.items() if v} == {0: 2, 6: 1, 8: 1, 10: 1}
    assert list(frame["d"]) == values  # the caller's frame is not modified
    reordered = frame.iloc[::-1].reset_index(drop=True)  # the same values read the same way
    other = dp.Session(epsilon=1e7, ledger=":memory:").private_frame(
        reordered, bounds={"d": DATE_BOUNDS}
    )
    again = other["d"].dt.hour.value_counts(epsilon=BIG, sort=False).round()
    assert again.to_dict() == hours.to_dict()


#: ISO text and its hour in UTC: a time without an offset is read as UTC.
ZONED_AND_NAIVE = [
    ("2010-01-05T10:30+02:00", 8),
    ("2010-01-05T10:30", 10),
    ("2010-01-05 11:00:00", 11),
    ("2010-01-05T12:00Z", 12),
    ("2010-01-05T12:00-0230", 14),
    ("20100105T1500", 15),
    ("2010-01-05", 0),
]


@pytest.mark.parametrize("order", [1, -1], ids=["offsets-first", "offsets-last"])
def test_a_time_without_an_offset_is_utc_whatever_the_rows_before_it(order: int) -> None:
    # pandas 2.2-2.3 gave "...T10:30" the +02:00 of the row before it (hour 8, not 10).
    values = [text for text, _ in ZONED_AND_NAIVE][::order]
    expected = [hour for _, hour in ZONED_AND_NAIVE][::order]
    frame = pd.DataFrame({"d": values})
    read = apply_declared_kinds(frame, {"d": DeclaredKind("datetime")})
    assert read["d"].dt.hour.tolist() == expected
    pf = dp.Session(epsilon=1e7, ledger=":memory:").private_frame(frame, bounds={"d": DATE_BOUNDS})
    hours = pf["d"].dt.hour.value_counts(epsilon=BIG, sort=False).round()
    assert {k: v for k, v in hours.items() if v} == dict.fromkeys(expected, 1)


def test_a_number_is_not_a_date() -> None:
    frame = pd.DataFrame({"d": pd.Series([20100109, 1262304000, 2010.5, True], dtype=object)})
    pf = dp.Session(epsilon=1e7, ledger=":memory:").private_frame(frame, dtypes={"d": "datetime"})
    assert float(pf["d"].count(epsilon=BIG)) == pytest.approx(0, abs=0.01)


def test_declared_and_typed_date_columns() -> None:
    stamps = pd.DatetimeIndex(["2010-01-01 05:00", "2011-06-01 07:00", pd.NaT])
    frame = pd.DataFrame(
        {
            "typed": stamps,  # already datetime64: a date column without declaration
            "zoned": stamps.tz_localize("Europe/Paris"),
            "text": ["2010-01-01T05:00", "2011-06-01T07:00", "x"],
        }
    )
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(frame, bounds={"zoned": DATE_BOUNDS}, dtypes={"text": "datetime"})
    assert pf.column_info("typed").kind == pf.column_info("text").kind == "datetime"
    assert pf.column_info("text").date_bounds is None
    hours = pf["zoned"].dt.hour.value_counts(epsilon=BIG, sort=False).round()  # read in UTC
    assert {k: v for k, v in hours.items() if v} == {4: 1, 5: 1}
    months = pf["text"].dt.month.value_counts(epsilon=BIG, sort=False).round()
    assert {k: v for k, v in months.items() if v} == {1: 1, 6: 1}
    assert pf["typed"].dt.year.categories is None  # no bounds: no year keys
    with pytest.raises(dp.SchemaError, match=r"value_counts\(\) needs the public categories"):
        pf["typed"].dt.year.value_counts(epsilon=1)
    assert session.ledger["epsilon"].tolist() == [BIG, BIG]


def test_the_public_schema_does_not_depend_on_the_values() -> None:
    clean = pd.DataFrame({"d": pd.to_datetime(["2010-01-01", "2011-01-01"])})
    dirty = pd.DataFrame({"d": ["2010-01-01", "yesterday"]})
    one = dp.Session(epsilon=1, ledger=":memory:").private_frame(clean, bounds={"d": DATE_BOUNDS})
    other = dp.Session(epsilon=1, ledger=":memory:").private_frame(dirty, bounds={"d": DATE_BOUNDS})
    assert one.schema.equals(other.schema)
    assert one.schema.loc["d", "bounds"] == DATE_BOUNDS


# -- bad input: a clear DPError before any charge -----------------------------------

Call = Callable[[dp.PrivateFrame], object]


def _load(bounds: dict[str, Any], dtypes: dict[str, str] | None = None) -> Call:
    def load(pf: dp.PrivateFrame) -> object:
        frame = pd.DataFrame({"date": ["2010-01-01"], "n": [1.0]})
        return local(pf).private_frame(frame, bounds=bounds, dtypes=dtypes)

    return load


BAD: list[tuple[str, Call, type[dp.DPError], str]] = [
    (
        "a date bound that is not a date",
        _load({"date": (pd.Timestamp("2010-01-01"), "2020-01-01")}),
        dp.SchemaError,
        r"The high bound of 'date' must be a date \(pd\.Timestamp\('2020-01-01'\), datetime or "
        r"date\), not a str",
    ),
    (
        "a number among date bounds",
        _load({"date": (5, pd.Timestamp("2010-01-01"))}),
        dp.SchemaError,
        "The low bound of 'date' must be a date",
    ),
    (
        "date bounds with low > high",
        _load({"date": (pd.Timestamp("2011-01-01"), pd.Timestamp("2010-01-01"))}),
        dp.SchemaError,
        "bounds for 'date' need low <= high",
    ),
    (
        "a date bound with a time zone",
        _load({"date": (pd.Timestamp("2010-01-01", tz="UTC"), pd.Timestamp("2011-01-01"))}),
        dp.SchemaError,
        "must be a date without a time zone",
    ),
    (
        "a missing date bound",
        _load({"date": (pd.NaT, pd.Timestamp("2011-01-01"))}),
        dp.SchemaError,
        "not a missing date",
    ),
    (
        "date bounds on a column declared numeric",
        _load({"date": DATE_BOUNDS}, {"date": "numeric"}),
        dp.SchemaError,
        "bounds for 'date' are dates, but dtypes= declares it numeric",
    ),
    (
        "numeric bounds on a column declared as dates",
        _load({"date": (0, 1)}, {"date": "datetime"}),
        dp.SchemaError,
        "The low bound of 'date' must be a date",
    ),
    (
        "numeric bounds on a date column",
        lambda pf: local(pf).private_frame(
            pd.DataFrame({"date": pd.to_datetime(["2010-01-01"])}), bounds={"date": (0, 1)}
        ),
        dp.SchemaError,
        "bounds given for 'date', which is not numeric; it holds dates, so its bounds are two",
    ),
    (
        "categories on a date column",
        lambda pf: local(pf).private_frame(
            pd.DataFrame({"date": pd.to_datetime(["2010-01-01"])}),
            categories={"date": [pd.Timestamp("2010-01-01")]},
        ),
        dp.SchemaError,
        r"categories for 'date', which holds dates: group by a calendar field",
    ),
    (
        ".dt on a number",
        lambda pf: pf["wage"].dt.month,
        dp.SchemaError,
        r"\.dt needs a date column; 'wage' is numeric",
    ),
    (
        ".dt on text",
        lambda pf: pf["comment"].dt.year,
        dp.SchemaError,
        r"\.dt needs a date column; 'comment' is text",
    ),
    (
        "an unknown period frequency",
        lambda pf: pf["date"].dt.to_period("A"),
        dp.SchemaError,
        r"to_period\(\) takes one of the frequencies Y, Q, M, W, D, h",
    ),
    (
        "a date compared with text that is not a date",
        lambda pf: pf[pf["date"] > "soon"],
        dp.SchemaError,
        "'soon' is not a date; write e.g. '2020-01-31'",
    ),
    (
        "a date compared with a number",
        lambda pf: pf[pf["date"] == 2010],
        dp.SchemaError,
        "compares dates with something else",
    ),
    (
        "arithmetic on dates",
        lambda pf: pf["date"] + 1,
        dp.SchemaError,
        "Arithmetic needs numbers; .* involves dates",
    ),
    (
        "a date as a condition",
        lambda pf: pf[pf["date"] & (pf["wage"] > 1)],
        dp.SchemaError,
        "uses dates as conditions",
    ),
    (
        "periods compared in order",
        lambda pf: pf[pf["date"].dt.to_period("M") > "2010-01"],
        dp.SchemaError,
        r"periods are compared only for equality",
    ),
    (
        "a time-zone literal",
        lambda pf: pf[pf["date"] > pd.Timestamp("2010-01-01", tz="UTC")],
        dp.SchemaError,
        "A date constant must be a date without a time zone",
    ),
    (
        "a summed date",
        lambda pf: pf["date"].sum(epsilon=1),
        dp.SchemaError,
        r"sum\(\) needs a numeric column; 'date' is datetime",
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


def test_to_period_counts_its_keys_before_building_them() -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    pf = session.private_frame(
        pd.DataFrame({"d": ["2010-01-01"]}),
        bounds={"d": (pd.Timestamp("2000-01-01"), pd.Timestamp("2012-01-01"))},
    )
    assert len(pf["d"].dt.to_period("D").categories or ()) == 4384
    with pytest.raises(dp.SchemaError, match="makes 105193 periods, more than 100000 keys"):
        pf["d"].dt.to_period("h")
    assert session.ledger.empty


# -- expressions: facts, evaluation, wire --------------------------------------------


def test_facts_of_date_expressions() -> None:
    schema = schema_from_frame(
        pd.DataFrame({"d": pd.to_datetime(["2010-01-01"])}), {"d": DATE_BOUNDS}, None
    )
    info = infer_column("y", DtField(Col("d"), "year"), schema)
    assert (info.kind, info.bounds, info.categories) == (
        "numeric",
        (2006.0, 2013.0),
        tuple(range(2006, 2014)),
    )
    shifted = infer_column("s", DtField(Col("d"), "year") - 2000, schema)
    assert shifted.bounds == (6.0, 13.0)
    period = infer_column("p", PeriodOf(Col("d"), "Y"), schema)
    assert period.kind == "categorical" and period.categories == tuple(
        pd.period_range("2006", "2013", freq="Y")
    )
    constant = infer_column("c", DateLit(pd.Timestamp("2010-01-01")), schema)
    assert constant.kind == "datetime"
    assert (
        infer_column("b", Col("d") >= DateLit(pd.Timestamp("2010-01-01")), schema).kind == "boolean"
    )


def test_printed_forms_and_keys() -> None:
    a = DtField(col("d"), "month")
    assert str(a) == "d.dt.month" and a.key() == DtField(col("d"), "month").key()
    assert a.key() != DtField(col("d"), "day").key()
    assert str(PeriodOf(col("d"), "M")) == "d.dt.to_period('M')"
    given: list[Any] = [np.datetime64("2010-01-01T10:00"), datetime.datetime(2010, 1, 1, 10)]
    stamp = DateLit(given[0])
    assert str(col("d") < stamp) == "(d < Timestamp('2010-01-01 10:00:00'))"
    assert stamp.key() == DateLit(given[1]).key()
    assert stamp.key() != DateLit(pd.Timestamp("2010-01-01 10:00:00.000000001")).key()


def test_expressions_travel_as_json() -> None:
    exprs = [
        DtField(col("d"), "day_of_year"),
        PeriodOf(col("d"), "W"),
        (col("d") >= DateLit(pd.Timestamp("2010-01-01 00:00:00.000000001"))) & (col("x") > 1),
    ]
    for expr in exprs:
        wire = json.loads(json.dumps(expr.to_dict(), allow_nan=False))
        back = expr_from_dict(wire)
        assert back.key() == expr.key() and type(back) is type(expr)
    assert DateLit(pd.Timestamp("2010-01-01")).to_dict() == {
        "op": "date",
        "value": "2010-01-01T00:00:00",
    }


def test_release_nodes_with_period_keys_travel_as_json() -> None:
    months = tuple(pd.period_range("2010-01", "2010-03", freq="M"))
    weeks = tuple(pd.period_range("2010-01-01", "2010-01-20", freq="W"))
    node = Aggregate(
        Source("d"),
        "count",
        None,
        None,
        (
            GroupKey("m", PeriodOf(Col("date"), "M"), months),
            GroupKey("w", PeriodOf(Col("date"), "W"), weeks),
        ),
        "count() by month, week",
        PrivacyRequest(epsilon=Fraction(1, 10)),
    )
    wire = json.loads(json.dumps(encode_node(node), allow_nan=False))
    assert wire["node"]["by"][0]["categories"][1] == {"$period": ["2010-02", "M"]}
    assert wire["node"]["by"][1]["categories"][0] == {"$period": ["2009-12-28/2010-01-03", "W-SUN"]}
    back = decode_node(wire, Source("d"))
    assert back == node and isinstance(back, Aggregate)
    assert back.by[0].categories == months and back.by[1].categories == weeks


@pytest.mark.parametrize(
    ("expr", "match"),
    [
        ({"op": "date", "value": "2010-1-1"}, "must be an ISO 8601 date"),
        ({"op": "date", "value": "2010-13-01"}, "is not a valid date"),
        ({"op": "date", "value": 1262304000}, "must be an ISO 8601 date"),
        ({"op": "date", "value": "3000-01-01"}, "must lie between 1677-09-21 and 2262-04-11"),
        ({"op": "date", "value": "2010-01-01", "tz": "UTC"}, "A date node has the field value"),
        ({"op": "dt", "operand": {"op": "col", "name": "d"}, "field": "week"}, "Unknown .dt field"),
        ({"op": "dt", "operand": {"op": "col", "name": "d"}, "field": 1}, "field must be a string"),
        ({"op": "period", "operand": {"op": "col", "name": "d"}, "freq": "5min"}, "to_period"),
        ({"op": "period", "operand": {"op": "col", "name": "d"}}, "has the fields operand, freq"),
    ],
)
def test_malformed_date_nodes_are_refused(expr: dict[str, Any], match: str) -> None:
    with pytest.raises(dp.SchemaError, match=match):
        expr_from_dict(expr)


@pytest.mark.parametrize(
    ("key", "match"),
    [
        ({"$period": ["2010-01", "A-DEC"]}, "a period's frequency is one of"),
        ({"$period": ["January", "M"]}, "write the period as pandas prints it"),
        ({"$period": ["2010-99", "M"]}, "is not a valid period"),
        ({"$period": ["2010-01"]}, r"must be \{'\$period': \[text, freq\]\}"),
        (
            {"$period": ["2010-01", "M"], "x": 1},
            "must be a string, number, boolean, null or interval",
        ),
    ],
)
def test_malformed_period_keys_are_refused_on_the_wire(key: object, match: str) -> None:
    months = (pd.Period("2010-01", "M"),)
    node = Aggregate(
        Source("d"),
        "count",
        None,
        None,
        (GroupKey("m", PeriodOf(Col("date"), "M"), months),),
        "count() by month",
        PrivacyRequest(epsilon=Fraction(1)),
    )
    wire = json.loads(json.dumps(encode_node(node)))
    wire["node"]["by"][0]["categories"] = [key]
    with pytest.raises(NodeFormatError, match=match):
        decode_node(wire, Source("d"))


MOMENTS = st.one_of(
    st.datetimes(min_value=datetime.datetime(1700, 1, 1), max_value=datetime.datetime(2200, 1, 1)),
    st.none(),
)


@given(moments=st.lists(MOMENTS, max_size=40), chunk=st.integers(1, 7))
@settings(max_examples=150, deadline=None)
def test_fields_and_periods_per_chunk_are_pandas_values(
    moments: list[datetime.datetime | None], chunk: int
) -> None:
    frame = pd.DataFrame({"d": pd.Series(moments, dtype="datetime64[ns]")})
    dates = frame["d"]
    low, high = pd.Timestamp("1700-01-01"), pd.Timestamp("2200-01-01")
    for field in ("year", "month", "day_of_week", "hour", "second"):
        keys = tuple(range(1700, 2201)) if field == "year" else tuple(range(61))
        key = GroupKey("k", DtField(Col("d"), field), keys)
        got = PandasBackend(frame, chunk_rows=chunk).compute(
            Source("d"), (Measure("rows"),), (key,)
        )
        want = getattr(dates.dt, field).value_counts()
        assert {k: v for k, v in zip(keys, got[0], strict=True) if v} == want.to_dict()
    periods = tuple(pd.period_range(low, high, freq="Y"))
    key = GroupKey("p", PeriodOf(Col("d"), "Y"), periods)
    got = PandasBackend(frame, chunk_rows=chunk).compute(Source("d"), (Measure("rows"),), (key,))
    want = dates.dt.to_period("Y").value_counts()
    assert {k: v for k, v in zip(periods, got[0], strict=True) if v} == want.to_dict()
