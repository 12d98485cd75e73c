"""Ledger rows: what one charge inserts (clipped labels, checked parts, its currency).

:func:`row_statement` builds the INSERT of one pending charge; labels are
clipped (:func:`clip_label`), a composite's parts are checked to add up to its
charge and stored as JSON (:func:`decode_parts` reads them back).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import get_args

from dpframe.accounting.accountants import AccountingKind, Charge
from dpframe.accounting.ledger_chain import CHARGE_FIELDS
from dpframe.errors import InvalidArgumentError

__all__ = [
    "MAX_LABEL",
    "PendingCharge",
    "Row",
    "charge_fields",
    "clip_label",
    "decode_parts",
    "row_statement",
]

_CURRENCIES = frozenset(get_args(AccountingKind))
_INSERT = (
    "INSERT INTO releases (session, dataset, time, query, mechanism, epsilon, delta, rho,"
    " status, value, privacy_unit, parts{keyed}, currency) VALUES (?, ?, ?, ?, ?, ?, ?, ?,"
    " 'charged', NULL, ?, ?{key}, {currency})"
)
#: The new row's currency: given (or the session's accounting registered through this
#: object), or else read from the session's budget row in the same statement.
_GIVEN, _LOOKUP = "?", "(SELECT accounting FROM budgets WHERE session=? AND dataset='*')"
#: The statements by (currency given, request key given): a row without a key leaves
#: the column out (NULL), as a ledger before schema version 8 had none.
_STATEMENTS = {
    (given, keyed): _INSERT.format(
        keyed=", request" if keyed else "",
        key=", ?" if keyed else "",
        currency=_GIVEN if given else _LOOKUP,
    )
    for given in (True, False)
    for keyed in (True, False)
}
#: One INSERT statement and its parameters.
Row = tuple[str, tuple[object, ...]]


@dataclass(frozen=True)
class PendingCharge:
    """One release waiting for admission in :meth:`Ledger.charge_many`.

    Attributes:
        charge: its cost in the accountant's native units.
        query: the ledger label.
        mechanism: the mechanism's name.
        parts: for a composite release, each part's name and cost; the costs
            must add up to ``charge`` exactly.
        privacy_unit: the privacy-unit setting of the dataset (public text,
            for example ``"row"`` or the unit column and its limits).
        currency: the accounting the cost is in (``"pure"``, ``"approx"``,
            ``"zcdp"``); None records the session's registered accounting.
        request: the request's key (:func:`dpframe.engine.reruns.request_key`: the
            node by value, its privacy parameters and the data's identity), so that
            the same request asked again is answered from this row; None: never.
    """

    charge: Charge
    query: str
    mechanism: str
    parts: Sequence[tuple[str, Charge]] | None = None
    privacy_unit: str | None = None
    currency: str | None = None
    request: str | None = None


#: The longest label a ledger row stores; longer ones keep their start and a digest.
MAX_LABEL = 256
_DIGEST_CHARS = 16


def clip_label(label: str) -> str:
    """``label`` as the ledger stores it: whole up to :data:`MAX_LABEL` characters.

    A longer label (a 24,000-item ``isin`` made a 243 KiB row) keeps its first
    characters and ends with `` … #`` and the first 16 hex digits of the
    SHA-256 of the whole label, so two long labels that differ stay apart and
    a label can be matched to the query that made it.  Labels are built from
    the query's public arguments, never from the data.

    Example:
        >>> len(clip_label("x" * 10_000)) == MAX_LABEL
        True
    """
    if len(label) <= MAX_LABEL:
        return label
    digest = hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    tail = f" … #{digest}"
    return label[: MAX_LABEL - len(tail)] + tail


def _encode_parts(total: Charge, parts: Sequence[tuple[str, Charge]] | None) -> str | None:
    """The JSON text of a composite release's parts, checked to add up to its cost."""
    if parts is None:
        return None
    if not parts or not all(isinstance(name, str) and name for name, _ in parts):
        raise InvalidArgumentError("parts= takes a non-empty list of (name, Charge) pairs.")
    summed = Charge()
    for _, cost in parts:
        summed = summed + cost
    if summed != total:
        raise InvalidArgumentError(
            f"The parts of a composite release cost {summed} in total, not its charge "
            f"{total}: the ledger records parts that add up to the charge exactly."
        )
    return json.dumps(
        [
            {
                "name": clip_label(name),
                "epsilon": str(c.epsilon),
                "delta": str(c.delta),
                "rho": str(c.rho),
            }
            for name, c in parts
        ]
    )


def decode_parts(text: str | None) -> list[tuple[str, Charge]] | None:
    """The parts of a composite release from their JSON text in the ledger.

    Args:
        text: the ``parts`` field of a release row (None for a simple release).

    Returns:
        Each part's name and exact cost, in recorded order, or None.
    """
    if text is None:
        return None
    return [
        (
            part["name"],
            Charge(Fraction(part["epsilon"]), Fraction(part["delta"]), Fraction(part["rho"])),
        )
        for part in json.loads(text)
    ]


def row_statement(
    head: tuple[str, str, float],
    cost: Charge,
    query: str,
    mechanism: str,
    parts: Sequence[tuple[str, Charge]] | None,
    privacy_unit: str | None,
    currency: str | None,
    registered: str | None,
    request: str | None = None,
) -> Row:
    """The statement and parameters that insert one pending charge (see :class:`PendingCharge`).

    ``head`` is (session, dataset, time); ``registered`` is the session's accounting
    if known (the currency when none is given).
    """
    if currency is not None and currency not in _CURRENCIES:
        raise InvalidArgumentError(
            f"currency= takes one of {', '.join(sorted(_CURRENCIES))}, not {currency!r}."
        )
    session = head[0]
    params: tuple[object, ...] = (
        *head,
        clip_label(query),
        clip_label(mechanism),
        str(cost.epsilon),
        str(cost.delta),
        str(cost.rho),
        privacy_unit,
        _encode_parts(cost, parts),
    )
    if request is not None:
        params = (*params, request)
    currency = currency or registered
    if currency is None:
        return _STATEMENTS[False, request is not None], (*params, session)
    return _STATEMENTS[True, request is not None], (*params, currency)


#: The charge fields bound by every INSERT of :data:`_STATEMENTS`, in parameter order: the
#: chain's charge fields but the row id, the currency and the request, bound apart.
_BOUND = tuple(f for f in CHARGE_FIELDS if f not in ("id", "currency", "request"))


def charge_fields(row: Row) -> dict[str, object] | None:
    """The charge fields a row's INSERT stores (all but ``id``); None if one is read in SQL.

    A row whose currency is looked up from the budgets table by the statement
    itself (none given, none registered) returns None: its stored currency is
    known only by reading the row back.
    """
    statement, params = row
    keyed = statement in (_STATEMENTS[True, True], _STATEMENTS[False, True])
    if statement not in (_STATEMENTS[True, True], _STATEMENTS[True, False]):
        return None
    fields: dict[str, object] = dict(zip(_BOUND, params, strict=False))
    fields["request"] = params[len(_BOUND)] if keyed else None
    fields["currency"] = params[-1]
    # TEXT and REAL columns give back exactly these types; anything else is read back
    exact = all(v is None or type(v) is (float if k == "time" else str) for k, v in fields.items())
    return fields if exact else None
