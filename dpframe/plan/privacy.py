"""Exact privacy budgets and per-query privacy requests.

Floats given by a user are read by their shortest decimal representation, so
``0.1`` means exactly one tenth and ten charges of ``0.1`` add up to exactly
``1``.  All arithmetic on budgets is exact (:class:`fractions.Fraction`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from numbers import Rational

import numpy as np

from dpframe.errors import InvalidBudgetError

__all__ = ["Budget", "Number", "Privacy", "PrivacyRequest", "to_fraction"]

Number = int | float | Fraction | Decimal | str


def to_fraction(value: object, name: str, text: bool = True) -> Fraction:
    """Convert a user-supplied number to an exact fraction.

    Args:
        value: an int, float, Fraction, Decimal or (with ``text``) a numeric string. Floats are
            read by their shortest decimal representation (``repr``); a numpy
            float32 by its own (``np.float32(0.1)`` is 1/10, as written).
        name: the parameter's name, used in error messages.
        text: accept numeric strings (exact totals such as ``Budget("1/3")``); a
            release's request passes False, so ``epsilon="0.1"`` is refused.

    Returns:
        The exact value.

    Raises:
        InvalidBudgetError: if the value is missing, boolean, NaN or infinite, an
            array or other collection (even of one number), or a string when ``text``
            is False.
    """
    if value is None or isinstance(value, (bool, np.bool_)):
        raise InvalidBudgetError(f"{name} must be a number, got {value!r}.")
    if isinstance(value, np.ndarray) or (
        not isinstance(value, (str, bytes, np.generic)) and hasattr(value, "__len__")
    ):
        # float() of a one-element array is its element on numpy < 2.4 (and of a
        # one-row Series on pandas < 3): refused here on every version, before any charge.
        shape = getattr(value, "shape", None)
        what = type(value).__name__ + (f" of shape {tuple(shape)}" if shape is not None else "")
        raise InvalidBudgetError(
            f"{name} must be one number, not an array or a collection ({what}); "
            f"pass a single value (for a one-element array x: {name}=x.item())."
        )
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidBudgetError(f"{name} must be finite, got {value!r}.")
        return Fraction(repr(float(value)))  # float(): numpy scalars repr as np.float64(...)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise InvalidBudgetError(f"{name} must be finite, got {value!r}.")
        return Fraction(value)
    if isinstance(value, (str, bytes)) and not text:
        # In a request a string is a slip (a widget's text, a parsed argument): refused, so
        # that it is never charged as if it were meant.  Floats are read as written anyway.
        raise InvalidBudgetError(
            f"{name} must be a number, not the string {value!r}; write it without quotes "
            f"(a float is read as written: {name}=0.1 is exactly 1/10)."
        )
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise InvalidBudgetError(f"{name} must be a number, got {value!r}.") from None
    if isinstance(value, np.floating):  # float32 and kin: their own shortest decimal
        if not np.isfinite(value):
            raise InvalidBudgetError(f"{name} must be finite, got {value!r}.")
        return Fraction(np.format_float_positional(value, unique=True, trim="-"))
    if isinstance(value, Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    try:
        as_float = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidBudgetError(f"{name} must be a number, got {type(value).__name__}.") from None
    return to_fraction(as_float, name)


def _fmt(x: Fraction) -> str:
    """Format an exact value compactly for messages and reprs."""
    if x.denominator == 1 and abs(x.numerator) < 10**15:
        return str(x.numerator)
    try:
        return f"{float(x):.6g}"
    except OverflowError:  # beyond float range: the order of magnitude
        digits = len(str(abs(x.numerator))) - len(str(x.denominator))
        return f"{'-' if x < 0 else ''}~1e{digits}"


@dataclass(frozen=True, init=False)
class Budget:
    """An exact, immutable privacy budget (epsilon, delta).

    ``Budget(1, 1e-6)`` is the guarantee of (ε, δ)-differential privacy with
    ε = 1 and δ = 10⁻⁶.  Budgets add and subtract exactly and compare
    component-wise (``a <= b`` when both ε and δ of ``a`` are at most those
    of ``b``).

    Args:
        epsilon: ε ≥ 0, finite.
        delta: 0 ≤ δ < 1.

    Example:
        >>> Budget(0.1) + Budget(0.2) == Budget(0.3)
        True
    """

    epsilon: Fraction
    delta: Fraction

    def __init__(self, epsilon: Number = 0, delta: Number = 0) -> None:
        eps = to_fraction(epsilon, "epsilon")
        dlt = to_fraction(delta, "delta")
        if eps < 0:
            raise InvalidBudgetError(f"epsilon must be >= 0, got {_fmt(eps)}.")
        if not 0 <= dlt < 1:
            raise InvalidBudgetError(f"delta must be in [0, 1), got {_fmt(dlt)}.")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", dlt)

    def __add__(self, other: Budget) -> Budget:
        if not isinstance(other, Budget):
            return NotImplemented
        return Budget(self.epsilon + other.epsilon, self.delta + other.delta)

    def __sub__(self, other: Budget) -> Budget:
        if not isinstance(other, Budget):
            return NotImplemented
        return Budget(
            max(self.epsilon - other.epsilon, Fraction(0)),
            max(self.delta - other.delta, Fraction(0)),
        )

    def __le__(self, other: Budget) -> bool:
        return self.epsilon <= other.epsilon and self.delta <= other.delta

    def __ge__(self, other: Budget) -> bool:
        return other <= self

    @property
    def is_zero(self) -> bool:
        """True when nothing is spent (ε = δ = 0)."""
        return self.epsilon == 0 and self.delta == 0

    def __repr__(self) -> str:
        return f"Budget(epsilon={_fmt(self.epsilon)}, delta={_fmt(self.delta)})"

    def __str__(self) -> str:
        if self.delta == 0:
            return f"ε={_fmt(self.epsilon)}"
        return f"ε={_fmt(self.epsilon)}, δ={_fmt(self.delta)}"


@dataclass(frozen=True, init=False)
class PrivacyRequest:
    """What one query asks to spend: ``epsilon`` (with optional ``delta``) or ``rho``.

    Args:
        epsilon: ε > 0, finite (or None when ``rho`` is given).
        delta: 0 ≤ δ < 1; default 0.
        rho: ρ > 0 for zCDP sessions (or None when ``epsilon`` is given).

    Raises:
        InvalidBudgetError: for out-of-range, NaN or infinite values, or when
            neither or both of ``epsilon`` and ``rho`` are given.
    """

    epsilon: Fraction | None
    delta: Fraction
    rho: Fraction | None

    def __init__(
        self, epsilon: Number | None = None, delta: Number | None = 0, rho: Number | None = None
    ) -> None:
        if (epsilon is None) == (rho is None):
            raise InvalidBudgetError(
                "Give the privacy cost of a query as epsilon=... (or rho=... in a zCDP "
                "session), exactly one of them."
            )
        eps = None if epsilon is None else to_fraction(epsilon, "epsilon", text=False)
        r = None if rho is None else to_fraction(rho, "rho", text=False)
        dlt = to_fraction(0 if delta is None else delta, "delta", text=False)
        if eps is not None and eps <= 0:
            raise InvalidBudgetError(f"epsilon must be > 0, got {_fmt(eps)}.")
        if r is not None and r <= 0:
            raise InvalidBudgetError(f"rho must be > 0, got {_fmt(r)}.")
        if not 0 <= dlt < 1:
            raise InvalidBudgetError(f"delta must be in [0, 1), got {_fmt(dlt)}.")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", dlt)
        object.__setattr__(self, "rho", r)

    def __str__(self) -> str:
        if self.rho is not None:
            return f"ρ={_fmt(self.rho)}"
        assert self.epsilon is not None
        return str(Budget(self.epsilon, self.delta))


#: The public name of a privacy request: ``dp.Privacy(epsilon=0.1)``, passed as ``privacy=``.
Privacy = PrivacyRequest
