"""The ledger's hash chain: each session's records, linked by SHA-256, in the ``chain`` table.

Every change to what a ledger records about a session appends one *link*
(schema version 9), in the same transaction as the change:

- ``genesis`` (link 0): the session's budget row (accounting, total ε and δ,
  δ reserve, creation time).  Written when the session is registered, or by
  the migration to version 9 for each session an older ledger holds.
- ``charge``: a release row's charge, which never changes afterwards (id,
  session, dataset, time, label, mechanism, ε, δ, ρ, currency, privacy unit,
  parts, request key).  Written by the charge's transaction.  Re-issued when
  a legacy dataset fingerprint is rekeyed (the only update of those fields).
- ``state``: a release row's outcome (id, status, shown value, the noise
  calibrations recorded, and the SHA-256 of the stored answer, which holds
  the value and its intervals whole).  Written by the completion's
  transaction, and again whenever the outcome or the stored answer changes.

A link stores the *digest* of what it covers (the SHA-256 of the canonical
encoding of those fields, :func:`canonical`) and its *hash*, the SHA-256 of
the canonical encoding of (previous hash, position, kind, release id,
digest); link 0's previous hash is 64 zeros.  The newest link's position
and hash are the session's *head*.

The chain proves that the records it covers were not edited, deleted,
reordered or inserted since they were linked; an attacker who rewrites the
tail of a session *and* recomputes every later hash is caught only against
a head recorded elsewhere (an anchor: an exported bundle, a signed curator
head).  See ``docs/ledger-verify.md``.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BUDGET_FIELDS",
    "CHARGE_FIELDS",
    "GENESIS_PREV",
    "Head",
    "append",
    "budget_digest",
    "canonical",
    "charge_digest",
    "head_of",
    "link_budget",
    "link_charge",
    "link_existing",
    "link_hash",
    "link_outcome",
    "link_row",
    "link_state",
    "state_digest",
]

#: The previous hash of a session's link 0.
GENESIS_PREV = "0" * 64

#: The columns of a release row that a ``charge`` link covers, in this order.
CHARGE_FIELDS = (
    "id",
    "session",
    "dataset",
    "time",
    "query",
    "mechanism",
    "epsilon",
    "delta",
    "rho",
    "currency",
    "privacy_unit",
    "parts",
    "request",
)
#: The columns of a budgets row that the ``genesis`` link covers.
BUDGET_FIELDS = ("session", "accounting", "epsilon", "delta", "delta_reserve", "created")


@dataclass(frozen=True)
class Head:
    """A session's chain head: the newest link's position and hash.

    Attributes:
        session: the session's name.
        n: the newest link's position (0: only the genesis link).
        hash: its hash (64 hexadecimal digits).
    """

    session: str
    n: int
    hash: str

    def to_dict(self) -> dict[str, Any]:
        """The head as plain JSON data (for exports, responses and anchors)."""
        return {"session": self.session, "n": self.n, "hash": self.hash}

    def __str__(self) -> str:
        return f"{self.n}:{self.hash[:16]}"


def _field(value: Any) -> str:
    """One field, typed and unambiguous: N (NULL), i<int>, f<float repr>, s<length>:<text>."""
    kind = type(value)
    if kind is str:
        return f"s{len(value)}:{value}"
    if value is None:
        return "N"
    if kind is int or kind is bool:
        return f"i{int(value)}"
    if kind is float:
        return f"f{value!r}"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"x{bytes(value).hex()}"
    text = str(value)
    return f"s{len(text)}:{text}"


def canonical(kind: str, values: tuple[Any, ...]) -> bytes:
    """The canonical encoding of a record hashed by the chain: its kind and typed fields.

    ``dpframe-chain-1|<kind>|<field>|<field>...``, each field as :func:`_field`
    writes it (text is length-prefixed, so no separator inside a field is
    ambiguous; floats, the row times, by Python's shortest round-trip repr, so
    a value read back from SQLite encodes to the same bytes).
    """
    return f"dpframe-chain-1|{kind}|{'|'.join(map(_field, values))}".encode(
        "utf-8", "surrogatepass"
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def charge_digest(row: dict[str, Any]) -> str:
    """The digest of a release row's charge fields (:data:`CHARGE_FIELDS`, in order)."""
    return _sha(canonical("charge", tuple(row.get(f) for f in CHARGE_FIELDS)))


def state_digest(
    release_id: int, status: str, value: str | None, noise: str | None, answer: bytes | None
) -> str:
    """The digest of a release row's outcome and stored answer (by its SHA-256)."""
    answered = None if answer is None else _sha(bytes(answer))
    return _sha(canonical("state", (release_id, status, value, noise, answered)))


def budget_digest(row: dict[str, Any]) -> str:
    """The digest of a session's budget row (:data:`BUDGET_FIELDS`, in order)."""
    return _sha(canonical("genesis", tuple(row.get(f) for f in BUDGET_FIELDS)))


def link_hash(prev: str, n: int, kind: str, release: int | None, digest: str) -> str:
    """A link's hash: over the previous hash, its position, kind, release id and digest."""
    return _sha(canonical("link", (prev, n, kind, release, digest)))


def head_of(conn: sqlite3.Connection, session: str) -> Head | None:
    """``session``'s newest link, or None when it has no chain yet (one indexed read)."""
    row = conn.execute(
        "SELECT n, hash FROM chain WHERE session=? ORDER BY seq DESC LIMIT 1", (session,)
    ).fetchone()
    return None if row is None else Head(session, int(row[0]), str(row[1]))


def append(
    conn: sqlite3.Connection, session: str, kind: str, release: int | None, digest: str
) -> Head:
    """Append one link to ``session``'s chain (inside the caller's write transaction)."""
    head = head_of(conn, session)
    if head is None and kind != "genesis":  # a session charged before it was registered
        head = link_budget(conn, session)
    prev, n = (GENESIS_PREV, 0) if head is None else (head.hash, head.n + 1)
    hashed = link_hash(prev, n, kind, release, digest)
    conn.execute(
        "INSERT INTO chain (session, n, kind, release_id, digest, hash) VALUES (?, ?, ?, ?, ?, ?)",
        (session, n, kind, release, digest, hashed),
    )
    return Head(session, n, hashed)


_CHARGE_SELECT = f"SELECT {', '.join(CHARGE_FIELDS)} FROM releases WHERE id=?"


def link_row(conn: sqlite3.Connection, release_id: int) -> Head:
    """Append the ``charge`` link of a release row as stored (read back by its id)."""
    values = conn.execute(_CHARGE_SELECT, (release_id,)).fetchone()
    row = dict(zip(CHARGE_FIELDS, values, strict=True))
    return append(conn, str(row["session"]), "charge", release_id, charge_digest(row))


def link_charge(conn: sqlite3.Connection, release_id: int, row: dict[str, Any]) -> Head:
    """Append the ``charge`` link of a row just inserted, from the values it was inserted with.

    ``row`` holds every :data:`CHARGE_FIELDS` field but ``id`` as bound to the
    INSERT (text, a float time, None): SQLite returns exactly these values
    (TEXT and REAL columns), so the digest equals :func:`link_row`'s over the
    stored row without reading it back.
    """
    values = {**row, "id": release_id}
    return append(conn, str(values["session"]), "charge", release_id, charge_digest(values))


def link_outcome(
    conn: sqlite3.Connection,
    session: str,
    release_id: int,
    outcome: tuple[str, str | None, str | None, bytes],
) -> Head:
    """Append the ``state`` link of a row just completed, from the values written.

    ``outcome`` is (status, value, noise, answer) as bound to the UPDATE and to
    the answer's INSERT in this transaction: the digest equals
    :func:`link_state`'s over the stored row, without reading it back.
    """
    status, value, noise, answer = outcome
    return append(
        conn, session, "state", release_id, state_digest(release_id, status, value, noise, answer)
    )


def link_state(conn: sqlite3.Connection, release_id: int) -> Head | None:
    """Append the ``state`` link of a release row as stored (its outcome and answer)."""
    row = conn.execute(
        "SELECT r.session, r.status, r.value, r.noise, a.body FROM releases AS r"
        " LEFT JOIN answers AS a ON a.release_id = r.id WHERE r.id=?",
        (release_id,),
    ).fetchone()
    if row is None:
        return None
    session, status, value, noise, body = row
    digest = state_digest(release_id, str(status), value, noise, body)
    return append(conn, str(session), "state", release_id, digest)


def link_budget(conn: sqlite3.Connection, session: str) -> Head:
    """Append the ``genesis`` link of ``session``'s budget row (as stored)."""
    values = conn.execute(
        f"SELECT {', '.join(BUDGET_FIELDS)} FROM budgets WHERE session=? AND dataset='*'",
        (session,),
    ).fetchone()
    row = {"session": session} if values is None else dict(zip(BUDGET_FIELDS, values, strict=True))
    return append(conn, session, "genesis", None, budget_digest(row))


def link_existing(conn: sqlite3.Connection) -> None:
    """Link everything an older ledger holds (the migration to schema version 9).

    For each session with a budget row: its genesis link, then, in id order,
    each release row's ``charge`` link and, when it is no longer ``charged``
    or keeps an answer, its ``state`` link.  Rows of a session without a
    budget row (none in a ledger dpframe wrote) get a genesis link over an
    empty budget, so that every row is covered.
    """
    sessions = [str(s) for (s,) in conn.execute("SELECT session FROM budgets WHERE dataset='*'")]
    orphans = conn.execute(
        "SELECT DISTINCT session FROM releases WHERE session NOT IN"
        " (SELECT session FROM budgets WHERE dataset='*')"
    ).fetchall()
    for session in sorted(sessions) + sorted(str(s) for (s,) in orphans):
        link_budget(conn, session)
    ids = conn.execute(
        "SELECT r.id, r.status, a.release_id IS NOT NULL FROM releases AS r"
        " LEFT JOIN answers AS a ON a.release_id = r.id ORDER BY r.id"
    ).fetchall()
    for release_id, status, answered in ids:
        link_row(conn, int(release_id))
        if status != "charged" or answered:
            link_state(conn, int(release_id))
