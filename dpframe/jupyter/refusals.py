"""Refusals shown as refusals: a dpframe error in a notebook cell prints its message, no traceback.

dpframe's errors (an exhausted budget, a column without bounds, an unknown
name) explain themselves in their message; the hundred lines of library
frames above it only hide that message.  The handler shows ``Type: message``
as the cell's error (a failed cell still stops "Run All"), keeps the full
traceback for ``%tb``, and leaves every other exception to IPython.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from dpframe.errors import DPError

__all__ = ["install", "uninstall"]

_HINT = "(%tb shows where it was raised)"


def _show_refusal(
    shell: Any,
    etype: type[BaseException],
    value: BaseException,
    tb: TracebackType | None,
    tb_offset: int | None = None,
) -> list[str]:
    """IPython's custom exception handler for :class:`DPError`: the message, no traceback."""
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # for %tb
    shown = [f"{etype.__name__}: {value}", _HINT]
    shell._showtraceback(etype, value, shown)
    return shown


def install(shell: Any) -> bool:
    """Show dpframe's refusals briefly in ``shell``; False if it has a custom handler already."""
    if shell.custom_exceptions and shell.custom_exceptions != (DPError,):
        return False
    shell.set_custom_exc((DPError,), _show_refusal)
    return True


def uninstall(shell: Any) -> None:
    """Give dpframe's errors back to IPython's usual tracebacks."""
    if shell.custom_exceptions == (DPError,):
        shell.set_custom_exc((), None)
