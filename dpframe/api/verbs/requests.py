"""What every release verb checks first: the privacy request and the column's public facts."""

from __future__ import annotations

import math
from collections.abc import Hashable

from dpframe.api.keywords import declare_call
from dpframe.backends.declared import INTEGER_DTYPE
from dpframe.errors import InvalidBudgetError, SchemaError
from dpframe.plan.columns import ColumnInfo
from dpframe.plan.privacy import Number, PrivacyRequest

__all__ = ["MAX_INTEGER_KEYS", "is_integer_kind", "public_keys", "request_of", "require_bounds"]

#: The most whole numbers a column's bounds may declare as its keys (beyond: bin it).
MAX_INTEGER_KEYS = 10_000


def request_of(
    epsilon: Number | None,
    delta: Number | None,
    rho: Number | None,
    given: PrivacyRequest | None = None,
) -> PrivacyRequest:
    """The privacy request of a release method: ``privacy=`` or ``epsilon=``/``delta=``/``rho=``.

    Raises:
        InvalidBudgetError: when both forms are given, or ``privacy=`` is not a
            :class:`~dpframe.Privacy`.
    """
    if given is None:
        return PrivacyRequest(epsilon=epsilon, delta=delta, rho=rho)
    if not isinstance(given, PrivacyRequest):
        raise InvalidBudgetError(
            "privacy= takes dp.Privacy(epsilon=..., delta=..., rho=...), not a "
            f"{type(given).__name__}."
        )
    if epsilon is not None or delta is not None or rho is not None:
        raise InvalidBudgetError(
            "Give the cost either as privacy=dp.Privacy(...) or as epsilon=/delta=/rho=, not both."
        )
    return given


def require_bounds(info: ColumnInfo, statistic: str) -> tuple[float, float]:
    """The clamping bounds of a column, or an error that says which bounds to add."""
    if not info.summable:
        raise SchemaError(
            f"{statistic}() needs a numeric column; {info.name!r} is {info.kind}. "
            "Use count(), value counts by groupby(), or derive a number first."
        )
    if info.bounds is None:
        raise SchemaError(
            f"{statistic}() of {info.name!r} needs public clamping bounds: pass "
            f"bounds={{{info.name!r}: (low, high)}} when loading, or call "
            f"{declare_call('with_bounds', info.name, '(low, high)')}, or clip(low, high) "
            "the expression."
        )
    return info.bounds


def is_integer_kind(info: ColumnInfo) -> bool:
    """True for a column declared integer (``dtypes={col: "integer"}``) or boolean.

    The kind comes from the declared schema only (its dtype ``Int64`` is the
    declaration, never read off the data); a numeric column that merely holds
    whole numbers is not integer unless declared so.
    """
    return info.dtype == INTEGER_DTYPE or info.kind == "boolean"


def public_keys(info: ColumnInfo) -> tuple[Hashable, ...] | None:
    """A column's public keys: its declared categories, or the whole numbers in its bounds.

    An integer column (``Int64`` in the declared schema: an int64 column, or
    ``dtypes={col: "integer"}``) with bounds ``(1, 12)`` declares the keys
    1, 2, ..., 12, as date bounds declare ``.dt.month``'s: nothing is read
    from the rows.  Rows outside the bounds (or not whole) are in no group,
    as undeclared keys (``result.dp.undeclared``).  None when the column has
    neither.

    Raises:
        SchemaError: when the bounds hold more than :data:`MAX_INTEGER_KEYS`
            whole numbers (bin the column instead).
    """
    if info.categories is not None:
        return info.categories
    if info.dtype != INTEGER_DTYPE or info.bounds is None:
        return None
    low, high = math.ceil(info.bounds[0]), math.floor(info.bounds[1])
    if high - low + 1 > MAX_INTEGER_KEYS:
        raise SchemaError(
            f"{info.name!r} is an integer column whose bounds {info.bounds} hold "
            f"{high - low + 1:,} whole numbers, more than {MAX_INTEGER_KEYS:,} keys: group "
            f"it into bins instead, pf[{info.name!r}].cut(bins) (or dp.cut), or declare the "
            f"keys you want: {declare_call('with_categories', info.name, '[...]')}."
        )
    return tuple(range(low, high + 1)) if low <= high else None
