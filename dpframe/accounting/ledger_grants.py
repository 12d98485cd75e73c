"""Changing a session's grant in place: raise or lower its total, keep its spend, keep the chain.

A budget is fixed at first use (:meth:`dpframe.accounting.ledger.Ledger.register`
refuses a session that asks for another one).  A data owner may still change
an analyst's grant: :func:`change_grant` compares the grant with the budget
row and, when they differ, rewrites the row in one write transaction that
also

- keeps every version of the row in the ``grants`` table (schema 10: the
  version before the first change, then each new one), each with the
  position of the genesis link that covers it and the time it took effect;
- appends a new ``genesis`` link (:func:`~dpframe.accounting.ledger_chain.link_budget`)
  over the new row, so ``dpframe ledger verify`` still passes and replays
  each release against the grant in force when it was charged
  (:func:`grant_history`, :func:`budget_in_force`).

The releases are never touched: the spend stays.  A grant lowered below
what is already spent leaves the session exhausted (every further charge is
refused; the remaining budget reads 0, never negative).  The accounting kind
never changes (the rows are in its currency): such a change is refused
with :class:`~dpframe.errors.LedgerError`.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpframe.accounting.accountants import Accountant, Charge
from dpframe.accounting.choice import make_accountant
from dpframe.accounting.ledger_chain import BUDGET_FIELDS, link_budget
from dpframe.errors import DPError, LedgerError
from dpframe.plan.privacy import Budget

__all__ = [
    "GrantChange",
    "budget_in_force",
    "change_grant",
    "grant_history",
    "planned_accountant",
]

_BUDGET_SELECT = f"SELECT {', '.join(BUDGET_FIELDS)} FROM budgets WHERE session=? AND dataset='*'"


@dataclass(frozen=True)
class GrantChange:
    """One session's grant as recorded and as asked, and what the spend is under the new one.

    Attributes:
        session: the session's name.
        accounting: its accounting (unchanged).
        before: the recorded total.
        after: the new total.
        reserve_before: a Gaussian DP session's recorded δ reserve (None otherwise).
        reserve_after: its new δ reserve.
        spent: the guarantee of everything charged so far (under the new grant).
        remaining: what a next release may still ask under the new grant.
        exhausted: True when the new grant admits no further charge (lowered below the spend).
    """

    session: str
    accounting: str
    before: Budget
    after: Budget
    reserve_before: Fraction | None
    reserve_after: Fraction | None
    spent: Budget
    remaining: Budget
    exhausted: bool

    @property
    def direction(self) -> str:
        """``"raised"``, ``"lowered"`` or ``"changed"`` (ε and δ apart, or the reserve only)."""
        up = (self.after.epsilon >= self.before.epsilon, self.after.delta >= self.before.delta)
        down = (self.after.epsilon <= self.before.epsilon, self.after.delta <= self.before.delta)
        if all(up) and self.after != self.before:
            return "raised"
        if all(down) and self.after != self.before:
            return "lowered"
        return "changed"

    def __str__(self) -> str:
        reserve = ""
        if self.reserve_before != self.reserve_after:
            reserve = (
                f", delta reserve {float(self.reserve_before or 0):.3g} -> "
                f"{float(self.reserve_after or 0):.3g}"
            )
        tail = (
            "; the spend already exceeds it: the seat is exhausted (no further release)"
            if self.exhausted
            else f"; remaining {self.remaining}"
        )
        return (
            f"{self.session}: grant {self.direction} from {self.before} to {self.after}"
            f"{reserve} ({self.accounting} accounting); spend kept: {self.spent}{tail}"
        )


def planned_accountant(
    conn: sqlite3.Connection,
    session: str,
    total: Budget,
    accounting: str | None,
    delta_reserve: Fraction | None,
) -> tuple[Accountant, dict[str, Any] | None]:
    """The accountant a session of this grant gets, as :class:`dpframe.Session` builds it.

    A grant that names no accounting keeps the recorded one (and a Gaussian DP
    session its recorded δ reserve), as a resumed session does.  Returns the
    accountant and the recorded budget row (None for a new session).

    Raises:
        LedgerError: the grant would change the recorded accounting kind.
    """
    values = conn.execute(_BUDGET_SELECT, (session,)).fetchone()
    row = None if values is None else dict(zip(BUDGET_FIELDS, values, strict=True))
    recorded = None if row is None else str(row["accounting"])
    kind = accounting if accounting is not None else recorded
    reserve = delta_reserve
    if reserve is None and kind == "gdp" and row is not None:
        reserve = _reserve(row)  # as a resumed session keeps it
    if recorded is not None and kind != recorded:
        raise LedgerError(_kind_message(session, recorded, str(kind)))
    try:
        accountant = make_accountant(total, kind, reserve)
    except DPError as exc:
        if recorded is None:
            raise
        default = make_accountant(total, None).kind if total.epsilon > 0 else "?"
        raise LedgerError(
            f"{_kind_message(session, recorded, default)} (The new grant {total} does not fit "
            f"{recorded} accounting: {exc})"
        ) from None
    return accountant, row


def _kind_message(session: str, recorded: str, asked: str) -> str:
    return (
        f"Session {session!r} is recorded with {recorded} accounting; the new grant asks for "
        f"{asked}. A grant's accounting kind never changes in place: its releases are charged in "
        f"that currency. Keep accounting = {recorded!r} in the grant (raising or lowering its "
        "epsilon and delta is allowed), or grant the new accounting under another analyst or "
        "dataset name (a new seat, with a new budget)."
    )


def _reserve(row: dict[str, Any]) -> Fraction | None:
    if row["accounting"] != "gdp":
        return None
    return Fraction(0) if row["delta_reserve"] is None else Fraction(row["delta_reserve"])


def change_grant(
    conn: sqlite3.Connection,
    session: str,
    total: Budget,
    accounting: str | None = None,
    delta_reserve: Fraction | None = None,
) -> GrantChange | None:
    """Set ``session``'s recorded grant to this one, inside the caller's write transaction.

    Nothing happens (None) for a session the ledger does not hold yet (it is
    registered at first use) or one whose recorded grant is this one.
    Otherwise the budget row is rewritten, the change kept in ``grants`` and a
    genesis link appended (see the module docstring); the releases stay.

    Run it inside a write transaction (``Ledger.run(..., write=True)``).

    Raises:
        LedgerError: the grant would change the accounting kind.
    """
    accountant, row = planned_accountant(conn, session, total, accounting, delta_reserve)
    if row is None:
        return None
    before = Budget(Fraction(row["epsilon"]), Fraction(row["delta"]))
    reserve_after = getattr(accountant, "delta_reserve", None)
    if before == total and _reserve(row) == reserve_after:
        return None
    has_history = conn.execute("SELECT 1 FROM grants WHERE session=? LIMIT 1", (session,))
    if has_history.fetchone() is None:  # keep the version the first change supersedes
        covering = conn.execute(
            "SELECT n FROM chain WHERE session=? AND kind='genesis' ORDER BY seq DESC LIMIT 1",
            (session,),
        ).fetchone()
        if covering is None:  # a session without a chain: link its row first
            covering = (link_budget(conn, session).n,)
        _keep(conn, session, int(covering[0]), float(row["created"] or 0), row)
    reserve_text = None if reserve_after is None else str(reserve_after)
    conn.execute(
        "UPDATE budgets SET epsilon=?, delta=?, delta_reserve=? WHERE session=? AND dataset='*'",
        (str(total.epsilon), str(total.delta), reserve_text, session),
    )
    head = link_budget(conn, session)  # the chain covers the new row (verify checks it)
    values = conn.execute(_BUDGET_SELECT, (session,)).fetchone()
    _keep(conn, session, head.n, time.time(), dict(zip(BUDGET_FIELDS, values, strict=True)))
    spent = _spent(conn, session)
    return GrantChange(
        session,
        accountant.kind,
        before,
        total,
        _reserve(row),
        reserve_after,
        accountant.spent(spent),
        accountant.remaining(spent),
        not _admits_more(accountant, spent),
    )


def _keep(conn: sqlite3.Connection, session: str, n: int, at: float, row: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO grants (session, n, time, accounting, epsilon, delta, delta_reserve, created)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session,
            n,
            at,
            row["accounting"],
            row["epsilon"],
            row["delta"],
            row["delta_reserve"],
            row["created"],
        ),
    )


def _spent(conn: sqlite3.Connection, session: str) -> Charge:
    total = Charge()
    for eps, dlt, rho in conn.execute(
        "SELECT epsilon, delta, rho FROM releases WHERE session=?", (session,)
    ):
        total = total + Charge(Fraction(eps), Fraction(dlt), Fraction(rho))
    return total


def _admits_more(accountant: Accountant, spent: Charge) -> bool:
    """True while the smallest positive charge still fits (the seat is not exhausted)."""
    tiny = Fraction(1, 10**12)
    return accountant.admits(spent, Charge(tiny, Fraction(0), tiny))


def grant_history(conn: sqlite3.Connection, session: str) -> list[dict[str, Any]]:
    """Every recorded version of ``session``'s budget row, oldest first (empty: never changed).

    Each is a budget row (:data:`BUDGET_FIELDS`) with ``n``, the position of
    the genesis link that covers it, and ``time``, when it took effect.
    Empty for a ledger before schema 10.
    """
    try:
        rows = conn.execute(
            f"SELECT n, time, {', '.join(BUDGET_FIELDS[1:])} FROM grants WHERE session=?"
            " ORDER BY id",
            (session,),
        ).fetchall()
    except sqlite3.OperationalError:  # no grants table (schema 9)
        return []
    fields = ("n", "time", *BUDGET_FIELDS[1:])
    return [{"session": session, **dict(zip(fields, r, strict=True))} for r in rows]


def budget_in_force(history: list[dict[str, Any]], position: int) -> dict[str, Any] | None:
    """The version of ``history`` in force at chain position ``position`` (None: before all)."""
    found = None
    for version in history:
        if int(version["n"]) < position:
            found = version
    return found
