"""Keyed identities and row sketches of data (issue 27 part 3, issue 35 item 2).

What a row hash normalizes is pinned here (row order, column names and order,
the storage of a value), and so is what it does not (any changed value); the
sketch's share of rows in common for near copies; the unkeyed fingerprint it
computes in the same pass is the pandas backend's, bit for bit; no tag count
or digest depends on the row count; and the pass stays chunked (memory).
"""

from __future__ import annotations

import secrets
import tracemalloc
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.backends.cell_hashes import ColumnHasher
from dpframe.backends.column_digests import column_digests
from dpframe.backends.data_sketch import (
    SKETCH_SIZE,
    FrameSketch,
    SketchKey,
    merge_partials,
    partial_sketch,
    shared,
    sketch_frame,
)
from dpframe.backends.pandas_backend import PandasBackend

KEY = SketchKey(bytes(range(32)))


def _common(a: FrameSketch, b: FrameSketch) -> float:
    return shared(len(set(a.rows) & set(b.rows)), b.entries)


def _cells(values: pd.Series) -> list[int]:
    cells: list[int] = ColumnHasher("x", values).block(0, len(values)).tolist()
    return cells


def _every_dtype() -> pd.DataFrame:
    stamps: list[Any] = ["2020-01-01 00:00", None, "2021-05-05 10:00", "2022-01-01 00:00"]
    dates = pd.to_datetime(stamps * 3)
    frame: pd.DataFrame = pd.DataFrame(
        {
            "float": [1.0, 2.5, None, -0.0] * 3,
            "int": [1, -2, 3, 4] * 3,
            "int8": np.array([1, -2, 3, 4] * 3, dtype="int8"),
            "uint8": np.array([1, 2, 3, 4] * 3, dtype="uint8"),
            "float32": np.array([1.5, 2, 3, 4] * 3, dtype="float32"),
            "bool": [True, False] * 6,
            "Int64": pd.array([1, None, 3, 4] * 3, dtype="Int64"),
            "Float64": pd.array([1.5, None, 3, 4] * 3, dtype="Float64"),
            "boolean": pd.array([True, None, False, True] * 3, dtype="boolean"),
            "str": pd.Series(["a", None, "b", "c"] * 3, dtype="str"),
            "object": pd.Series(["a", None, 1, "c"] * 3, dtype=object),
            "text category": pd.Series(["x", None, "z", "x"] * 3, dtype="category"),
            "number category": pd.Series([1.5, 2, None, 4] * 3, dtype="category"),
            "dates": dates,
            "seconds": dates.astype("datetime64[s]"),
            "utc": dates.tz_localize("UTC"),
            "durations": pd.to_timedelta([1, 2, None, 4] * 3, unit="s"),
            "complex": [1 + 2j, 3, 4, 5] * 3,
        }
    )
    return frame


# -- the fingerprint, in the same pass --------------------------------------------------------


@pytest.mark.parametrize("block_rows", [1, 5, 1 << 16])
def test_the_pass_computes_the_pandas_backends_fingerprint_bit_for_bit(
    cps: pd.DataFrame, block_rows: int
) -> None:
    for frame in (_every_dtype(), cps.iloc[:3000], cps.iloc[:3000].astype({"region": "category"})):
        sketch = sketch_frame(frame, KEY, block_rows=block_rows)
        assert sketch.fingerprint == PandasBackend(frame).fingerprint()
        assert sketch.identity == KEY.identity(sketch.fingerprint)


def test_the_identity_is_exact_and_keyed(cps: pd.DataFrame) -> None:
    base = sketch_frame(cps, KEY)
    assert sketch_frame(cps.copy(), KEY).identity == base.identity
    changed = cps.copy()
    changed.iloc[5, 0] += 0.01
    assert sketch_frame(changed, KEY).identity != base.identity
    assert sketch_frame(cps.iloc[::-1], KEY).identity != base.identity  # row order counts
    other_key = SketchKey(bytes(32))
    assert sketch_frame(cps, other_key).identity != base.identity
    assert sketch_frame(cps, other_key).rows != base.rows


def test_unhashable_cells_are_refused_with_the_column_name() -> None:
    frame = pd.DataFrame({"ok": [1, 2], "bad": [[1], [2]]})
    with pytest.raises(dp.SchemaError, match="Column 'bad' holds values that cannot be hashed"):
        sketch_frame(frame, KEY)


# -- what a cell hash normalizes ---------------------------------------------------------------


def test_numbers_agree_whatever_their_storage() -> None:
    ints = pd.Series([1, 2, 3, -4])
    same: list[pd.Series] = [
        ints.astype(float),
        ints.astype("Int64"),
        ints.astype("int8"),
        ints.astype("category"),
        ints.astype(float).astype("category"),
    ]
    assert all(_cells(other) == _cells(ints) for other in same)
    assert _cells(pd.Series([True, False])) == _cells(pd.Series([1, 0]))
    assert _cells(pd.Series([True, None], dtype="boolean")) == _cells(pd.Series([1.0, np.nan]))
    assert _cells(pd.Series([-0.0, np.nan])) == _cells(pd.Series([0.0, None], dtype="Float64"))
    # an integer is not the float whose bits it shares, and 2**53 + 1 is not 2**53
    assert _cells(pd.Series([0.5])) != _cells(pd.Series([4602678819172646912]))
    assert _cells(pd.Series([2**53 + 1])) != _cells(pd.Series([float(2**53)]))


def test_dates_texts_and_kinds() -> None:
    when: list[Any] = ["2020-01-01 10:00", None]
    stamps = pd.Series(pd.to_datetime(when))
    others: list[pd.Series] = [
        stamps.dt.tz_localize("UTC"),
        stamps.dt.tz_localize("UTC").dt.tz_convert("Europe/Paris"),
        stamps.astype("datetime64[s]"),
        stamps.astype("category"),
    ]
    assert all(_cells(other) == _cells(stamps) for other in others)
    text = pd.Series(["a", None, "b"])
    texts: list[pd.Series] = [
        text.astype(object),
        text.astype("category"),
        text.astype("string[python]"),
    ]
    assert all(_cells(other) == _cells(text) for other in texts)
    ones = sketch_frame(pd.DataFrame({"x": [1, 2]}), KEY)
    assert (
        ones.columns["x"].digest
        != sketch_frame(pd.DataFrame({"x": ["1", "2"]}), KEY).columns["x"].digest
    )
    nanos = pd.DataFrame({"x": pd.to_datetime([1, 2], unit="ns")})
    assert sketch_frame(nanos, KEY).rows != sketch_frame(pd.DataFrame({"x": [1, 2]}), KEY).rows


def test_rows_ignore_order_names_column_order_and_storage(cps: pd.DataFrame) -> None:
    base = sketch_frame(cps, KEY)
    shuffled = cps.sample(frac=1.0, random_state=5).reset_index(drop=True)
    other = shuffled.astype({"education": float, "region": "category", "parttime": "object"})
    other = other.rename(columns=str.upper)[list(reversed(other.columns.str.upper()))]
    copy = sketch_frame(other, KEY)
    assert copy.rows == base.rows
    assert {k.lower(): v.digest for k, v in copy.columns.items()} == {
        k: v.digest for k, v in base.columns.items()
    }


def test_one_changed_value_changes_its_row_and_column(cps: pd.DataFrame) -> None:
    changed = cps.copy()
    changed.loc[changed.index[17], "wage"] += 0.01
    a, b = sketch_frame(cps, KEY), sketch_frame(changed, KEY)
    assert a.columns["wage"].digest != b.columns["wage"].digest
    assert a.columns["region"].digest == b.columns["region"].digest
    dropped = sketch_frame(cps.iloc[1:], KEY)
    assert dropped.columns["region"].digest != a.columns["region"].digest  # one person fewer


def test_zeros_and_false_still_count() -> None:
    """pandas hashes 0, 0.0 and False to 0: the kind's offset makes each of them count."""

    def digest(values: list[object]) -> str:
        return sketch_frame(pd.DataFrame({"x": values}), KEY).columns["x"].digest

    assert digest([True, False]) != digest([True]) != digest([True, False, False])
    assert digest([0.0] * 3) != digest([0.0] * 4)
    assert (
        sketch_frame(pd.DataFrame({"a": [0], "b": [7]}), KEY).rows[:1]
        != (sketch_frame(pd.DataFrame({"b": [7]}), KEY).rows[:1])
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.one_of(st.integers(-(2**40), 2**40), st.none()), min_size=1, max_size=40),
    st.randoms(use_true_random=False),
)
def test_a_permutation_has_the_same_sketch(values: list[int | None], rng: object) -> None:
    series = pd.Series(values, dtype="float64")
    permuted = list(values)
    rng.shuffle(permuted)  # type: ignore[attr-defined]
    a = sketch_frame(pd.DataFrame({"x": series}), KEY)
    b = sketch_frame(pd.DataFrame({"y": pd.Series(permuted, dtype="Int64")}), KEY)
    real = a.entries  # the rest are dummies, derived from each copy's exact identity
    assert (a.rows[:real], a.columns["x"].digest) == (b.rows[:real], b.columns["y"].digest)


# -- similarity ------------------------------------------------------------------------------


def test_the_share_of_rows_in_common_of_near_copies(cps: pd.DataFrame) -> None:
    base = sketch_frame(cps, KEY)
    n = len(cps)
    assert _common(base, sketch_frame(cps.iloc[1:], KEY)) >= (n - 1) / n - 1 / SKETCH_SIZE
    appended = pd.concat([cps, cps.iloc[[3]].assign(wage=1234.5)])
    assert _common(base, sketch_frame(appended, KEY)) >= 1 - 2 / SKETCH_SIZE
    # a p-sample keeps each of the base's k smallest rows with probability p: binomial
    for fraction, low, high in ((0.99, 0.95, 1.0), (0.5, 0.38, 0.62), (0.1, 0.02, 0.2)):
        sample = cps.sample(frac=fraction, random_state=8)
        assert low <= _common(sketch_frame(sample, KEY), base) <= high
    assert _common(base, sketch_frame(cps.assign(wage=cps["wage"] + 1), KEY)) == 0.0


def test_a_row_present_twice_counts_twice(cps: pd.DataFrame) -> None:
    rows = cps.iloc[:100]
    twice = sketch_frame(pd.concat([rows, rows]), KEY)
    once = sketch_frame(rows, KEY)
    assert twice.entries == 200 and once.entries == 100
    assert len(set(twice.rows) & set(once.rows)) == 100  # half of the doubled data's entries


def test_a_sketch_has_k_tags_whatever_the_row_count(cps: pd.DataFrame) -> None:
    for rows in (1, 5, 255, 256, 3000):
        sketch = sketch_frame(cps.iloc[:rows], KEY)
        assert len(sketch.rows) == len(set(sketch.rows)) == SKETCH_SIZE
        assert sketch.entries == min(rows, SKETCH_SIZE)
    small = sketch_frame(cps.iloc[:5], KEY)
    assert set(small.rows) & set(sketch_frame(cps.iloc[:3000], KEY).rows) <= set(small.rows[:5])


def test_column_sketches_are_kept_for_mostly_distinct_columns() -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {"id": np.arange(5000), "score": rng.random(5000), "flag": rng.random(5000) < 0.5}
    )
    sketch = sketch_frame(frame, KEY)
    assert sketch.columns["id"].tags is not None and sketch.columns["score"].tags is not None
    assert sketch.columns["flag"].tags is None  # a yes/no column: its digest only


# -- chunked, mergeable, bounded -------------------------------------------------------------


def test_partitions_merge_to_the_whole_frames_sketch(cps: pd.DataFrame) -> None:
    whole = sketch_frame(cps, KEY)
    parts = [partial_sketch(cps.iloc[i : i + 5000], KEY.row_salt) for i in range(0, len(cps), 5000)]
    merged = merge_partials(*reversed(parts))
    from dpframe.backends.data_sketch import finish_sketch

    again = finish_sketch(merged, KEY, whole.fingerprint)
    assert again == whole


def test_the_pass_keeps_well_under_64_mib_per_million_row_columns() -> None:
    rng = np.random.default_rng(5)
    n = 1_000_000
    frame = pd.DataFrame(
        {
            "key": pd.Series(rng.choice([f"k{i}" for i in range(1000)], n), dtype="str"),
            "group": pd.Categorical.from_codes(
                rng.integers(0, 50, n), pd.Index([f"g{i}" for i in range(50)])
            ),
        }
    )
    tracemalloc.start()
    try:
        sketch_frame(frame, KEY)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20 * 2 / 8  # an eighth of the limit for 2 x 10^6 row-columns


def test_legacy_digests_are_the_same_chunked(cps: pd.DataFrame) -> None:
    """The unkeyed digests of schema 5, now block by block and per category.

    The pinned digests are those of ``dpframe/backends/column_digests.py`` at
    commit d40338c (which normalized whole columns): an older ledger's digests
    must still be recognized.
    """
    days: list[Any] = ["2020-01-01", None, "2021-01-01", "2020-01-01"]
    frame = pd.DataFrame(
        {
            "n": [1, 2, None, 4],
            "t": pd.Series(["a", None, "b", "a"], dtype="category"),
            "b": [True, False, True, True],
            "d": pd.to_datetime(days),
        }
    )
    assert column_digests(frame) == {
        "n": "ecc110268f95933805780c53af6d8ebc",
        "t": "1d69e9ce4e2a67cde453d10fe7ae3c57",
        "b": "312b05f75a5dfb3146691a5db1070796",
        "d": "014224aea5505b284811176eaec2d573",
    }
    big = cps.astype({"region": "category"})
    assert column_digests(big)["region"] == column_digests(cps)["region"]


def test_keys_are_32_bytes() -> None:
    with pytest.raises(dp.InvalidArgumentError, match="32 bytes"):
        SketchKey(secrets.token_bytes(16))
