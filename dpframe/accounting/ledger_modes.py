"""A ledger's files are its owner's only: 0600 files in a folder dpframe creates 0700.

A ledger holds every release of its sessions (the released values too), so
another local user must not read it.  A new ledger file is created 0600
(:func:`dpframe.accounting.ledger_schema.create_file`), and SQLite gives its
``-wal``, ``-shm`` and ``-journal`` files the database file's mode.  This
module covers the rest, on POSIX systems, for embedded sessions and the
curator alike: a folder dpframe creates for a ledger is 0700, and an existing
ledger file readable or writable by others (made by an older dpframe, which
created them 0644, or copied by hand) is set to 0600, with a message.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["SIDE_FILES", "make_folder", "tighten_files"]

#: SQLite's files beside a database file.
SIDE_FILES = ("-wal", "-shm", "-journal")


def make_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) if missing; the folder itself 0700.

    An existing folder is left as it is (it may be the user's project folder).

    Raises:
        OSError: the folder cannot be created.
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)


def tighten_files(path: Path) -> list[str]:
    """Set the ledger ``path`` and its SQLite side files to 0600 where others can read them.

    Returns:
        One message per file that was open to others: made 0600, or not ours
        to change (the caller warns or logs them).
    """
    if os.name != "posix":  # pragma: no cover - POSIX modes only
        return []
    messages = []
    for name in (path, *(path.with_name(path.name + s) for s in SIDE_FILES)):
        try:
            if not name.exists() or not name.stat().st_mode & 0o077:
                continue
            os.chmod(name, 0o600)
            messages.append(f"The ledger file {name} was readable by others; it is now 0600.")
        except PermissionError:
            messages.append(
                f"The ledger file {name} is readable by others and not ours to change; "
                "ask its owner to run chmod 600 on it."
            )
    return messages


def new_file_name(path: Path) -> Path:
    """A private temporary name beside ``path`` for a file made whole before it appears."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.new")


def link_into_place(tmp: Path, path: Path) -> None:
    """Make the finished ``tmp`` appear as ``path``, never over an existing file.

    Two processes creating ``path`` at once agree on one file: the second
    link fails and that process uses the first one's.  On a file system
    without hard links, ``tmp`` is moved into place if ``path`` is still missing.
    """
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # created meanwhile by another process: use that one
    except OSError:
        if not path.exists():  # a file system without hard links
            os.replace(tmp, path)
