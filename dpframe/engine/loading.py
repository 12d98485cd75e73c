"""Loading private data: reading files, checking the privacy unit and its limits.

Nothing here reads more than the file the analyst named; errors say what is
wrong without echoing private values.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpframe.errors import InvalidArgumentError, SchemaError

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskDataFrame

__all__ = ["check_groups", "check_unit", "read_data", "read_table"]


def read_table(
    reader: Callable[..., pd.DataFrame], path: str | os.PathLike[str], kwargs: dict[str, Any]
) -> pd.DataFrame:
    """Read a file with a pandas reader; failures become a :class:`SchemaError` without data."""
    try:
        return reader(path, **kwargs)
    except ImportError:
        raise SchemaError("Reading this format needs pyarrow: pip install pyarrow.") from None
    except (OSError, ValueError) as exc:
        raise SchemaError(f"Cannot read {os.fspath(path)!r}: {type(exc).__name__}.") from None
    except TypeError:
        raise InvalidArgumentError(
            f"Cannot read {os.fspath(path)!r}: the reader refused its arguments "
            f"({', '.join(sorted(kwargs)) or 'none'}); check their names and types."
        ) from None


def read_data(
    reader: Callable[..., pd.DataFrame],
    kind: str,
    path: str | os.PathLike[str],
    backend: str,
    kwargs: dict[str, Any],
) -> pd.DataFrame | DaskDataFrame:
    """Read with pandas, or open lazily with dask for ``backend="dask"``."""
    if backend == "pandas":
        return read_table(reader, path, kwargs)
    if backend != "dask":
        raise InvalidArgumentError(f"backend must be 'pandas' or 'dask', not {backend!r}.")
    try:
        from dpframe.backends.dask_backend import read_dask
    except ImportError:
        raise InvalidArgumentError(
            "backend='dask' needs dask: pip install 'dpframe[dask]'."
        ) from None
    return read_dask(kind, path, kwargs)


def check_groups(unit: tuple[str, int] | None, max_groups: int | None) -> int:
    """The most keys one unit may add to a discovered key set (0: row-level privacy)."""
    if max_groups is None:
        return 0 if unit is None else unit[1]
    if unit is None:
        raise SchemaError("max_groups_per_unit= needs privacy_unit= and max_rows_per_unit=.")
    if isinstance(max_groups, bool) or not isinstance(max_groups, int) or max_groups < 1:
        raise SchemaError("max_groups_per_unit must be an integer >= 1.")
    return min(max_groups, unit[1])  # k rows can never reach more than k keys


def check_unit(
    df: pd.DataFrame, privacy_unit: str | None, max_rows_per_unit: int | None
) -> tuple[str, int] | None:
    """The privacy unit column and its row limit, or None for row-level privacy."""
    if privacy_unit is None and max_rows_per_unit is None:
        return None
    if privacy_unit is None or max_rows_per_unit is None:
        raise SchemaError("Give privacy_unit= and max_rows_per_unit= together.")
    if privacy_unit not in df.columns:
        raise SchemaError(
            f"privacy_unit {privacy_unit!r} is not a column. Columns: "
            f"{', '.join(map(str, df.columns))}."
        )
    if (
        isinstance(max_rows_per_unit, bool)
        or not isinstance(max_rows_per_unit, int)
        or max_rows_per_unit < 1
    ):
        raise SchemaError("max_rows_per_unit must be an integer >= 1.")
    return privacy_unit, max_rows_per_unit
