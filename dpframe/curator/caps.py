"""Many analysts, one dataset: a dataset-wide cap and a per-release cap from the catalog.

Example::

    [datasets.cps]
    cap = { epsilon = 4.0, delta = 1e-6 }           # all analysts together, about anyone
    release_cap = { epsilon = 0.5, delta = 1e-7 }   # any one release
    # both accept accounting = "pure" | "approx" | "zcdp" | "gdp" and delta_reserve,
    # as a grant does; the default is pure for delta = 0, else Gaussian DP

The cap bounds the privacy loss about any one unit of the dataset over every
analyst's releases on it, in one currency, the cap's accounting
(:mod:`dpframe.accounting.ledger_caps`: under Gaussian DP a pure ε-DP
release enters as μ(ε)).  Both caps are checked *inside* the SQLite write
transaction that charges the analyst's seat (:class:`CapGuard`, called by
:class:`~dpframe.curator.seats.SeatLedger`), after the seat's own filter:
the total of every committed row is read under the ledger's write lock, so
two analysts racing for the last of the cap cannot both be admitted, and a
refusal records nothing and reads no data.  Refusals are 409 ``dataset_cap``
and 409 ``release_cap``, with Requested / Remaining / Difference.

Joins (datasets of one ID space): a private join is charged to the seat it
was sent to (one budget, that analyst's), and counts against the caps of
*every* dataset it reads: :class:`SeatCaps` checks each of their caps in the
same transaction (all before the charge: one refusal, nothing charged) and
records the other datasets it read (``cap_touches``,
:func:`~dpframe.accounting.ledger_caps.record_touches`), so the caps count
it from then on.  A cap therefore bounds the privacy loss about any unit of
its dataset from every release that read the dataset, alone or joined; a
unit present in several datasets of an ID space is bounded by the sum of
their caps (a release reading k of them counts once against each cap).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpframe.accounting.accountants import Accountant, Charge
from dpframe.accounting.choice import make_accountant
from dpframe.accounting.ledger_caps import CapSpend, cap_cost, converts, record_touches
from dpframe.curator.codes import ServiceError
from dpframe.errors import DPError
from dpframe.plan.privacy import Budget, to_fraction

__all__ = ["CAP_KEYS", "Cap", "CapGuard", "SeatCaps", "check_cap_kinds", "parse_cap"]

#: The keys of a ``cap`` or ``release_cap`` table.
CAP_KEYS = frozenset({"epsilon", "delta", "accounting", "delta_reserve"})


@dataclass(frozen=True)
class Cap:
    """A cap's budget and accounting (the accountant is made from them).

    Attributes:
        budget: the total (ε, δ).
        accounting: its accounting (resolved: never None).
        delta_reserve: a Gaussian DP cap's δ reserve (None: δ/10, or not Gaussian DP).
    """

    budget: Budget
    accounting: str
    delta_reserve: Fraction | None = None

    def accountant(self) -> Accountant:
        """The privacy filter of this cap."""
        return make_accountant(self.budget, self.accounting, self.delta_reserve)


def parse_cap(raw: Any, where: str, error: type[DPError]) -> Cap:
    """A ``cap`` or ``release_cap`` table, checked as a session's budget would be.

    Raises:
        error: naming ``where`` and what is wrong.
    """
    if not isinstance(raw, Mapping):
        raise error(f"{where} must be a table, e.g. {{ epsilon = 4.0, delta = 1e-6 }}.")
    unknown = set(raw) - CAP_KEYS
    if unknown:
        raise error(
            f"{where} has unknown keys: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(CAP_KEYS))})."
        )
    try:
        budget = Budget(raw.get("epsilon", 0), raw.get("delta", 0))
        if budget.epsilon <= 0:
            raise error(f"{where} needs epsilon > 0.")
        reserve = raw.get("delta_reserve")
        reserve = None if reserve is None else to_fraction(reserve, "delta_reserve")
        accounting = raw.get("accounting")
        accountant = make_accountant(
            budget, None if accounting is None else str(accounting), reserve
        )
    except error:
        raise
    except DPError as exc:
        raise error(f"{where}: {exc}") from None
    return Cap(budget, accountant.kind, getattr(accountant, "delta_reserve", None))


def check_cap_kinds(
    where: str, cap: Cap | None, release_cap: Cap | None, grants: Mapping[str, str]
) -> str | None:
    """Why this dataset's caps and grants do not fit together (None: they do).

    ``grants`` maps each analyst granted the dataset to the grant's accounting.
    """
    if cap is not None and release_cap is not None and cap.accounting != release_cap.accounting:
        return (
            f"{where}: cap ({cap.accounting}) and release_cap ({release_cap.accounting}) must "
            "use one accounting: they are in one currency."
        )
    for limit in (cap, release_cap):
        if limit is None:
            continue
        for analyst, kind in sorted(grants.items()):
            if not converts(kind, limit.accounting):
                return (
                    f"{where}: the grant of analyst {analyst!r} uses {kind} accounting, whose "
                    f"releases have no cost in the cap's {limit.accounting} accounting. Use a "
                    "cap of accounting 'gdp' (pure, approx and gdp grants), 'zcdp' (pure, gdp "
                    "and zcdp), 'approx' (pure and approx) or 'pure' (pure)."
                )
    return None


def _amounts(accountant: Accountant, used: Charge, cost: Charge) -> tuple[str, str, str]:
    """Requested, remaining and difference in the cap's currency: ε (and δ), μ² or ρ."""
    if accountant.kind in ("pure", "approx"):
        left = accountant.remaining(used)
        asked = Budget(cost.epsilon, cost.delta)
        diff = Budget(
            max(asked.epsilon - left.epsilon, Fraction(0)),
            max(asked.delta - left.delta, Fraction(0)),
        )
        return str(asked), str(left), str(diff)
    gdp = accountant.kind == "gdp"
    name, scale = ("μ²", 2) if gdp else ("ρ", 1)
    total = Fraction(getattr(accountant, "rho_total", 0))
    reserve = Fraction(getattr(accountant, "delta_reserve", 0)) if gdp else accountant.total.delta
    left_rho = max(total - used.rho, Fraction(0))
    left_delta = max(reserve - used.delta, Fraction(0))

    def text(rho: Fraction, delta: Fraction) -> str:
        out = f"{name}={float(rho * scale):.6g}"
        return out + (f", δ={float(delta):.3g}" if delta else "")

    return (
        text(cost.rho, cost.delta),
        text(left_rho, left_delta),
        text(max(cost.rho - left_rho, Fraction(0)), max(cost.delta - left_delta, Fraction(0))),
    )


def _converted(charges: list[Charge], seat_kind: str, cap_kind: str) -> Charge:
    """The charges (one row each) in the cap's currency, converted row by row as the tally is."""
    total = Charge()
    for charge in charges:
        total = total + cap_cost(charge, seat_kind, cap_kind)
    return total


class CapGuard:
    """The caps of one dataset, for one seat (its accounting), checked inside its charge.

    Args:
        dataset: the catalog's dataset name.
        seat_kind: the seat's accounting.
        cap: the dataset-wide cap (None: none).
        release_cap: the per-release cap (None: none).
    """

    def __init__(
        self, dataset: str, seat_kind: str, cap: Cap | None, release_cap: Cap | None
    ) -> None:
        self.dataset = dataset
        self.seat_kind = seat_kind
        self.cap = None if cap is None else cap.accountant()
        self.release_cap = None if release_cap is None else release_cap.accountant()
        kind = cap.accounting if cap is not None else None
        self.spend = None if kind is None else CapSpend(dataset, kind)

    def check(self, conn: sqlite3.Connection, charges: list[Charge]) -> None:
        """Refuse a release over either cap (409, nothing recorded); inside the charge transaction.

        Raises:
            ServiceError: 409 ``release_cap`` or 409 ``dataset_cap``.
        """
        if self.release_cap is not None:  # one request (a batch's items together)
            cost = _converted(charges, self.seat_kind, self.release_cap.kind)
            if not self.release_cap.admits(Charge(), cost):
                raise self._refusal("release_cap", self.release_cap, Charge(), cost)
        if self.cap is None or self.spend is None:
            return
        cost = _converted(charges, self.seat_kind, self.cap.kind)
        used = self.spend.read(conn)
        if not self.cap.admits(used, cost):
            raise self._refusal("dataset_cap", self.cap, used, cost)

    def _refusal(
        self, code: str, accountant: Accountant, used: Charge, cost: Charge
    ) -> ServiceError:
        asked, left, diff = _amounts(accountant, used, cost)
        what = (
            f"the data owner's cap on any one release about the dataset {self.dataset!r}"
            if code == "release_cap"
            else f"the data owner's cap on all analysts' releases about the dataset "
            f"{self.dataset!r} together"
        )
        fix = (
            "Ask for a smaller epsilon (or delta)."
            if code == "release_cap"
            else "Ask for a smaller epsilon, or ask the data owner: the dataset's cap is "
            "shared by every analyst."
        )
        return ServiceError(
            409,
            code,
            f"This release is over {what} ({accountant.kind} accounting, total "
            f"{accountant.total}{_mu(accountant)}); nothing was charged and no data was read.\n"
            f"  Requested:  {asked}\n"
            f"  Remaining:  {left}\n"
            f"  Difference: {diff}\n"
            f"{fix}",
        )


def _mu(accountant: Accountant) -> str:
    rho_total = getattr(accountant, "rho_total", None)
    if accountant.kind != "gdp" or rho_total is None:
        return ""
    return f", μ²={float(2 * rho_total):.6g}"


class SeatCaps:
    """The caps a seat's releases can reach: its own dataset's, and those it may join.

    The curator sets :attr:`touching` before each release (the datasets the
    request reads, from the catalog, never from the rows); :meth:`check`
    runs inside the charge's transaction.

    Args:
        dataset: the seat's own dataset.
        guards: the caps of each dataset that has some (its own, and the
            datasets of its ID space the analyst is granted).
    """

    def __init__(self, dataset: str, guards: Mapping[str, CapGuard]) -> None:
        self.dataset = dataset
        self.guards = dict(guards)
        self.touching: frozenset[str] = frozenset({dataset})

    def check(self, conn: sqlite3.Connection, charges: list[Charge]) -> None:
        """Every read dataset's caps, then record the other datasets read; in the transaction.

        Raises:
            ServiceError: 409 ``release_cap`` or ``dataset_cap`` of the first
                dataset (by name) the release is over; nothing is recorded.
        """
        read = sorted(self.touching | {self.dataset})
        for name in read:
            guard = self.guards.get(name)
            if guard is not None:
                guard.check(conn, charges)
        others = [name for name in read if name != self.dataset]
        if others:
            record_touches(conn, len(charges), others)
