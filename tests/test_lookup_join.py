"""The lookup join gives pandas' merge, row for row and dtype for dtype, or declines."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.backends.lookup_join import lookup_merge


def _right(ids: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    n = len(ids)
    frame: pd.DataFrame = pd.DataFrame(
        {
            "pid": ids,
            "region": pd.Categorical(rng.choice(["n", "s", "e"], n), categories=["e", "n", "s"]),
            "age": rng.integers(0, 90, n),
            "score": rng.normal(size=n),
            "member": rng.random(n) < 0.5,
            "name": pd.array([f"p{i}" for i in range(n)], dtype="str"),
            "born": pd.to_datetime(rng.integers(0, 10**9, n), unit="s"),
            "kids": pd.array(rng.integers(0, 4, n), dtype="Int64"),
        }
    )
    return frame


def _left(ids: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    frame: pd.DataFrame = pd.DataFrame(
        {"pid": ids, "cost": rng.uniform(0, 9, len(ids)), "n": np.arange(len(ids))}
    )
    return frame


def _filled(right: pd.DataFrame) -> pd.DataFrame:
    """As the join's ``fillable`` makes a left join's right side (numpy ints and bools widened)."""
    filled: pd.DataFrame = right.astype({"age": "float64", "member": "boolean"})
    return filled


@settings(max_examples=60, deadline=None)
@given(
    people=st.integers(1, 60),
    visits=st.integers(0, 200),
    shift=st.integers(-50, 50),
    gap=st.integers(1, 3),
    outside=st.integers(0, 20),
    seed=st.integers(0, 2**32 - 1),
    how=st.sampled_from(["inner", "left"]),
)
def test_the_lookup_join_is_pandas_merge(
    people: int,
    visits: int,
    shift: int,
    gap: int,
    outside: int,
    seed: int,
    how: Literal["inner", "left"],
) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(people) * gap + shift
    right = _right(ids.astype(np.int64), rng)
    if how == "left":
        right = _filled(right)
    pool = np.concatenate([ids, rng.integers(shift - 100, shift + 100 + people * gap, outside)])
    left = _left(rng.choice(pool, visits).astype(np.int64), rng)
    quick = lookup_merge(left, right, "pid", how)
    assert quick is not None
    pd.testing.assert_frame_equal(quick, left.merge(right, how=how, on="pid", sort=False))


def test_every_left_row_matched_keeps_the_left_columns() -> None:
    rng = np.random.default_rng(3)
    right = _right(np.arange(1000, dtype=np.int64), rng)
    left = _left(rng.integers(0, 1000, 5000), rng)
    quick = lookup_merge(left, right, "pid", "inner")
    assert quick is not None
    pd.testing.assert_frame_equal(quick, left.merge(right, on="pid", sort=False))
    if int(pd.__version__.split(".")[0]) >= 3:  # copy-on-write: the same memory, not a copy
        assert np.shares_memory(quick["cost"].to_numpy(), left["cost"].to_numpy())


@pytest.mark.parametrize(
    ("right_ids", "left_ids", "how", "why"),
    [
        ([1, 2, 2], [1, 2], "inner", "a repeated right key"),
        ([0, 10**9], [0], "inner", "a range far wider than the rows"),
        ([1, 2], [1, 2], "outer", "an outer join"),
        ([1, 2], [1, 2], "right", "a right join"),
        ([1.0, 2.0], [1.0, 2.0], "inner", "float keys"),
        (["a", "b"], ["a", "b"], "inner", "text keys"),
    ],
)
def test_other_joins_are_left_to_pandas(
    right_ids: list[object], left_ids: list[object], how: str, why: str
) -> None:
    right = pd.DataFrame({"pid": right_ids, "x": range(len(right_ids))})
    left = pd.DataFrame({"pid": left_ids, "y": range(len(left_ids))})
    assert lookup_merge(left, right, "pid", how) is None, why


def test_keys_of_different_integer_dtypes_are_left_to_pandas() -> None:
    right = pd.DataFrame({"pid": np.array([1, 2], dtype=np.int32), "x": [1, 2]})
    left = pd.DataFrame({"pid": np.array([1, 2], dtype=np.int64), "y": [1, 2]})
    assert lookup_merge(left, right, "pid", "inner") is None


def test_an_empty_right_side_is_left_to_pandas() -> None:
    right = pd.DataFrame({"pid": np.array([], dtype=np.int64), "x": []})
    left = pd.DataFrame({"pid": np.array([1], dtype=np.int64), "y": [1]})
    assert lookup_merge(left, right, "pid", "inner") is None


def test_unsigned_keys_and_unmatched_left_rows() -> None:
    right = pd.DataFrame({"pid": np.array([5, 6, 7], dtype=np.uint32), "x": [1.0, 2.0, 3.0]})
    left = pd.DataFrame({"pid": np.array([7, 4, 5, 9, 7], dtype=np.uint32), "y": range(5)})
    hows: tuple[Literal["inner", "left"], ...] = ("inner", "left")
    for how in hows:
        quick = lookup_merge(left, right, "pid", how)
        assert quick is not None
        pd.testing.assert_frame_equal(quick, left.merge(right, how=how, on="pid", sort=False))


def test_narrow_keys_spanning_more_than_their_dtype_shift_without_wrapping() -> None:
    right = pd.DataFrame({"pid": np.array([-100, 0, 100], dtype=np.int8), "x": [1.0, 2.0, 3.0]})
    left = pd.DataFrame({"pid": np.array([100, -100, 50, 100], dtype=np.int8), "y": range(4)})
    hows: tuple[Literal["inner", "left"], ...] = ("inner", "left")
    for how in hows:
        quick = lookup_merge(left, right, "pid", how)
        assert quick is not None
        pd.testing.assert_frame_equal(quick, left.merge(right, how=how, on="pid", sort=False))
