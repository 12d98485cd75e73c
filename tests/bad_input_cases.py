"""The malformed inputs of ``test_bad_input_matrix.py``: one :class:`Case` per input.

Each case names its input, runs it against the sessions of a :class:`Ctx`, and
states the expected outcome: a ``DPError`` subclass, or ``RELEASE`` with a
check of the released value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from dpframe.mechanisms.aggregates import MAX_CELLS

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


CASES: list[Case] = [
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
    ),
    Case(
        "datetime column: bounds",
        lambda c: one(c.pure, pd.to_datetime(["2020-01-01"]), bounds={"x": (0, 1)}),
        dp.SchemaError,
    ),
    Case(
        "timedelta column: bounds",
        lambda c: one(c.pure, pd.to_timedelta([1, 2], unit="s"), bounds={"x": (0, 5)}),
        dp.SchemaError,
    ),
    Case(
        "complex column: bounds",
        lambda c: one(c.pure, [1 + 2j, SENTINEL + 0j], bounds={"x": (0, 5)}),
        dp.SchemaError,
    ),
    Case("dict cells", lambda c: one(c.pure, [{"k": SENTINEL}, {"k": 1}]), dp.SchemaError),
    Case(
        "set cells as the privacy unit",
        lambda c: c.pure.private_frame(
            pd.DataFrame({"u": [{SENTINEL_TEXT}, {"b"}], "a": [1, 2]}),
            privacy_unit="u",
            max_rows_per_unit=1,
        ),
        dp.SchemaError,
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
        series_near({"é": 1, "ü": 2.5, "日本": 3}, tolerance={"ü": 2.5}),
    ),
    Case(
        "duplicated column names",
        lambda c: c.pure.private_frame(pd.DataFrame([[1, 2]], columns=["a", "a"])),
        dp.SchemaError,
    ),
    Case(
        "integer column names",
        lambda c: c.pure.private_frame(pd.DataFrame({0: [SENTINEL], 1: [2.0]})),
        dp.SchemaError,
    ),
    Case(
        "MultiIndex columns",
        lambda c: c.pure.private_frame(
            pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "b"), ("a", "c")]))
        ),
        dp.SchemaError,
    ),
    # categories and key columns
    Case(
        "categories containing NaN",
        lambda c: one(c.pure, [1.0, np.nan], categories={"x": [1.0, np.nan]}),
        dp.SchemaError,
    ),
    Case(
        "categories containing None",
        lambda c: one(c.pure, ["a", None], categories={"x": ["a", None]}),
        dp.SchemaError,
    ),
    Case(
        "categories= a list, not a dict",
        lambda c: c.pure.private_frame(people(), categories=["region"]),  # type: ignore[arg-type]
        dp.SchemaError,
    ),
    Case(
        "bounds= a list of pairs, not a dict",
        lambda c: c.pure.private_frame(people(), bounds=[("wage", (0, 1))]),  # type: ignore[arg-type]
        dp.SchemaError,
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
    ),
    Case("isin(None)", lambda c: people_frame(c.pure)["region"].isin(None), dp.SchemaError),
    Case("isin('south')", lambda c: people_frame(c.pure)["region"].isin("south"), dp.SchemaError),
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
    ),
    # huge and tiny bounds
    Case(
        "bounds ±1e308: sum",
        lambda c: people_frame(c.pure).with_bounds(wage=(-1e308, 1e308))["wage"].sum(epsilon=1),
        dp.SchemaError,
    ),
    Case(
        "bounds (0, 1e300): var",
        lambda c: people_frame(c.pure).with_bounds(wage=(0, 1e300))["wage"].var(epsilon=1),
        dp.SchemaError,
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
    ),
    Case(
        "bounds with None",
        lambda c: c.pure.private_frame(people(), bounds={"wage": (None, 5)}),  # type: ignore[dict-item]
        dp.SchemaError,
    ),
    Case(
        "bounds as numpy scalars: sum",
        lambda c: c.pure.private_frame(people(), bounds={"wage": (np.float32(0), np.int64(25))})[
            "wage"
        ].sum(epsilon=EXACT),
        RELEASE,
        near(25 + 10 + 20 + 25),
    ),
    Case("clip(nan, 1)", lambda c: people_frame(c.pure)["wage"].clip(np.nan, 1), dp.SchemaError),
    # privacy parameters
    Case(
        "epsilon 1e-12: count",
        lambda c: people_frame(c.pure).count(epsilon=1e-12),
        RELEASE,
        noisy(1e11),
    ),
    Case(
        "epsilon 1e-12: sum",
        lambda c: people_frame(c.pure)["wage"].sum(epsilon=1e-12),
        RELEASE,
        noisy(1e13),
    ),
    Case(
        "epsilon 1e-12: quantile",
        lambda c: people_frame(c.pure)["wage"].quantile(0.5, epsilon=1e-12),
        RELEASE,
        within(0, 100),
    ),
    Case(
        "epsilon 1e12 (the whole budget): mean",
        lambda c: people_frame(c.pure)["wage"].mean(epsilon=1e12),
        RELEASE,
        near((100 + 10 + 20 + 30) / 4),
    ),
    Case(
        "epsilon 2e12 (over the budget)",
        lambda c: people_frame(c.pure).count(epsilon=2e12),
        dp.BudgetExceededError,
    ),
    Case(
        "epsilon 10**400",
        lambda c: people_frame(c.pure).count(epsilon=10**400),
        dp.BudgetExceededError,
    ),
    Case(
        "epsilon a numpy array",
        lambda c: people_frame(c.pure).count(epsilon=np.array([0.5])),  # type: ignore[arg-type]
        dp.InvalidBudgetError,
    ),
    Case(
        "epsilon True",
        lambda c: people_frame(c.pure).count(epsilon=True),
        dp.InvalidBudgetError,
    ),
    Case(
        "epsilon Decimal('NaN')",
        lambda c: people_frame(c.pure).count(epsilon=Decimal("NaN")),
        dp.InvalidBudgetError,
    ),
    Case(
        "epsilon pd.NA",
        lambda c: people_frame(c.pure).count(epsilon=pd.NA),  # type: ignore[arg-type]
        dp.InvalidBudgetError,
    ),
    Case(
        "epsilon complex",
        lambda c: people_frame(c.pure).count(epsilon=1j),  # type: ignore[arg-type]
        dp.InvalidBudgetError,
    ),
    Case(
        "epsilon '1/0'",
        lambda c: people_frame(c.pure).count(epsilon="1/0"),
        dp.InvalidBudgetError,
    ),
    Case(
        "epsilon numpy float64: count",
        lambda c: people_frame(c.pure).count(epsilon=np.float64(EXACT)),
        RELEASE,
        near(5),
    ),
    Case(
        "rho NaN (zCDP session)",
        lambda c: people_frame(c.zcdp).count(rho=float("nan")),
        dp.InvalidBudgetError,
    ),
    Case(
        "delta inf (zCDP session)",
        lambda c: people_frame(c.zcdp).count(rho=0.1, delta=float("inf")),
        dp.InvalidBudgetError,
    ),
    Case(
        "session epsilon inf",
        lambda c: dp.Session(epsilon=float("inf"), ledger=c.tmp / "inf.sqlite"),
        dp.InvalidBudgetError,
    ),
    Case(
        "quantile q=NaN",
        lambda c: people_frame(c.pure)["wage"].quantile(np.nan, epsilon=1),
        dp.SchemaError,
    ),
    Case(
        "quantile q=None",
        lambda c: people_frame(c.pure)["wage"].quantile(None, epsilon=1),
        dp.SchemaError,
    ),
    Case(
        "hist with 10**9 bins",
        lambda c: people_frame(c.pure)["wage"].hist(10**9, epsilon=1),
        dp.SchemaError,
    ),
    Case(
        "hist edges with NaN",
        lambda c: people_frame(c.pure)["wage"].hist([0, np.nan, 5], epsilon=1),
        dp.SchemaError,
    ),
    Case(
        "above_threshold with a NaN threshold",
        lambda c: (lambda p: p.above_threshold([p["wage"] > 1], np.nan, epsilon=1))(
            people_frame(c.pure)
        ),
        dp.SchemaError,
    ),
    # zero rows
    Case(
        "filter to zero rows: mean",
        lambda c: (lambda p: p[p["wage"] > 1e12]["wage"].mean(epsilon=EXACT))(people_frame(c.pure)),
        RELEASE,
        within(0, 100),
    ),
    Case(
        "filter to zero rows: var",
        lambda c: (lambda p: p[p["wage"] > 1e12]["wage"].var(epsilon=EXACT))(people_frame(c.pure)),
        RELEASE,
        within(0, 50**2),
    ),
    Case(
        "filter to zero rows: quantile",
        lambda c: (lambda p: p[p["age"] < 0]["age"].quantile(0.5, epsilon=EXACT))(
            people_frame(c.pure)
        ),
        RELEASE,
        within(0, 100),
    ),
    Case(
        "filter to zero rows: grouped count",
        lambda c: (lambda p: p[p["age"] < 0].groupby("region").count(epsilon=EXACT))(
            people_frame(c.pure)
        ),
        RELEASE,
        series_near({"south": 0, "west": 0}),
    ),
    Case(
        "zero columns selected: count",
        lambda c: people_frame(c.pure)[[]].count(epsilon=EXACT),
        RELEASE,
        near(5),
    ),
    # expressions mixing frames from two sessions
    Case(
        "arithmetic across two sessions' frames (other data)",
        across(lambda a, b: a["wage"] + b["wage"]),
        dp.SchemaError,
    ),
    Case(
        "filter by another session's condition (other data)",
        across(lambda a, b: a[b["wage"] > 1]),
        dp.SchemaError,
    ),
    Case(
        "assign a column of another session's frame (other data)",
        across(lambda a, b: a.assign(w=b["wage"])),
        dp.SchemaError,
    ),
    Case(
        "above_threshold with another session's condition (other data)",
        across(lambda a, b: a.above_threshold([b["wage"] > 1], 1, epsilon=1)),
        dp.SchemaError,
    ),
    Case(
        "groupby by another session's series",
        across(lambda a, b: a.groupby(b["region"])),
        dp.SchemaError,
    ),
    Case(
        "filter by another session's condition (same data): charged here only",
        lambda c: (lambda a, b: a[b["wage"] > 15].count(epsilon=EXACT))(
            people_frame(c.pure), people_frame(c.other)
        ),
        RELEASE,
        near(3),
    ),
    # files and ledgers
    Case(
        "read_csv with an unknown keyword",
        lambda c: c.pure.read_csv(_write(c, "a.csv", b"x\n1\n"), nonsense=1),
        dp.InvalidArgumentError,
    ),
    Case(
        "read_csv of random bytes",
        lambda c: c.pure.read_csv(_write(c, "r.csv", bytes(range(256)) * 4)),
        dp.SchemaError,
    ),
    Case(
        "read_parquet of a CSV file",
        lambda c: c.pure.read_parquet(_write(c, "a.parquet", b"x\n1\n")),
        dp.SchemaError,
    ),
    Case("ledger path is a folder", lambda c: dp.Session(epsilon=1, ledger=c.tmp), dp.LedgerError),
    Case(
        "ledger= an int",
        lambda c: dp.Session(epsilon=1, ledger=5),  # type: ignore[arg-type]
        dp.LedgerError,
    ),
    Case("pf[0:2]", lambda c: people_frame(c.pure)[0:2], dp.SchemaError),
]


def assert_same(left: object, right: object) -> None:
    assert left == right, (left, right)
