"""The core's end-to-end privacy, statistical and aggregate tests, run unchanged on Dask.

The test functions are imported from the core test modules; the ``on_dask``
fixture (``conftest.py``) makes ``Session.private_frame`` load every frame as
a three-partition dask DataFrame computed on a two-worker ``LocalCluster`` on
loopback, and fails a test that loaded nothing on Dask.  Noise, accounting
and release are the session's, so the statistical tests check that the Dask
backend hands the mechanisms the same exact aggregates (right noise scale,
neighbouring datasets indistinguishable, contribution bounding effective).
"""

from __future__ import annotations

import pytest

from tests.test_aggregates import (
    rich,
    test_derived_columns_and_interval_bounds,
    test_expression_operators,
    test_groupby_returns_every_declared_key_in_order,
    test_groupby_several_keys,
    test_large_but_safe_bounds_give_finite_exact_sums,
    test_nan_and_inf_rows,
    test_neighbours_share_one_output_grid,
    test_scalar_aggregates_match_pandas,
)
from tests.test_aggregates_statistical import (
    groups_df,
    test_count_is_discrete_gaussian_under_zcdp,
    test_count_is_discrete_laplace,
    test_count_with_rho_argument,
    test_intervals_cover_the_truth,
    test_mean_var_std_match_their_definition,
    test_sum_is_gaussian_under_approx_with_delta,
    test_sum_is_laplace_at_bound_over_epsilon,
)
from tests.test_approx_bounds import (
    test_cps_wages_get_bounds_that_cover_the_bulk,
    test_values_near_zero_and_negative_values,
)
from tests.test_discovery import (
    test_above_threshold_finds_the_big_groups,
    test_discovery_hides_rare_keys_and_charges_delta,
    zcdp_frame,
)
from tests.test_privacy_units import (
    test_counts_use_noise_scaled_by_max_rows_per_unit,
    test_discovery_with_units_hides_a_person_at_the_limit,
    test_one_person_at_the_contribution_limit,
    test_unit_frames,
)
from tests.test_selection import (
    test_describe_splits_and_checks_the_budget,
    test_mode_and_argmax,
    test_quantiles_on_cps_within_the_stated_rank_error,
    test_selection_under_zcdp,
    test_value_counts_and_hist,
)
from tests.test_undeclared import (
    cps,
    test_a_region_missing_from_the_declared_categories_is_counted_apart,
    test_histograms_count_the_values_outside_explicit_edges,
    test_several_keys_have_one_undeclared_cell,
    test_with_privacy_units_the_cell_is_near_the_truth,
    test_wrong_case_puts_the_whole_region_in_the_undeclared_cell,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    # from_pandas puts the test data in the task graph; dask warns about its size.
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "cps",
    "groups_df",
    "rich",
    "test_a_region_missing_from_the_declared_categories_is_counted_apart",
    "test_above_threshold_finds_the_big_groups",
    "test_count_is_discrete_gaussian_under_zcdp",
    "test_count_is_discrete_laplace",
    "test_count_with_rho_argument",
    "test_counts_use_noise_scaled_by_max_rows_per_unit",
    "test_cps_wages_get_bounds_that_cover_the_bulk",
    "test_derived_columns_and_interval_bounds",
    "test_describe_splits_and_checks_the_budget",
    "test_discovery_hides_rare_keys_and_charges_delta",
    "test_discovery_with_units_hides_a_person_at_the_limit",
    "test_expression_operators",
    "test_groupby_returns_every_declared_key_in_order",
    "test_groupby_several_keys",
    "test_histograms_count_the_values_outside_explicit_edges",
    "test_intervals_cover_the_truth",
    "test_large_but_safe_bounds_give_finite_exact_sums",
    "test_mean_var_std_match_their_definition",
    "test_mode_and_argmax",
    "test_nan_and_inf_rows",
    "test_neighbours_share_one_output_grid",
    "test_one_person_at_the_contribution_limit",
    "test_quantiles_on_cps_within_the_stated_rank_error",
    "test_scalar_aggregates_match_pandas",
    "test_selection_under_zcdp",
    "test_several_keys_have_one_undeclared_cell",
    "test_sum_is_gaussian_under_approx_with_delta",
    "test_sum_is_laplace_at_bound_over_epsilon",
    "test_unit_frames",
    "test_value_counts_and_hist",
    "test_values_near_zero_and_negative_values",
    "test_with_privacy_units_the_cell_is_near_the_truth",
    "test_wrong_case_puts_the_whole_region_in_the_undeclared_cell",
    "zcdp_frame",
]
