"""Private joins with Dask sides (issue 32): matched and bounded on the cluster, never collected."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.api.verbs.joins import auto_level
from dpframe.backends.dask_backend import DaskBackend
from dpframe.engine.joins import JoinedRows
from dpframe.plan.nodes import lineage
from tests.dask._support import collect


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


def _loaded(session: dp.Session, limit: int = 8) -> tuple[dp.PrivateFrame, dp.PrivateFrame]:
    visits, people = _tables()
    v = session.private_frame(
        visits, bounds={"cost": (0, 100)}, privacy_unit=dp.PrivacyUnit("person_id", limit)
    )
    p = session.private_frame(
        people, categories={"region": ["n", "s"]}, privacy_unit=dp.PrivacyUnit("person_id", 1)
    )
    return v, p


def _rows(session: dp.Session, frame: dp.PrivateFrame) -> pd.DataFrame:
    """The rows of a join's Dask backend, collected here by the test (never by dpframe)."""
    backend: Any = session._path.source_backend(lineage(frame._handle.plan)[0])
    assert isinstance(backend, JoinedRows) and not backend.holds_rows
    rows = backend.materialized()
    assert isinstance(rows, DaskBackend)  # on the cluster
    collected: pd.DataFrame = collect(rows.lazy_rows)
    return collected


def _sorted(rows: pd.DataFrame) -> list[tuple[float, float]]:
    """The rows' (ID, cost) pairs in order (a missing ID as -1: NaN does not sort)."""
    ids = rows["person_id"].fillna(-1).to_numpy()
    return sorted((float(a), float(b)) for a, b in zip(ids, rows["cost"].to_numpy(), strict=True))


@pytest.mark.parametrize("how", ["inner", "left"])
def test_dropped_rows_on_dask_are_the_other_half_of_the_one_draw(
    on_dask: list[DaskBackend], how: str
) -> None:
    session = dp.Session(epsilon=10_000, ledger=":memory:")
    v, p = _loaded(session)
    kept = v.merge(p, on="person_id", how=how, max_rows=3)
    dropped = v.merge(p, on="person_id", how=how, max_rows=3, rows="dropped")
    everything = v.merge(p, on="person_id", how=how)  # the default bound: nothing dropped
    # how many rows the cut drops per person does not depend on which: exact at a large ε
    assert float(dropped.count(epsilon=1000)) == _truth(how, 8)[0] - _truth(how, 3)[0]
    assert float(kept.count(epsilon=1000)) == _truth(how, 3)[0]
    assert dropped.count(epsilon=1).scale == pytest.approx(8 - 3)  # at most 5 per person
    everything.count(epsilon=1)
    kept_rows, dropped_rows = _rows(session, kept), _rows(session, dropped)
    assert _sorted(pd.concat([kept_rows, dropped_rows])) == _sorted(_rows(session, everything))
    known = kept_rows.dropna(subset=["person_id"])
    assert known.groupby("person_id").size().max() <= 3  # the kept half is within the bound
    assert dropped_rows["person_id"].notna().all()  # a missing ID is one row: never dropped


def test_rows_per_id_on_dask_are_pandas_rows_per_id(on_dask: list[DaskBackend]) -> None:
    session = dp.Session(epsilon=10_000, ledger=":memory:")
    v, p = _loaded(session)
    per_id = v.merge(p, on="person_id", how="left", max_rows=2, rows="per_id")
    assert list(per_id.columns) == ["rows"]
    assert per_id.count(epsilon=1).scale == 1  # one row per person
    visits, _ = _tables()
    known = visits.dropna(subset=["person_id"]).groupby("person_id").size().clip(upper=8)
    truth = sorted([*known.tolist(), *[1] * 5])  # 5 rows with a missing ID: one ID each
    assert sorted(_rows_per_id(session, per_id)) == truth
    assert float(per_id.count(epsilon=1000)) == len(truth)


def _rows_per_id(session: dp.Session, frame: dp.PrivateFrame) -> list[int]:
    backend: Any = session._path.source_backend(lineage(frame._handle.plan)[0])
    rows = backend.materialized()
    assert isinstance(rows, DaskBackend)
    return [int(x) for x in collect(rows.lazy_rows)["rows"]]


def test_max_rows_auto_on_dask_chooses_what_pandas_chooses(on_dask: list[DaskBackend]) -> None:
    session = dp.Session(epsilon=10_000, ledger=":memory:")
    v, p = _loaded(session)
    joined = v.merge(p, on="person_id", max_rows="auto", bound_epsilon=1000)
    count, quantile = session.ledger["query"]
    assert count.startswith("count() of the rows per ID")
    assert quantile.startswith("quantile(rows, q=[0.99], 8 candidates) of the rows per ID")
    assert session.spent == dp.Budget(1000)
    chosen = lineage(joined._handle.plan)[0].unit_rows
    assert chosen == _exact_auto_bound()  # at ε = 1000 the exact quantile, as on pandas
    assert float(joined.count(epsilon=1000)) == _truth("inner", chosen)[0]
    assert joined.count(epsilon=1).scale == pytest.approx(chosen)


def _exact_auto_bound() -> int:
    """The smallest candidate bound that keeps a share auto_level(n) of the inner join's IDs whole.

    The same formula pins the pandas backend's choice (the next test), so both
    backends choose alike.
    """
    visits, people = _tables()
    known = visits.dropna(subset=["person_id"]).groupby("person_id").size().clip(upper=8)
    per_id = known[known.index.isin(set(people["person_id"]))]
    level = auto_level(len(per_id))  # 0.99 for these few people
    return min(c for c in range(1, 9) if (per_id <= c).mean() >= level)


def test_max_rows_auto_on_pandas_chooses_the_same_exact_quantile() -> None:
    session = dp.Session(epsilon=10_000, ledger=":memory:")
    v, p = _loaded(session)  # no on_dask: in-memory pandas frames
    joined = v.merge(p, on="person_id", max_rows="auto", bound_epsilon=1000)
    assert lineage(joined._handle.plan)[0].unit_rows == _exact_auto_bound()
    backend: Any = session._path.source_backend(lineage(joined._handle.plan)[0])
    assert backend.holds_rows  # the pandas path indeed


@pytest.mark.parametrize("how", ["inner", "left"])
@pytest.mark.parametrize(("ids", "right_parts"), [("int64", 1), ("float64", 1), ("float64", 3)])
def test_a_join_grouped_by_a_right_column_counts_what_pandas_counts(
    dask_client: Any, how: str, ids: str, right_parts: int
) -> None:
    """People in one partition (sent whole to each visits partition: integer IDs looked up,
    float IDs by pandas' merge) or three (Dask's merge); float visits keep 5 missing IDs,
    which a left join adds back (every column present, so a projection on a people
    column reads as many partitions as the others)."""
    from tests.dask._support import from_pandas

    visits, people = _tables()
    if ids == "int64":
        visits = visits.dropna(subset=["person_id"])
    visits = visits.astype({"person_id": ids})
    people = people.astype({"person_id": ids})
    session = dp.Session(epsilon=10_000, ledger=":memory:")
    v = session.private_frame(
        from_pandas(visits, 4),
        bounds={"cost": (0, 100)},
        privacy_unit=dp.PrivacyUnit("person_id", 40),
    )
    p = session.private_frame(
        from_pandas(people, right_parts),
        categories={"region": ["n", "s"]},
        privacy_unit=dp.PrivacyUnit("person_id", 1),
    )
    joined = v.merge(p, on="person_id", how=how)
    matched = visits.dropna(subset=["person_id"]).merge(people, on="person_id", how=how)
    unmatched = visits["person_id"].isna().sum() if how == "left" else 0
    assert float(joined.count(epsilon=1000)) == len(matched) + unmatched
    counts = joined.groupby("region")["cost"].count(epsilon=1000)  # scale 40/1000: exact
    expected = matched.groupby("region")["cost"].count()
    for region in ("n", "s"):
        assert float(counts[region]) == expected[region]
    source = lineage(joined._handle.plan)[0]
    backend: Any = session._path.source_backend(source)
    assert isinstance(backend.materialized(), DaskBackend)
