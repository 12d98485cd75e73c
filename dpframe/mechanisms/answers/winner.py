"""A key chosen privately (``mode``, ``argmax``), carrying how sure the choice is.

A selection releases a key, not a value, so it has no interval; what an
analyst needs instead is how far the chosen key's score can be from the best
one's (the gap bound (2Δ/ε)·ln(k/β) of permute-and-flip, or for an argmax over
means each mean's noise).  That statement is computed from public parameters
only (the cost, the number of declared keys, the sensitivity: what
``explain`` shows before spending) and travels with the key:

- :func:`winner` gives the key back as an instance of a small subclass of its
  own type (``str``, ``int``, ``float`` or ``tuple``), equal to and hashing as
  the key, so it works wherever the key does (``pf[pf.region == best]``); its
  ``statement`` attribute holds the sentence, IPython shows it under the key
  (``_repr_pretty_``; ``repr`` and ``str`` stay the key's own, so labels and
  plans never see it), and ``dp.ci(best)`` returns it.
- ``mode()`` returns a Series as pandas does (its dtype inferred as pandas
  infers it); its ``attrs["dpframe"]`` is a :class:`ChosenKey` holding the
  sentence, and ``dp.ci(result)`` returns it.
- A key of another type (a date, an interval, a boolean) comes back as itself;
  ``explain`` states the same sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "ChosenKey",
    "Winner",
    "WinnerFloat",
    "WinnerInt",
    "WinnerText",
    "WinnerTuple",
    "statement_of",
    "winner",
]


class _Printer(Protocol):
    def text(self, text: str) -> None: ...


class Winner:
    """Mixin of the chosen-key classes: the key's own value plus ``statement``."""

    statement: str

    def _repr_pretty_(self, printer: _Printer, cycle: bool) -> None:
        """IPython's display: the key, then how sure the choice is."""
        base = next(c for c in type(self).__mro__ if c not in (type(self), Winner))
        printer.text(f"{base(self)!r}\n(chosen privately: {self.statement})")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the plain key (a copy need not carry the sentence)."""
        base = next(c for c in type(self).__mro__ if c not in (type(self), Winner))
        return (base, (base(self),))


class WinnerText(Winner, str):
    """A chosen text key."""

    def __new__(cls, value: str, statement: str) -> WinnerText:  # noqa: D102
        made = str.__new__(cls, value)
        made.statement = statement
        return made


class WinnerInt(Winner, int):
    """A chosen integer key."""

    def __new__(cls, value: int, statement: str) -> WinnerInt:  # noqa: D102
        made = int.__new__(cls, value)
        made.statement = statement
        return made


class WinnerFloat(Winner, float):
    """A chosen number key."""

    def __new__(cls, value: float, statement: str) -> WinnerFloat:  # noqa: D102
        made = float.__new__(cls, value)
        made.statement = statement
        return made


class WinnerTuple(Winner, tuple):  # type: ignore[type-arg]
    """A chosen combination of keys (an argmax over several key columns)."""

    def __new__(cls, value: tuple[Any, ...], statement: str) -> WinnerTuple:  # noqa: D102
        made = tuple.__new__(cls, value)
        made.statement = statement
        return made


def winner(key: Any, statement: str) -> Any:
    """``key`` carrying ``statement`` where its type allows (see the module), else ``key``."""
    kind = type(key)
    if kind is str:
        return WinnerText(key, statement)
    if kind is int:
        return WinnerInt(key, statement)
    if kind is float:
        return WinnerFloat(key, statement)
    if kind is tuple:
        return WinnerTuple(key, statement)
    return key


@dataclass(frozen=True)
class ChosenKey:
    """Metadata of ``mode()``'s Series (``attrs["dpframe"]``): how sure its key is."""

    statement: str


def statement_of(result: object) -> str | None:
    """The statement a chosen key (or ``mode()``'s Series) carries, or None."""
    if isinstance(result, Winner):
        return result.statement
    attrs = getattr(result, "attrs", None)
    meta = attrs.get("dpframe") if isinstance(attrs, dict) else None
    return meta.statement if isinstance(meta, ChosenKey) else None
