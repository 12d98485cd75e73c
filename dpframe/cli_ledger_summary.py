"""``dpframe ledger summary CATALOG_OR_LEDGER``: the data owner's view of a curator's ledger.

For each dataset: its cap (from the catalog) and what every analyst's
releases on it used together, in the cap's currency; for each analyst
granted it: the grant, the releases, the spend and the formal (ε, δ)
guarantee of everything released so far (under Gaussian DP the ledger's ε
column is a share of the grant, so the guarantee is computed from the
recorded μ² here).  The ledger is opened read-only (never migrated or
written); no data file is read.

Given a ledger file instead of a catalog, the datasets are those its seats
(``analyst/dataset`` sessions) name, without caps; other sessions (embedded
notebooks) are listed under ``(other sessions)``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpframe.accounting.accountants import Accountant, Charge
from dpframe.accounting.choice import make_accountant
from dpframe.accounting.ledger_caps import CapSpend
from dpframe.accounting.ledger_verify import open_read_only
from dpframe.errors import DPError
from dpframe.plan.privacy import Budget

__all__ = ["SeatSummary", "guarantee", "summarize", "summary_lines"]

OTHER = "(other sessions)"


@dataclass
class SeatSummary:
    """One session's grant, spend and guarantee, as recorded in the ledger."""

    session: str
    accounting: str
    grant: Budget
    releases: int
    spent: Charge
    share: Fraction
    guarantee: Budget


@dataclass
class DatasetSummary:
    """One dataset: its cap, what all its seats used in the cap's currency, and the seats."""

    name: str
    cap: Any = None  # dpframe.curator.caps.Cap, when a catalog sets one
    used: Charge | None = None
    seats: list[SeatSummary] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)


def guarantee(accountant: Accountant, spent: Charge) -> Budget:
    """The formal (ε, δ) guarantee of ``spent`` under ``accountant``: its own :meth:`spent`.

    Gaussian DP: the ε with δ_μ(ε) ≤ δ − D at μ = sqrt(2ρ), plus the δ spent
    from the reserve, never capped at the grant's ε when a grant was lowered
    below the spend (the seat's ``session.spent`` and the budget endpoint
    show the same figure).
    """
    return accountant.spent(spent)


def _seat(conn: sqlite3.Connection, session: str) -> SeatSummary | None:
    row = conn.execute(
        "SELECT accounting, epsilon, delta, delta_reserve FROM budgets"
        " WHERE session=? AND dataset='*'",
        (session,),
    ).fetchone()
    if row is None:
        return None
    kind, eps, dlt, reserve = row
    grant = Budget(Fraction(eps), Fraction(dlt))
    try:
        held = None if kind != "gdp" else Fraction(reserve or 0)
        accountant = make_accountant(grant, str(kind), held)
    except DPError:
        return None
    spent, count = Charge(), 0
    for e, d, r in conn.execute(
        "SELECT epsilon, delta, rho FROM releases WHERE session=?", (session,)
    ):
        spent, count = spent + Charge(Fraction(e), Fraction(d), Fraction(r)), count + 1
    left = accountant.remaining(spent).epsilon
    share = Fraction(1) if grant.epsilon == 0 else 1 - min(left / grant.epsilon, Fraction(1))
    return SeatSummary(session, str(kind), grant, count, spent, share, guarantee(accountant, spent))


def summarize(path: str | Path) -> tuple[Path, list[DatasetSummary]]:
    """The summary of a catalog's ledger (``.toml``) or of a ledger file; see the module docstring.

    Raises:
        DPError: the catalog or the ledger cannot be read.
    """
    file = Path(path)
    caps: Mapping[str, Any] = {}
    granted: dict[str, list[str]] | None = None
    if file.suffix.lower() == ".toml":
        from dpframe.curator.catalog import Catalog

        catalog = Catalog.load(file)
        ledger = catalog.ledger
        caps = {n: e.cap for n, e in catalog.datasets.items()}
        granted = {n: [] for n in catalog.datasets}
        for analyst in catalog.analysts.values():
            for dataset in analyst.budgets:
                granted[dataset].append(f"{analyst.name}/{dataset}")
    else:
        ledger = file
    conn = open_read_only(ledger)
    try:
        recorded = sorted(
            str(s) for (s,) in conn.execute("SELECT session FROM budgets WHERE dataset='*'")
        )
        datasets: dict[str, list[str]] = (
            {} if granted is None else {d: sorted(s) for d, s in granted.items()}
        )
        for session in recorded:
            name = session.split("/", 1)[1] if "/" in session else OTHER
            if session not in datasets.setdefault(name, []):
                datasets[name].append(session)
        out = []
        for name in sorted(datasets):
            summary = DatasetSummary(name, caps.get(name))
            if summary.cap is not None:
                summary.used = CapSpend(name, summary.cap.accounting).read(conn)
            for session in datasets[name]:
                seat = _seat(conn, session)
                if seat is not None:
                    summary.seats.append(seat)
                else:
                    summary.unused.append(session)
            out.append(summary)
    finally:
        conn.close()
    return ledger, out


def summary_lines(datasets: list[DatasetSummary], *, catalog: bool = True) -> list[str]:
    """The summary as text, one dataset after another (``catalog``: caps are known)."""
    lines: list[str] = []
    for dataset in datasets:
        lines.append(f"dataset {dataset.name}")
        cap = dataset.cap
        if cap is not None and dataset.used is not None:
            accountant = cap.accountant()
            lines.append(
                f"  cap: {cap.budget} ({cap.accounting}); used by all analysts: "
                f"{_pct(accountant, dataset.used)} of the cap, guarantee "
                f"{guarantee(accountant, dataset.used)}"
            )
        elif dataset.name != OTHER and catalog:
            lines.append("  cap: none (each analyst's grant alone bounds their releases)")
        elif dataset.name != OTHER:
            lines.append("  cap: not known from the ledger alone (summarize the catalog)")
        if not dataset.seats and not dataset.unused:
            lines.append("  no analyst")
        for seat in dataset.seats:
            lines.append(
                f"  {seat.session}: grant {seat.grant} ({seat.accounting}); {seat.releases} "
                f"release(s), spent {float(seat.share):.1%} of the grant; guarantee "
                f"{seat.guarantee}"
            )
        lines += [f"  {name}: granted, not used yet" for name in dataset.unused]
    return lines


def _pct(accountant: Accountant, used: Charge) -> str:
    left = accountant.remaining(used).epsilon
    share = 1 - min(left / accountant.total.epsilon, Fraction(1))
    return f"{float(share):.1%}"
