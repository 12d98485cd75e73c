"""Per-ID bounding (load time and after a join): integer IDs take a path without a hash table.

``kept_positions`` groups rows by ID; dense integer IDs are their own codes
(no factorization: the join benchmark's people and visits), any other column
is factorized.  Which rows are kept depends only on which rows share an ID
and on the random keys (drawn in row order), so both paths keep exactly the
same rows from the same random bytes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from dpframe.backends.pandas_backend import _unit_codes, kept_positions
from dpframe.noise import SecureRandom


def _bytes(seed: int) -> Callable[[int], bytes]:
    """A reproducible byte source (tests only: the library reads os.urandom)."""
    rng = np.random.default_rng(seed)
    return lambda n: rng.bytes(n)


@pytest.mark.parametrize(
    "ids",
    [
        np.random.default_rng(1).integers(0, 300, 5_000),  # int64 from 0: the values themselves
        np.random.default_rng(2).integers(10**12, 10**12 + 300, 5_000),  # shifted by the least
        np.random.default_rng(3).integers(0, 300, 5_000).astype(np.uint16),
        np.random.default_rng(4).integers(-50, 250, 5_000).astype(np.int32),
    ],
)
def test_integer_ids_keep_the_rows_their_factorized_twins_keep(ids: np.ndarray) -> None:
    as_text = pd.Series(ids.astype(str))  # factorized
    as_ints = pd.Series(ids)
    assert len(np.unique(_unit_codes(as_ints))) == len(np.unique(ids))
    for k in (1, 3, 20):
        kept = kept_positions(as_ints, k, SecureRandom(_bytes(k)))
        twin = kept_positions(as_text, k, SecureRandom(_bytes(k)))
        assert np.array_equal(kept, twin)
        sizes = pd.Series(ids[kept]).value_counts()
        assert sizes.max() <= k
        truth = pd.Series(ids).value_counts().clip(upper=k)
        assert sizes.sort_index().equals(truth.sort_index())  # min(rows, k) per ID


def test_sparse_missing_and_nullable_ids_are_factorized() -> None:
    sparse = pd.Series(np.array([0, 10**15, 0, 5], dtype=np.int64))  # range far over the rows
    assert _unit_codes(sparse).tolist() == [0, 1, 0, 2]
    nullable = pd.Series([3, None, 3, 4], dtype="Int64")  # pandas' nullable ints: a missing ID
    assert _unit_codes(nullable).tolist() == [0, -1, 0, 1]
    kept = kept_positions(nullable, 1, SecureRandom(_bytes(0)))
    assert 1 in kept.tolist() and len(kept) == 3  # the missing ID is a unit of its own


def test_dense_int64_ids_from_zero_are_not_copied() -> None:
    ids = pd.Series(np.arange(2_000, dtype=np.int64) % 700)
    codes = _unit_codes(ids)
    assert np.shares_memory(codes, ids.to_numpy())
