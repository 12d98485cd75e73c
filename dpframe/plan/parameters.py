"""Typed parameters of the public API: privacy costs, privacy units and named choices.

Strings keep working wherever a choice is taken (``accounting="zcdp"``), and
so do the ``epsilon=``/``delta=``/``rho=`` shorthands; these types say the
same with names a type checker and tab completion know.

Example:
    >>> import dpframe as dp
    >>> dp.Privacy(epsilon=0.1)
    PrivacyRequest(epsilon=Fraction(1, 10), delta=Fraction(0, 1), rho=None)
    >>> dp.PrivacyUnit("person_id", max_rows=5)
    PrivacyUnit(column='person_id', max_rows=5, max_groups=None, id_space=None)
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
        id_space: the kind of identifier the column holds, named apart from the
            column (``people.id`` and ``visits.person_id`` are one space,
            ``"persons"``); frames of one ID space may be joined on it
            (``visits.merge(people, ...)``).  Default: the column's name.

    Raises:
        SchemaError: for a column that is not a non-empty string, limits that
            are not integers >= 1, or an ID space that is not a non-empty string.
    """

    column: str
    max_rows: int
    max_groups: int | None = None
    id_space: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise SchemaError("PrivacyUnit(column=...) takes a column name.")
        for name in ("max_rows", "max_groups"):
            value = getattr(self, name)
            if value is None and name == "max_groups":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SchemaError(f"PrivacyUnit({name}=...) must be an integer >= 1.")
        if self.id_space is not None and (not isinstance(self.id_space, str) or not self.id_space):
            raise SchemaError("PrivacyUnit(id_space=...) takes a non-empty name, e.g. 'persons'.")

    @property
    def space(self) -> str:
        """The ID space: ``id_space``, or the column's name."""
        return self.id_space or self.column
