"""Row-level sums on Dask: the KDE and full-batch regression run on the workers, as on pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpframe.backends import PandasBackend
from dpframe.backends.dask_backend import DaskBackend
from dpframe.mechanisms.models.kde import KernelSums
from dpframe.mechanisms.models.regression import GradientSum
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Filter, Source
from tests.dask._support import from_pandas

pytestmark = pytest.mark.usefixtures("dask_client")

PLAN = Filter(Source("d"), Col("education") >= 12)


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_kernel_sums_match_pandas(cps: pd.DataFrame, partitions: int) -> None:
    reducer = KernelSums((0.0, 250.0, 500.0, 1000.0, 3000.0), 150.0, (0.0, 5000.0))
    local = PandasBackend(cps).row_reduce(PLAN, [Col("wage")], reducer)
    far = DaskBackend(from_pandas(cps, partitions)).row_reduce(PLAN, [Col("wage")], reducer)
    assert far[0] == local[0] == int((cps["education"] >= 12).sum())
    np.testing.assert_allclose(far[1], local[1], rtol=1e-12)


@pytest.mark.parametrize("weights", [None, (0.3, -0.2, 0.1)])
def test_gradient_sums_match_pandas(cps: pd.DataFrame, weights: tuple[float, ...] | None) -> None:
    data = cps.assign(experience=cps["experience"].where(cps.index % 7 != 0))  # some missing
    reducer = GradientSum(((0.0, 20.0), (-8.0, 64.0)), (0.0, 5000.0), "squared", weights)
    exprs = [Col("education"), Col("experience"), Col("wage")]
    local = PandasBackend(data).row_reduce(PLAN, exprs, reducer)
    far = DaskBackend(from_pandas(data, 4)).row_reduce(PLAN, exprs, reducer)
    complete = (data["education"] >= 12) & data["experience"].notna()
    assert far[0] == local[0] == int(complete.sum())
    np.testing.assert_allclose(far[1], local[1], rtol=1e-10, atol=1e-9)
    if weights is None:
        assert not np.any(far[1])
