"""Rows per unit counted partition by partition: over a bound exactly when some unit is."""

from __future__ import annotations

from functools import reduce
from itertools import pairwise

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.backends.dask_unit_sizes import UnitCounts, combine_counts, partition_counts


def _over(parts: list[pd.DataFrame], limit: int, fan_in: int = 3) -> bool:
    counts = [partition_counts(p, "id", limit) for p in parts]
    while len(counts) > 1:  # as the Dask backend's tree: fan_in at a time
        counts = [combine_counts(*counts[i : i + fan_in]) for i in range(0, len(counts), fan_in)]
    return counts[0].over


def _truth(parts: list[pd.DataFrame], limit: int) -> bool:
    ids = pd.concat([p["id"] for p in parts])
    sizes = ids.value_counts(dropna=True)
    return bool(len(sizes)) and int(sizes.max()) > limit


@settings(max_examples=80, deadline=None)
@given(
    ids=st.lists(st.integers(-5, 40), min_size=1, max_size=120),
    cuts=st.lists(st.integers(0, 120), max_size=6),
    limit=st.integers(1, 6),
    spread=st.sampled_from([1, 10**9]),
    kind=st.sampled_from(["int64", "uint8", "text", "float"]),
)
def test_over_exactly_when_some_unit_has_more_rows_than_the_limit(
    ids: list[int], cuts: list[int], limit: int, spread: int, kind: str
) -> None:
    values: pd.Series
    if kind == "text":
        values = pd.Series([f"u{i}" for i in ids], dtype="str")
    elif kind == "float":  # a missing ID (NaN) is a unit of one row
        values = pd.Series([np.nan if i % 7 == 0 else float(i) for i in ids])
    elif kind == "uint8":
        values = pd.Series(np.array(ids, dtype=np.int64) + 5, dtype=np.uint8)
    else:  # spread: ids far apart put some partitions' counts in a Series
        values = pd.Series(np.array(ids, dtype=np.int64) * spread)
    frame = pd.DataFrame({"id": values})
    edges = sorted({0, len(frame), *(c for c in cuts if c < len(frame))})
    parts = [frame.iloc[a:b] for a, b in pairwise(edges)]
    assert _over(parts, limit) == _truth(parts, limit)


def test_dense_integer_ids_are_counted_in_an_array() -> None:
    part = pd.DataFrame({"id": np.array([3, 3, 5, 4, 3], dtype=np.int64)})
    counts = partition_counts(part, "id", 5)
    assert counts.dense is not None and counts.low == 3
    assert counts.dense.tolist() == [3, 1, 1]
    assert counts.as_series().to_dict() == {3: 3, 4: 1, 5: 1}


def test_a_partition_alone_over_the_limit_drops_its_counts() -> None:
    part = pd.DataFrame({"id": ["a", "a", "a", "b"]})
    counts = partition_counts(part, "id", 2)
    assert counts.over and counts.dense is None and counts.sparse is None
    other = partition_counts(pd.DataFrame({"id": ["c"]}), "id", 2)
    assert combine_counts(other, counts).over


def test_units_over_only_once_partitions_are_added() -> None:
    parts = [pd.DataFrame({"id": np.array([7, 8], dtype=np.int64)}) for _ in range(3)]
    counts = [partition_counts(p, "id", 2) for p in parts]
    assert not any(c.over for c in counts)
    assert not combine_counts(*counts[:2]).over
    assert reduce(combine_counts, counts).over


def test_arrays_far_apart_are_added_as_series() -> None:
    low = partition_counts(pd.DataFrame({"id": np.array([1, 2], dtype=np.int64)}), "id", 1)
    high = partition_counts(pd.DataFrame({"id": np.array([10**12], dtype=np.int64)}), "id", 1)
    both = combine_counts(low, high)
    assert both.dense is None and both.sparse is not None
    assert both.as_series().sort_index().to_dict() == {1: 1, 2: 1, 10**12: 1}
    assert not both.over


def test_no_rows_is_never_over() -> None:
    empty = UnitCounts(3, sparse=pd.Series(dtype=np.int64))
    assert not empty.checked().over
    assert not partition_counts(pd.DataFrame({"id": pd.Series([], dtype=np.int64)}), "id", 1).over


def test_counts_travel_capped_in_a_small_dtype_and_still_add_up() -> None:
    ids = np.zeros(1000, dtype=np.int64)  # one unit of 1,000 rows, 4 partitions of 250
    parts = [pd.DataFrame({"id": ids[i : i + 250]}) for i in range(0, 1000, 250)]
    small = partition_counts(parts[0], "id", 3)
    assert small.over  # 250 > 3 in one partition
    for limit, dtype in ((254, np.uint8), (300, np.uint16), (70_000, np.int64)):
        counts = [partition_counts(p, "id", limit) for p in parts]
        assert all(c.dense is not None and c.dense.dtype == dtype for c in counts)
        assert counts[0].dense is not None and int(counts[0].dense[0]) == min(250, limit + 1)
        assert reduce(combine_counts, counts).over == (limit < 1000)
    assert not reduce(combine_counts, [partition_counts(p, "id", 1000) for p in parts]).over
    assert reduce(combine_counts, [partition_counts(p, "id", 999) for p in parts]).over
