"""``agg`` on the Dask backend: the core's tests, run unchanged on a two-worker cluster."""

from __future__ import annotations

import pytest

from tests.test_agg import (
    test_a_column_list_gives_a_series_and_a_name_gives_a_release,
    test_a_dict_gives_pandas_table_of_aggregates_by_columns,
    test_every_cell_has_its_interval,
    test_grouped_agg_has_pandas_shape,
    test_one_charge_split_over_the_cells_in_the_ledger_and_explain,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "test_a_column_list_gives_a_series_and_a_name_gives_a_release",
    "test_a_dict_gives_pandas_table_of_aggregates_by_columns",
    "test_every_cell_has_its_interval",
    "test_grouped_agg_has_pandas_shape",
    "test_one_charge_split_over_the_cells_in_the_ledger_and_explain",
]
