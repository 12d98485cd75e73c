"""Distinct counts of keyless columns, run unchanged on the Dask backend (``on_dask``)."""

from __future__ import annotations

import pytest

from tests.test_distinct_count import (
    test_a_filtered_and_a_derived_column_count_as_pandas,
    test_frame_nunique_counts_keyless_columns_in_the_same_charge,
    test_per_group_distinct_counts_are_pandas,
    test_the_distinct_count_of_an_id_column_is_pandas_nunique,
    visits,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "test_a_filtered_and_a_derived_column_count_as_pandas",
    "test_frame_nunique_counts_keyless_columns_in_the_same_charge",
    "test_per_group_distinct_counts_are_pandas",
    "test_the_distinct_count_of_an_id_column_is_pandas_nunique",
    "visits",
]
