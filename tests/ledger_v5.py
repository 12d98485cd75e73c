"""Ledger files as dpframe wrote them up to schema version 5 (for migration and attack tests).

Built by the same schema path as dpframe at schema 5 (``BASE_SCHEMA`` and
steps 2 to 5), then filled the way it filled them: each release's ``dataset``
is the unkeyed fingerprint of the data (``PandasBackend.fingerprint()``), and
the ``digests`` table holds each column's unkeyed digest
(:func:`dpframe.backends.column_digests.column_digests`, unchanged since then).
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pandas as pd

from dpframe.accounting.ledger_schema import APPLICATION_ID, BASE_SCHEMA, MIGRATIONS
from dpframe.backends.column_digests import column_digests
from dpframe.backends.pandas_backend import PandasBackend

__all__ = ["schema_5_ledger"]


def schema_5_ledger(path: Path, spends: list[tuple[str, pd.DataFrame, int]]) -> dict[str, str]:
    """Write a schema-5 ledger: for each (session, data, releases), that many counts at ε = 0.1.

    Returns:
        Each session's data fingerprint (the ``dataset`` of its releases).
    """
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # as dpframe made it
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    for statement in BASE_SCHEMA:
        conn.execute(statement)
    for step in MIGRATIONS:
        if 1 < step.version <= 5:
            for statement in step.statements:
                conn.execute(statement)
    conn.execute("PRAGMA user_version=5")
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    now = time.time()
    prints: dict[str, str] = {}
    for session, data, releases in spends:
        fingerprint = PandasBackend(data).fingerprint()
        prints[session] = fingerprint
        conn.execute(
            "INSERT INTO budgets (session, dataset, accounting, epsilon, delta, created,"
            " delta_reserve, privacy_unit) VALUES (?, '*', 'pure', '1', '0', ?, NULL, 'rows')",
            (session, now),
        )
        for i in range(releases):
            conn.execute(
                "INSERT INTO releases (session, dataset, time, query, mechanism, epsilon, delta,"
                " rho, status, value, currency) VALUES (?, ?, ?, 'count()', 'discrete Laplace',"
                " '1/10', '0', '0', 'released', '12', 'pure')",
                (session, fingerprint, now + i),
            )
        conn.executemany(
            "INSERT OR REPLACE INTO digests (dataset, column_name, digest, time)"
            " VALUES (?, ?, ?, ?)",
            [(fingerprint, c, d, now) for c, d in column_digests(data).items()],
        )
    conn.execute("COMMIT")
    conn.close()
    return prints
