"""Canonical keys: exact, hashable, flat descriptions of expression DAGs.

A key describes a structure, not the Python objects that hold it: two
expressions have equal keys exactly when they are equal as trees (same node
types, same fields, children equal in order), however their sub-trees are
shared.  A key is a flat tuple of *entries*, one per distinct sub-structure,
in the order they first occur in a left-to-right post-order walk of the
(expanded) tree; an entry is ``(tag, params, args)``: the node's tag, the
keys of its own fields (:func:`scalar_key`) and the positions of its
children's entries.  The root is the last entry.

Being flat, a key is hashed and compared in time linear in its length (a
nested tuple of a shared DAG would be exponential: Python does not cache
tuple hashes) and without deep recursion.  It is built by one walk that
visits each distinct node object once (:func:`intern`).

Scalars (:func:`scalar_key`) are keyed exactly and by type:

* ``bool``, ``int`` and ``float`` never share a key, even when numerically
  equal (``True``, ``1`` and ``1.0`` are three keys): they serialize
  differently and evaluate differently (integer arithmetic on literals is
  exact and unbounded, float arithmetic is not);
* a float is keyed by its exact value as a :class:`fractions.Fraction`
  (``0.1`` is the binary fraction nearest to it, told apart from any other
  float), ``-0.0`` has a tag of its own (it is not ``0.0``: ``x * -0.0`` has
  other bits), every NaN has the single tag ``("nan",)`` (all NaNs are
  equal) and the infinities are ``("inf",)`` and ``("-inf",)``;
* strings are their own key (every other key is a tuple, so no clash);
* a tuple is the tuple of its items' keys; a long tuple of plain floats without
  NaN (a quantile's 4,097 candidates) is keyed at once by the bytes of its
  IEEE 754 values, ``("float64s", bytes)``: equal exactly when every value is
  (``-0.0`` apart from ``0.0``), and no other key has that form (a user's
  tuple holding the text ``"float64s"`` and bytes keys its bytes with a type
  tag); converting 4,097 floats one by one to fractions took 30 ms;
* other types (numpy scalars, timestamps) are tagged with their qualified
  type name, so they never equal a plain Python value.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Any, Protocol, TypeAlias

import numpy as np

__all__ = ["Entry", "KeyTable", "KeyedNode", "intern", "node_entry", "scalar_key"]

#: A tuple of more plain floats than this is keyed by its values' bytes (module docstring).
_FLOATS_AT_ONCE = 16

#: One distinct sub-structure: (tag, keys of the node's own fields, positions of its children).
Entry: TypeAlias = tuple[str, tuple[Hashable, ...], tuple[int, ...]]


class KeyedNode(Protocol):
    """What :func:`intern` needs from a node (every expression provides it)."""

    @property
    def tag(self) -> str:
        """The node type's name in keys."""
        ...

    def params(self) -> tuple[Any, ...]:
        """The node's own (non-expression) fields, in declaration order."""
        ...

    def children(self) -> Sequence[KeyedNode]:
        """Direct sub-expressions, in declaration order."""
        ...


def _float_key(value: float) -> tuple[Hashable, ...]:
    if math.isnan(value):
        return ("nan",)
    if math.isinf(value):
        return ("inf",) if value > 0 else ("-inf",)
    if value == 0.0 and math.copysign(1.0, value) < 0:
        return ("-0.0",)
    return ("float", Fraction(value))


def scalar_key(value: object) -> Hashable:
    """The exact key of a public constant (see the module docstring)."""
    kind = type(value)
    if kind is str:
        return value
    if kind is bool:
        return ("bool", value)
    if kind is int:
        return ("int", value)
    if kind is float:
        return _float_key(value)  # type: ignore[arg-type]  # checked above
    if kind is tuple:
        items: tuple[Any, ...] = value  # type: ignore[assignment]
        if len(items) > _FLOATS_AT_ONCE and all(type(item) is float for item in items):
            array = np.array(items, dtype=np.float64)
            if not np.isnan(array).any():
                return ("float64s", array.tobytes())
        return tuple(scalar_key(item) for item in items)
    name = f"{kind.__module__}.{kind.__qualname__}"
    if isinstance(value, numbers.Integral):
        return (name, ("int", int(value)))
    if isinstance(value, numbers.Real):
        return (name, _float_key(float(value)))
    if value is None:
        return ("none",)
    hash(value)  # a TypeError for unhashable values, as a tuple key would raise
    return (name, value)


class KeyTable:
    """Entries interned in first-seen order: equal entries get the same position."""

    __slots__ = ("_positions", "entries")

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._positions: dict[Entry, int] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, entry: Entry) -> int:
        """The position of ``entry`` (appended if new)."""
        position = self._positions.get(entry)
        if position is None:
            position = self._positions[entry] = len(self.entries)
            self.entries.append(entry)
        return position


def node_entry(node: KeyedNode, args: tuple[int, ...]) -> Entry:
    """The entry of ``node`` whose children are at positions ``args``."""
    return (node.tag, tuple(scalar_key(p) for p in node.params()), args)


def intern(root: KeyedNode, table: KeyTable, memo: dict[int, int]) -> int:
    """Add the entries of ``root``'s tree to ``table``; the position of the root's entry.

    Walks the distinct node objects once each, iteratively (no recursion:
    any depth works), children left to right before their parent.  ``memo``
    maps ``id(node)`` to its position; share one across calls on the same
    table to share the work (the nodes must stay alive meanwhile).
    """
    stack: list[KeyedNode] = [root]
    while stack:
        node = stack[-1]
        if id(node) in memo:
            stack.pop()
            continue
        children = node.children()
        pending = [child for child in children if id(child) not in memo]
        if pending:
            stack.extend(reversed(pending))
            continue
        stack.pop()
        memo[id(node)] = table.add(node_entry(node, tuple(memo[id(c)] for c in children)))
    return memo[id(root)]
