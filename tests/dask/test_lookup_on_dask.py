"""The lookup tests of the core, run unchanged on the Dask backend (``on_dask``)."""

from __future__ import annotations

import pytest

from tests.test_lookup import (
    pf,
    test_a_missing_key_matches_the_tables_missing_key_as_pandas,
    test_inner_merge_and_join_keep_only_matched_rows,
    test_left_merge_adds_public_columns_with_their_keys_and_bounds,
    test_left_on_right_on_keeps_both_keys_as_pandas,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "pf",
    "test_a_missing_key_matches_the_tables_missing_key_as_pandas",
    "test_inner_merge_and_join_keep_only_matched_rows",
    "test_left_merge_adds_public_columns_with_their_keys_and_bounds",
    "test_left_on_right_on_keeps_both_keys_as_pandas",
]
