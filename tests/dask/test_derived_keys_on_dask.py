"""Grouping by a derived integer column, run unchanged on the Dask backend (``on_dask``)."""

from __future__ import annotations

import pytest

from tests.test_derived_keys import (
    pf,
    test_a_row_outside_the_keys_is_in_no_group,
    test_grouping_by_a_derived_integer_column_releases_pandas_groups,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
    pytest.mark.filterwarnings("ignore:about 1 row:UserWarning"),
]

__all__ = [
    "pf",
    "test_a_row_outside_the_keys_is_in_no_group",
    "test_grouping_by_a_derived_integer_column_releases_pandas_groups",
]
