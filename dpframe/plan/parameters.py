"""Typed parameters of the public API: privacy costs, privacy units and named choices.

Strings keep working wherever a choice is taken (``accounting="zcdp"``), and
so do the ``epsilon=``/``delta=``/``rho=`` shorthands; these types say the
same with names a type checker and tab completion know.

Example:
    >>> import dpframe as dp
    >>> dp.Privacy(epsilon=0.1)
    PrivacyRequest(epsilon=Fraction(1, 10), delta=Fraction(0, 1), rho=None)
    >>> dp.PrivacyUnit("person_id", max_rows=5)
    PrivacyUnit(column='person_id', max_rows=5, max_groups=None)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from dpframe.errors import SchemaError
from dpframe.plan.privacy import Privacy

__all__ = ["Accounting", "Analysis", "Privacy", "PrivacyUnit"]


class _Choice(str, Enum):
    """A named choice that is also its string (``Accounting.ZCDP == "zcdp"``)."""

    def __str__(self) -> str:
        return str(self.value)


class Accounting(_Choice):
    """How a session composes its releases (``dp.Session(..., accounting=...)``)."""

    PURE = "pure"
    APPROX = "approx"
    ZCDP = "zcdp"
    GDP = "gdp"


class Analysis(_Choice):
    """How a regression's privacy is analysed (``linear_regression(..., analysis=...)``)."""

    RDP = "rdp"
    ITERATION = "iteration"


@dataclass(frozen=True)
class PrivacyUnit:
    """Who is protected when one person has several rows (``privacy_unit=`` when loading).

    Args:
        column: the column identifying a person (or household, ...).
        max_rows: keep at most this many rows per unit (a secure random subset);
            every sensitivity is multiplied by it.
        max_groups: when keys are discovered privately, each unit adds at most this
            many keys (default: ``max_rows``).

    Raises:
        SchemaError: for a column that is not a non-empty string, or limits that
            are not integers >= 1.
    """

    column: str
    max_rows: int
    max_groups: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise SchemaError("PrivacyUnit(column=...) takes a column name.")
        for name in ("max_rows", "max_groups"):
            value = getattr(self, name)
            if value is None and name == "max_groups":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SchemaError(f"PrivacyUnit({name}=...) must be an integer >= 1.")
