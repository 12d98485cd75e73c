"""What a ledger keeps about the data it names: the key that keys it, and the sketch file.

Every :class:`~dpframe.accounting.ledger.Ledger` has one (``ledger.traces``),
and both parts are opened at first use only: a session that never loads data
from this process (a curator names its data by catalog name and version)
reads no key and makes no sketch file.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import warnings
from pathlib import Path

from dpframe.accounting.ledger_key import KEY_BYTES, KeyFile
from dpframe.accounting.ledger_sketches import SketchStore, sketch_path
from dpframe.errors import LedgerError

__all__ = ["DataTraces"]

SAME_FOLDER = (
    "dpframe's key file {key} is in the folder of the ledger {ledger}: a copy of the folder "
    "carries both, and the key is what keeps the ledger's data identities and sketches from "
    "being checked against guesses. Keep the key elsewhere (DPFRAME_KEY) or the ledger "
    "elsewhere (ledger=, DPFRAME_LEDGER)."
)
STORE_FAILED = (
    "The sketch file {path} cannot be used ({exc}); data loaded now is not compared with "
    "data other sessions have spent on (no BudgetResetWarning). The file holds only those "
    "sketches: move it away and dpframe makes a new one."
)


class DataTraces:
    """The key and the sketch file of the ledger at ``path`` (``":memory:"``: no file).

    Args:
        path: the ledger's path, or ``":memory:"``.
        wal: the ledger uses write-ahead logging (so the sketch file may).
    """

    def __init__(self, path: str, *, wal: bool = False) -> None:
        self.path = path
        self._wal = wal
        self._lock = threading.Lock()
        self._key: bytes | None = None
        self._store: SketchStore | None = None
        self._failed = False

    @property
    def key(self) -> bytes:
        """The secret that keys what the ledger records about data (32 bytes).

        A file ledger's is the user's key file (:mod:`~dpframe.accounting.ledger_key`,
        created on first use, outside the ledger's folder: a warning says so
        when it is not); an in-memory ledger's is random and its own.

        Raises:
            LedgerError: the key file cannot be created or read.
        """
        with self._lock:
            if self._key is None:
                if self.path == ":memory:":
                    self._key = secrets.token_bytes(KEY_BYTES)
                    return self._key
                found = KeyFile()
                messages = list(found.messages)
                if found.path.parent.resolve() == Path(self.path).parent.resolve():
                    messages.append(SAME_FOLDER.format(key=found.path, ledger=self.path))
                for message in messages:
                    warnings.warn(message, RuntimeWarning, stacklevel=5)
                self._key = found.secret
            return self._key

    def sketches(self) -> SketchStore | None:
        """The sketch file beside a file ledger (:mod:`~dpframe.accounting.ledger_sketches`).

        None for an in-memory ledger, and (with a ``RuntimeWarning``, once) when
        the file cannot be used: loads then go on without the comparison.
        """
        with self._lock:
            if self._store is None and self.path != ":memory:" and not self._failed:
                try:
                    self._store = SketchStore(Path(self.path), wal=self._wal)
                except (OSError, sqlite3.Error, LedgerError) as exc:
                    self._failed = True
                    path = sketch_path(Path(self.path))
                    warnings.warn(
                        STORE_FAILED.format(path=path, exc=exc), RuntimeWarning, stacklevel=5
                    )
                    return None
                for message in self._store.messages:
                    warnings.warn(message, RuntimeWarning, stacklevel=5)
            return self._store

    def close(self) -> None:
        """Close the sketch file, if open."""
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
