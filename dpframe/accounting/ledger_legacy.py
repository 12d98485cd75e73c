"""Unkeyed traces of data in ledgers written before schema 6: found, rekeyed, scrubbed.

Up to schema 5 a ledger named each release's data by its unkeyed fingerprint
and kept unkeyed per-column digests that included the row count: from the
file alone, the row count and the count of yes in a yes/no column could be
recovered by trying every pair (``tests/test_ledger_privacy.py``).  The
migration to schema 6 keeps them (``unkeyed_digests``, ``unkeyed_datasets``)
so that nothing is lost, and removes them two ways:

* **lazily**, when the data is next loaded (:func:`rekey`): its releases are
  renamed to the data's keyed identity and its unkeyed digests deleted;
* **all at once** with ``dpframe ledger scrub PATH`` (:func:`scrub`): every
  unkeyed fingerprint in the releases is replaced by its keyed identity under
  the user's key (the one a later load computes, so the link to the data is
  kept), every unkeyed digest is deleted, and the file is rewritten
  (``VACUUM``) so that no deleted page keeps them.

Each function runs on a connection inside the caller's transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dpframe.accounting.ledger import Ledger
from dpframe.accounting.ledger_chain import link_row
from dpframe.backends.data_sketch import SketchKey
from dpframe.errors import LedgerError

__all__ = ["ScrubReport", "holds_unkeyed", "rekey", "scrub", "scrub_file", "unkeyed_matches"]


def holds_unkeyed(conn: sqlite3.Connection) -> bool:
    """Whether the ledger still holds unkeyed fingerprints or digests."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM unkeyed_datasets) OR EXISTS (SELECT 1 FROM unkeyed_digests)"
    ).fetchone()
    return bool(row[0])


def unkeyed_matches(
    conn: sqlite3.Connection, digests: Mapping[str, str]
) -> list[tuple[str, str, str]]:
    """Datasets with a column whose unkeyed digest is one of ``digests``.

    Args:
        conn: the ledger's connection.
        digests: this data's unkeyed digests by column name
            (:func:`dpframe.backends.column_digests.column_digests`).

    Returns:
        (dataset, recorded column, this column) for each match, sorted.
    """
    by_digest: dict[str, list[str]] = {}
    for column, digest in digests.items():
        by_digest.setdefault(digest, []).append(column)
    if not by_digest:
        return []
    marks = ",".join("?" * len(by_digest))
    rows = conn.execute(
        f"SELECT dataset, column_name, digest FROM unkeyed_digests WHERE digest IN ({marks})",
        list(by_digest),
    ).fetchall()
    return sorted((str(d), str(c), mine) for d, c, digest in rows for mine in by_digest[digest])


def rekey(conn: sqlite3.Connection, fingerprint: str, identity: str) -> int:
    """Rename the releases of data named by ``fingerprint`` to ``identity``; drop its digests.

    Args:
        conn: the ledger's connection, in a write transaction.
        fingerprint: the data's unkeyed fingerprint (what schema 5 recorded).
        identity: the data's keyed identity (what schema 6 records; the
            fingerprint keyed by the user's key, as :func:`scrub` keys it).

    Returns:
        The number of releases renamed.
    """
    renamed = _rename(conn, fingerprint, identity)
    conn.execute("DELETE FROM unkeyed_digests WHERE dataset=?", (fingerprint,))
    conn.execute("DELETE FROM unkeyed_datasets WHERE dataset=?", (fingerprint,))
    return renamed


def _rename(conn: sqlite3.Connection, old: str, new: str) -> int:
    """Rename a dataset in the releases; each renamed row's charge is linked again (the chain)."""
    ids = [int(i) for (i,) in conn.execute("SELECT id FROM releases WHERE dataset=?", (old,))]
    conn.execute("UPDATE releases SET dataset=? WHERE dataset=?", (new, old))
    for release_id in ids:
        link_row(conn, release_id)
    return len(ids)


def scrub(conn: sqlite3.Connection, keyed: Callable[[str], str]) -> tuple[int, int]:
    """Key every unkeyed fingerprint in the releases and delete every unkeyed digest.

    Args:
        conn: the ledger's connection, in a write transaction (``secure_delete`` on).
        keyed: the keyed identity of a fingerprint (the user's key).

    Returns:
        The number of fingerprints keyed and of digests deleted.
    """
    names = [str(d) for (d,) in conn.execute("SELECT dataset FROM unkeyed_datasets")]
    for name in names:
        _rename(conn, name, keyed(name))
    digests = int(conn.execute("SELECT COUNT(*) FROM unkeyed_digests").fetchone()[0])
    conn.execute("DELETE FROM unkeyed_digests")
    conn.execute("DELETE FROM unkeyed_datasets")
    return len(names), digests


@dataclass(frozen=True)
class ScrubReport:
    """What :func:`scrub_file` did.

    Attributes:
        path: the ledger file.
        datasets: unkeyed fingerprints replaced by keyed identities.
        digests: unkeyed digests deleted.
    """

    path: str
    datasets: int
    digests: int


def scrub_file(path: str | Path) -> ScrubReport:
    """Remove every unkeyed trace of data from the ledger file ``path`` (``dpframe ledger scrub``).

    The file is migrated to the current schema if older; then, in one
    transaction, unkeyed fingerprints in its releases are replaced by keyed
    identities under the user's key (:mod:`dpframe.accounting.ledger_key`;
    created if missing) and unkeyed digests are deleted; then the file is
    rewritten (``VACUUM``) and its write-ahead log emptied, so that no deleted
    page keeps them.  Budgets and releases are unchanged otherwise.

    Raises:
        LedgerError: there is no ledger at ``path``, or it cannot be opened
            (not a ledger, damaged, newer schema: left unchanged).
    """
    file = Path(path)
    if not file.is_file():
        raise LedgerError(f"There is no ledger file at {file}; pass the path of a ledger.")
    ledger = Ledger(file)
    try:
        key = SketchKey(ledger.traces.key)
        datasets, digests = ledger.run(lambda conn: scrub(conn, key.identity), write=True)
        ledger.vacuum()
    finally:
        ledger.close()
    return ScrubReport(str(file), datasets, digests)
