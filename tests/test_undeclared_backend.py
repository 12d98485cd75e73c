"""Backend slots of the undeclared cell: a missing key is in no cell, an undeclared one in k + 1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpframe.backends import PandasBackend
from dpframe.backends.chunks import combine_slots, slot_codes
from dpframe.backends.evaluate import category_codes
from dpframe.plan.expressions import Bucket, Col
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import GroupKey, Source


def test_slot_codes_extend_category_codes() -> None:
    values = pd.Series(["a", "B", None, "b", "zz", np.nan, "a"], dtype=object)
    codes = slot_codes(values, ("a", "b"))
    assert codes.tolist() == [1, 3, 0, 2, 3, 0, 1]
    declared = category_codes(values, ("a", "b")) + 1
    assert np.array_equal(codes[codes <= 2], declared[codes <= 2])  # declared slots unchanged


def test_combined_slots_mark_any_undeclared_key_unless_one_is_missing() -> None:
    region = np.array([1, 3, 0, 2, 3, 1], dtype=np.intp)  # 2 categories; 3 = undeclared
    smsa = np.array([2, 1, 1, 0, 3, 3], dtype=np.intp)  # 2 categories; 3 = undeclared
    region.flags.writeable = False
    combined = combine_slots(region, smsa, 2, 2)
    assert combined.tolist() == [2, 5, 0, 0, 5, 5]  # 5 = 2 * 2 + 1: the undeclared slot
    assert region.tolist() == [1, 3, 0, 2, 3, 1]  # inputs untouched


@pytest.mark.parametrize("chunk_rows", [1, 1000, 1 << 20])
def test_narrow_cached_codes_count_the_undeclared_rows(chunk_rows: int) -> None:
    """254 declared keys and the undeclared slot fit the uint8 cache of a chunked frame."""
    frame = pd.DataFrame({"k": np.arange(3000) % 300})
    key = GroupKey("k", Col("k"), tuple(range(254)))
    backend = PandasBackend(frame, chunk_rows=chunk_rows)
    counts, outside = backend.compute(Source("d"), (Measure("rows"),), (key,), True)
    assert counts.tolist() == [10.0] * 254
    assert outside.tolist() == [float(3000 - 2540)]
    assert backend.compute(Source("d"), (Measure("rows"),), (key,))[0].tobytes() == (
        counts.tobytes()
    )


def test_bucket_keys_count_present_values_outside_the_edges() -> None:
    frame = pd.DataFrame({"x": [-5.0, 0.0, 5.0, 10.0, 11.0, np.nan, np.inf]})
    for clamp, outside in ((False, 3.0), (True, 0.0)):
        key = GroupKey("bin", Bucket(Col("x"), (0.0, 5.0, 10.0), clamp), (0, 1))
        counts, rows = PandasBackend(frame).compute(Source("d"), (Measure("rows"),), (key,), True)
        assert rows.tolist() == [outside]  # -5, 11 and +inf; NaN is missing
        assert counts.sum() == 3.0 + (3.0 if clamp else 0.0)  # 0, 5, 10 (the last edge is in)
