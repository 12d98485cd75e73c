"""Plan evaluation engines (pandas is the embedded default)."""

from dpframe.backends.base import MAX_ROWS, Backend, Measure
from dpframe.backends.pandas_backend import PandasBackend

__all__ = ["MAX_ROWS", "Backend", "Measure", "PandasBackend"]
