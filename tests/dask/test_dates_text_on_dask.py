"""Dates and text on the Dask backend: the core's tests, run unchanged.

The ``on_dask`` fixture (``conftest.py``) loads every frame as a three-partition
dask DataFrame on a two-worker ``LocalCluster``: the declared kinds (dates
parsed, text truncated) are applied on each partition, and the ``.dt`` and
``.str`` expressions are evaluated on the workers by the same per-chunk code
as on pandas (RE2 included), so the released answers match pandas as they do
embedded.  (Tests of object columns mixing numbers and text stay on pandas:
dask stores such a column as text, so its 5 is "5" there.)
"""

from __future__ import annotations

import pytest

from tests.test_dates import (
    data,
    expected,
    test_a_column_with_date_bounds_is_read_as_dates_each_value_on_its_own,
    test_a_date_outside_the_bounds_is_in_no_year_and_no_edge_key,
    test_calendar_fields_match_pandas,
    test_comparisons_and_between_with_date_literals_filter,
    test_declared_and_typed_date_columns,
    test_months_between_the_bounds_are_period_keys,
    test_years_between_the_bounds_are_keys_without_declaration,
)
from tests.test_text import (
    comment,
    test_length_has_bounds_from_the_declared_maximum,
    test_lengthening_text_is_cut_to_the_maximum_length,
    test_matches_count_as_pandas_does,
    test_replaced_and_cased_text_counts_as_pandas_does,
    test_text_keys_are_the_declared_categories_mapped,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    # from_pandas puts the test data in the task graph; dask warns about its size.
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "comment",
    "data",
    "expected",
    "test_a_column_with_date_bounds_is_read_as_dates_each_value_on_its_own",
    "test_a_date_outside_the_bounds_is_in_no_year_and_no_edge_key",
    "test_calendar_fields_match_pandas",
    "test_comparisons_and_between_with_date_literals_filter",
    "test_declared_and_typed_date_columns",
    "test_length_has_bounds_from_the_declared_maximum",
    "test_lengthening_text_is_cut_to_the_maximum_length",
    "test_matches_count_as_pandas_does",
    "test_months_between_the_bounds_are_period_keys",
    "test_replaced_and_cased_text_counts_as_pandas_does",
    "test_text_keys_are_the_declared_categories_mapped",
    "test_years_between_the_bounds_are_keys_without_declaration",
]
