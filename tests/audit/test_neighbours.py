"""The adversarial neighbour generator: every pair is the base plus the unit it promises."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dpframe as dp

BOUNDS = {"x": (-2.0, 8.0), "y": (0.0, 1.0)}
CATEGORIES = {"g": ["a", "b"]}


@pytest.fixture
def df() -> pd.DataFrame:
    frame: pd.DataFrame = pd.DataFrame(
        {"x": [1.0, 2.0, 3.0], "y": [0.5, 0.5, 0.5], "g": ["a", "b", "a"], "pid": [7, 7, 9]}
    )
    return frame


def test_single_row_pairs(df: pd.DataFrame) -> None:
    pairs = {p.name: p for p in dp.audit.neighbours(df, bounds=BOUNDS, categories=CATEGORIES)}
    assert list(pairs) == [
        "high_bound",
        "low_bound",
        "above_bounds",
        "below_bounds",
        "nan",
        "+inf",
        "-inf",
        "new_key",
    ]
    for pair in pairs.values():
        assert pair.base is df
        assert len(pair.neighbour) == len(df) + 1
        pd.testing.assert_frame_equal(pair.neighbour.iloc[:3], df, check_dtype=False)
    added = {name: p.neighbour.iloc[-1] for name, p in pairs.items()}
    assert (added["high_bound"]["x"], added["high_bound"]["y"]) == (8.0, 1.0)
    assert (added["low_bound"]["x"], added["low_bound"]["y"]) == (-2.0, 0.0)
    assert added["above_bounds"]["x"] == 8.0 + 1000 * 10.0
    assert added["below_bounds"]["y"] == 0.0 - 1000 * 1.0
    assert math.isnan(added["nan"]["x"]) and math.isnan(added["nan"]["y"])
    assert added["+inf"]["x"] == np.inf and added["-inf"]["y"] == -np.inf
    assert added["new_key"]["g"] not in CATEGORIES["g"] and added["new_key"]["x"] == 8.0
    assert added["high_bound"]["g"] == "a"  # the first declared key


def test_unit_pairs_add_a_new_person(df: pd.DataFrame) -> None:
    pairs = {
        p.name: p
        for p in dp.audit.neighbours(df, bounds=BOUNDS, privacy_unit="pid", max_rows_per_unit=2)
    }
    at, over = pairs["unit_at_limit"].neighbour, pairs["unit_over_limit"].neighbour
    assert len(at) == len(df) + 2 and len(over) == len(df) + 6
    new_ids = set(over["pid"].iloc[3:])
    assert len(new_ids) == 1 and new_ids.isdisjoint(set(df["pid"]))
    assert pairs["nan"].neighbour["pid"].iloc[-1] not in set(df["pid"])


def test_flip_row_satisfies_exactly_one_condition(df: pd.DataFrame) -> None:
    conditions = [dp.col("x") > 5, dp.col("g") == "b"]
    pair = next(
        p
        for p in dp.audit.neighbours(df, bounds=BOUNDS, categories=CATEGORIES, queries=conditions)
        if p.name == "flips_query"
    )
    row = pair.neighbour.iloc[-1]
    assert [row["x"] > 5, row["g"] == "b"].count(True) == 1
    assert row["g"] == "b"  # the later condition is preferred
    with pytest.raises(dp.SchemaError, match="satisfies exactly one of the conditions"):
        dp.audit.neighbours(df, bounds=BOUNDS, queries=[dp.col("x") > 100])


def test_bad_input_is_a_dperror(df: pd.DataFrame) -> None:
    with pytest.raises(dp.SchemaError, match="'missing' is not a column"):
        dp.audit.neighbours(df, bounds={"missing": (0, 1)})
    with pytest.raises(dp.SchemaError, match="needs a non-empty pandas DataFrame"):
        dp.audit.neighbours(df.iloc[:0], bounds=BOUNDS)
