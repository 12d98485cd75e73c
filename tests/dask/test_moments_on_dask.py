"""The moments tests of the core, run unchanged on the Dask backend (``on_dask``)."""

from __future__ import annotations

import pytest

from tests.test_moments import (
    pf,
    test_corr_and_cov_match_pandas_at_a_large_epsilon,
    test_isna_sum_counts_missing_values_as_integers,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "pf",
    "test_corr_and_cov_match_pandas_at_a_large_epsilon",
    "test_isna_sum_counts_missing_values_as_integers",
]
