"""The elementwise tests of the core, run unchanged on the Dask backend (``on_dask``)."""

from __future__ import annotations

import pytest

from tests.test_elementwise import (
    holes,
    pf,
    test_astype_int_truncates_toward_zero_as_pandas,
    test_fillna_replaces_missing_values_with_a_public_constant,
    test_numpy_functions_give_bounded_expressions_matching_numpy,
    test_where_and_mask_follow_pandas,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "holes",
    "pf",
    "test_astype_int_truncates_toward_zero_as_pandas",
    "test_fillna_replaces_missing_values_with_a_public_constant",
    "test_numpy_functions_give_bounded_expressions_matching_numpy",
    "test_where_and_mask_follow_pandas",
]
