"""Bad input: a clear DPError subclass, nothing charged, no ledger row, no private value shown."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp

SENTINEL = 987654.321
SENTINEL_TEXT = "sentinel-region-xyz"


@pytest.fixture
def frame(session: dp.Session) -> dp.PrivateFrame:
    df = pd.DataFrame(
        {
            "wage": [SENTINEL, 10.0, 20.0],
            "region": [SENTINEL_TEXT, "south", "west"],
            "name": ["a", "b", "c"],
        }
    )
    return session.private_frame(
        df, bounds={"wage": (0, 100)}, categories={"region": ["south", "west"]}
    )


BAD_QUERIES: list[tuple[str, str, Callable[[dp.PrivateFrame], Any]]] = [
    ("epsilon zero", "epsilon must be > 0, got 0", lambda f: f.count(epsilon=0)),
    ("epsilon negative", "epsilon must be > 0, got -1", lambda f: f.count(epsilon=-1)),
    ("epsilon nan", "epsilon must be finite, got nan", lambda f: f.count(epsilon=float("nan"))),
    ("epsilon inf", "epsilon must be finite, got inf", lambda f: f.count(epsilon=float("inf"))),
    ("epsilon missing", r"Give the privacy cost of a query as epsilon=\.\.\.", lambda f: f.count()),
    (
        "epsilon string",
        "epsilon must be a number, not the string 'lots'",
        lambda f: f.count(epsilon="lots"),
    ),
    (
        "epsilon numeric string",
        r"epsilon must be a number, not the string '0\.1'; write it without quotes",
        lambda f: f.count(epsilon="0.1"),
    ),
    (
        "delta negative",
        r"delta must be in \[0, 1\), got -0\.1",
        lambda f: f.count(epsilon=0.1, delta=-0.1),
    ),
    ("delta one", r"delta must be in \[0, 1\), got 1\.", lambda f: f.count(epsilon=0.1, delta=1)),
    (
        "delta under pure DP",
        r"uses pure DP \(delta=0\), so a query cannot spend delta",
        lambda f: f.count(epsilon=0.1, delta=1e-6),
    ),
    ("rho under pure DP", "rho= is only accepted in a zCDP session", lambda f: f.count(rho=0.1)),
    ("unknown column", "Unknown column 'salary'", lambda f: f["salary"]),
    (
        "sum of text",
        r"sum\(\) needs a numeric column; 'name' is text",
        lambda f: f["name"].sum(epsilon=0.1),
    ),
    (
        "mean of text",
        r"mean\(\) needs a numeric column; 'region' is categorical",
        lambda f: f["region"].mean(epsilon=0.1),
    ),
    (
        "groupby undeclared",
        r"groupby\('name'\) needs the public keys of 'name'.* this session is pure DP",
        lambda f: f.groupby("name").count(epsilon=0.1),
    ),
    (
        "groupby median without column",
        r"Select a column first: grouped\['column'\]\.quantile",
        lambda f: f.groupby("region").median(epsilon=0.1),
    ),
    (
        "groupby sum without any bounded column",
        r"agg\(\) without a dict applies to the bounded numeric columns, and there are none",
        lambda f: f[["region"]].groupby("region").sum(epsilon=0.1),
    ),
    ("filter not boolean", "A filter needs a condition", lambda f: f[f["wage"] + 1]),
    (
        "arithmetic on text",
        r"Arithmetic needs numbers; \(name \* 2\) involves text",
        lambda f: f["name"] * 2,
    ),
    ("bad bounds", "bounds for 'wage' need low <= high", lambda f: f.with_bounds(wage=(5, 1))),
    (
        "infinite bounds",
        "bounds for 'wage' must be finite numbers",
        lambda f: f.with_bounds(wage=(0, float("inf"))),
    ),
    (
        "bounds on text",
        "'name' is not numeric; bounds apply to numeric columns",
        lambda f: f.with_bounds(name=(0, 1)),
    ),
    (
        "budget exceeded",
        "Privacy budget exceeded; nothing was charged",
        lambda f: f.count(epsilon=11),
    ),
    (
        "groupby not a name",
        r"groupby\(\) takes a column name or a list of column names",
        lambda f: f.groupby(5),
    ),
    (
        "groupby None",
        r"groupby\(\) takes a column name or a list of column names",
        lambda f: f.groupby(None),
    ),
    (
        "categories as a string",
        "categories for 'region' must be a list of public keys",
        lambda f: f.with_categories(region="sw"),
    ),
    (
        "compare text with number",
        r"\(region > 5\) compares a number with text",
        lambda f: f[f["region"] > 5],
    ),
    (
        "arithmetic with text",
        r"Arithmetic needs numbers; \(wage \+ 'x'\) involves text",
        lambda f: f["wage"] + "x",
    ),
    ("tiny epsilon", r"noise would exceed 2\*\*52 grid units", lambda f: f.count(epsilon=1e-300)),
]


@pytest.mark.parametrize(("what", "match", "query"), BAD_QUERIES, ids=[q[0] for q in BAD_QUERIES])
def test_bad_query_charges_nothing(
    frame: dp.PrivateFrame,
    session: dp.Session,
    what: str,
    match: str,
    query: Callable[..., Any],
) -> None:
    before = session.ledger
    with pytest.raises(dp.DPError, match=match) as info:
        query(frame)
    message = str(info.value)
    assert str(SENTINEL) not in message
    assert SENTINEL_TEXT not in message
    assert session.spent == dp.Budget(0)
    assert len(session.ledger) == len(before) == 0


def test_missing_bounds_says_which_bounds_to_add(session: dp.Session) -> None:
    pf = session.private_frame(pd.DataFrame({"income": [1.0, 2.0]}))
    with pytest.raises(dp.SchemaError, match=r"bounds=\{'income': \(low, high\)\}"):
        pf["income"].mean(epsilon=0.1)
    with pytest.raises(dp.SchemaError, match="bounds"):
        (pf["income"] / pf["income"]).sum(epsilon=0.1)


@pytest.mark.parametrize(
    ("bounds", "categories", "match"),
    [
        ({"wage": (3, 1)}, None, "bounds for 'wage' need low <= high"),
        ({"wage": (0, float("nan"))}, None, "bounds for 'wage' must be finite numbers"),
        ({"wage": "0-5"}, None, r"bounds for 'wage' must be a \(low, high\) pair of numbers"),
        ({"nope": (0, 1)}, None, "Unknown column 'nope'"),
        (None, {"region": []}, "categories for 'region' must not be empty"),
        (None, {"region": ["a", "a"]}, "categories for 'region' must be distinct"),
        (None, {"region": "south"}, "categories for 'region' must be a list of public keys"),
        (None, {"nope": ["a"]}, "Unknown column 'nope'"),
        (
            None,
            {"wage": ["1", "2"]},
            "categories for 'wage' are text, but the column holds numbers",
        ),
        (None, {"region": [1, 2]}, "categories for 'region' must be strings, like the column's"),
        (None, {"region": [["a"], ["b"]]}, "categories for 'region' must be numbers or strings"),
    ],
)
def test_bad_declarations(session: dp.Session, bounds: Any, categories: Any, match: str) -> None:
    df = pd.DataFrame({"wage": [1.0], "region": ["a"]})
    with pytest.raises(dp.SchemaError, match=match):
        session.private_frame(df, bounds=bounds, categories=categories)


@pytest.mark.parametrize(
    "df",
    [pd.DataFrame(), pd.DataFrame({"a": []}), pd.DataFrame(index=[1, 2])],
    ids=["no-columns", "no-rows", "index-only"],
)
def test_empty_frame_is_refused(session: dp.Session, df: pd.DataFrame) -> None:
    with pytest.raises(dp.SchemaError, match="empty"):
        session.private_frame(df)


def test_not_a_dataframe(session: dp.Session) -> None:
    with pytest.raises(dp.SchemaError, match=r"private_frame\(\) needs a pandas DataFrame"):
        session.private_frame(np.zeros((3, 2)))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0}, "The session's epsilon must be > 0"),
        ({"epsilon": -1}, "epsilon must be >= 0, got -1"),
        ({"epsilon": float("nan")}, "epsilon must be finite, got nan"),
        ({"epsilon": 1, "delta": 1}, r"delta must be in \[0, 1\), got 1"),
        ({"epsilon": 1, "delta": -1e-9}, r"delta must be in \[0, 1\), got -1e-09"),
        ({"epsilon": 1, "accounting": "pure", "delta": 1e-6}, "Pure-DP accounting needs delta=0"),
        ({"epsilon": 1, "accounting": "zcdp"}, "zCDP accounting needs delta > 0"),
        ({"epsilon": 1, "name": ""}, "name must be a non-empty string"),
    ],
)
def test_bad_session_arguments(tmp_path: Path, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(dp.DPError, match=match):
        dp.Session(ledger=tmp_path / "l.sqlite", **kwargs)


def test_read_csv_errors_are_dperrors(session: dp.Session, tmp_path: Path) -> None:
    with pytest.raises(dp.SchemaError, match=r"Cannot read '.*missing\.csv': FileNotFoundError"):
        session.read_csv(tmp_path / "missing.csv")


def test_undeclared_keys_are_dropped_not_revealed(frame: dp.PrivateFrame) -> None:
    result = frame.groupby("region").count(epsilon=1)
    assert list(result.index) == ["south", "west"]
    assert SENTINEL_TEXT not in repr(result)


@pytest.mark.parametrize("level", [2, 0, 1, -0.5, "a", None, float("nan")])
def test_bad_interval_level(frame: dp.PrivateFrame, level: object) -> None:
    release = frame.count(epsilon=0.1)
    with pytest.raises(dp.DPError, match="level"):
        release.ci(level)  # type: ignore[arg-type]
