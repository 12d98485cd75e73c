"""One released number of the ``dp`` dtype: :class:`DPValue`, a float that keeps its interval.

A cell taken out of a released column (``series.iloc[0]``, ``series.sum()``)
is a :class:`DPValue`: it compares, formats and converts as its value, and
its arithmetic with numbers and other released numbers is the one-cell
array's (:mod:`dpframe.mechanisms.answers.arithmetic`), so the interval
follows.

Post-processing of released values and public noise facts: free of privacy cost.
"""

from __future__ import annotations

import numbers
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["DPValue", "OneCellArray"]


class OneCellArray(Protocol):
    """What a :class:`DPValue` asks of its one-cell array (a ``DPArray`` is one)."""

    @property
    def values(self) -> npt.NDArray[np.float64]:
        """The released values."""
        ...

    def __len__(self) -> int: ...

    def intervals(self, level: float = 0.95) -> tuple[Any, Any]:
        """Per cell, (low, high) containing the truth with probability at least ``level``."""
        ...

    def cell_text(self, i: int) -> str:
        """Cell ``i`` as shown."""
        ...

    def __add__(self, other: Any) -> Any: ...
    def __radd__(self, other: Any) -> Any: ...
    def __sub__(self, other: Any) -> Any: ...
    def __rsub__(self, other: Any) -> Any: ...
    def __mul__(self, other: Any) -> Any: ...
    def __rmul__(self, other: Any) -> Any: ...
    def __truediv__(self, other: Any) -> Any: ...
    def __rtruediv__(self, other: Any) -> Any: ...


_Array = TypeVar("_Array", bound=OneCellArray)


def _cell(found: Any) -> Any:
    """The one cell of an array operation's result (``NotImplemented`` passes through)."""
    return found if found is NotImplemented else found[0]


class DPValue(numbers.Real, Generic[_Array]):
    """One released number (a cell of a ``DPArray``): a float with its interval.

    Arithmetic with numbers and other released numbers keeps the interval;
    comparisons, ``float()`` and formatting use the value.
    """

    __slots__ = ("_array",)

    def __init__(self, array: _Array) -> None:
        if len(array) != 1:
            raise ValueError("A DPValue is one cell.")
        self._array = array

    @property
    def value(self) -> float:
        """The released value."""
        return float(self._array.values[0])

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """(low, high) containing the (clamped) truth with probability at least ``level``."""
        low, high = self._array.intervals(level)
        return float(low[0]), float(high[0])

    def as_array(self) -> _Array:
        """This value as a one-cell array."""
        return self._array

    def __repr__(self) -> str:
        return self._array.cell_text(0)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(self.value, spec) if spec else repr(self)

    def __float__(self) -> float:
        return self.value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The value as a 0-d array, so numpy functions (``np.isnan``, ``np.sqrt``) accept it."""
        return np.asarray(self.value, dtype=dtype)

    def __int__(self) -> int:
        return int(self.value)

    def __trunc__(self) -> int:
        return int(self.value)

    def __floor__(self) -> int:
        return int(np.floor(self.value))

    def __ceil__(self) -> int:
        return int(np.ceil(self.value))

    def __round__(self, ndigits: int | None = None) -> Any:
        return round(self.value, ndigits)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __eq__(self, other: object) -> bool:
        try:
            return self.value == float(other)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return NotImplemented

    def __lt__(self, other: Any) -> bool:
        return self.value < float(other)

    def __le__(self, other: Any) -> bool:
        return self.value <= float(other)

    def __gt__(self, other: Any) -> bool:
        return self.value > float(other)

    def __ge__(self, other: Any) -> bool:
        return self.value >= float(other)

    # -- arithmetic: the one-cell array's, so the interval follows ---------------------

    def _longer(self, other: Any) -> bool:
        """True when ``other`` is a released array of several cells (the cell is broadcast)."""
        return isinstance(other, type(self._array)) and len(other) != 1

    def __add__(self, other: Any) -> Any:
        if self._longer(other):  # cell add array: the array's reflected operator
            return other.__radd__(self)
        return _cell(self._array.__add__(other))

    def __radd__(self, other: Any) -> Any:
        if self._longer(other):
            return other.__add__(self)
        return _cell(self._array.__radd__(other))

    def __sub__(self, other: Any) -> Any:
        if self._longer(other):  # cell sub array: the array's reflected operator
            return other.__rsub__(self)
        return _cell(self._array.__sub__(other))

    def __rsub__(self, other: Any) -> Any:
        if self._longer(other):
            return other.__sub__(self)
        return _cell(self._array.__rsub__(other))

    def __mul__(self, other: Any) -> Any:
        if self._longer(other):  # cell mul array: the array's reflected operator
            return other.__rmul__(self)
        return _cell(self._array.__mul__(other))

    def __rmul__(self, other: Any) -> Any:
        if self._longer(other):
            return other.__mul__(self)
        return _cell(self._array.__rmul__(other))

    def __truediv__(self, other: Any) -> Any:
        if self._longer(other):  # cell truediv array: the array's reflected operator
            return other.__rtruediv__(self)
        return _cell(self._array.__truediv__(other))

    def __rtruediv__(self, other: Any) -> Any:
        if self._longer(other):
            return other.__truediv__(self)
        return _cell(self._array.__rtruediv__(other))

    def __neg__(self) -> Any:
        return _cell(self._array.__mul__(-1.0))

    def __pos__(self) -> DPValue[_Array]:
        return self

    def __abs__(self) -> float:
        return abs(self.value)

    def __floordiv__(self, other: Any) -> float:
        return self.value // float(other)

    def __rfloordiv__(self, other: Any) -> float:
        return float(other) // self.value

    def __mod__(self, other: Any) -> float:
        return self.value % float(other)

    def __rmod__(self, other: Any) -> float:
        return float(other) % self.value

    def __pow__(self, other: Any, modulo: Any = None) -> float:
        return float(self.value ** float(other))

    def __rpow__(self, other: Any) -> float:
        return float(float(other) ** self.value)
