"""Typed entry points to dask for the tests (dask's own functions are untyped)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask.dataframe as dd
import pandas as pd

_from_pandas: Callable[..., Any] = dd.from_pandas
_concat: Callable[..., Any] = dd.concat


def from_pandas(frame: pd.DataFrame, npartitions: int) -> Any:
    """A dask DataFrame of ``frame`` in ``npartitions`` contiguous partitions."""
    return _from_pandas(frame, npartitions=npartitions, sort=False)


def concat(frames: list[Any]) -> Any:
    """The partitions of ``frames``, one after the other."""
    return _concat(frames)


def collect(frame: Any) -> pd.DataFrame:
    """All rows of a dask DataFrame, in this process (tests only)."""
    compute: Callable[[], pd.DataFrame] = frame.compute
    return compute()
