"""The malformed inputs of ``test_bad_input_matrix.py``: one :class:`Case` per input.

Each case names its input, runs it against the sessions of a :class:`Ctx`, and
states the expected outcome: a ``DPError`` subclass, or ``RELEASE`` with a
check of the released value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from dpframe.mechanisms.moments.aggregates import MAX_CELLS

SENTINEL = 987654.321
SENTINEL_TEXT = "sentinel-key-qzx"
FORBIDDEN = ("987654", "9.87654", SENTINEL_TEXT)
EXACT = 1e9  # ε of a query whose value is checked: noise scale ~1e-9
RELEASE = None  # the expected outcome "a correct release"


@dataclass(frozen=True)
class Ctx:
    """The sessions a case may use (one ledger file, three names)."""

    pure: dp.Session
    zcdp: dp.Session
    other: dp.Session
    tmp: Path

    @property
    def sessions(self) -> tuple[dp.Session, ...]:
        return (self.pure, self.zcdp, self.other)


def people() -> pd.DataFrame:
    return pd.DataFrame(  # type: ignore[no-any-return]
        {
            "wage": [SENTINEL, 10.0, 20.0, np.nan, 30.0],
            "region": [SENTINEL_TEXT, "south", "west", None, "south"],
            "age": [31, 42, 25, 58, 39],
        }
    )


def people_frame(session: dp.Session) -> dp.PrivateFrame:
    return session.private_frame(
        people(),
        bounds={"wage": (0, 100), "age": (0, 100)},
        categories={"region": ["south", "west"]},
    )


def one(session: dp.Session, values: Any, **declared: Any) -> dp.PrivateFrame:
    """A one-column frame ``x`` holding ``values``."""
    return session.private_frame(pd.DataFrame({"x": values}), **declared)


# -- value checks --------------------------------------------------------------


def near(truth: float) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        assert abs(float(result) - truth) <= 1e-3 * max(1.0, abs(truth)), (result, truth)

    return check


def within(low: float, high: float) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        assert low <= float(result) <= high, (result, low, high)

    return check


def series_near(
    expected: dict[Any, float], tolerance: dict[Any, float] | None = None
) -> Callable[[Any], None]:
    """Every key in order, each near its value (``tolerance`` overrides per key)."""
    wide = tolerance or {}

    def check(result: Any) -> None:
        assert isinstance(result, pd.Series)
        assert list(result.index) == list(expected)
        for key, truth in expected.items():
            if math.isnan(truth):  # an empty group: missing, as pandas shows it
                assert math.isnan(float(result[key])), (key, result)
                continue
            allowed = wide.get(key, 1e-3 * max(1.0, abs(truth)))
            assert abs(float(result[key]) - truth) <= allowed, (key, result)

    return check


def noisy(min_scale: float) -> Callable[[Any], None]:
    def check(result: Any) -> None:
        assert math.isfinite(float(result))
        assert result.scale >= min_scale

    return check


# -- the cases -----------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One malformed input: what it does, and the expected error class or a release."""

    name: str
    run: Callable[[Ctx], Any]
    expect: type[dp.DPError] | None
    check: Callable[[Any], None] | None = None
    match: str | None = None  # a fragment of the refusal's message (a regex), for errors


def _write(ctx: Ctx, name: str, data: bytes) -> Path:
    path = ctx.tmp / name
    path.write_bytes(data)
    return path


def _many_cells(ctx: Ctx) -> Any:
    keys = [f"k{i}" for i in range(300)]  # 300**3 = 2.7e7 cells > MAX_CELLS
    df = pd.DataFrame({"a": ["k1"], "b": ["k2"], "c": ["k3"]})
    pf = ctx.pure.private_frame(df, categories={"a": keys, "b": keys, "c": keys})
    assert MAX_CELLS < 300**3
    return pf.groupby(["a", "b", "c"]).count(epsilon=1)


def _two_data(ctx: Ctx) -> tuple[dp.PrivateFrame, dp.PrivateFrame]:
    """A frame of ``ctx.pure`` and a frame of ``ctx.other`` holding other data."""
    mine = people_frame(ctx.pure)
    theirs = ctx.other.private_frame(
        pd.DataFrame({"wage": [1.0, 2.0], "region": ["south", "west"], "age": [1, 2]}),
        bounds={"wage": (0, 100)},
    )
    return mine, theirs


def across(action: Callable[[dp.PrivateFrame, dp.PrivateFrame], Any]) -> Callable[[Ctx], Any]:
    """Run ``action(mine, theirs)`` on frames of two sessions holding different data."""

    def run(ctx: Ctx) -> Any:
        mine, theirs = _two_data(ctx)
        return action(mine, theirs)

    return run


def _mixed_keys() -> list[Any]:
    return [1, "x", None, 2.5, "x", SENTINEL_TEXT, np.nan]


DATA_CASES: list[Case] = [
    # dtypes and missing values in the data
    Case(
        "float column with NaN: sum",
        lambda c: one(c.pure, [1.0, None, 150.0], bounds={"x": (0, 100)})["x"].sum(epsilon=EXACT),
        RELEASE,
        near(101),
    ),
    Case(
        "Int64 column with pd.NA: mean",
        lambda c: one(c.pure, pd.array([10, None, 30], dtype="Int64"), bounds={"x": (0, 100)})[
            "x"
        ].mean(epsilon=EXACT),
        RELEASE,
        near(20),
    ),
    Case(
        "Float64 column with pd.NA: var",
        lambda c: one(c.pure, pd.array([1.0, None, 3.0], dtype="Float64"), bounds={"x": (0, 10)})[
            "x"
        ].var(epsilon=EXACT),
        RELEASE,
        near(1),
    ),
    Case(
        "nullable boolean with NA: mean",
        lambda c: one(c.pure, pd.array([True, None, False, True], dtype="boolean"))["x"].mean(
            epsilon=EXACT
        ),
        RELEASE,
        near(2 / 3),
    ),
    Case(
        "object column of booleans and None: mean",
        lambda c: one(c.pure, [True, None, False])["x"].mean(epsilon=1),
        dp.SchemaError,
        match=r"mean\(\) needs a numeric column; 'x' is text\. Use",
    ),
    Case(
        "all-NaN column: mean",
        lambda c: one(c.pure, [np.nan] * 3, bounds={"x": (0, 10)})["x"].mean(epsilon=EXACT),
        RELEASE,
        within(0, 10),
    ),
    Case(
        "+inf and -inf in the data: sum clamps them",
        lambda c: one(c.pure, [np.inf, -np.inf, 5.0], bounds={"x": (0, 10)})["x"].sum(
            epsilon=EXACT
        ),
        RELEASE,
        near(15),
    ),
    Case(
        "+inf in a filter",
        lambda c: (lambda p: p[p["x"] > 5].count(epsilon=EXACT))(
            one(c.pure, [np.inf, -np.inf, 7.0])
        ),
        RELEASE,
        near(2),
    ),
    Case(
        "uint64 maximum: sum",
        lambda c: one(c.pure, np.array([2**64 - 1, 1], dtype=np.uint64), bounds={"x": (0, 5)})[
            "x"
        ].sum(epsilon=EXACT),
        RELEASE,
        near(6),
    ),
    Case(
        "int8 arithmetic that would wrap around: sum",
        lambda c: (
            one(c.pure, np.array([100, 100], dtype=np.int8), bounds={"x": (0, 127)})["x"] * 100
        ).sum(epsilon=EXACT),
        RELEASE,
        near(20000),
    ),
    Case(
        "bool + bool arithmetic: sum",
        lambda c: (lambda s: (s + s).sum(epsilon=EXACT))(one(c.pure, [True, True, False])["x"]),
        RELEASE,
        near(4),
    ),
    Case(
        "negated boolean column: sum",
        lambda c: (-one(c.pure, [True, True, False])["x"]).sum(epsilon=EXACT),
        RELEASE,
        near(-2),
    ),
    Case(
        "float16 with inf: sum",
        lambda c: one(c.pure, np.array([1, np.inf], dtype=np.float16), bounds={"x": (0, 5)})[
            "x"
        ].sum(epsilon=EXACT),
        RELEASE,
        near(6),
    ),
    Case(
        "sparse column: sum",
        lambda c: one(c.pure, pd.arrays.SparseArray([0.0, 0.0, 3.0]), bounds={"x": (0, 5)})[
            "x"
        ].sum(epsilon=EXACT),
        RELEASE,
        near(3),
    ),
    Case(
        "datetime column: sum",
        lambda c: one(c.pure, pd.to_datetime(["2020-01-01", "2021-01-01"]))["x"].sum(epsilon=1),
        dp.SchemaError,
        match=r"sum\(\) needs a numeric column; 'x' is datetime\. Use",
    ),
    Case(
        "datetime column: bounds",
        lambda c: one(c.pure, pd.to_datetime(["2020-01-01"]), bounds={"x": (0, 1)}),
        dp.SchemaError,
        match="bounds given for 'x', which is not numeric;",
    ),
    Case(
        "timedelta column: bounds",
        lambda c: one(c.pure, pd.to_timedelta([1, 2], unit="s"), bounds={"x": (0, 5)}),
        dp.SchemaError,
        match="bounds given for 'x', which is not numeric;",
    ),
    Case(
        "complex column: bounds",
        lambda c: one(c.pure, [1 + 2j, SENTINEL + 0j], bounds={"x": (0, 5)}),
        dp.SchemaError,
        match="bounds given for 'x', which is not numeric;",
    ),
    Case(
        "dict cells",
        lambda c: one(c.pure, [{"k": SENTINEL}, {"k": 1}]),
        dp.SchemaError,
        match="Column 'x' holds values that cannot be hashed",
    ),
    Case(
        "set cells as the privacy unit",
        lambda c: c.pure.private_frame(
            pd.DataFrame({"u": [{SENTINEL_TEXT}, {"b"}], "a": [1, 2]}),
            privacy_unit="u",
            max_rows_per_unit=1,
        ),
        dp.SchemaError,
        match="Column 'u' holds values that cannot be hashed",
    ),
    Case(
        "missing privacy unit ids: count",
        lambda c: c.pure.private_frame(
            pd.DataFrame({"u": [1.0, np.nan, np.nan, 1.0]}), privacy_unit="u", max_rows_per_unit=2
        ).count(epsilon=EXACT),
        RELEASE,
        near(4),
    ),
    # column names
    Case(
        "unicode column and key names: grouped mean",
        lambda c: (
            c.pure.private_frame(
                pd.DataFrame({"salário €": [1.0, 3.0], "région": ["é", "日本"]}),
                bounds={"salário €": (0, 5)},
                categories={"région": ["é", "ü", "日本"]},
            )
            .groupby("région")["salário €"]
            .mean(epsilon=EXACT)
        ),
        RELEASE,
        series_near({"é": 1, "ü": math.nan, "日本": 3}),
    ),
    Case(
        "duplicated column names",
        lambda c: c.pure.private_frame(pd.DataFrame([[1, 2]], columns=["a", "a"])),
        dp.SchemaError,
        match=r"Column names must be unique\.",
    ),
    Case(
        "integer column names",
        lambda c: c.pure.private_frame(pd.DataFrame({0: [SENTINEL], 1: [2.0]})),
        dp.SchemaError,
        match="Column names must be strings; rename the",
    ),
    Case(
        "MultiIndex columns",
        lambda c: c.pure.private_frame(
            pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "b"), ("a", "c")]))
        ),
        dp.SchemaError,
        match="Column names must be strings; rename the",
    ),
    # categories and key columns
    Case(
        "categories containing NaN",
        lambda c: one(c.pure, [1.0, np.nan], categories={"x": [1.0, np.nan]}),
        dp.SchemaError,
        match="categories for 'x' must not contain a missing",
    ),
    Case(
        "categories containing None",
        lambda c: one(c.pure, ["a", None], categories={"x": ["a", None]}),
        dp.SchemaError,
        match="categories for 'x' must not contain a missing",
    ),
    Case(
        "categories= a list, not a dict",
        lambda c: c.pure.private_frame(people(), categories=["region"]),  # type: ignore[arg-type]
        dp.SchemaError,
        match=r"categories= takes a dict \{column: \.\.\.\}, not a",
    ),
    Case(
        "bounds= a list of pairs, not a dict",
        lambda c: c.pure.private_frame(people(), bounds=[("wage", (0, 1))]),  # type: ignore[arg-type]
        dp.SchemaError,
        match=r"bounds= takes a dict \{column: \.\.\.\}, not a list\.",
    ),
    Case(
        "string dtype keys with NA: grouped count",
        lambda c: (
            one(
                c.pure,
                pd.array(["x", None, "x", SENTINEL_TEXT], dtype="string"),
                categories={"x": ["x", "y"]},
            )
            .groupby("x")
            .count(epsilon=EXACT)
        ),
        RELEASE,
        series_near({"x": 2, "y": 0}),
    ),
    Case(
        "categorical dtype with NaN: grouped count",
        lambda c: (
            one(c.pure, pd.Categorical(["x", None, "y", "x"]), categories={"x": ["x", "y"]})
            .groupby("x")
            .count(epsilon=EXACT)
        ),
        RELEASE,
        series_near({"x": 2, "y": 1}),
    ),
    Case(
        "mixed types in a key column: grouped count",
        lambda c: (
            one(c.pure, _mixed_keys(), categories={"x": ["x", "y"]})
            .groupby("x")
            .count(epsilon=EXACT)
        ),
        RELEASE,
        series_near({"x": 2, "y": 0}),
    ),
    Case(
        "mixed types in a key column: ordering filter",
        lambda c: (lambda p: p[p["x"] > "m"].count(epsilon=EXACT))(one(c.pure, _mixed_keys())),
        RELEASE,
        near(3),  # "x", "x" and the sentinel text; numbers and missing values compare false
    ),
    Case(
        "mixed types in a key column: private key discovery",
        lambda c: one(c.zcdp, [1, "x", None, 2.5] * 300).discover_keys("x", rho=1e6, delta=1e-6),
        RELEASE,
        lambda keys: assert_same(set(map(str, keys)), {"1", "x", "2.5"}),
    ),
    Case(
        "isin with unhashable values",
        lambda c: people_frame(c.pure)["region"].isin([["south"]]),
        dp.SchemaError,
        match=r"isin\(\) values must be numbers, strings or",
    ),
    Case(
        "isin(None)",
        lambda c: people_frame(c.pure)["region"].isin(None),
        dp.SchemaError,
        match=r"isin\(\) takes a list of public values, e\.g\.",
    ),
    Case(
        "isin('south')",
        lambda c: people_frame(c.pure)["region"].isin("south"),
        dp.SchemaError,
        match=r"isin\(\) takes a list of public values, e\.g\.",
    ),
    Case(
        "isin with numpy values",
        lambda c: (lambda p: p[p["age"].isin(np.array([42, 25]))].count(epsilon=EXACT))(
            people_frame(c.pure)
        ),
        RELEASE,
        near(2),
    ),
    Case(
        "grouping over more than MAX_CELLS key combinations",
        _many_cells,
        dp.SchemaError,
        match="This request is too large to evaluate; nothing",
    ),
    # huge and tiny bounds
    Case(
        "bounds ±1e308: sum",
        lambda c: people_frame(c.pure).with_bounds(wage=(-1e308, 1e308))["wage"].sum(epsilon=1),
        dp.SchemaError,
        match=r"The bounds \(\-1e\+308, 1e\+308\) are too wide for",
    ),
    Case(
        "bounds (0, 1e300): var",
        lambda c: people_frame(c.pure).with_bounds(wage=(0, 1e300))["wage"].var(epsilon=1),
        dp.SchemaError,
        match=r"The bounds \(0\.0, 1e\+300\) are too wide for",
    ),
    Case(
        "tiny bounds (1e-300, 2e-300): mean",
        lambda c: people_frame(c.pure).with_bounds(wage=(1e-300, 2e-300))["wage"].mean(epsilon=1),
        RELEASE,
        within(1e-300, 2e-300),
    ),
    Case(
        "subnormal upper bound 5e-324: sum",
        lambda c: people_frame(c.pure).with_bounds(wage=(0, 5e-324))["wage"].sum(epsilon=EXACT),
        RELEASE,
        within(-1e-300, 1e-300),
    ),
    Case(
        "equal bounds: var",
        lambda c: people_frame(c.pure).with_bounds(wage=(3, 3))["wage"].var(epsilon=1),
        RELEASE,
        near(0),
    ),
    Case(
        "bounds given as strings",
        lambda c: c.pure.private_frame(people(), bounds={"wage": ("0", "5")}),  # type: ignore[dict-item]
        dp.SchemaError,
        match=r"bounds for 'wage' must be a \(low, high\) pair of",
    ),
    Case(
        "bounds with None",
        lambda c: c.pure.private_frame(people(), bounds={"wage": (None, 5)}),  # type: ignore[dict-item]
        dp.SchemaError,
        match=r"bounds for 'wage' must be a \(low, high\) pair of",
    ),
    Case(
        "bounds as numpy scalars: sum",
        lambda c: c.pure.private_frame(people(), bounds={"wage": (np.float32(0), np.int64(25))})[
            "wage"
        ].sum(epsilon=EXACT),
        RELEASE,
        near(25 + 10 + 20 + 25),
    ),
    Case(
        "clip(nan, 1)",
        lambda c: people_frame(c.pure)["wage"].clip(np.nan, 1),
        dp.SchemaError,
        match=r"bounds for 'wage' must be finite numbers\.",
    ),
]


def assert_same(left: object, right: object) -> None:
    assert left == right, (left, right)
