"""Parts of split text, run unchanged on the Dask backend (``on_dask``)."""

from __future__ import annotations

import pytest

from tests.test_text_parts import (
    data,
    test_keys_are_the_parts_of_the_declared_categories,
    test_parts_of_free_text_count_as_pandas_does,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "data",
    "test_keys_are_the_parts_of_the_declared_categories",
    "test_parts_of_free_text_count_as_pandas_does",
]
