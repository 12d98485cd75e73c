"""The exceptions dpframe raises on purpose.

Every error is a subclass of :class:`DPError`.  Messages say what was wrong and
how to fix it; they never contain a value read from the private data.
"""

from __future__ import annotations

import sys

__all__ = [
    "BudgetExceededError",
    "BudgetResetWarning",
    "DPError",
    "DiscoveredKeysWarning",
    "FromLedgerWarning",
    "InvalidArgumentError",
    "InvalidBudgetError",
    "LedgerError",
    "PrivacyViolationError",
    "QueryFailedError",
    "ResourceLimitError",
    "SchemaError",
]


class DPError(Exception):
    """Base class of every error dpframe raises on purpose."""


class InvalidBudgetError(DPError, ValueError):
    """A privacy parameter (epsilon, delta, rho) is out of range or not a number."""


class BudgetExceededError(DPError):
    """A release would exceed the session budget; nothing was charged."""


class SchemaError(DPError, ValueError):
    """A column, bound or category is missing, unknown or invalid."""


class PrivacyViolationError(DPError, TypeError):
    """An operation would reveal raw rows (repr, len, iteration, pickle, ...)."""


class LedgerError(DPError):
    """The ledger cannot be opened, or holds a conflicting session."""


class InvalidArgumentError(DPError, ValueError):
    """An argument that is not a privacy parameter is out of range or of the wrong type."""


class QueryFailedError(DPError):
    """Evaluating a query on the data failed; no detail is shown (it could hold private values)."""


class ResourceLimitError(SchemaError):
    """A request is too large to evaluate (see ``dpframe.plan.estimate``); nothing was charged.

    The message names the size that is over and its limit; both are computed
    from the request alone (plan, expressions, declared keys), never from data.
    A kind of :class:`SchemaError` (the request's shape is what is wrong), so
    code that caught too many cells as a ``SchemaError`` keeps working.
    """


#: The one table of the curator protocol's error codes: the error class, the HTTP
#: status and the code, most specific class first.  The curator maps an error to
#: its code with it (the first class that matches), the client maps a code back
#: to the class it raises.
WIRE_CODES: tuple[tuple[type[DPError], int, str], ...] = (
    (BudgetExceededError, 403, "budget_exceeded"),
    (InvalidBudgetError, 400, "invalid_budget"),
    (PrivacyViolationError, 400, "privacy_violation"),
    (ResourceLimitError, 400, "resource_limit"),
    (SchemaError, 400, "schema"),
    (InvalidArgumentError, 400, "invalid_argument"),
    (QueryFailedError, 400, "query_failed"),
    (LedgerError, 409, "ledger"),
)


class BudgetResetWarning(UserWarning):
    """Data a session loads resembles data spent on in the ledger under another session name.

    The same rows in any order, most of them (one row dropped or appended, a
    99% sample), or a matching column.  A budget belongs to a session name, so
    a new name starts a separate budget for the same people (see
    :mod:`dpframe.engine.guard_rails`).
    """


class DiscoveredKeysWarning(UserWarning):
    """A grouped result's keys were found privately (the group-by column has no declared keys).

    Said once per release: a key with fewer rows than the public threshold
    (computed from ε, δ and the privacy unit alone) is not shown and its rows
    are in no group, and counts so found have no interval.  The text holds
    public numbers only (the threshold), never how many keys were left out.
    """


class FromLedgerWarning(UserWarning):
    """An answer came from the ledger: the same request was released before, charged nothing now.

    Said once per answer in a plain Python process or a stock kernel (where a
    released table's repr cannot show it); ``%load_ext dpframe`` shows it in
    the table's caption and the budget meter instead, and turns it off.
    """


def caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first caller outside dpframe.

    Call it in the ``warnings.warn(...)`` call itself: level 1 is the function
    that warns.  The analyst's own line is then shown, not dpframe's.
    """
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("dpframe."):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    return level
