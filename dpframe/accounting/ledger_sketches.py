"""The sketch file beside a file ledger: what the guard rails compare, kept out of the ledger.

A ledger can be handed to an auditor: it holds budgets and releases, and names
each release's data by a keyed identity.  What the budget guard rails need to
recognize data again (:mod:`dpframe.engine.guard_rails`) lives in a second
SQLite file beside it, ``<ledger>.sketches`` (``ledger.sqlite.sketches``),
mode 0600 like the ledger:

* ``sketches``: one row per sketch: the data's identity, ``rows`` or a column
  (its name and kind), and when it was recorded;
* ``tags``: each sketch's :data:`~dpframe.backends.data_sketch.SKETCH_SIZE`
  tags (keyed 64-bit values; a sketch of fewer rows is padded with keyed
  dummies), indexed by tag, so that a load looks up its own tags instead of
  reading every sketch;
* ``digests``: the keyed exact digest of each column (column subsets).

Nothing in it can be checked without the user's key
(:mod:`dpframe.accounting.ledger_key`); still, it is private to its owner, and
deleting it loses no spend, only the guard rails' memory of data loaded
before.  The file is created when a file ledger's session first loads data;
a file that is not a sketch file, or is damaged, is left alone and reported
(the load goes on without the comparison).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from dpframe.accounting.ledger_modes import tighten_files
from dpframe.errors import LedgerError

__all__ = ["SKETCH_APPLICATION_ID", "Match", "SketchStore", "sketch_path"]

SKETCH_APPLICATION_ID = 0x44505348  # "DPSH"
_VERSION = 1
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS sketches (
    id INTEGER PRIMARY KEY,
    dataset TEXT NOT NULL,
    part TEXT NOT NULL,
    column_name TEXT NOT NULL,
    time REAL NOT NULL,
    UNIQUE (dataset, part, column_name)
)""",
    """CREATE TABLE IF NOT EXISTS tags (
    tag INTEGER NOT NULL,
    sketch INTEGER NOT NULL REFERENCES sketches (id)
)""",
    "CREATE INDEX IF NOT EXISTS tags_by_tag ON tags (tag)",
    "CREATE INDEX IF NOT EXISTS tags_by_sketch ON tags (sketch)",
    """CREATE TABLE IF NOT EXISTS digests (
    dataset TEXT NOT NULL,
    column_name TEXT NOT NULL,
    digest TEXT NOT NULL,
    time REAL NOT NULL,
    PRIMARY KEY (dataset, column_name)
)""",
    "CREATE INDEX IF NOT EXISTS digests_by_digest ON digests (digest)",
)
#: Tags per lookup statement (SQLite's parameter limit is far above).
_BATCH = 500


def sketch_path(ledger: Path) -> Path:
    """The sketch file of the ledger file ``ledger``."""
    return ledger.with_name(ledger.name + ".sketches")


@dataclass(frozen=True, order=True)
class Match:
    """A recorded sketch that shares tags with one of this data's sketches.

    Attributes:
        dataset: the recorded data's identity.
        part: ``"rows"``, or ``"column"`` for a column sketch.
        column: the recorded column's name (``""`` for rows).
        mine: this data's sketch the tags are shared with (``""``: rows, else a column name).
        common: the number of shared tags.
    """

    dataset: str
    part: str
    column: str
    mine: str
    common: int


class SketchStore:
    """The sketch file of a ledger (see the module).

    Args:
        ledger: the ledger file (the sketch file is :func:`sketch_path` of it).
        wal: use write-ahead logging (where the ledger does: it works in the
            folder), committing without a sync: a crash of the process loses
            nothing, a power loss at most the last sketches.  Otherwise the
            rollback journal, with ``synchronous=NORMAL``.

    Raises:
        LedgerError: the file is another application's, or of a newer version
            (left as it was; the caller reports it).
        OSError, sqlite3.Error: the file cannot be created or read (damaged).
    """

    def __init__(self, ledger: Path, *, wal: bool = False) -> None:
        self.path = sketch_path(ledger)
        if not self.path.exists():
            _create(self.path)
        self.messages = tighten_files(self.path)
        self._lock = threading.Lock()  # one connection, used from any thread, one at a time
        self._conn = sqlite3.connect(
            str(self.path), timeout=60.0, isolation_level=None, check_same_thread=False
        )
        try:
            app = self._conn.execute("PRAGMA application_id").fetchone()[0]
            if app != SKETCH_APPLICATION_ID:
                raise LedgerError(
                    f"{self.path} is not a dpframe sketch file (application id {app}): "
                    "move it away, and dpframe makes a new one."
                )
            if self._conn.execute("PRAGMA user_version").fetchone()[0] > _VERSION:
                raise LedgerError(
                    f"The sketch file {self.path} was written by a newer dpframe: upgrade "
                    "dpframe (pip install -U dpframe) to use it."
                )
            if wal:
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            self._conn.close()
            raise

    def matches(self, tags: Mapping[str, Sequence[int]]) -> list[Match]:
        """Recorded sketches that share tags with these, and how many each.

        Args:
            tags: this data's sketches by name (``""``: rows, else a column name).
        """
        with self._lock:
            owners: dict[int, list[str]] = {}
            for mine, values in tags.items():
                for tag in set(values):
                    owners.setdefault(tag, []).append(mine)
            counts: dict[tuple[int, str], int] = {}
            hits = list(owners)
            for start in range(0, len(hits), _BATCH):
                batch = hits[start : start + _BATCH]
                marks = ",".join("?" * len(batch))
                for tag, sketch in self._conn.execute(
                    f"SELECT tag, sketch FROM tags WHERE tag IN ({marks})", batch
                ):
                    for mine in owners[tag]:
                        counts[(sketch, mine)] = counts.get((sketch, mine), 0) + 1
            if not counts:
                return []
            ids = sorted({sketch for sketch, _ in counts})
            marks = ",".join("?" * len(ids))
            named = {
                row[0]: (str(row[1]), str(row[2]), str(row[3]))
                for row in self._conn.execute(
                    f"SELECT id, dataset, part, column_name FROM sketches WHERE id IN ({marks})",
                    ids,
                )
            }
            return sorted(
                Match(*named[sketch], mine, common)
                for (sketch, mine), common in counts.items()
                if sketch in named
            )

    def same_digests(self, digests: Mapping[str, str]) -> list[tuple[str, str, str]]:
        """Recorded columns with one of these exact digests: (dataset, column, this column)."""
        with self._lock:
            by_digest: dict[str, list[str]] = {}
            for column, digest in digests.items():
                by_digest.setdefault(digest, []).append(column)
            found: list[tuple[str, str, str]] = []
            values = list(by_digest)
            for start in range(0, len(values), _BATCH):
                batch = values[start : start + _BATCH]
                marks = ",".join("?" * len(batch))
                for dataset, column, digest in self._conn.execute(
                    f"SELECT dataset, column_name, digest FROM digests WHERE digest IN ({marks})",
                    batch,
                ):
                    found.extend((str(dataset), str(column), mine) for mine in by_digest[digest])
            return sorted(found)

    def recorded(self, dataset: str) -> tuple[frozenset[int], dict[str, str]]:
        """The tags and column digests recorded for ``dataset`` (empty if none)."""
        with self._lock:
            tags = self._conn.execute(
                "SELECT t.tag FROM tags AS t JOIN sketches AS s ON s.id = t.sketch"
                " WHERE s.dataset=?",
                (dataset,),
            ).fetchall()
            digests = self._conn.execute(
                "SELECT column_name, digest FROM digests WHERE dataset=?", (dataset,)
            ).fetchall()
            return frozenset(int(t) for (t,) in tags), {str(c): str(d) for c, d in digests}

    def record(
        self,
        dataset: str,
        sketches: Iterable[tuple[str, str, Sequence[int]]],
        digests: Mapping[str, str],
    ) -> None:
        """Replace what is recorded for ``dataset``, in one transaction.

        Args:
            dataset: the data's identity.
            sketches: (part, column name, tags) of each sketch: ``("rows", "",
                tags)``, ``("column", name, tags)``.
            digests: column name to its exact digest.
        """
        with self._lock:
            now = time.time()
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                old = [
                    row[0]
                    for row in conn.execute("SELECT id FROM sketches WHERE dataset=?", (dataset,))
                ]
                for sketch in old:
                    conn.execute("DELETE FROM tags WHERE sketch=?", (sketch,))
                conn.execute("DELETE FROM sketches WHERE dataset=?", (dataset,))
                conn.execute("DELETE FROM digests WHERE dataset=?", (dataset,))
                for part, column, tags in sketches:
                    sketch_id = conn.execute(
                        "INSERT INTO sketches (dataset, part, column_name, time)"
                        " VALUES (?, ?, ?, ?)",
                        (dataset, part, column, now),
                    ).lastrowid
                    conn.executemany(
                        "INSERT INTO tags (tag, sketch) VALUES (?, ?)",
                        [(t, sketch_id) for t in tags],
                    )
                conn.executemany(
                    "INSERT INTO digests (dataset, column_name, digest, time) VALUES (?, ?, ?, ?)",
                    [(dataset, c, d, now) for c, d in digests.items()],
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._conn.close()


def _create(path: Path) -> None:
    """Build a new sketch file next to ``path`` (mode 0600) and link it into place."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    try:
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA application_id={SKETCH_APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={_VERSION}")
            conn.execute("COMMIT")
        finally:
            conn.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # created meanwhile by another process
        except OSError:
            if not path.exists():  # a file system without hard links
                os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
