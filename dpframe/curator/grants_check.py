"""When a curator starts: the catalog's grants against its ledger, and grants changed in place.

Each analyst's grant on a dataset is a session ``"analyst/dataset"`` of the
curator's ledger, whose budget is fixed at first use.  When the data owner
edits a grant in the catalog and restarts the curator, :func:`reconcile`

- applies a raised or lowered grant in place, all grants in one ledger
  transaction (:func:`dpframe.accounting.ledger_grants.change_grant`: the
  change is recorded in the ledger and chained, the spend is kept; a grant
  lowered below its spend leaves the seat exhausted);
- refuses to start (:class:`~dpframe.curator.catalog.CatalogError`, nothing
  changed) when a grant would change its accounting kind;
- reports ledger seats the catalog no longer grants (kept, not served).

Before this, a changed grant started silently and each of that analyst's
requests failed inside the session's registration (HTTP 500).
"""

from __future__ import annotations

import logging
import sqlite3
from dataclasses import dataclass, field

from dpframe.accounting.ledger import Ledger
from dpframe.accounting.ledger_grants import GrantChange, change_grant
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.errors import LedgerError

__all__ = ["GrantReport", "check_grants", "reconcile", "seat_name"]

_log = logging.getLogger("dpframe.curator")


def seat_name(analyst: str, dataset: str) -> str:
    """The ledger session of ``analyst``'s seat on ``dataset``."""
    return f"{analyst}/{dataset}"


@dataclass
class GrantReport:
    """What differed between the catalog and the ledger when the curator started.

    Attributes:
        changed: grants changed in place (recorded in the ledger).
        ungranted: ledger seats the catalog no longer grants (kept, not served).
    """

    changed: list[GrantChange] = field(default_factory=list)
    ungranted: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line per difference, for the log and the startup message."""
        out = [f"grant changed in place: {change}" for change in self.changed]
        out += [
            f"ledger seat {name!r} is not granted in the catalog: its releases are kept, "
            "it is not served"
            for name in self.ungranted
        ]
        return out


def reconcile(catalog: Catalog, ledger: Ledger) -> GrantReport:
    """Compare every grant of ``catalog`` with ``ledger``; apply changed grants in place.

    Raises:
        CatalogError: a grant would change its seat's accounting kind (every
            such grant is named; nothing is changed).
    """
    grants = {
        seat_name(analyst.name, dataset): grant
        for analyst in catalog.analysts.values()
        for dataset, grant in analyst.budgets.items()
    }

    def work(conn: sqlite3.Connection) -> GrantReport:
        report, refused = GrantReport(), []
        for name in sorted(grants):
            grant = grants[name]
            try:
                change = change_grant(
                    conn, name, grant.budget, grant.accounting, grant.delta_reserve
                )
            except LedgerError as exc:
                refused.append(f"[analysts.{name.replace('/', '].budgets.', 1)}: {exc}")
                continue
            if change is not None:
                report.changed.append(change)
        if refused:
            raise CatalogError(
                "The catalog changes the accounting of a grant in use; nothing was changed "
                "and the curator did not start.\n  " + "\n  ".join(refused)
            )
        recorded = [
            str(s) for (s,) in conn.execute("SELECT session FROM budgets WHERE dataset='*'")
        ]
        report.ungranted = sorted(s for s in recorded if "/" in s and s not in grants)
        return report

    return ledger.run(work, write=True)


def check_grants(catalog: Catalog) -> GrantReport:
    """:func:`reconcile` on the catalog's ledger, each difference logged (a warning).

    Raises:
        CatalogError: a grant changes its seat's accounting kind (nothing changed), or
            the ledger cannot be opened (empty, damaged, another application's).
    """
    try:
        ledger = Ledger(catalog.ledger)
    except LedgerError as exc:  # said at start, to the owner, not later to each analyst
        raise CatalogError(f"The catalog's ledger cannot be opened: {exc}") from None
    try:
        report = reconcile(catalog, ledger)
    finally:
        ledger.close()
    for line in report.lines():
        _log.warning("%s", line)
    return report
