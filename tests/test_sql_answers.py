"""SQL answers are the facade's release objects: dp columns, intervals through pandas steps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.mechanisms.answers import DPArray


@pytest.fixture(scope="module")
def session() -> dp.Session:
    session = dp.Session(epsilon=100.0, ledger=":memory:")
    pf = session.private_frame(load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    session.register("cps", pf)
    return session


def test_one_aggregate_is_the_facades_release(session: dp.Session) -> None:
    found = session.sql("SELECT AVG(wage) FROM cps", epsilon=1)
    assert isinstance(found, dp.Release)
    low, high = found.ci()
    assert low < float(found) < high


def test_tables_have_dp_columns_and_keep_intervals_through_pandas(session: dp.Session) -> None:
    found = session.sql(
        "SELECT region, COUNT(*) AS n, SUM(wage) / COUNT(*) AS ratio FROM cps GROUP BY region",
        epsilon=1,
    )
    assert all(isinstance(found[c].array, DPArray) for c in found.columns)
    assert found.index.name == "region"
    intervals = dp.ci(found)
    assert np.all(intervals[("n", "low")] < found["n"].to_numpy(dtype=float))
    assert np.all(np.isfinite(intervals[("ratio", "high")]))  # a ratio's Bonferroni box
    top = found.sort_values("n", ascending=False).head(2)  # pandas' own steps, after the release
    assert dp.ci(top).shape == (2, 4)
    assert "±" in found.to_string()


def test_order_limit_and_having_select_released_rows(session: dp.Session) -> None:
    ordered = session.sql(
        "SELECT region, COUNT(*) AS n FROM cps GROUP BY region ORDER BY n DESC LIMIT 3 OFFSET 1",
        epsilon=1,
    )
    values = ordered["n"].to_numpy(dtype=float)
    assert len(values) == 3 and np.all(np.diff(values) <= 0)
    kept = session.sql(
        "SELECT region, AVG(wage) AS m FROM cps GROUP BY region "
        "HAVING m > 600 AND region <> 'west'",
        epsilon=1,
    )
    assert "west" not in kept.index
    assert np.all(kept["m"].to_numpy(dtype=float) > 600)


def test_ungrouped_aggregates_are_one_row(session: dp.Session) -> None:
    found = session.sql("SELECT COUNT(*) AS n, AVG(wage) AS m FROM cps", epsilon=1)
    assert isinstance(found, pd.DataFrame)
    assert list(found.columns) == ["n", "m"] and len(found) == 1
    assert dp.ci(found).shape == (1, 4)


def test_count_distinct_per_group_is_the_facades_grouped_nunique() -> None:
    """COUNT(DISTINCT x) ... GROUP BY k: keyed columns thresholded, ID columns counted."""
    cps = load_cps1988()
    cps["person"] = np.arange(len(cps)) % 5_000  # an ID-like column: no public keys
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    session.register("cps", pf)
    keyed = session.sql(
        "SELECT region, COUNT(DISTINCT smsa) AS n FROM cps GROUP BY region", epsilon=1e6
    )
    truth = cps.groupby("region")["smsa"].nunique()
    assert isinstance(keyed["n"].array, DPArray)
    assert keyed["n"].to_numpy(dtype=float).tolist() == [float(truth[k]) for k in keyed.index]
    facade = pf.groupby("region")["smsa"].nunique(epsilon=1e6)
    assert keyed["n"].to_numpy(dtype=float).tolist() == facade.to_numpy(dtype=float).tolist()
    ids = session.sql(
        "SELECT region, COUNT(DISTINCT person) AS n FROM cps GROUP BY region", epsilon=1e6
    )
    want = cps.groupby("region")["person"].nunique()
    for key, value in ids["n"].items():
        assert float(value) == pytest.approx(want[key], abs=1e-3)
    explained = session.sql(
        "EXPLAIN SELECT region, COUNT(DISTINCT smsa) FROM cps GROUP BY region", epsilon=1
    )
    assert "by region, smsa" in str(explained)  # the (group, key) counts it thresholds
    # Two charges: the facade's spelling is the same request as the SQL one, answered
    # from the ledger (free); EXPLAIN spends nothing.
    assert float(session.spent.epsilon) == pytest.approx(2e6)
