"""Public key sets for group-bys over several columns, and their private discovery.

``pf.groupby(["region", "sex"], keys=allowed)`` groups by the rows of the
public DataFrame ``allowed`` (the key combinations that exist) instead of
the cross product of declared categories: the group key is one derived
column, the position of each row's combination among ``allowed``'s rows
(public recodings, :class:`~dpframe.plan.recode.Recode`), so it works
embedded, on Dask and through a curator; the result is indexed by the
combinations (a MultiIndex, as pandas).  Rows whose combination is not
listed are in no group (counted, free, in ``result.dp.undeclared``).

``pf.discover_keys(["region", "sex"], epsilon=..., delta=...)`` finds the
combinations that occur privately (partition selection over the combined
key, :mod:`dpframe.plan.combine`) and returns them as such a DataFrame.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dpframe.api.handle import FrameHandle
from dpframe.api.verbs.frames import assign
from dpframe.errors import SchemaError
from dpframe.plan.combine import Combine, read_combination
from dpframe.plan.elementwise import Where
from dpframe.plan.expressions import Col, Expr, IsNull, Not
from dpframe.plan.nodes import GroupKey
from dpframe.plan.recode import Recode
from dpframe.plan.releases import DiscoverKeys

if TYPE_CHECKING:
    from dpframe.plan.privacy import PrivacyRequest

__all__ = [
    "MAX_KEY_ROWS",
    "combination_key",
    "discover_combinations",
    "relabel",
]

#: The most rows a public key set may have.
MAX_KEY_ROWS = 100_000
#: Mixed-radix codes stay exact as float64 below this.
_EXACT = 2**53


def _plain(value: object, column: str) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return value
    raise SchemaError(
        f"keys=: the public key set's column {column!r} must hold strings, finite numbers or "
        "booleans, with no missing value."
    )


def combination_key(
    frame: FrameHandle, names: Sequence[str], keys: object
) -> tuple[GroupKey, pd.Index]:
    """The group key of ``keys`` (a public DataFrame of combinations) and the result's index.

    Raises:
        SchemaError: ``keys`` is not a DataFrame with exactly the group-by's
            columns, has a repeated or missing combination, or is too large.
    """
    if not isinstance(keys, pd.DataFrame):
        raise SchemaError("keys= takes a public pandas DataFrame of allowed key combinations.")
    if sorted(map(str, keys.columns)) != sorted(names) or len(keys.columns) != len(names):
        raise SchemaError(
            f"keys= must have exactly the group-by's columns {list(names)!r}; it has "
            f"{[str(c) for c in keys.columns]!r}."
        )
    if not 0 < len(keys) <= MAX_KEY_ROWS:
        raise SchemaError(f"keys= needs 1 to {MAX_KEY_ROWS:,} rows of combinations.")
    table = keys[list(names)]
    rows = [
        tuple(_plain(v, n) for v, n in zip(row, names, strict=True))
        for row in table.itertuples(index=False)
    ]
    if len(set(rows)) != len(rows):
        raise SchemaError("keys=: a combination repeats; list each once.")
    code: Expr | None = None
    radix = 1
    positions: list[dict[Any, int]] = []
    for position, name in enumerate(names):
        frame.schema.get(name)  # an unknown column is refused here, naming the columns
        values = list(dict.fromkeys(row[position] for row in rows))
        positions.append({v: i for i, v in enumerate(values)})
        size = len(values) + 1  # one more code: a present value not in the key set
        known = Recode(Col(name), tuple(values), tuple(range(len(values))))
        part = Where(known, Not(IsNull(known)) | IsNull(Col(name)), len(values))
        code = part if code is None else code * size + part
        radix *= size
    if radix >= _EXACT:
        raise SchemaError("keys=: too many distinct values per column to combine exactly.")
    assert code is not None
    codes = []
    for row in rows:
        number = 0
        for position, value in enumerate(row):
            number = number * (len(positions[position]) + 1) + positions[position][value]
        codes.append(number)
    label = ", ".join(names)
    index = pd.MultiIndex.from_tuples(rows, names=list(names))
    if len(names) == 1:
        index = pd.Index([r[0] for r in rows], name=names[0])
    # The key is the code itself: a listed combination's code is a declared key; any
    # other (a value or combination not listed) is an undeclared key, counted free.
    return GroupKey(label, code, tuple(codes)), index


def _mapped(index: pd.Index, keys: pd.Index, codes: Sequence[Any]) -> pd.Index:
    """``index`` (codes, or (code, more...) tuples) with each code replaced by its combination."""
    order = {float(code): n for n, code in enumerate(codes)}
    if isinstance(index, pd.MultiIndex):
        tuples = []
        for entry in index:
            found = keys[order[float(entry[0])]]
            found = found if isinstance(found, tuple) else (found,)
            tuples.append((*found, *entry[1:]))
        mapped: pd.Index = pd.MultiIndex.from_tuples(tuples, names=[*keys.names, *index.names[1:]])
        return mapped
    plain: pd.Index = keys[[order[float(code)] for code in index]]
    return plain


def relabel(result: Any, keys: pd.Index, codes: Sequence[Any]) -> Any:
    """A grouped release indexed by ``codes``, indexed by their combinations (post-processing)."""
    if not isinstance(result, (pd.Series, pd.DataFrame)):
        return result
    index = _mapped(result.index, keys, codes)
    meta = result.attrs.get("dpframe")
    relabelled = result.copy()
    relabelled.index = index
    relabelled.attrs = dict(result.attrs)
    if meta is not None and hasattr(meta, "index"):
        relabelled.attrs["dpframe"] = dataclasses.replace(meta, index=index)
    return relabelled


def discover_combinations(
    frame: FrameHandle, columns: Sequence[str], request: PrivacyRequest
) -> pd.DataFrame:
    """The combinations of ``columns`` found privately, as a DataFrame for ``groupby(keys=)``.

    Privacy: as :meth:`PrivateFrame.discover_keys` of one column (ε, δ; each
    row belongs to one combination, so the combined key is one column's key).
    """
    names = list(columns)
    if len(names) < 2 or not all(isinstance(n, str) for n in names):
        raise SchemaError("discover_keys() takes a column name, or a list of two or more.")
    if len(set(names)) != len(names):
        raise SchemaError("discover_keys(): each column once.")
    for name in names:
        frame.schema.get(name)
    name = "_keys"
    while name in frame.schema.names:
        name = "_" + name
    combined = Combine(Col(names[0]), tuple(Col(n) for n in names[1:]))
    plan = assign(frame, {name: combined}).plan
    node = DiscoverKeys(plan=plan, privacy=request, column=name)
    released = frame.runner.run(node)
    rows = [read_combination(key, len(names)) for key in released.index]
    found = [r for r in rows if r is not None]
    table: pd.DataFrame = pd.DataFrame(found, columns=names)
    for column in names:  # numbers travel as floats: back to integers where they are
        info = frame.schema.get(column)
        numbers = table[column].map(lambda v: isinstance(v, float) and v.is_integer())
        if info.kind == "numeric" and len(table) and numbers.all():
            table[column] = table[column].astype("int64")
    return table
