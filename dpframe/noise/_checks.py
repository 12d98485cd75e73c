"""Argument checks shared by the noise samplers.

The samplers are exact: every probability they realise is a rational number
computed with Python integers.  Floats are therefore refused by the samplers
(pass an ``int`` or a :class:`fractions.Fraction`, or round a float parameter
*up* with :func:`dpframe.noise.coarsen_up`, which converts floats exactly).
"""

from __future__ import annotations

import numbers
import operator
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpframe.errors import DPError

__all__ = [
    "INT64_SAFE",
    "NoiseParameterError",
    "as_int_array",
    "check_size",
    "to_fraction",
    "to_int",
]

#: Largest integer the int64 fast paths let through.  Products of two such
#: values are never formed without an explicit bound check first.
INT64_SAFE = 2**62


class NoiseParameterError(DPError, ValueError):
    """A noise parameter (probability, scale, variance, size, ...) is invalid."""


def to_fraction(value: object, name: str) -> Fraction:
    """Convert an exact rational parameter to a :class:`~fractions.Fraction`.

    Args:
        value: An ``int``, a :class:`~fractions.Fraction` or any other
            :class:`numbers.Rational` (numpy integers included).  Floats and
            bools are refused so that no rounding happens silently.
        name: The parameter name used in the error message.

    Returns:
        The value as a Fraction.

    Raises:
        NoiseParameterError: If ``value`` is a float, a bool or not a number.

    """
    if isinstance(value, bool | np.bool_):
        raise NoiseParameterError(f"{name} must be an int or a Fraction, not a bool")
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    if isinstance(value, np.integer):
        return Fraction(int(value))
    if isinstance(value, float | np.floating):
        raise NoiseParameterError(
            f"{name} must be an int or a fractions.Fraction, got the float {value!r}; "
            "floats are refused to keep sampling exact: pass Fraction(x) for the exact "
            "binary value, or coarsen_up(x) to round it up onto a coarse dyadic grid"
        )
    raise NoiseParameterError(
        f"{name} must be an int or a fractions.Fraction, got {type(value).__name__}"
    )


def to_int(value: object, name: str) -> int:
    """Convert an integer parameter (Python or numpy integer) to ``int``.

    Args:
        value: The value to convert; bools and non-integers are refused.
        name: The parameter name used in the error message.

    Returns:
        The value as a Python int.

    Raises:
        NoiseParameterError: If ``value`` is not an integer.

    """
    if isinstance(value, bool | np.bool_):
        raise NoiseParameterError(f"{name} must be an integer, not a bool")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise NoiseParameterError(
            f"{name} must be an integer, got {type(value).__name__}"
        ) from None


def check_size(size: object) -> int:
    """Validate a sample size.

    Args:
        size: The number of draws requested.

    Returns:
        The size as a non-negative Python int.

    Raises:
        NoiseParameterError: If ``size`` is not an integer or is negative.

    """
    n = to_int(size, "size")
    if n < 0:
        raise NoiseParameterError(f"size must be >= 0, got {n}")
    return n


def as_int_array(values: Any, name: str, size: int) -> npt.NDArray[np.int64]:
    """Validate an integer array of the given length and return it as int64.

    Args:
        values: A numpy array with an integer dtype.
        name: The parameter name used in error messages.
        size: The required length.

    Returns:
        The array as a one-dimensional int64 array (a copy when the dtype changes).

    Raises:
        NoiseParameterError: If the dtype is not integral, the shape is wrong, or
            a value does not fit in int64.

    """
    arr = np.asarray(values)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise NoiseParameterError(f"{name} must have an integer dtype, got {arr.dtype}")
    if arr.shape != (size,):
        raise NoiseParameterError(f"{name} must have shape ({size},), got {arr.shape}")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) >= 2**63:
        raise NoiseParameterError(f"{name} has values that do not fit in int64")
    return arr.astype(np.int64, copy=False)
