"""Dask frames get the same row sketches as pandas frames (issue 27 part 3).

Each partition is sketched on its worker and the partial sketches are merged
in a tree of tasks: the result is the pandas sketch of the same rows, however
they are partitioned, so a pandas near copy of data first loaded with Dask (or
the other way round) is recognized.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting.ledger_sketches import sketch_path
from dpframe.backends.dask_backend import DaskBackend
from dpframe.backends.data_sketch import SketchKey, sketch_frame
from dpframe.noise import SecureRandom
from tests.dask._support import collect, from_pandas

KEY = SketchKey(bytes(range(32)))


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(9)
    n = 4000
    data: pd.DataFrame = pd.DataFrame(
        {
            "id": np.arange(n),
            "score": rng.random(n),
            "group": pd.Categorical(rng.choice(["a", "b", "c"], n)),
            "flag": rng.random(n) < 0.3,
        }
    )
    return data


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_partitions_sketched_on_the_workers_merge_to_the_pandas_sketch(
    dask_client: Any, frame: pd.DataFrame, partitions: int
) -> None:
    backend = DaskBackend(from_pandas(frame, partitions))
    on_dask = backend.data_sketch(KEY)
    in_memory = sketch_frame(frame, KEY)
    assert on_dask.entries == in_memory.entries
    assert on_dask.rows[: on_dask.entries] == in_memory.rows[: in_memory.entries]
    assert {n: (c.digest, c.tags is None) for n, c in on_dask.columns.items()} == {
        n: (c.digest, c.tags is None) for n, c in in_memory.columns.items()
    }
    assert on_dask.identity == KEY.identity(backend.fingerprint())  # the Dask backend's


def test_a_dask_load_records_a_sketch_and_a_pandas_near_copy_is_recognized(
    dask_client: Any, frame: pd.DataFrame, ledger_path: Path
) -> None:
    first = dp.Session(epsilon=1, ledger=ledger_path, name="cluster")
    first.private_frame(from_pandas(frame, 3)).count(epsilon=0.1)
    conn = sqlite3.connect(sketch_path(ledger_path))
    parts = sorted(conn.execute("SELECT part, column_name FROM sketches").fetchall())
    conn.close()
    assert parts == [("column", "id"), ("column", "score"), ("rows", "")]
    sample = frame.sample(frac=0.99, random_state=3)
    with pytest.warns(dp.BudgetResetWarning, match=r"'cluster': 1 release \(rows in common"):
        dp.Session(epsilon=1, ledger=ledger_path, name="laptop").private_frame(sample)


@pytest.mark.parametrize(
    ("partitions", "limit", "over"), [(1, 1, False), (3, 1, False), (4, 1, True)]
)
def test_a_sketch_with_units_counts_them_in_the_same_pass_for_the_bounding(
    dask_client: Any,
    frame: pd.DataFrame,
    partitions: int,
    limit: int,
    over: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = frame if not over else pd.concat([frame, frame.head(10)], ignore_index=True)
    backend = DaskBackend(from_pandas(data, partitions))
    with_units = backend.data_sketch(KEY, ("id", limit))
    alone = DaskBackend(from_pandas(data, partitions)).data_sketch(KEY)
    assert with_units.rows == alone.rows and with_units.identity == alone.identity
    assert backend._over == {("id", limit): over}

    def counted_again(*args: Any) -> None:
        raise AssertionError("the rows per unit were counted again")

    monkeypatch.setattr("dpframe.backends.dask_backend.partition_counts", counted_again)
    bounded = backend.bound_contributions("id", limit, SecureRandom())
    kept = collect(bounded._frame)
    assert (bounded._frame is backend._frame) is (not over)  # no shuffle when nothing is over
    assert len(kept) == len(frame) and kept["id"].value_counts().max() == 1
    with pytest.raises(AssertionError, match="counted again"):  # another bound is counted
        backend.bound_contributions("id", limit + 1, SecureRandom())


def test_a_dask_load_with_a_unit_reads_the_rows_once_for_sketch_and_bound(
    dask_client: Any, frame: pd.DataFrame, ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def counted_again(*args: Any) -> None:
        raise AssertionError("the rows per unit were counted again")

    monkeypatch.setattr("dpframe.backends.dask_backend.partition_counts", counted_again)
    session = dp.Session(epsilon=1, ledger=ledger_path)
    pf = session.private_frame(from_pandas(frame, 3), privacy_unit=dp.PrivacyUnit("id", max_rows=1))
    assert 3900 < pf.count(epsilon=0.5) < 4100
