"""The keysets tests of the core, run unchanged on the Dask backend (``on_dask``)."""

from __future__ import annotations

import pytest

from tests.test_keysets import (
    pf,
    test_a_public_key_set_gives_one_row_per_listed_combination,
    test_means_agg_and_quantiles_over_a_key_set,
    test_several_columns_discovered_at_once,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = [
    "pf",
    "test_a_public_key_set_gives_one_row_per_listed_combination",
    "test_means_agg_and_quantiles_over_a_key_set",
    "test_several_columns_discovered_at_once",
]
