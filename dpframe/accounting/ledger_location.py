"""Where a ledger lives when none is given: always an absolute path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["default_ledger_path"]


def default_ledger_path() -> Path:
    r"""Where the ledger lives when none is given: always an absolute path.

    ``$DPFRAME_LEDGER`` if set (made absolute, so a later ``cd`` cannot start a
    fresh budget); else the user's data directory: ``$XDG_DATA_HOME/dpframe``
    (default ``~/.local/share/dpframe``) on Linux, ``~/Library/Application
    Support/dpframe`` on macOS and ``%LOCALAPPDATA%\\dpframe`` on Windows.  An
    empty variable counts as unset, and a relative ``$XDG_DATA_HOME`` or
    ``%LOCALAPPDATA%`` is ignored (as the XDG specification says).
    """
    env = _env_path("DPFRAME_LEDGER")
    if env is not None:
        return env.absolute()
    home = Path.home()
    if sys.platform == "win32":
        base = _absolute_env("LOCALAPPDATA") or home / "AppData" / "Local"
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = _absolute_env("XDG_DATA_HOME") or home / ".local" / "share"
    return (base / "dpframe" / "ledger.sqlite").absolute()


def _env_path(name: str) -> Path | None:
    """The path in environment variable ``name``; None when unset or empty."""
    value = os.environ.get(name, "")
    return Path(value).expanduser() if value.strip() else None


def _absolute_env(name: str) -> Path | None:
    """The path in ``name`` if it is absolute; None otherwise (unset, empty or relative)."""
    path = _env_path(name)
    return path if path is not None and path.is_absolute() else None
