"""Guard rails shared by private frames and series: the ways raw rows must never leave."""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

from dpframe.errors import DPError, PrivacyViolationError

__all__ = ["RowGuard", "UnknownAttributeError"]

_G = TypeVar("_G", bound="RowGuard")


class UnknownAttributeError(DPError, AttributeError):
    """An attribute that private frames do not have (nothing is forwarded to pandas)."""


def refuse(what: str) -> NoReturn:
    """Raise the error for an operation that would reveal raw values."""
    raise PrivacyViolationError(
        f"{what} would reveal private rows, so dpframe refuses it. Ask for an "
        "aggregate instead (count, sum, mean, var, std, groupby(...)), each with epsilon=."
    )


class RowGuard:
    """Mixin: every pandas path that yields raw values raises :class:`PrivacyViolationError`."""

    __slots__ = ()

    @classmethod
    def _build(cls: type[_G], **fields: Any) -> _G:
        """A new instance with its slots set, bypassing ``__init__`` and ``__setattr__``."""
        instance = object.__new__(cls)
        for name, value in fields.items():
            object.__setattr__(instance, name, value)
        return instance

    def __len__(self) -> int:
        refuse("len() (the exact row count is private)")

    def __iter__(self) -> Any:
        refuse("Iteration")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        refuse("Conversion to a numpy array")

    def __reduce_ex__(self, protocol: Any) -> Any:
        refuse("Pickling")

    def __reduce__(self) -> Any:
        refuse("Pickling")

    def __getstate__(self) -> Any:
        refuse("Pickling")

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self

    def __bool__(self) -> bool:
        refuse("Truth testing")

    def __contains__(self, item: object) -> bool:
        refuse("Membership testing on values")

    def head(self, n: int = 5) -> Any:
        """Refused: rows are private."""
        refuse("head()")

    def tail(self, n: int = 5) -> Any:
        """Refused: rows are private."""
        refuse("tail()")

    def sample(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: rows are private."""
        refuse("sample()")

    def to_numpy(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: rows are private."""
        refuse("to_numpy()")

    def to_pandas(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: rows are private."""
        refuse("to_pandas()")

    def tolist(self) -> Any:
        """Refused: rows are private."""
        refuse("tolist()")

    @property
    def values(self) -> Any:
        """Refused: rows are private."""
        refuse(".values")

    @property
    def iloc(self) -> Any:
        """Refused: rows are private."""
        refuse(".iloc")

    @property
    def loc(self) -> Any:
        """Refused: rows are private."""
        refuse(".loc")

    @property
    def shape(self) -> Any:
        """Refused: the exact row count is private."""
        refuse(".shape (the exact row count is private)")

    @property
    def size(self) -> Any:
        """Refused: the exact row count is private."""
        refuse(".size (the exact row count is private)")
