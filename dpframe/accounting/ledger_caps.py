"""A dataset-wide cap: the privacy loss about any one unit of a dataset, over all its sessions.

Several sessions (a curator's seats ``"analyst/dataset"``) release about the
same people; each session's own accountant bounds what that session
releases, and a *cap* bounds their composition: every release about the
dataset, whoever asked, is converted into the cap's one currency (its
accounting's native units) and the cap's accountant (a privacy filter, as a
session's) admits it only while the total fits.

Conversions (a release's charge in its session's accounting to the cap's):

- pure cap: a pure ε-DP charge, as is;
- approx cap: a pure or approximate (ε, δ) charge, as is (basic composition);
- gdp cap (μ-GDP): a Gaussian DP charge's μ² (its ρ = μ²/2) and reserved δ;
  a pure ε charge as μ(ε) = −2Φ⁻¹(1/(1+e^ε)), rounded up (every ε-DP
  mechanism is μ(ε)-GDP: Dong, Roth & Su 2019, §2.4; as the Gaussian DP
  accountant charges ε-DP parts, ``dpframe/accounting/gdp.py``); an
  approximate (ε, δ) charge as μ(ε) and δ;
- zcdp cap: a zCDP charge's ρ and δ; a pure ε charge as ρ = ε²/2 (Bun &
  Steinke 2016, Prop. 1.4); a Gaussian DP charge's ρ = μ²/2 (μ-GDP implies
  μ²/2-zCDP) and δ.

Releases that read several datasets (a private join of datasets of one ID
space) count against *every* dataset they read: a join is recorded under
one session (the seat it was sent to), and :func:`record_touches` adds, in
the charge's own transaction, a row of ``cap_touches (release, dataset)``
for each other dataset it read, so :class:`CapSpend` counts it for those
datasets too (across processes and restarts).  The table belongs to the
caps alone (created when first needed; not part of the hash chain: it
only ever adds to what a cap counts).

Other pairs (e.g. approximate charges under a zCDP cap) have no conversion
and are refused when the catalog is loaded (:func:`converts`).  The cap's
filter is valid for adaptively chosen releases for the same reasons as a
session's (each accountant's proof note): the releases of all sessions on
the dataset form one adaptive sequence, serialized by the ledger's write
lock, and each is admitted only while the sum fits.
"""

from __future__ import annotations

import sqlite3
from fractions import Fraction

from dpframe.accounting.accountants import Charge
from dpframe.mechanisms.calibration.gdp_curves import mu_of_epsilon

__all__ = [
    "CONVERSIONS",
    "TOUCHES",
    "CapSpend",
    "cap_cost",
    "converts",
    "next_release_ids",
    "record_touches",
]

#: The table of the other datasets a release read (a join), besides its session's own.
TOUCHES = (
    "CREATE TABLE IF NOT EXISTS cap_touches ("
    "release INTEGER NOT NULL, dataset TEXT NOT NULL, PRIMARY KEY (release, dataset))"
)


def _has_touches(conn: sqlite3.Connection) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cap_touches'"
    ).fetchone()
    return found is not None


def next_release_ids(conn: sqlite3.Connection, count: int) -> list[int]:
    """The ids the next ``count`` rows of ``releases`` will get (inside a write transaction).

    ``releases.id`` is an AUTOINCREMENT key: each new row gets one more than
    the largest id it ever held (``sqlite_sequence``), and under the write
    lock no other connection inserts in between.
    """
    row = conn.execute(
        "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'releases'), 0),"
        " coalesce((SELECT max(id) FROM releases), 0))"
    ).fetchone()
    first = int(row[0]) + 1
    return list(range(first, first + count))


def record_touches(conn: sqlite3.Connection, count: int, datasets: list[str]) -> list[int]:
    """Record that the next ``count`` releases also read ``datasets`` (in the charge's transaction).

    Called inside the transaction that inserts those rows, before they are
    inserted; a rollback takes these rows with it.  Returns the ids recorded.
    """
    ids = next_release_ids(conn, count)
    if datasets:
        conn.execute(TOUCHES)
        conn.executemany(
            "INSERT OR IGNORE INTO cap_touches (release, dataset) VALUES (?, ?)",
            [(i, name) for i in ids for name in sorted(set(datasets))],
        )
    return ids


#: For each cap accounting, the session accountings whose charges convert into it.
CONVERSIONS: dict[str, frozenset[str]] = {
    "pure": frozenset({"pure"}),
    "approx": frozenset({"pure", "approx"}),
    "gdp": frozenset({"pure", "approx", "gdp"}),
    "zcdp": frozenset({"pure", "gdp", "zcdp"}),
}


def converts(session_kind: str, cap_kind: str) -> bool:
    """True when a ``session_kind`` session's charges convert into a ``cap_kind`` cap."""
    return session_kind in CONVERSIONS.get(cap_kind, frozenset())


def cap_cost(charge: Charge, session_kind: str, cap_kind: str) -> Charge:
    """``charge`` (in its session's accounting) in the cap's currency (module docstring).

    Raises:
        ValueError: no conversion between the two accountings.
    """
    if not converts(session_kind, cap_kind):
        raise ValueError(f"no conversion from {session_kind} charges into a {cap_kind} cap")
    if cap_kind in ("pure", "approx"):
        delta = Fraction(0) if cap_kind == "pure" else charge.delta
        return Charge(epsilon=charge.epsilon, delta=delta)
    if session_kind in ("pure", "approx"):
        if cap_kind == "gdp":
            mu = mu_of_epsilon(charge.epsilon)
            return Charge(delta=charge.delta, rho=mu * mu / 2)
        return Charge(rho=charge.epsilon * charge.epsilon / 2)
    return Charge(delta=charge.delta, rho=charge.rho)  # gdp or zcdp: ρ = μ²/2 (and δ)


class CapSpend:
    """The spend of every session on one dataset, in a cap's currency, read incrementally.

    Sessions are those whose name ends in ``"/" + dataset`` (a curator's
    seats), plus the rows of other sessions that also read the dataset
    (``cap_touches``, :func:`record_touches`); each row is converted with its
    session's recorded accounting.
    Rows are only ever appended and their costs never change, so a kept
    (last id, total) plus the newer rows is the exact total; :meth:`read`
    runs inside the caller's write transaction, so every committed row of
    every process is included.

    Args:
        dataset: the catalog's dataset name.
        cap_kind: the cap's accounting.
    """

    def __init__(self, dataset: str, cap_kind: str) -> None:
        self.dataset = dataset
        self.suffix = "/" + dataset
        self.cap_kind = cap_kind
        self._last = 0
        self._total = Charge()
        self._sessions: dict[str, int] = {}

    def read(self, conn: sqlite3.Connection) -> Charge:
        """The dataset's total spend in the cap's currency (rows newer than the last read).

        Its sessions' rows and every other session's rows that also read it
        (joins: ``cap_touches``).
        """
        select = (
            "SELECT r.id, r.session, r.epsilon, r.delta, r.rho, b.accounting"
            " FROM releases AS r LEFT JOIN budgets AS b"
            " ON b.session = r.session AND b.dataset = '*'"
            " WHERE r.id > ? AND (substr(r.session, -?) = ?"
        )
        args: tuple[object, ...] = (self._last, len(self.suffix), self.suffix)
        if _has_touches(conn):
            select += " OR r.id IN (SELECT release FROM cap_touches WHERE dataset = ?)"
            args += (self.dataset,)
        rows = conn.execute(select + ") ORDER BY r.id", args).fetchall()
        total = self._total
        for _, session, eps, dlt, rho, kind in rows:
            charge = Charge(Fraction(eps), Fraction(dlt), Fraction(rho))
            total = total + cap_cost(charge, str(kind), self.cap_kind)
            self._sessions[str(session)] = self._sessions.get(str(session), 0) + 1
        if rows:
            self._last, self._total = int(rows[-1][0]), total
        return total

    def sessions(self) -> dict[str, int]:
        """The sessions read so far, and how many of their rows."""
        return dict(self._sessions)
