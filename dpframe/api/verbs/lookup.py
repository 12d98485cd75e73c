"""``merge`` and ``join`` with a public lookup table, as pandas spells them (free).

``pf.merge(regions, on="region")`` adds the public table's other columns to
every private row, matched on the key: each new column is a public recoding
of the key column (a :class:`~dpframe.plan.recode.Recode` from each key to
its row's value), so it works embedded, on Dask and through a curator, and
its public keys and bounds come from the table.  A key missing from the
table gives missing values (``how="left"``) or drops the row
(``how="inner"``); a missing key matches the table's missing key, as pandas.

Privacy: the table is public and each private row matches at most one of
its rows (a unique key: many-to-one), so each person still contributes the
same rows: sensitivity unchanged, nothing charged.  A key that repeats in
the table (at most ``d`` rows per key) makes each private row up to ``d``
rows of the same owner: the merge is then a join with a public side whose
stability is ``d`` times the frame's (:func:`dpframe.plan.joins.public_join`;
embedded sessions only).  Refused, saying why: ``how="right"`` /
``"outer"`` / ``"cross"`` (rows that are not private rows).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpframe.api.handle import FrameHandle, handle_of
from dpframe.api.verbs.frames import assign, filter_rows
from dpframe.api.verbs.transforms import rename
from dpframe.errors import SchemaError
from dpframe.plan.elementwise import Where
from dpframe.plan.expressions import Col, Expr, IsIn, IsNull, Not
from dpframe.plan.joins import public_join
from dpframe.plan.recode import Recode

__all__ = ["MAX_LOOKUP_ROWS", "join", "merge"]

#: The most rows a public lookup table may have (each row is a literal in every new column).
MAX_LOOKUP_ROWS = 10_000


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _plain(value: object) -> Any:
    """A table cell as a plain Python constant (numpy scalars unwrapped), or None if missing."""
    if _missing(value) or (isinstance(value, np.floating) and np.isnan(value)):
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return value
    raise SchemaError(
        "A public lookup table holds strings, finite numbers and booleans (or missing "
        f"values); found a {type(value).__name__}."
    )


def _refuse_private(right: object, verb: str) -> None:
    if handle_of(right) is not None:
        raise SchemaError(
            f"{verb}() of two private frames is refused: a person's row could match many rows "
            "of the other table, so their contribution (and the noise needed) would have no "
            "bound. Join them before loading, with one row per person, or merge a public "
            "lookup table (a pandas DataFrame)."
        )
    if not isinstance(right, pd.DataFrame):
        raise SchemaError(f"{verb}() takes a public pandas DataFrame (a lookup table).")


def merge(
    self: FrameHandle,
    right: object,
    how: str = "left",
    on: str | Sequence[str] | None = None,
    suffixes: tuple[str, str] = ("_x", "_y"),
    validate: str | None = None,
    left_on: str | Sequence[str] | None = None,
    right_on: str | Sequence[str] | None = None,
    max_rows: int | None = None,
) -> FrameHandle:
    """Add a public lookup table's columns, matched on a key, as ``DataFrame.merge`` (free).

    Privacy: many-to-one on a public table, so every private row stays one
    row: the sensitivity of every later release is unchanged; nothing is charged.
    When the key repeats in the table (at most ``d`` rows per key), each
    private row becomes at most ``d`` rows of the same owner: every later
    release counts ``d`` times the frame's rows per person (or ``max_rows``
    per ID, kept by a random truncation, for a frame with an ID column); the
    explanation and the ledger say so (docs/proofs/private_joins.md, "A public
    table whose keys repeat").  Embedded sessions only.

    Args:
        self: the private frame (each of its rows stays one row).
        right: a pandas DataFrame of public attributes, one row per key.
        how: ``"left"`` (rows whose key is not in the table get missing values)
            or ``"inner"`` (those rows are dropped).
        on: the key column, in both tables (default: the one column they share).
        suffixes: for other columns present in both, as pandas.
        validate: None, ``"many_to_one"`` or ``"m:1"`` (checked: refused when
            the key repeats).
        max_rows: a table whose key repeats, on a frame with an ID column:
            the most rows one person keeps after the merge (default: their
            rows times the most rows one key has).
        left_on: the private frame's key column when the table names it
            otherwise (with ``right_on``, instead of ``on``).
        right_on: the table's key column, matched to ``left_on``; kept as a
            column, as pandas keeps both keys (missing where no row matched).

    Example:
        >>> regions = pd.DataFrame({"region": ["south", "west"], "pop_m": [126.0, 78.6]})
        >>> pf.merge(regions, on="region")["pop_m"].mean(epsilon=0.1)  # doctest: +SKIP
    """
    _refuse_private(right, "merge")
    assert isinstance(right, pd.DataFrame)
    if left_on is not None or right_on is not None:
        right, on = _keyed_as_left(self, right, on, left_on, right_on)
    if how not in ("left", "inner"):
        raise SchemaError(
            f"merge(how={how!r}) is refused: only 'left' and 'inner' keep each row a private "
            "row ('right', 'outer' and 'cross' would add rows that belong to no one)."
        )
    if validate not in (None, "many_to_one", "m:1"):
        raise SchemaError("merge() with a public table is many-to-one: validate='m:1'.")
    key = _key(self, right, on)
    if len(right) > MAX_LOOKUP_ROWS:
        raise SchemaError(f"A public lookup table has at most {MAX_LOOKUP_ROWS:,} rows.")
    keys = [_plain(v) for v in right[key].tolist()]
    present = [k for k in keys if k is not None]
    _check_key_kind(self, key, present)
    if len(set(present)) != len(present) or keys.count(None) > 1:
        if validate is not None:
            raise SchemaError(
                f"The key {key!r} repeats in the public table, so the merge is not "
                "many-to-one (validate=...); leave validate out to multiply the rows."
            )
        return _repeated(self, right, key, how, suffixes, max_rows)
    if max_rows is not None:
        raise SchemaError(
            "merge(max_rows=...) with a public table is for a table whose key repeats (each "
            "row then becomes several); with one row per key every private row stays one row."
        )
    added = [c for c in right.columns if c != key]
    if not added:
        raise SchemaError("The public table has no column besides the key to add.")
    frame = self
    clashes = [c for c in added if c in self.schema.names]
    if clashes:
        frame = rename(frame, {c: f"{c}{suffixes[0]}" for c in clashes})
    new: dict[str, Expr] = {}
    for column in added:
        values = [_plain(v) for v in right[column].tolist()]
        name = f"{column}{suffixes[1]}" if column in clashes else str(column)
        new[name] = _lookup(Col(key), keys, values)
    if how == "inner":
        condition: Expr = IsIn(Col(key), tuple(present))
        if None in keys:
            condition = condition | IsNull(Col(key))
        frame = filter_rows(frame, condition)
    return assign(frame, new)


def _repeated(
    self: FrameHandle,
    table: pd.DataFrame,
    key: str,
    how: str,
    suffixes: tuple[str, str],
    max_rows: int | None,
) -> FrameHandle:
    """A merge with a public table whose key repeats: a join whose stability is multiplied.

    Privacy: see :func:`dpframe.plan.joins.public_join` (each row becomes at
    most ``d`` rows of its owner; checked again by the engine before any row
    is read).
    """
    load = getattr(self.runner, "load_public", None)
    if not callable(load):
        raise SchemaError(
            f"The key {key!r} repeats in the public table: each private row would become "
            "several. A curator does not take such a table in this version: give the table "
            "one row per key (e.g. aggregate it per key)."
        )
    source, schema = load(table, key, MAX_LOOKUP_ROWS)
    joined, joined_schema = public_join(
        self.plan,
        self.schema,
        source,
        schema,
        how=how,
        on=key,
        max_rows=max_rows,
        suffixes=suffixes,
    )
    return self.derive(plan=joined, schema=joined_schema)


def _one(name: str | Sequence[str], argument: str) -> str:
    names = [name] if isinstance(name, str) else list(name)
    if len(names) != 1 or not isinstance(names[0], str):
        raise SchemaError(f"merge() with a public table takes one key column: {argument}='key'.")
    return names[0]


def _keyed_as_left(
    self: FrameHandle,
    right: pd.DataFrame,
    on: str | Sequence[str] | None,
    left_on: str | Sequence[str] | None,
    right_on: str | Sequence[str] | None,
) -> tuple[pd.DataFrame, str]:
    """The table with its key ``right_on`` also under the name ``left_on`` (pandas keeps both)."""
    if on is not None:
        raise SchemaError("merge() takes on= or left_on= with right_on=, not both.")
    if left_on is None or right_on is None:
        raise SchemaError(
            "merge() needs both left_on= (this frame's key) and right_on= (the table's)."
        )
    left_key, right_key = _one(left_on, "left_on"), _one(right_on, "right_on")
    self.schema.get(left_key)  # an unknown column is refused here, naming the columns
    if right_key not in right.columns:
        raise SchemaError(f"The public table has no column {right_key!r} to match on.")
    if left_key == right_key:
        return right, left_key
    if left_key in right.columns:
        raise SchemaError(
            f"The public table has a column {left_key!r} besides its key {right_key!r}: rename "
            "it, or merge on=" + repr(left_key) + " if that column is the key."
        )
    table = right.copy()
    table.insert(0, left_key, right[right_key])
    return table, left_key


def _key(self: FrameHandle, right: pd.DataFrame, on: str | Sequence[str] | None) -> str:
    if on is None:
        shared = [c for c in right.columns if c in self.schema.names]
        if len(shared) != 1:
            raise SchemaError("merge() needs on=key: the key column shared by both tables.")
        return str(shared[0])
    if not isinstance(on, str):
        names = list(on)
        if len(names) != 1 or not isinstance(names[0], str):
            raise SchemaError("merge() with a public table takes one key column: on='key'.")
        on = names[0]
    self.schema.get(on)  # an unknown column is refused here, naming the columns
    if on not in right.columns:
        raise SchemaError(f"The public table has no column {on!r} to match on.")
    return on


def _check_key_kind(self: FrameHandle, key: str, present: list[Any]) -> None:
    """The table's keys are of the private key's declared kind (never read from its values)."""
    info = self.schema.get(key)
    numeric = info.kind in ("numeric", "boolean")
    texts = [k for k in present if isinstance(k, str)]
    if numeric and texts:
        raise SchemaError(
            f"{key!r} is declared {info.kind} but the public table's keys are text; "
            "convert one of them so both are of the same kind."
        )
    if info.kind in ("text", "categorical") and len(texts) != len(present):
        declared = info.categories or ()
        if not any(not isinstance(c, str) for c in declared):
            raise SchemaError(
                f"{key!r} is declared {info.kind} but the public table's keys are numbers; "
                "convert one of them so both are of the same kind."
            )
    if info.kind == "datetime":
        raise SchemaError("merge() on a date key is not available; derive a key first.")


def _lookup(key: Expr, keys: list[Any], values: list[Any]) -> Expr:
    """The value of each key's row: a recoding (missing where the table's value is missing)."""
    pairs = [(k, v) for k, v in zip(keys, values, strict=True) if k is not None and v is not None]
    nan_value = next((v for k, v in zip(keys, values, strict=True) if k is None), None)
    expr: Expr
    if pairs:
        source: tuple[Hashable, ...] = tuple(k for k, _ in pairs)
        expr = Recode(key, source, tuple(v for _, v in pairs))  # type: ignore[arg-type]
    else:
        expr = Where(key, IsNull(key) & ~IsNull(key))  # every value missing
    if nan_value is not None:  # a missing key takes the table's row for the missing key
        expr = Where(expr, Not(IsNull(key)), nan_value)
    return expr


def join(
    self: FrameHandle,
    other: object,
    on: str | None = None,
    how: str = "left",
    lsuffix: str = "",
    rsuffix: str = "",
) -> FrameHandle:
    """A public table indexed by the key, joined on the column ``on`` (``DataFrame.join``).

    ``pf.join(lookup.set_index("region"), on="region")``: as :func:`merge`
    (left or inner, a unique index, free).
    """
    _refuse_private(other, "join")
    assert isinstance(other, pd.DataFrame)
    if on is None:
        raise SchemaError(
            "join() of a private frame needs on=column (its row index is private): "
            "pf.join(table.set_index('key'), on='key')."
        )
    table = other.copy()
    table.index.name = on
    if on in table.columns:
        raise SchemaError(f"The public table has both an index and a column named {on!r}.")
    suffixes = (lsuffix or "_x", rsuffix or "_y")
    return merge(self, table.reset_index(), how=how, on=on, suffixes=suffixes)
