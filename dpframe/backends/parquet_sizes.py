"""How much memory the largest partition of a Parquet data set needs, from its footers alone.

Used when a Parquet data set is opened on Dask (:func:`~dpframe.backends.dask_backend.read_dask`)
to refuse partitions too large for the workers before anything is charged
(:func:`~dpframe.backends.cluster.check_partition_memory`).  Reads only the
files' metadata (row counts and uncompressed sizes of the row groups): the
sizes are facts about the files the data owner wrote, not query answers.

The estimate: a partition holds at least one row group, and either at least
one whole file (when there are no more partitions than files) or an even
share of the data (when dask split the files).  A row group is counted at
the larger of its uncompressed Parquet size and its rows times a width per
row from the column types (8 bytes for a number or date, 1 for a boolean,
16 for text or anything else: Arrow's offsets and a short string, or a
pandas pointer), since dictionary-encoded text is far smaller on disk than
in memory.  It is an estimate, not a bound.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["largest_partition_bytes", "row_width"]

_OTHER_WIDTH = 16


def row_width(dtypes: Iterable[Any]) -> int:
    """Bytes per row in memory for columns of ``dtypes`` (see the module docstring)."""
    width = 0
    for dtype in dtypes:
        if dtype == np.bool_:
            width += 1
        elif isinstance(dtype, np.dtype) and dtype.kind in "iufmM":
            width += dtype.itemsize
        else:
            width += _OTHER_WIDTH
    return width


def largest_partition_bytes(
    path: str | os.PathLike[str], npartitions: int, meta: pd.DataFrame
) -> int:
    """The estimated in-memory size of the largest partition (0 when unknown).

    Args:
        path: what ``read_parquet`` opened (a file, a directory or a glob).
        npartitions: the number of partitions dask made.
        meta: the frame's empty metadata (its columns and dtypes).
    """
    try:
        import pyarrow.dataset as ds  # type: ignore[import-untyped,unused-ignore]

        dataset = ds.dataset(os.fspath(path), format="parquet")
        width = row_width(meta.dtypes)
        files: list[int] = []
        largest_group = 0
        for fragment in dataset.get_fragments():
            metadata = fragment.metadata
            total = 0
            for i in range(metadata.num_row_groups):
                group = metadata.row_group(i)
                size = max(int(group.total_byte_size), int(group.num_rows) * width)
                largest_group = max(largest_group, size)
                total += size
            files.append(total)
    except Exception:  # a glob or a remote store pyarrow cannot list: no estimate
        return 0
    if not files:
        return 0
    if npartitions <= len(files):
        return max(max(files), largest_group)
    return max(sum(files) // max(npartitions, 1), largest_group)
