"""The Jupyter layer: ``%load_ext dpframe``, magics and the live budget meter."""

from __future__ import annotations

import warnings
from typing import Any

from dpframe.errors import FromLedgerWarning
from dpframe.jupyter import formatters, refusals
from dpframe.jupyter.magics import DPMagics
from dpframe.jupyter.meter import BudgetMeter

__all__ = ["BudgetMeter", "DPMagics", "load_ipython_extension", "unload_ipython_extension"]

_MAGIC_NAMES = ("dp_session", "dp_load", "dp_connect", "dp_budget", "dp_ledger", "dp_explain")


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics, short refusals and results shown with their intervals.

    Shows a meter if a session is in the namespace already.  An answer from
    the ledger is said by the table's caption, the release's repr and the
    meter here, so its warning (:class:`~dpframe.errors.FromLedgerWarning`) is
    filtered out while the extension is loaded (a ``warnings`` filter).
    """
    from dpframe.api.session import Session

    magics = DPMagics(ipython, parent=ipython)
    ipython.register_magics(magics)
    refusals.install(ipython)
    formatters.install(ipython)
    warnings.filterwarnings("ignore", category=FromLedgerWarning)
    if any(isinstance(value, Session) for value in ipython.user_ns.values()):
        from IPython.display import display

        session = magics._require_session("load_ext")
        if session is not None:
            display(magics.meter(session))


def unload_ipython_extension(ipython: Any) -> None:
    """Close the meters and remove the magics: nothing of dpframe's stays registered."""
    refusals.uninstall(ipython)
    formatters.uninstall(ipython)
    warnings.filterwarnings("default", category=FromLedgerWarning)  # said again, once each
    registry = ipython.magics_manager.registry
    magics = registry.pop("DPMagics", None)
    if isinstance(magics, DPMagics):
        magics.close()
    line_magics = ipython.magics_manager.magics["line"]
    for name in _MAGIC_NAMES:
        line_magics.pop(name, None)
