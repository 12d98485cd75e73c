"""dpframe: differentially private exploration of pandas DataFrames.

>>> import dpframe as dp
>>> session = dp.Session(epsilon=1.0, ledger=":memory:")

See the README for the threat model: in embedded mode the data lives in the
analyst's process, so dpframe guards an honest analyst against accidental
disclosure; only curator mode protects against a hostile one.
"""

from types import ModuleType
from typing import TYPE_CHECKING

import dpframe.result_accessors  # noqa: F401  (registers the .dp accessors with pandas)
from dpframe.api.frame import PrivateFrame
from dpframe.api.functions import crosstab, cut, qcut
from dpframe.api.groupby import PrivateGroupBy
from dpframe.api.series import PrivateSeries
from dpframe.api.session import Session
from dpframe.engine.session import ReleaseEvent
from dpframe.errors import (
    BudgetExceededError,
    BudgetResetWarning,
    DiscoveredKeysWarning,
    DPError,
    FromLedgerWarning,
    InvalidArgumentError,
    InvalidBudgetError,
    LedgerError,
    PrivacyViolationError,
    QueryFailedError,
    ResourceLimitError,
    SchemaError,
)
from dpframe.mechanisms.answers.results import GroupedRelease, Release, ci
from dpframe.mechanisms.synth.synth_report import synth_report
from dpframe.mechanisms.tables.consistency import consistent
from dpframe.plan.expressions import col, lit
from dpframe.plan.parameters import Accounting, Analysis, Privacy, PrivacyUnit
from dpframe.plan.privacy import Budget
from dpframe.plotting import plot
from dpframe.remote.client import Connection, RemoteSession, connect
from dpframe.synth_plot import synth_heatmap

if TYPE_CHECKING:
    from dpframe import audit

__all__ = [
    "Accounting",
    "Analysis",
    "Budget",
    "BudgetExceededError",
    "BudgetResetWarning",
    "Connection",
    "DPError",
    "DiscoveredKeysWarning",
    "FromLedgerWarning",
    "GroupedRelease",
    "InvalidArgumentError",
    "InvalidBudgetError",
    "LedgerError",
    "Privacy",
    "PrivacyUnit",
    "PrivacyViolationError",
    "PrivateFrame",
    "PrivateGroupBy",
    "PrivateSeries",
    "QueryFailedError",
    "Release",
    "ReleaseEvent",
    "RemoteSession",
    "ResourceLimitError",
    "SchemaError",
    "Session",
    "audit",
    "ci",
    "col",
    "connect",
    "consistent",
    "crosstab",
    "cut",
    "lit",
    "plot",
    "qcut",
    "synth_heatmap",
    "synth_report",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> ModuleType:
    """``dp.audit``, imported on first use (it is not needed to release anything)."""
    if name == "audit":
        import importlib

        return importlib.import_module("dpframe.audit")
    raise AttributeError(f"module 'dpframe' has no attribute {name!r}")


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext dpframe``: register the magics and the live budget meter."""
    from dpframe.jupyter import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext dpframe``: remove the magics and close the meters."""
    from dpframe.jupyter import unload_ipython_extension as unload

    unload(ipython)
