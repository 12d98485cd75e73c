"""Row access is part of the backend protocol: Dask keeps the rows on the cluster.

Mechanisms that read rows one by one are refused on a Dask frame before the
charge (nothing spent, nothing in the ledger); the per-row sums still run.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

import dpframe as dp
from dpframe.backends import PandasBackend
from dpframe.backends.dask_backend import DaskBackend
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Source
from tests.dask._support import from_pandas

pytestmark = pytest.mark.usefixtures("dask_client")

BOUNDS = {"wage": (0.0, 5000.0), "education": (0.0, 20.0)}


def test_dask_backend_says_it_holds_no_rows(cps: pd.DataFrame) -> None:
    far = DaskBackend(from_pandas(cps.head(200), 2))
    assert far.holds_rows is False
    assert PandasBackend(cps.head(200)).holds_rows is True
    with pytest.raises(dp.SchemaError, match="rows in memory"):
        far.numeric_rows(Source("d"), [Col("wage")])
    with pytest.raises(dp.SchemaError, match="rows in memory"):
        far.category_codes(Source("d"), Col("region"), ["south", "west"])


def test_row_level_releases_are_refused_before_the_charge(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=3.0, delta=1e-6, ledger=":memory:", accounting="zcdp")
    pf = session.private_frame(
        from_pandas(cps.head(2_000), 3),
        bounds=BOUNDS,
        categories={"region": ["northeast", "midwest", "south", "west"]},
    )
    refused: list[tuple[Callable[[], object], str]] = [
        (lambda: pf["wage"].laplace_copy(epsilon=1.0), "sanitized copy shuffles the rows"),
        (lambda: pf["region"].randomized_response(epsilon=1.0), "sanitized copy shuffles"),
        (
            lambda: pf.linear_regression(["education"], "wage", epsilon=1.0, analysis="iteration"),
            "visits the rows one by one",
        ),
    ]
    for release, reason in refused:
        with pytest.raises(dp.SchemaError, match=f"{reason}.*in-memory pandas data only"):
            release()
    assert session.spent == dp.Budget(0, 0)
    assert len(session.ledger) == 0
    density = pf["wage"].kde(200.0, epsilon=0.5)  # per-row sums: run on the workers
    assert len(density) > 0
    assert len(session.ledger) == 1
