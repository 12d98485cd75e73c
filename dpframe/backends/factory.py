"""The backend for a DataFrame: pandas in memory, or Dask on its cluster.

A pandas DataFrame gets :class:`~dpframe.backends.pandas_backend.PandasBackend`,
a dask DataFrame gets :class:`~dpframe.backends.dask_backend.DaskBackend`
(imported only then: ``import dpframe`` never imports dask).
"""

from __future__ import annotations

import pandas as pd

from dpframe.backends.base import Backend, is_dask_frame
from dpframe.errors import SchemaError

__all__ = ["make_backend"]


def make_backend(data: object) -> Backend:
    """The backend for ``data``: a pandas DataFrame or a dask DataFrame.

    Raises:
        SchemaError: for anything else, or a frame without rows or columns.
    """
    if is_dask_frame(data):
        from dpframe.backends.dask_backend import DaskBackend

        return DaskBackend(data)  # type: ignore[arg-type]  # checked by is_dask_frame
    if not isinstance(data, pd.DataFrame):
        raise SchemaError("private_frame() needs a pandas DataFrame (or a dask DataFrame).")
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise SchemaError("The DataFrame is empty; there is nothing to protect or query.")
    from dpframe.backends.pandas_backend import PandasBackend

    return PandasBackend(data)
