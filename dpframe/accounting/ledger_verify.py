"""``dpframe ledger verify``: check a ledger's hash chains, spends and noise calibrations.

For every session of a ledger file (read only: the file is opened read-only
and never migrated; no data file and no sketch file is opened):

1. **The chain** (:mod:`~dpframe.accounting.ledger_chain`): the links run
   0, 1, 2, ... from a genesis link, each hash is recomputed from the
   previous one, the genesis link covers the budget row as it stands, and
   every release row's newest ``charge`` and ``state`` links cover the row as
   it stands (a row without links was inserted; a link without its row
   names a deleted row).
2. **The spend**: the rows' charges are composed in order with the
   session's own accountant (the accounting, total and δ reserve its budget
   row records); every charge must have fitted the budget when it was made,
   a composite's parts must add up to its charge, and its currency must be
   the session's.
3. **The noise**: every noise calibration a row records must be what the
   mechanism's own calibration gives for its recorded sensitivity and
   allocation, and no allocation may exceed the row's charge.
4. **Anchors**: a head recorded elsewhere (an export's, a notebook's, a
   curator's signed head) must be a link of the chain, with that hash.

Released *values* cannot be verified: that needs the data, which the
verifier never reads.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpframe.accounting.accountants import Accountant, Charge
from dpframe.accounting.choice import make_accountant
from dpframe.accounting.ledger_chain import (
    BUDGET_FIELDS,
    CHARGE_FIELDS,
    GENESIS_PREV,
    Head,
    budget_digest,
    charge_digest,
    link_hash,
    state_digest,
)
from dpframe.accounting.ledger_grants import budget_in_force, grant_history
from dpframe.accounting.ledger_noise import check_noise
from dpframe.accounting.ledger_rows import decode_parts
from dpframe.errors import LedgerError
from dpframe.plan.privacy import Budget

__all__ = [
    "VALUES_NOTE",
    "Finding",
    "Link",
    "Report",
    "SessionReport",
    "check_chain",
    "open_read_only",
    "read_session",
    "verify_file",
    "verify_records",
]

#: What every report says about values.
VALUES_NOTE = (
    "Released values are not verified: that needs the data, which the verifier never reads. "
    "The chain proves only that each value is the one recorded when it was linked."
)


@dataclass(frozen=True)
class Finding:
    """One problem found: where (session, link position or release id) and what."""

    session: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"session {self.session!r}, {self.where}: {self.message}"


@dataclass
class SessionReport:
    """What verification found for one session."""

    session: str
    accounting: str
    total: Budget
    spent: Budget
    releases: int
    head: Head | None
    calibrations: int = 0
    anchored: int = 0


@dataclass
class Report:
    """The result of :func:`verify_file`: one report per session, and every problem found."""

    path: str
    sessions: list[SessionReport] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems


def open_read_only(path: str | Path) -> sqlite3.Connection:
    """Open a ledger file read-only (never created, migrated or written).

    Raises:
        LedgerError: the file is missing, not a ledger, or older than schema 9.
    """
    file = Path(path)
    if not file.is_file():
        raise LedgerError(f"No ledger file at {file}; pass the path of a ledger.sqlite.")
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as exc:
        raise LedgerError(f"{file} is not a readable ledger ({exc}).") from None
    if "chain" not in tables or version < 9:
        conn.close()
        raise LedgerError(
            f"The ledger {file} has schema version {version}, before the hash chain "
            "(version 9). Open it once with this dpframe (dp.Session(ledger=...)) to migrate "
            "it; the migration links every recorded row from a genesis link."
        )
    return conn


def verify_file(path: str | Path, anchors: Iterable[Head] = ()) -> Report:
    """Verify every session of the ledger at ``path``; see the module docstring.

    Args:
        path: the ledger file.
        anchors: heads recorded elsewhere; each must be a link of its session's chain.

    Raises:
        LedgerError: the file cannot be read as a ledger of schema 9 or later.
    """
    report = Report(str(path))
    conn = open_read_only(path)
    try:
        sessions = sorted(
            {str(s) for (s,) in conn.execute("SELECT session FROM chain")}
            | {str(s) for (s,) in conn.execute("SELECT session FROM budgets WHERE dataset='*'")}
            | {str(s) for (s,) in conn.execute("SELECT DISTINCT session FROM releases")}
        )
        by_session: dict[str, list[Head]] = {}
        for anchor in anchors:
            by_session.setdefault(anchor.session, []).append(anchor)
        for name in sessions:
            _verify_session(conn, name, by_session.pop(name, []), report)
        for name, heads in by_session.items():
            report.problems.append(
                Finding(name, f"anchor {heads[0]}", "the ledger holds no session of this name")
            )
    finally:
        conn.close()
    return report


def check_chain(session: str, links: list[Link], problems: list[Finding]) -> Head | None:
    """Check one session's links (n, kind, release, digest, hash) follow each other; its head."""
    prev = GENESIS_PREV
    for position, (n, kind, release, digest, hashed) in enumerate(links):
        where = f"link {position}" + ("" if release is None else f" (release {release})")
        if n != position:
            problems.append(
                Finding(session, where, f"recorded as link {n}: links were deleted or reordered")
            )
            return None
        if position == 0 and kind != "genesis":
            problems.append(Finding(session, where, "the chain does not start at a genesis link"))
            return None
        if link_hash(prev, n, kind, release, digest) != hashed:
            problems.append(
                Finding(
                    session,
                    where,
                    "its hash does not follow from the previous link: a link was edited, "
                    "deleted or reordered",
                )
            )
            return None
        prev = hashed
    return Head(session, len(links) - 1, prev) if links else None


#: One link as read: (position, kind, release id or None, digest, hash).
Link = tuple[int, str, int | None, str, str]


def read_session(
    conn: sqlite3.Connection, session: str
) -> tuple[list[Link], dict[str, Any] | None, list[dict[str, Any]]]:
    """One session's links (in order), budget row (None if missing) and release rows."""
    links = [
        (int(n), str(k), None if r is None else int(r), str(d), str(h))
        for n, k, r, d, h in conn.execute(
            "SELECT n, kind, release_id, digest, hash FROM chain WHERE session=? ORDER BY seq",
            (session,),
        )
    ]
    budget_row = conn.execute(
        f"SELECT {', '.join(BUDGET_FIELDS)} FROM budgets WHERE session=? AND dataset='*'",
        (session,),
    ).fetchone()
    budget = None if budget_row is None else dict(zip(BUDGET_FIELDS, budget_row, strict=True))
    if budget is not None:  # its earlier versions, if the grant was changed (schema 10)
        budget["grants"] = grant_history(conn, session)
    return links, budget, _rows(conn, session)


def _verify_session(
    conn: sqlite3.Connection, session: str, anchors: list[Head], report: Report
) -> None:
    links, budget, rows = read_session(conn, session)
    verify_records(session, links, budget, rows, anchors, report)


def verify_records(
    session: str,
    links: list[Link],
    budget: dict[str, Any] | None,
    rows: list[dict[str, Any]],
    anchors: list[Head],
    report: Report,
) -> None:
    """Verify one session's records (from a ledger file or a bundle); add to ``report``.

    Args:
        session: the session's name.
        links: its chain links, in order.
        budget: its budget row (:data:`BUDGET_FIELDS`), None if missing.
        rows: its release rows (the charge fields, ``status``, ``value``,
            ``noise`` and ``body``, the stored answer or None), in id order.
        anchors: heads recorded elsewhere for this session.
        report: where findings and the session's summary go.
    """
    problems = report.problems
    head = check_chain(session, links, problems)
    if not links:
        problems.append(Finding(session, "chain", "the session has no chain (links deleted)"))
    genesis = [d for _, k, _, d, _ in links if k == "genesis"]
    if budget is None:
        problems.append(Finding(session, "budget", "the session's budget row is missing"))
    elif genesis and genesis[-1] != budget_digest(budget):
        problems.append(
            Finding(session, "budget", "the budget row differs from its genesis link (edited)")
        )
    latest: dict[tuple[int, str], str] = {}
    for _, kind, release, digest, _ in links:
        if release is not None:
            latest[release, kind] = digest
    seen = {int(r["id"]) for r in rows}
    for release_id in sorted({r for r, _ in latest} - seen):
        problems.append(
            Finding(
                session,
                f"release {release_id}",
                "the row is in the chain but not in the ledger (deleted)",
            )
        )
    accountant = _accountant(session, budget, problems)
    in_force = _grants(session, links, budget, accountant, problems)
    spent, calibrations = Charge(), 0
    for row in rows:
        release_id = int(row["id"])
        admitting = in_force(release_id)
        where = f"release {release_id}"
        if latest.get((release_id, "charge")) != charge_digest(row):
            message = (
                "the row is not in the chain (inserted)"
                if (release_id, "charge") not in latest
                else "its charge differs from its chain link (edited)"
            )
            problems.append(Finding(session, where, message))
        state = latest.get((release_id, "state"))
        now = state_digest(release_id, str(row["status"]), row["value"], row["noise"], row["body"])
        pristine = row["status"] == "charged" and row["value"] is None and row["body"] is None
        if (state is None and not pristine) or (state is not None and state != now):
            problems.append(
                Finding(
                    session,
                    where,
                    "its outcome (status, value, noise or stored answer) "
                    "differs from its chain link (edited)",
                )
            )
        charge = _charge(row, session, where, problems)
        if accountant is not None and charge is not None:
            if row["currency"] not in (None, accountant.kind):
                problems.append(
                    Finding(
                        session,
                        where,
                        f"charged in {row['currency']}, not in the "
                        f"session's {accountant.kind} accounting",
                    )
                )
            if admitting is not None and not admitting.admits(spent, charge):
                problems.append(
                    Finding(
                        session,
                        where,
                        "its charge did not fit the session's budget (the grant in force "
                        "when it was charged)",
                    )
                )
            spent = spent + charge
            for problem in check_noise(row["noise"], charge, accountant.kind):
                problems.append(Finding(session, where, problem))
            calibrations += _count(row["noise"])
    for anchor in anchors:
        _check_anchor(anchor, links, problems)
    if accountant is not None:
        report.sessions.append(
            SessionReport(
                session,
                accountant.kind,
                accountant.total,
                accountant.spent(spent),
                len(rows),
                head,
                calibrations,
                len(anchors),
            )
        )


def _grants(
    session: str,
    links: list[Link],
    budget: dict[str, Any] | None,
    current: Accountant | None,
    problems: list[Finding],
) -> Callable[[int], Accountant | None]:
    """Check the grant history against the chain; return: release id -> accountant in force.

    A grant changed in place (:mod:`~dpframe.accounting.ledger_grants`) keeps
    each version of the budget row with the position of its genesis link;
    each must be that link's budget, and every genesis link after the first
    version must have its version.  A release is replayed against the version
    in force at its first ``charge`` link.
    """
    history: list[dict[str, Any]] = list((budget or {}).get("grants") or [])
    genesis = {n: d for n, k, _, d, _ in links if k == "genesis"}
    for version in history:
        n = int(version["n"])
        if genesis.get(n) != budget_digest(version):
            problems.append(
                Finding(
                    session,
                    f"grant version of link {n}",
                    "the recorded grant differs from its genesis link (edited)",
                )
            )
    covered = {int(v["n"]) for v in history}
    start = min(covered) if covered else None
    empty = budget_digest({"session": session})  # a session charged before it was registered
    if start is None:
        extra = [n for n, d in genesis.items() if d != empty]
        if len(extra) > 1:
            problems.append(
                Finding(
                    session,
                    "budget",
                    f"the budget was linked {len(extra)} times (its grant changed) but the "
                    "ledger keeps no grant history (deleted)",
                )
            )
    else:
        for n in sorted(genesis):
            if n > start and n not in covered:
                problems.append(
                    Finding(
                        session,
                        f"link {n}",
                        "a grant change without its recorded version (the grant history "
                        "was edited)",
                    )
                )
    if not history:
        return lambda release_id: current
    first_charge: dict[int, int] = {}
    for n, kind, release, _, _ in links:
        if kind == "charge" and release is not None:
            first_charge.setdefault(release, n)
    made: dict[int, Accountant | None] = {}

    def in_force(release_id: int) -> Accountant | None:
        position = first_charge.get(release_id)
        if position is None:
            return current
        version = budget_in_force(history, position) or history[0]
        key = int(version["n"])
        if key not in made:
            made[key] = _accountant(session, version, problems)
        return made[key]

    return in_force


def _rows(conn: sqlite3.Connection, session: str) -> list[dict[str, Any]]:
    columns = (*CHARGE_FIELDS, "status", "value", "noise")
    select = ", ".join(f"r.{c}" for c in columns)
    return [
        dict(zip((*columns, "body"), values, strict=True))
        for values in conn.execute(
            f"SELECT {select}, a.body FROM releases AS r LEFT JOIN answers AS a"
            " ON a.release_id = r.id WHERE r.session=? ORDER BY r.id",
            (session,),
        )
    ]


def _accountant(
    session: str, budget: dict[str, Any] | None, problems: list[Finding]
) -> Accountant | None:
    if budget is None:
        return None
    try:
        total = Budget(Fraction(budget["epsilon"]), Fraction(budget["delta"]))
        kind = str(budget["accounting"])
        reserve = budget["delta_reserve"]
        if kind == "gdp":
            return make_accountant(total, kind, Fraction(reserve or 0))
        return make_accountant(total, kind)
    except (ValueError, ZeroDivisionError, TypeError, LedgerError) as exc:
        problems.append(Finding(session, "budget", f"unreadable budget ({exc})"))
    except Exception as exc:  # an accountant refusing the recorded budget
        problems.append(Finding(session, "budget", f"not a valid budget ({exc})"))
    return None


def _charge(
    row: dict[str, Any], session: str, where: str, problems: list[Finding]
) -> Charge | None:
    try:
        charge = Charge(Fraction(row["epsilon"]), Fraction(row["delta"]), Fraction(row["rho"]))
        parts = decode_parts(row["parts"])
    except (ValueError, ZeroDivisionError, TypeError, KeyError) as exc:
        problems.append(Finding(session, where, f"unreadable cost ({exc})"))
        return None
    if min(charge.epsilon, charge.delta, charge.rho) < 0:
        problems.append(Finding(session, where, "a negative cost"))
    if parts is not None:
        summed = Charge()
        for _, cost in parts:
            summed = summed + cost
        if summed != charge:
            problems.append(Finding(session, where, "its parts do not add up to its charge"))
    return charge


def _count(noise: str | None) -> int:
    if noise is None:
        return 0
    try:
        entries = json.loads(noise)
    except ValueError:
        return 0
    return len(entries) if isinstance(entries, list) else 0


def _check_anchor(anchor: Head, links: list[Link], problems: list[Finding]) -> None:
    if anchor.n >= len(links):
        problems.append(
            Finding(
                anchor.session,
                f"anchor {anchor}",
                f"the chain has {len(links)} link(s), fewer than the anchored head's "
                f"{anchor.n + 1}: its tail was cut",
            )
        )
    elif links[anchor.n][4] != anchor.hash:
        problems.append(
            Finding(
                anchor.session,
                f"anchor {anchor}",
                f"link {anchor.n} has another hash than the anchored head: the chain was "
                "rewritten from there on (re-hashed)",
            )
        )
