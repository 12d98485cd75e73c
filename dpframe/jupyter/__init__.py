"""The Jupyter layer: ``%load_ext dpframe``, magics and the live budget meter."""

from __future__ import annotations

from typing import Any

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
    turned off while the extension is loaded.
    """
    from dpframe.api import notices
    from dpframe.api.session import Session

    magics = DPMagics(ipython, parent=ipython)
    ipython.register_magics(magics)
    refusals.install(ipython)
    formatters.install(ipython)
    ipython.__dict__.setdefault("_dpframe_quiet_reruns", notices.quiet_reruns(True))
    if any(isinstance(value, Session) for value in ipython.user_ns.values()):
        from IPython.display import display

        session = magics._require_session("load_ext")
        if session is not None:
            display(magics.meter(session))


def unload_ipython_extension(ipython: Any) -> None:
    """Close the meters and remove the magics: nothing of dpframe's stays registered."""
    from dpframe.api import notices

    refusals.uninstall(ipython)
    formatters.uninstall(ipython)
    notices.quiet_reruns(ipython.__dict__.pop("_dpframe_quiet_reruns", False))
    registry = ipython.magics_manager.registry
    magics = registry.pop("DPMagics", None)
    if isinstance(magics, DPMagics):
        magics.close()
    line_magics = ipython.magics_manager.magics["line"]
    for name in _MAGIC_NAMES:
        line_magics.pop(name, None)
