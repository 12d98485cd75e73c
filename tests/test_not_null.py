"""Columns declared not null (issue 30 item 7): ``dtypes={"age": "integer not null"}``.

A missing value in such a column is read as a public fill, row by row; the
declaration survives renames, filters, ``with_bounds`` and a join side every
row matches, and is cleared by any derived column and by the side of a join
whose unmatched rows are filled with missing values.  ``describe()`` shows one
row count in every not-null column: the inverse-variance average of their
variance releases' counts, with the exact interval of that weighted sum.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.backends.declared import DeclaredKind, apply_declared_kinds, parse_kind, with_fills
from dpframe.examples.datasets import load_cps1988
from dpframe.mechanisms.calibration.noise_sums import half_width
from dpframe.plan.releases import Describe

NOT_NULL = {
    "wage": "numeric not null",
    "education": "integer NOT NULL",
    "experience": "integer  not  null",
}
BOUNDS = {"wage": (0.0, 5000.0), "education": (0.0, 20.0), "experience": (-8.0, 64.0)}


def _frame(epsilon: float = 100.0, dtypes: dict[str, str] | None = None) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:")
    return session.private_frame(load_cps1988(), bounds=BOUNDS, dtypes=dtypes or NOT_NULL)


def test_not_null_is_a_suffix_of_any_kind() -> None:
    assert parse_kind("a", "integer not null") == DeclaredKind("integer", not_null=True)
    assert parse_kind("a", "Text(40) NOT NULL".replace("Text", "text")) == DeclaredKind(
        "text", 40, not_null=True
    )
    assert parse_kind("a", "float64") == DeclaredKind("numeric")
    with pytest.raises(dp.DPError, match=r"optionally followed by ' not null'"):
        parse_kind("a", "integer not nul")
    with pytest.raises(dp.DPError, match=r"optionally followed by ' not null'"):
        parse_kind("a", "not null")


def test_a_missing_value_is_read_as_the_public_fill() -> None:
    df = pd.DataFrame(
        {
            "x": [1.0, np.nan, 3.0],
            "n": pd.array([4, None, 6], dtype="Int64"),
            "u": [1.0, None, 2.0],
            "t": ["a", None, "b"],
            "b": [True, None, False],
            "d": ["2020-01-31", "not a date", None],
        }
    )
    kinds = {
        "x": parse_kind("x", "numeric not null"),
        "n": parse_kind("n", "integer not null"),
        "u": parse_kind("u", "numeric not null"),
        "t": parse_kind("t", "text not null"),
        "b": parse_kind("b", "boolean not null"),
        "d": parse_kind("d", "datetime not null"),
    }
    dates = (pd.Timestamp("2000-01-01"), pd.Timestamp("2030-12-31"))
    filled = with_fills(kinds, {"x": (0, 10), "n": (0, 9), "d": dates})
    read = apply_declared_kinds(df, filled)
    assert read["x"].tolist() == [1.0, 5.0, 3.0]  # the bounds' midpoint
    assert read["n"].tolist() == [4.0, 4.0, 6.0]  # rounded down for an integer column
    assert read["u"].tolist() == [1.0, 0.0, 2.0]  # no bounds: 0
    assert read["t"].tolist() == ["a", "", "b"]
    assert read["b"].tolist() == [True, False, False]
    assert read["d"].tolist() == [pd.Timestamp("2020-01-31"), dates[0], dates[0]]
    assert not read.isna().any().any()
    assert df["x"].isna().sum() == 1  # the analyst's frame is not modified
    with pytest.raises(dp.DPError, match=r"declares dates not null: give the column date bounds"):
        with_fills({"d": kinds["d"]}, {})


def test_a_not_null_column_without_missing_values_is_not_copied() -> None:
    df = pd.DataFrame({"x": [1.0, 2.0], "y": [3.0, 4.0]})
    read = apply_declared_kinds(df, with_fills({"x": parse_kind("x", "numeric not null")}, {}))
    assert np.shares_memory(read["x"].to_numpy(), df["x"].to_numpy())


def test_releases_read_the_fill() -> None:
    df = pd.DataFrame({"x": [1.0, np.nan, 3.0, np.nan]})
    session = dp.Session(epsilon=10**6, ledger=":memory:")
    pf = session.private_frame(df, bounds={"x": (0, 10)}, dtypes={"x": "numeric not null"})
    assert abs(float(pf["x"].sum(epsilon=10**5)) - 14.0) < 0.01  # 1 + 5 + 3 + 5
    assert abs(float(pf["x"].count(epsilon=10**5)) - 4.0) < 0.01  # a value in every row


def test_the_schema_shows_the_declaration_and_derived_columns_drop_it() -> None:
    pf = _frame()
    table = pf.schema
    assert table.loc["education", "not_null"] and not table.loc["region", "not_null"]
    handle = pf._handle
    kept = handle.schema.get("wage")
    assert kept.not_null
    filtered = pf[pf["education"] >= 12]
    assert filtered._handle.schema.get("wage").not_null  # a filter drops rows, not values
    assert pf.rename(columns={"wage": "w"})._handle.schema.get("w").not_null
    assert pf.with_bounds(wage=(0, 2000))._handle.schema.get("wage").not_null
    derived = pf.assign(w=pf["wage"] * 2, f=pf["wage"].fillna(0))
    assert not derived._handle.schema.get("w").not_null  # may be missing (e.g. 0/0)
    assert not derived._handle.schema.get("f").not_null


def test_describe_shows_one_row_count_in_every_not_null_column() -> None:
    pf = _frame()
    table = pf.describe(epsilon=1)
    counts = table.loc["count"].to_numpy(dtype=float)
    assert counts[0] == counts[1] == counts[2]
    meta = table.attrs["dpframe"].intervals
    shared = meta.row_count
    assert shared is not None and shared.columns == (0, 1, 2)
    np.testing.assert_allclose(shared.weights, [1 / 3] * 3)  # equal shares: equal noises
    intervals = dp.ci(table)
    half = half_width(np.array(shared.weights), shared.noises, 0.05)
    for column in table.columns:
        low = intervals.loc["count", (column, "low")]
        high = intervals.loc["count", (column, "high")]
        assert low == pytest.approx(counts[0] - half) and high == pytest.approx(counts[0] + half)
    alone = _frame(dtypes={"education": "integer"}).describe(epsilon=1)
    single = dp.ci(alone).loc["count", ("wage", "high")] - alone["wage"].to_numpy(dtype=float)[0]
    assert half < single / 1.6  # three estimates: about 1/√3 of one's half-width
    assert "count" in str(table) and table["wage"].array.whole[0]


def test_describe_of_a_frame_with_a_derived_column_combines_only_the_declared_ones() -> None:
    pf = _frame()
    table = pf.assign(e2=pf["education"] * 2).describe(epsilon=1)
    counts = table.loc["count"]
    assert counts["wage"] == counts["education"] == counts["experience"]
    # the derived column's count is its own release: another interval (its value may
    # equal the shared one by chance, about 1 run in 60, so the values are not compared)
    ends = dp.ci(table)
    shared, derived = (
        (ends.loc["count", (c, "low")], ends.loc["count", (c, "high")]) for c in ("wage", "e2")
    )
    assert shared != derived


def test_a_node_claiming_an_undeclared_not_null_column_is_refused_before_the_charge() -> None:
    session = dp.Session(epsilon=10, ledger=":memory:")
    pf = session.private_frame(load_cps1988(), bounds=BOUNDS, dtypes={"education": "integer"})
    node = session.capture_node(lambda: pf.describe(epsilon=1))
    assert isinstance(node, Describe) and node.not_null == ()
    with pytest.raises(dp.DPError, match=r"'wage' is not declared not null"):
        session.run(replace(node, not_null=("wage",)))
    assert len(session.ledger) == 0


@pytest.mark.fresh_releases  # repeats one request to sample its noise: new releases
@pytest.mark.filterwarnings("ignore:Too thin to read")
def test_the_row_count_interval_covers_the_rows() -> None:
    """200 describes at ε = 0.3 of 60 rows: the 95% interval of the shared count covers 60.

    At most 27 misses of 200 at coverage 0.95 (P(28 or more) = 9.6e-7); an interval of
    a third of the width (one count's noise divided by k) covers about 45% and fails.
    """
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"a": rng.uniform(0, 10, 60), "b": rng.integers(0, 10, 60)})
    session = dp.Session(epsilon=10**4, ledger=":memory:")
    pf = session.private_frame(
        df,
        bounds={"a": (0, 10), "b": (0, 9)},
        dtypes={"a": "numeric not null", "b": "integer not null"},
    )
    misses = 0
    for _ in range(200):
        table = pf.describe(epsilon=0.3, fresh=True)
        ends = dp.ci(table)
        misses += not (ends.loc["count", ("a", "low")] <= 60 <= ends.loc["count", ("a", "high")])
    assert misses <= 27, misses
