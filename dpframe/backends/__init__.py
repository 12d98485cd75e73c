"""Plan evaluation engines (pandas is the embedded default)."""

from dpframe.backends.base import MAX_ROWS, Backend
from dpframe.backends.pandas_backend import PandasBackend
from dpframe.plan.measures import Measure

__all__ = ["MAX_ROWS", "Backend", "Measure", "PandasBackend"]
