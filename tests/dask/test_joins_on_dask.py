"""Private joins with Dask sides (issue 32): matched and bounded on the cluster, never collected."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.backends.dask_backend import DaskBackend
from dpframe.engine.joins import JoinedRows
from dpframe.plan.nodes import lineage


def _tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(5)
    visits = pd.DataFrame(
        {
            "person_id": rng.integers(0, 60, 400).astype(float),
            "cost": rng.integers(0, 100, 400).astype(float),
        }
    )
    visits.loc[:4, "person_id"] = np.nan  # missing IDs never match
    people = pd.DataFrame(
        {"person_id": np.arange(50, dtype=float), "region": rng.choice(["n", "s"], 50)}
    )
    return visits, people


def _truth(how: str, k: int) -> tuple[int, float]:
    """The kept rows' exact count, and the sum when nobody is cut (pandas, missing keys apart)."""
    visits, people = _tables()
    known = visits.dropna(subset=["person_id"])
    visits_kept = known.groupby("person_id").size().clip(upper=8)
    people_ids = set(people["person_id"])
    if how == "inner":
        per = visits_kept[visits_kept.index.isin(people_ids)]
        return int(per.clip(upper=k).sum()), 0.0
    if how == "left":
        per = visits_kept.clip(upper=k)
        return int(per.sum()) + 5, 0.0
    if how == "semi":
        return int(visits_kept[visits_kept.index.isin(people_ids)].sum()), 0.0
    return int(visits_kept[~visits_kept.index.isin(people_ids)].sum()) + 5, 0.0


@pytest.mark.parametrize(("how", "k"), [("inner", 3), ("left", 3), ("semi", 8), ("anti", 8)])
def test_a_join_of_dask_frames_counts_what_pandas_counts(
    on_dask: list[DaskBackend], how: str, k: int
) -> None:
    visits, people = _tables()
    session = dp.Session(epsilon=10_000, ledger=":memory:")
    v = session.private_frame(
        visits, bounds={"cost": (0, 100)}, privacy_unit=dp.PrivacyUnit("person_id", 8)
    )
    p = session.private_frame(
        people, categories={"region": ["n", "s"]}, privacy_unit=dp.PrivacyUnit("person_id", 1)
    )
    joined = v.merge(p, on="person_id", how=how, max_rows=None if how in ("semi", "anti") else k)
    count = joined.count(epsilon=1000)  # noise scale k/1000: the count is exact
    assert float(count) == _truth(how, k)[0]
    source = lineage(joined._handle.plan)[0]
    backend: Any = session._path.source_backend(source)
    assert isinstance(backend, JoinedRows) and not backend.holds_rows
    assert isinstance(backend.materialized(), DaskBackend)  # on the cluster, never collected


def test_dropped_rows_of_a_dask_join_are_refused_before_any_charge(
    on_dask: list[DaskBackend],
) -> None:
    visits, people = _tables()
    session = dp.Session(epsilon=1, ledger=":memory:")
    v = session.private_frame(visits, privacy_unit=dp.PrivacyUnit("person_id", 8))
    p = session.private_frame(people, privacy_unit=dp.PrivacyUnit("person_id", 1))
    with pytest.raises(dp.SchemaError, match="runs on in-memory pandas frames only"):
        v.merge(p, on="person_id", max_rows=2, rows="dropped").count(epsilon=0.5)
    assert len(session.ledger) == 0
