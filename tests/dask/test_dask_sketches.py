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
from tests.dask._support import from_pandas

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
