"""``dpframe ledger backup``: a consistent copy of a ledger, readable by its owner only.

SQLite's online backup API copies the file's pages under one read
transaction, so the copy is the ledger as of one moment even while
sessions or a curator keep writing (a plain ``cp`` of a WAL database can
miss the log's committed pages).  The copy is built in a 0600 temporary file
in the destination folder, checked (``PRAGMA quick_check``), switched to the
rollback journal (one self-contained file), and linked into place; an
existing destination is never overwritten.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from dpframe.accounting.ledger_modes import new_file_name
from dpframe.errors import LedgerError

__all__ = ["backup_file"]


def backup_file(path: str | Path, dest: str | Path) -> Path:
    """Copy the ledger at ``path`` to ``dest`` (a new file, or a folder to put it in).

    Returns:
        The copy's path (mode 0600).

    Raises:
        LedgerError: the ledger cannot be read, the destination exists, or the
            copy cannot be written.
    """
    source = Path(path)
    if not source.is_file():
        raise LedgerError(f"No ledger file at {source}; pass the path of a ledger.sqlite.")
    target = Path(dest)
    if target.is_dir():
        target = target / source.name
    if target.exists():
        raise LedgerError(
            f"{target} exists; a backup never overwrites a file. Choose a new name "
            "(for example with the date in it)."
        )
    tmp = new_file_name(target)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True, timeout=60.0)
        try:
            copy = sqlite3.connect(str(tmp), isolation_level=None)
            try:
                src.backup(copy)
                copy.execute("PRAGMA journal_mode=DELETE")
                if copy.execute("PRAGMA quick_check").fetchall() != [("ok",)]:
                    raise LedgerError(f"The copy of {source} failed its integrity check.")
            finally:
                copy.close()
        finally:
            src.close()
        os.chmod(tmp, 0o600)
        os.link(tmp, target)  # never over a file created meanwhile (FileExistsError)
    except (OSError, sqlite3.Error) as exc:
        raise LedgerError(f"Cannot back up {source} to {target}: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return target
