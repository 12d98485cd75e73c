"""Dates and text through the curator: the same keys, costs and refusals as embedded.

The curator serves the CPS rows with synthetic dates and free text
(:mod:`tests.dated_cps`) from a CSV; its catalog declares the date bounds as
TOML dates and the comment's maximum length in ``dtypes``.  The analyst's
frame learns both from the curator's schema, so ``.dt.year`` and
``.str.len()`` need no declaration on the analyst's side; the ``.dt`` and
``.str`` expressions travel as JSON, period keys as ``{"$period": [...]}``
both ways.  With a large budget for alice the remote answers are compared
with pandas as closely as the embedded ones.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, CatalogError, hash_token
from dpframe.curator.service import Curator
from dpframe.plan.codec import encode_node
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, GroupKey, Source
from dpframe.plan.privacy import PrivacyRequest
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE
from tests.dated_cps import BOUNDS, CATEGORIES, DATE_BOUNDS, DTYPES, MAX_LENGTH, dated_cps, truth

BIG = 1e4
Query = Callable[[Any], pd.Series]

QUERIES: dict[str, Query] = {
    "years": lambda pf: pf.assign(year=pf["date"].dt.year).groupby("year").size(epsilon=BIG),
    "months": lambda pf: pf["date"].dt.to_period("M").value_counts(epsilon=BIG, sort=False),
    "weekdays by region": lambda pf: (
        pf.assign(day=pf["date"].dt.day_of_week).groupby(["day", "region"]).size(epsilon=BIG)
    ),
    "recent regions": lambda pf: (
        pf[pf["date"].between(pd.Timestamp("2010-01-01"), pd.Timestamp("2011-06-30"))]
        .groupby("region")
        .size(epsilon=BIG)
    ),
    "upper regions": lambda pf: pf["region"].str.upper().value_counts(epsilon=BIG, sort=False),
    "night shifts": lambda pf: (
        pf.assign(night=pf["comment"].str.contains(r"night\s+shift", case=False))
        .groupby("night")
        .size(epsilon=BIG)
    ),
    "lengths": lambda pf: pf["comment"].str.strip().str.len().value_counts(epsilon=BIG, sort=False),
}


def _pandas(df: pd.DataFrame) -> dict[str, dict[Any, int]]:
    dates, comment = df["date"], df["comment"]
    recent = df[dates.between(pd.Timestamp("2010-01-01"), pd.Timestamp("2011-06-30"))]
    return {
        "years": dates.dt.year.value_counts().to_dict(),
        "months": dates.dt.to_period("M").value_counts().to_dict(),
        "weekdays by region": df.groupby([dates.dt.day_of_week, "region"]).size().to_dict(),
        "recent regions": recent.groupby("region").size().to_dict(),
        "upper regions": df["region"].str.upper().value_counts().to_dict(),
        "night shifts": comment.str.contains(r"night\s+shift", case=False).value_counts().to_dict(),
        "lengths": comment.str.strip().str.len().value_counts().to_dict(),
    }


def _toml(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{k}" = {_toml(v)}' for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, pd.Timestamp):
        return value.isoformat()  # a TOML local date-time
    if isinstance(value, str):
        return '"' + value + '"'
    return repr(value)


def write_dated_catalog(folder: Path, *, alice_epsilon: float = 1e6) -> Path:
    """A catalog serving ``dated`` (the dated CPS rows as CSV) to alice."""
    dated_cps().to_csv(folder / "dated.csv", index=False)
    lines = [
        "[server]",
        'ledger = "ledger.sqlite"',
        "",
        "[datasets.dated]",
        'path = "dated.csv"',
        f"bounds = {_toml(BOUNDS)}",
        f"categories = {_toml(CATEGORIES)}",
        f"dtypes = {_toml(DTYPES)}",
        "",
        "[analysts.alice]",
        f'token_sha256 = "{hash_token(ALICE)}"',
        f"budgets = {{ dated = {{ epsilon = {alice_epsilon!r}, delta = 1e-6 }} }}",
    ]
    path = folder / "catalog.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dated_catalog(tmp_path_factory.mktemp("curator-dates"))


@pytest.fixture(scope="module")
def remote(server: Any) -> Any:
    return dp.connect(server.url, token=ALICE).open("dated")


@pytest.fixture(scope="module")
def embedded() -> Any:
    session = dp.Session(epsilon=1e6, delta=1e-6, ledger=":memory:")
    return session.private_frame(dated_cps(), bounds=BOUNDS, categories=CATEGORIES, dtypes=DTYPES)


@pytest.fixture(scope="module")
def answers() -> dict[str, dict[Any, int]]:
    return _pandas(truth(dated_cps()))


def test_the_curators_schema_declares_the_dates_and_the_text(remote: Any, embedded: Any) -> None:
    for name in ("date", "comment"):
        assert remote.column_info(name) == embedded.column_info(name)
    # The curator declares every column's kind (its keys' kind: text), so its dtype is
    # pandas' "string"; the embedded frame here leaves region undeclared.
    region = remote.column_info("region")
    assert (region.kind, region.dtype) == (embedded.column_info("region").kind, "string")
    date = remote.column_info("date")
    assert (date.kind, date.dtype, date.date_bounds) == ("datetime", "datetime64[ns]", DATE_BOUNDS)
    assert remote.column_info("comment").max_length == MAX_LENGTH
    assert remote["date"].dt.year.categories == tuple(range(2006, 2014))
    assert remote["comment"].str.len().bounds == (0.0, float(MAX_LENGTH))


@pytest.mark.parametrize("name", list(QUERIES))
def test_remote_answers_match_embedded_ones_and_pandas(
    name: str, remote: Any, embedded: Any, answers: dict[str, dict[Any, int]]
) -> None:
    before = len(remote.session.ledger)
    far, local = QUERIES[name](remote), QUERIES[name](embedded)
    assert far.index.equals(local.index) and far.index.names == local.index.names
    assert list(far.index) == list(local.index)
    assert far.attrs["dpframe"].cost == local.attrs["dpframe"].cost == dp.Budget(BIG)
    ledger = remote.session.ledger  # one row per release, at the stated ε
    assert len(ledger) == before + 1 and ledger["epsilon"].iloc[-1] == BIG
    assert ledger["query"].iloc[-1] == embedded.session.ledger["query"].iloc[-1]
    truth_counts = answers[name]
    for key, value in far.items():
        assert value == pytest.approx(truth_counts.get(key, 0), abs=2), key


def test_period_keys_come_back_as_periods(remote: Any) -> None:
    months = remote["date"].dt.to_period("Q").value_counts(epsilon=BIG, sort=False)
    assert all(isinstance(k, pd.Period) for k in months.index)
    assert list(months.index) == list(pd.period_range(*DATE_BOUNDS, freq="Q"))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda pf: pf["wage"].dt.year, r"\.dt needs a date column; 'wage' is numeric"),
        (lambda pf: pf["region"].str.len(), r"'region' has no declared maximum length"),
        (lambda pf: pf[pf["date"] == 2010].count(epsilon=1), "compares dates with something else"),
        (lambda pf: pf["date"].dt.to_period("5min"), r"to_period\(\) takes one of"),
        (lambda pf: pf["comment"].str.contains(r"(a)\1"), "RE2 accepts"),
        (lambda pf: pf["comment"].str.contains(None), "The pattern must be a string"),
    ],
)
def test_remote_refusals_match_and_charge_nothing(
    call: Callable[[Any], object], match: str, remote: Any, embedded: Any
) -> None:
    spent = remote.session.spent
    with pytest.raises(dp.SchemaError, match=match) as far:
        call(remote)
    with pytest.raises(dp.SchemaError, match=match) as local:
        call(embedded)
    assert str(far.value) == str(local.value)
    assert remote.session.spent == spent


def test_a_catalog_with_bad_date_bounds_is_refused(tmp_path: Path) -> None:
    path = write_dated_catalog(tmp_path)
    text = path.read_text(encoding="utf-8").replace("2013-12-31T23:59:00", "2001-01-01T00:00:00")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CatalogError, match=r"bounds\.date: bounds for 'date' need low <= high"):
        Catalog.load(path)


# -- fuzzing: date and text expressions sent by hand ------------------------------------

COLUMNS = ["date", "comment", "region", "wage"]
TEXTS = st.one_of(
    st.sampled_from(["", "a", "worker", "(a", "a+", r"\1", "x" * 2000]), st.integers()
)


def _pick(draw: st.DrawFn, good: list[Any], bad: list[Any]) -> Any:
    """Mostly a valid choice, sometimes a malformed one."""
    return draw(st.sampled_from(good * 4 + bad))


@st.composite
def _node(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["dt", "period", "str_map", "str_replace", "str_match", "str_len"]))
    dated = kind in ("dt", "period")
    name = _pick(draw, ["date"] if dated else ["comment", "region"], COLUMNS)
    operand = {"op": "col", "name": name}
    if kind == "dt":
        field = _pick(draw, ["year", "month", "day_of_week"], ["week", 3])
        return {"op": "dt", "operand": operand, "field": field}
    if kind == "period":
        return {"op": "period", "operand": operand, "freq": _pick(draw, ["Y", "M"], ["A", None])}
    if kind == "str_len":
        return {"op": "str_len", "operand": operand}
    fitting = MAX_LENGTH if name == "comment" else None
    length = _pick(draw, [fitting], [MAX_LENGTH, 5, 0, True])
    if kind == "str_map":
        method = _pick(draw, ["lower", "upper", "strip"], ["title"])
        chars = _pick(draw, [None], [" ", 5])
        return {
            "op": kind,
            "operand": operand,
            "method": method,
            "chars": chars,
            "max_length": length,
        }
    flags = {"case": _pick(draw, [True, False], [1]), "regex": draw(st.booleans())}
    if kind == "str_replace":
        return {
            "op": kind,
            "operand": operand,
            "pat": _pick(draw, ["a", "worker"], [draw(TEXTS)]),
            "repl": _pick(draw, ["", "b"], [draw(TEXTS)]),
            "n": _pick(draw, [-1, 2], [2**40, 1.5]),
            **flags,
            "max_length": length,
        }
    how = _pick(draw, ["contains", "startswith", "endswith"], ["search"])
    pats = _pick(draw, [["worker"], ["a+"]], [draw(st.lists(TEXTS, max_size=2))])
    if how != "contains":
        flags = {"case": True, "regex": False}
    return {"op": kind, "operand": operand, "how": how, "pats": pats, **flags, "na": None}


@st.composite
def dated_calls(draw: st.DrawFn) -> dict[str, Any]:
    expr = draw(_node())
    use = draw(st.sampled_from(["key", "filter", "value"]))
    key_expr: dict[str, Any] = {"op": "col", "name": "region"}
    categories: list[Any] = ["south", "west"]
    plan: list[dict[str, Any]] = []
    statistic, value, bounds = "count", None, None
    if use == "key":
        key_expr = expr
        categories = draw(
            st.sampled_from(
                [[2010, 2011], [{"$period": ["2010-01", "M"]}], [False, True], ["SOUTH"], [1, 2]]
            )
        )
    elif use == "filter":
        literal = draw(
            st.sampled_from(
                [
                    {"op": "lit", "value": 3},
                    {"op": "lit", "value": "a"},
                    {"op": "date", "value": "2010-01-01T00:00:00"},
                ]
            )
        )
        plan = [
            {"filter": {"op": draw(st.sampled_from(["==", "<"])), "left": expr, "right": literal}}
        ]
    else:
        statistic, value, bounds = "sum", expr, [0.0, 40.0]
    call = _template()  # every field of an aggregate node as the codec writes it today
    call["node"].update(
        plan=plan,
        statistic=statistic,
        expr=value,
        bounds=bounds,
        by=[{"name": "k", "expr": key_expr, "categories": categories}],
        label="fuzzed dates and text",
    )
    call["explain"] = draw(st.booleans()) and draw(st.booleans())
    return call


def _template() -> dict[str, Any]:
    key = GroupKey("k", Col("region"), ("south", "west"))
    tenth = PrivacyRequest(Fraction(1, 10))
    node = Aggregate(Source("dated"), "count", None, None, (key,), "x", tenth)
    body: dict[str, Any] = encode_node(node)
    return body


def test_fuzzed_date_and_text_requests_never_fail_the_curator_or_charge_without_a_release(
    tmp_path: Path,
) -> None:
    curator = Curator(Catalog.load(write_dated_catalog(tmp_path, alice_epsilon=1e4)))
    client = TestClient(create_app(curator))
    headers = {"Authorization": f"Bearer {ALICE}"}
    outcomes: dict[int, int] = {}

    def rows() -> int:
        body = client.get("/v1/datasets/dated/ledger", headers=headers).json()
        return len(decode_response(body["ledger"]))

    @given(call=dated_calls())
    @settings(
        max_examples=int(os.environ.get("DPFRAME_FUZZ_EXAMPLES", "150")),
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(call: dict[str, Any]) -> None:
        before = rows()
        fresh = {**call, "fresh": True}  # each call a new release (issue 31)
        answer = client.post("/v1/datasets/dated/query", json=fresh, headers=headers)
        outcomes[answer.status_code] = outcomes.get(answer.status_code, 0) + 1
        assert answer.status_code < 500, answer.text
        released = answer.status_code == 200 and not call.get("explain")
        assert rows() == before + released, answer.text
        assert curator.unexpected_errors == 0

    run()
    print(f"\nfuzzed dates and text: {dict(sorted(outcomes.items()))}")
    assert outcomes.get(200, 0) > 10 and sum(v for k, v in outcomes.items() if k >= 400) > 10
