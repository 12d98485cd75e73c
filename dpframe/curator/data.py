"""Reading a catalog's dataset as the data owner declared it: no kind inferred from the values.

A CSV reader guesses each column's type from every value in it: one missing
age turns ``int64`` into ``float64``, one stray ``"unknown"`` turns a numeric
column into text, and a schema built from those guesses reveals a bit about
single records.  The curator therefore reads every CSV column as text and
converts each value on its own to the kind the catalog declares
(:attr:`~dpframe.curator.catalog.DatasetEntry.kinds`); a value that does not
convert becomes missing, exactly as if it had been missing in the file.  The
engine then applies the same declared kinds (``dtypes=``), so the public
schema shows the declared dtypes whatever the rows hold.

Parquet files carry their column types in the file's own schema (written by
whoever made the file, not guessed from the values); the declared kinds are
applied to them in the same way.

:func:`check_columns` reads only a file's header and refuses a catalog that
leaves a column without a kind, so the curator never starts with one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dpframe.curator.catalog import CatalogError, DatasetEntry
from dpframe.engine.loading import read_table

__all__ = ["FALSE_TEXT", "TRUE_TEXT", "check_columns", "file_columns", "read_declared"]

#: Texts read as True (case and surrounding spaces ignored) in a boolean CSV column.
TRUE_TEXT = frozenset({"true", "1", "1.0"})
#: Texts read as False in a boolean CSV column; any other text is missing.
FALSE_TEXT = frozenset({"false", "0", "0.0"})


def _is_csv(path: Path) -> bool:
    return path.suffix.lower() == ".csv" and not path.is_dir()


def file_columns(path: Path) -> list[str]:
    """The column names of a CSV or Parquet file, from its header only (no row is read).

    Raises:
        CatalogError: the file cannot be read.
    """
    try:
        if _is_csv(path):
            return [str(c) for c in pd.read_csv(path, nrows=0).columns]
        import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

        if path.is_dir():  # a folder of Parquet files (the dask backend)
            import pyarrow.dataset as pads  # type: ignore[import-untyped,unused-ignore]

            schema = pads.dataset(path, format="parquet").schema
        else:
            schema = pq.read_schema(path)
        index = _pandas_index_columns(schema.pandas_metadata)
        return [name for name in schema.names if name not in index]
    except ImportError:
        raise CatalogError("Serving a Parquet file needs pyarrow: pip install pyarrow.") from None
    except (OSError, ValueError) as exc:
        raise CatalogError(
            f"Cannot read the header of {str(path)!r}: {type(exc).__name__}."
        ) from None


def _pandas_index_columns(metadata: Mapping[Any, Any] | None) -> set[str]:
    """The index columns pandas stored in a Parquet file (not data columns)."""
    if not metadata:
        return set()
    return {c for c in metadata.get("index_columns", []) if isinstance(c, str)}


def check_columns(entry: DatasetEntry) -> None:
    """Refuse a dataset whose file has a column without a declared kind, or lacks a declared one.

    Raises:
        CatalogError: naming the columns to declare (in ``dtypes``, ``bounds`` or
            ``categories``) or the declared columns the file does not have.
    """
    columns = file_columns(entry.path)
    where = f"[datasets.{entry.name}]"
    missing = [c for c in entry.kinds if c not in columns]
    if missing:
        raise CatalogError(
            f"{where} declares columns that {entry.path.name} does not have: "
            f"{', '.join(sorted(missing))}."
        )
    undeclared = [c for c in columns if c not in entry.kinds]
    if undeclared:
        raise CatalogError(
            f"{where}: no kind is declared for {', '.join(undeclared)}. Kinds are never "
            "inferred from the values (one stray value would change them): give each column "
            'bounds, categories or a kind in dtypes = { column = "numeric" | "boolean" | '
            '"text" }.'
        )


def _boolean(text: Any) -> bool | None:
    if not isinstance(text, str):
        return None
    word = text.strip().lower()
    return True if word in TRUE_TEXT else (False if word in FALSE_TEXT else None)


def read_declared(entry: DatasetEntry) -> Any:
    """The dataset's rows, each value read on its own as its column's declared kind.

    A CSV is read entirely as text and its boolean columns mapped value by
    value (:data:`TRUE_TEXT`, :data:`FALSE_TEXT`); numeric and text columns are
    converted by the engine's declared kinds when the frame is loaded.

    With ``backend = "dask"`` the Parquet file or folder is opened lazily as
    a dask DataFrame (only the Parquet footers are read here, in the
    curator's process; the rows are read by whoever computes: the cluster's
    workers when a ``distributed.Client`` is active, which checks here that
    the largest partition fits in the workers' memory, else local threads).

    Raises:
        SchemaError: the file cannot be read (the message holds no data).
        CatalogError: the dask backend without dask installed, or a partition
            too large for the cluster's workers.
    """
    if entry.backend == "dask":
        try:
            from dpframe.backends.cluster import ClusterNotReadyError
            from dpframe.backends.dask_backend import read_dask
        except ImportError:
            raise CatalogError(
                "The dask backend needs dask: pip install 'dpframe[dask]'."
            ) from None
        try:
            return read_dask("parquet", entry.path, {})
        except ClusterNotReadyError as exc:  # a partition too large for the workers
            raise CatalogError(f"[datasets.{entry.name}]: {exc}") from None
    if not _is_csv(entry.path):
        frame: pd.DataFrame = read_table(pd.read_parquet, entry.path, {})
        return frame
    text: pd.DataFrame = read_table(pd.read_csv, entry.path, {"dtype": str})
    for column, kind in entry.kinds.items():
        if kind == "boolean" and column in text.columns:
            mapped = text[column].map(_boolean)
            text[column] = pd.Series(mapped, index=text.index, dtype="boolean")
    return text
