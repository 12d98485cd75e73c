"""The Dask backend ships compiled, flat queries: deep plans work and match pandas."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpframe.backends import PandasBackend
from dpframe.backends.dask_backend import DaskBackend
from dpframe.plan.expressions import Expr, col
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Assign, Filter, GroupKey, Plan, Source
from tests.dask._support import from_pandas

pytestmark = pytest.mark.usefixtures("dask_client")


def test_a_plan_too_deep_to_pickle_runs_on_dask(dask_client: Any) -> None:
    frame = pd.DataFrame({"a": np.arange(12.0), "g": ["p", "q", "r"] * 4})
    plan: Plan = Source("d")
    for _ in range(800):  # pickling this nested plan would need ~2,400 frames
        plan = Assign(plan, "a", col("a") + 1)
    shared: Expr = col("a")
    for _ in range(40):
        shared = shared + shared  # 2**40 leaves as a tree
    plan = Filter(plan, col("a") > 803.5)
    measures = (Measure("rows"), Measure("sum", shared, 0.0, 2.0**51, 0.0, 1, 2.0**30))
    by = (GroupKey("g", col("g"), ("p", "q")),)
    dask_backend = DaskBackend(from_pandas(frame, 3))
    expected = PandasBackend(frame).compute(plan, measures, by)
    got = dask_backend.compute(plan, measures, by)
    for a, b in zip(got, expected, strict=True):
        assert a.tobytes() == b.tobytes()
    keys, counts = dask_backend.key_counts(plan, col("g"))
    assert dict(zip(keys, counts.tolist(), strict=True)) == {"p": 2, "q": 3, "r": 3}  # rows 4..11
