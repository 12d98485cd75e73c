"""corr()/cov() through the curator: the entries' intervals travel, the 'too thin' warning shows."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpframe as dp
from tests.curator.support import ALICE, Server, write_catalog

NAMES = ["wage", "education", "experience"]


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("curator-moments"), alice_epsilon=100.0)


@pytest.fixture(scope="module")
def remote(server: Server) -> Any:
    return dp.connect(server.url, token=ALICE).open("cps")


def test_a_remote_thin_correlation_warns_in_the_analysts_kernel(remote: Any) -> None:
    with pytest.warns(UserWarning, match=r"Too thin to read: a correlation's 95% interval spans"):
        remote[NAMES].corr(epsilon=1e-5)  # a Gaussian DP seat: a tiny share of its μ²


def test_remote_entries_carry_their_box(remote: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # informative at ε = 5: no warning
        result = remote[NAMES].corr(epsilon=5)
    low, high = result.attrs["dpframe"].intervals.interval(0.95)
    assert np.all(np.isfinite(low)) and np.all(np.isfinite(high))
    assert np.all(high - low < 0.2)
    shown = result.to_numpy(dtype=float)
    # The shown value may leave its box only by the projection onto valid matrices (small).
    assert np.all((low - 0.05 <= shown) & (shown <= high + 0.05))
    assert list(result.dtypes) == ["dp"] * 3
