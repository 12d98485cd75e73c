"""``cut`` and ``qcut`` on the Dask backend: the core's tests, run unchanged.

The ``on_dask`` fixture (``conftest.py``) loads every frame as a three-partition
dask DataFrame on a two-worker ``LocalCluster``; the binned keys are evaluated
on the workers by the same per-chunk code as on pandas, so the released
answers match pandas' ``cut`` as they do embedded.
"""

from __future__ import annotations

import pytest

from tests.test_cut import (
    test_a_number_of_bins_cuts_the_declared_bounds_as_pandas_cuts_the_range,
    test_comparing_two_cut_columns_compares_their_labels,
    test_groupby_and_assign_need_no_declaration,
    test_labels_and_integer_codes,
    test_missing_and_outside_values_are_in_no_bin,
    test_qcut_charges_one_quantile_release_then_cuts_for_free,
    test_qcut_merges_coinciding_edges_by_default,
    test_value_counts_of_a_cut_match_pandas,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    # from_pandas puts the test data in the task graph; dask warns about its size.
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "test_a_number_of_bins_cuts_the_declared_bounds_as_pandas_cuts_the_range",
    "test_comparing_two_cut_columns_compares_their_labels",
    "test_groupby_and_assign_need_no_declaration",
    "test_labels_and_integer_codes",
    "test_missing_and_outside_values_are_in_no_bin",
    "test_qcut_charges_one_quantile_release_then_cuts_for_free",
    "test_qcut_merges_coinciding_edges_by_default",
    "test_value_counts_of_a_cut_match_pandas",
]
