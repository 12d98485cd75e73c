"""Grouped quantiles and quantile candidates on the Dask backend: the core's tests, unchanged,
on a two-worker cluster (the backend computes each group's histogram over the candidates)."""

from __future__ import annotations

import pytest

from tests.test_grouped_quantiles import (
    test_a_list_of_levels_gives_a_key_by_q_multiindex,
    test_agg_takes_a_median_per_group,
    test_an_integer_column_answers_with_pandas_integers,
    test_grouped_median_is_near_pandas_with_its_shape,
    test_one_charge_of_exactly_the_request_for_all_groups,
    test_privacy_units_calibrate_each_group_to_the_units_rows,
    test_several_keys_give_pandas_multiindex,
    test_undeclared_keys_are_counted_and_warned_about,
)
from tests.test_grouped_quantiles_statistical import (
    test_grouped_release_selects_with_the_exponential_mechanisms_probabilities,
)
from tests.test_quantile_candidates import (
    test_given_candidates_are_the_only_answers,
    test_integer_columns_choose_among_the_integers_in_their_bounds,
    test_ties_at_a_candidate_count_as_that_candidate,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "test_a_list_of_levels_gives_a_key_by_q_multiindex",
    "test_agg_takes_a_median_per_group",
    "test_an_integer_column_answers_with_pandas_integers",
    "test_given_candidates_are_the_only_answers",
    "test_grouped_median_is_near_pandas_with_its_shape",
    "test_grouped_release_selects_with_the_exponential_mechanisms_probabilities",
    "test_integer_columns_choose_among_the_integers_in_their_bounds",
    "test_one_charge_of_exactly_the_request_for_all_groups",
    "test_privacy_units_calibrate_each_group_to_the_units_rows",
    "test_several_keys_give_pandas_multiindex",
    "test_ties_at_a_candidate_count_as_that_candidate",
    "test_undeclared_keys_are_counted_and_warned_about",
]
