r"""The secret that keys what a file ledger records about data: kept outside the ledger's folder.

A file ledger names each dataset by a *keyed* identity, and its sketch file
(:mod:`dpframe.accounting.ledger_sketches`) holds keyed tags only, so that
whoever copies the ledger's folder (a backup, a notebook folder, a file sent
to an auditor) cannot test guesses about the data against them: without the
key, a guessed row count or column is worth nothing.  The key is 32 random
bytes, one per user, in the user's configuration folder:

* ``$DPFRAME_KEY`` if set (a file path: point a team's processes at one key
  file to share a ledger's guard rails between users);
* else ``$XDG_CONFIG_HOME/dpframe/key`` (default ``~/.config/dpframe/key``) on
  Linux and macOS, ``%APPDATA%\dpframe\key`` on Windows: another folder than
  the default ledger's (``~/.local/share/dpframe``, ``~/Library/Application
  Support/dpframe``, ``%LOCALAPPDATA%\dpframe``).

It is created on first use (64 hexadecimal digits and a newline, mode 0600,
in a folder created 0700), written to a private temporary file and linked
into place, so two processes creating it at once agree on one key.  An
existing key file open to other users is set to 0600 with a message.  An
in-memory ledger uses a new random key of its own and touches no file; a
curator names its data by catalog name and version and never reads a key.

Losing the key file loses no spend (a budget belongs to a session name), only
the links: releases recorded under the old key's identities and the old
sketches no longer match the data, so the :class:`~dpframe.errors.BudgetResetWarning`
cannot name the sessions that spent on it.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from dpframe.accounting.ledger_modes import link_into_place, new_file_name
from dpframe.errors import LedgerError

__all__ = ["KEY_BYTES", "KeyFile", "default_key_path", "load_key"]

#: The key's length in bytes.
KEY_BYTES = 32


def default_key_path() -> Path:
    """Where the key lives: ``$DPFRAME_KEY``, else the user's configuration folder."""
    env = os.environ.get("DPFRAME_KEY", "")
    if env.strip():
        return Path(env).expanduser().absolute()
    home = Path.home()
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA", "")
        base = Path(appdata) if appdata.strip() and Path(appdata).is_absolute() else None
        base = base or home / "AppData" / "Roaming"
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        base = Path(xdg) if xdg.strip() and Path(xdg).is_absolute() else home / ".config"
    return (base / "dpframe" / "key").absolute()


class KeyFile:
    """The key read (or created) from ``path``, and the messages about its file mode.

    Args:
        path: the key file (None: :func:`default_key_path`).

    Attributes:
        path: the key file.
        secret: the key's 32 bytes.
        messages: one line per file that was open to other users (made 0600,
            or not ours to change), for the caller to warn or log.

    Raises:
        LedgerError: the key file cannot be created or read, or does not hold
            64 hexadecimal digits (it is then left unchanged).
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = default_key_path() if path is None else path
        self.messages: list[str] = []
        if not self.path.exists():
            _create(self.path)
        self.secret = _read(self.path)
        self.messages = _tighten(self.path)


def load_key(path: Path | None = None) -> bytes:
    """The key in ``path`` (created if missing); see :class:`KeyFile`."""
    return KeyFile(path).secret


def _create(path: Path) -> None:
    """Write a new key next to ``path`` and link it into place (never over a file)."""
    tmp = new_file_name(path)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, (secrets.token_bytes(KEY_BYTES).hex() + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        link_into_place(tmp, path)
    except OSError as exc:
        raise LedgerError(
            f"Cannot create dpframe's key file {path}: {exc}. Set DPFRAME_KEY to a file path "
            "in a folder you can write (the key keys what ledgers record about data)."
        ) from None
    finally:
        tmp.unlink(missing_ok=True)


def _read(path: Path) -> bytes:
    try:
        text = path.read_text(encoding="ascii").strip()
        secret = bytes.fromhex(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not hexadecimal text"
        raise LedgerError(
            f"Cannot read dpframe's key file {path} ({reason}). It should hold 64 hexadecimal "
            "digits. Restore it from a backup; or move it away to let dpframe make a new key "
            "(spend is kept, but the guard rails no longer recognize data loaded before)."
        ) from None
    if len(secret) != KEY_BYTES:
        raise LedgerError(
            f"dpframe's key file {path} holds {len(secret)} bytes, not {KEY_BYTES}. Restore it "
            "from a backup; or move it away to let dpframe make a new key (spend is kept, but "
            "the guard rails no longer recognize data loaded before)."
        )
    return secret


def _tighten(path: Path) -> list[str]:
    """Set the key file to 0600 if others can read it; one message per change."""
    if os.name != "posix":  # pragma: no cover - POSIX modes only
        return []
    try:
        if not path.stat().st_mode & 0o077:
            return []
        os.chmod(path, 0o600)
    except PermissionError:
        return [
            f"dpframe's key file {path} is readable by others and not ours to change; ask its "
            "owner to run chmod 600 on it."
        ]
    return [f"dpframe's key file {path} was readable by others; it is now 0600."]
