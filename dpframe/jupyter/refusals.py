"""Refusals shown as refusals: a dpframe error in a notebook cell prints its message, no traceback.

dpframe's errors (an exhausted budget, a column without bounds, an unknown
name) explain themselves in their message; the hundred lines of library
frames above it only hide that message.  The handler shows ``Type: message``
as the cell's error (a failed cell still stops "Run All"), keeps the full
traceback for ``%tb``, and leaves every other exception to IPython.

pandas functions that reject a private frame by type (``pd.concat([pf])``,
``pd.merge(df, pf)``) raise their own ``TypeError`` naming dpframe's class;
the handler adds what to write instead (see :mod:`dpframe.api.teaching`).
Any other ``TypeError`` gets IPython's usual traceback.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from dpframe.api.teaching import refusal_for_function
from dpframe.errors import DPError

__all__ = ["install", "uninstall"]

_HINT = "(%tb shows where it was raised)"
_HANDLED = (DPError, TypeError)


def _pandas_function(tb: TracebackType | None) -> tuple[str, str] | None:
    """The first pandas function in the traceback (what the user called), as (name, module)."""
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        if module.split(".")[0] == "pandas":
            return tb.tb_frame.f_code.co_name, module
        tb = tb.tb_next
    return None


def _show_refusal(
    shell: Any,
    etype: type[BaseException],
    value: BaseException,
    tb: TracebackType | None,
    tb_offset: int | None = None,
) -> list[str] | None:
    """IPython's custom exception handler: a refusal as its message, no traceback.

    pandas' type refusals of a private frame are shown as what to write
    instead; every other ``TypeError`` as IPython shows it.
    """
    if not isinstance(value, DPError):
        called = _pandas_function(tb)
        if called is None or "dpframe.api." not in str(value):
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
            return None
        value = refusal_for_function(*called)
        etype = type(value)
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # for %tb
    shown = [f"{etype.__name__}: {value}", _HINT]
    shell._showtraceback(etype, value, shown)
    return shown


def install(shell: Any) -> bool:
    """Show dpframe's refusals briefly in ``shell``; False if it has a custom handler already."""
    if shell.custom_exceptions and shell.custom_exceptions != _HANDLED:
        return False
    shell.set_custom_exc(_HANDLED, _show_refusal)
    return True


def uninstall(shell: Any) -> None:
    """Give dpframe's errors back to IPython's usual tracebacks."""
    if shell.custom_exceptions == _HANDLED:
        shell.set_custom_exc((), None)
