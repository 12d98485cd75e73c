"""Columns declared not null on the Dask backend: the core's tests, run unchanged.

The fill is applied on each partition (``map_partitions`` of the same
conversion as on pandas), and describe's shared row count is the same
post-processing of the same releases.
"""

from __future__ import annotations

import pytest

from tests.test_not_null import (
    test_describe_of_a_frame_with_a_derived_column_combines_only_the_declared_ones,
    test_describe_shows_one_row_count_in_every_not_null_column,
    test_releases_read_the_fill,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "test_describe_of_a_frame_with_a_derived_column_combines_only_the_declared_ones",
    "test_describe_shows_one_row_count_in_every_not_null_column",
    "test_releases_read_the_fill",
]
