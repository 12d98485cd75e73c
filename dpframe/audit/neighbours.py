"""Adversarial neighbouring datasets: the pairs on which DP bugs show.

Each pair is (D0, D1) with D1 = D0 plus one privacy unit (one row, or with
``privacy_unit`` the rows of one new person).  Add/remove-one neighbours are
symmetric, and the auditor tests both directions, so removal is covered too.
The added row is built from a template row (by default the first row of D0)
with the bounded numeric columns set per pair:

* ``high_bound`` / ``low_bound``: every bounded column at its upper / lower
  bound (the far end of a clamped sum or a centred mean);
* ``above_bounds`` / ``below_bounds``: far outside the bounds (a missing
  clamp shows here);
* ``nan``, ``+inf``, ``-inf``: the value in every bounded column;
* ``new_key``: a value that is not a declared category in every categorical
  column (numbers at the upper bound): in no group of a group-by over
  declared keys but in its undeclared cell (a noisy count, one more disjoint
  cell), and the δ event of private key discovery;
* ``unit_at_limit`` / ``unit_over_limit`` (with ``privacy_unit``): a new
  person with exactly ``max_rows_per_unit`` rows, or three times as many
  (contribution bounding must cut them), at the upper bounds;
* ``flips_query`` (with ``queries``): a row that satisfies exactly one of the
  conditions given (the pair on which a sparse vector without query noise
  fails, when two conditions have equal counts on D0).
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import SchemaError

__all__ = ["NeighbourPair", "neighbours"]

_NEW_KEY = "__dpframe_audit_new_key__"
_NEW_UNIT = "__dpframe_audit_new_unit__"
_MAX_CANDIDATES = 4096


@dataclass(frozen=True, eq=False)
class NeighbourPair:
    """A pair of neighbouring datasets (the base and the base plus one unit).

    Attributes:
        name: a short name, e.g. ``high_bound``.
        base: D0 (shared by every pair made from one frame).
        neighbour: D1.
        description: what was added.
    """

    name: str
    base: pd.DataFrame
    neighbour: pd.DataFrame
    description: str

    def __repr__(self) -> str:
        return f"NeighbourPair({self.name!r}: {self.description})"


def _fresh(column: pd.Series, text: str) -> Hashable:
    """A value not in ``column``, of a matching kind (a string, or max + 1)."""
    if pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column):
        finite = pd.to_numeric(column, errors="coerce").dropna()
        top = float(finite.max()) if len(finite) else 0.0
        return int(top) + 1 if float(top).is_integer() else top + 1.0
    return text


def _append(df: pd.DataFrame, rows: list[dict[str, Any]]) -> pd.DataFrame:
    extra = pd.DataFrame(rows, columns=df.columns)
    for name in df.columns:
        # NaN/inf in an integer column, a new key in a categorical: keep the wider dtype.
        with contextlib.suppress(TypeError, ValueError):
            extra[name] = extra[name].astype(df[name].dtype)
    combined: pd.DataFrame = pd.concat([df, extra], ignore_index=True)
    return combined


def _condition_matrix(candidates: pd.DataFrame, queries: Sequence[Any]) -> np.ndarray:
    """Which candidate rows satisfy which conditions (evaluated by the pandas backend)."""
    from dpframe.api.verbs.columns import to_expr
    from dpframe.backends.pandas_backend import PandasBackend
    from dpframe.plan.expressions import Col
    from dpframe.plan.measures import Measure
    from dpframe.plan.nodes import Filter, GroupKey, Source

    frame = candidates.assign(_audit_row=np.arange(len(candidates)))
    backend = PandasBackend(frame)
    key = GroupKey("_audit_row", Col("_audit_row"), tuple(range(len(frame))))
    columns = []
    for query in queries:
        plan = Filter(Source("audit"), to_expr(query))
        counts = backend.compute(plan, (Measure("rows"),), (key,))[0]
        columns.append(counts > 0)
    return np.column_stack(columns)


def _flip_row(
    template: dict[str, Any],
    bounds: Mapping[str, tuple[float, float]],
    categories: Mapping[str, Sequence[Hashable]],
    columns: Sequence[str],
    queries: Sequence[Any],
) -> tuple[dict[str, Any], int] | None:
    choices: list[list[Any]] = []
    names: list[str] = []
    for name, (low, high) in bounds.items():
        names.append(name)
        choices.append([low, (low + high) / 2, high])
    for name, keys in categories.items():
        names.append(name)
        choices.append(list(keys))
    rows = []
    for combo in itertools.islice(itertools.product(*choices), _MAX_CANDIDATES):
        row = dict(template)
        row.update(zip(names, combo, strict=True))
        rows.append(row)
    if not rows:
        return None
    candidates = pd.DataFrame(rows, columns=list(columns))
    matrix = _condition_matrix(candidates, queries)
    hits = matrix.sum(axis=1)
    exactly_one = np.flatnonzero(hits == 1)
    if exactly_one.size == 0:
        return None
    # Prefer a row that flips the *last* condition possible: a sparse vector examines
    # conditions in order, so a change after an equal-count condition shows most.
    which = np.array([int(np.flatnonzero(matrix[i])[0]) for i in exactly_one])
    best = int(exactly_one[int(np.argmax(which))])
    return rows[best], int(which.max())


def neighbours(
    df: pd.DataFrame,
    *,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    categories: Mapping[str, Sequence[Hashable]] | None = None,
    privacy_unit: str | None = None,
    max_rows_per_unit: int | None = None,
    queries: Sequence[Any] | None = None,
    template: Mapping[str, Any] | None = None,
    beyond: float = 1000.0,
) -> list[NeighbourPair]:
    """The adversarial neighbouring pairs of ``df`` (see the module docstring).

    Args:
        df: the base dataset D0.
        bounds: the public bounds of numeric columns (the columns set per pair).
        categories: the public keys of categorical columns.
        privacy_unit: the unit column; the added rows get a new unit id.
        max_rows_per_unit: the contribution limit, with ``privacy_unit``.
        queries: row conditions (``dp.col("x") > 3`` or series of a frame on
            source columns) for the ``flips_query`` pair.
        template: values for the added row's other columns (default: D0's first row).
        beyond: how many bound widths outside the bounds ``above_bounds`` goes.

    Returns:
        The pairs, every one with the same ``base`` object.

    Example:
        >>> pairs = dp.audit.neighbours(df, bounds={"wage": (0, 5000)})  # doctest: +SKIP
        >>> [p.name for p in pairs][:3]  # doctest: +SKIP
        ['high_bound', 'low_bound', 'above_bounds']
    """
    if not isinstance(df, pd.DataFrame) or df.shape[0] == 0:
        raise SchemaError("neighbours() needs a non-empty pandas DataFrame.")
    bounds = dict(bounds or {})
    categories = dict(categories or {})
    for name in [*bounds, *categories, *([privacy_unit] if privacy_unit else [])]:
        if name not in df.columns:
            raise SchemaError(f"neighbours(): {name!r} is not a column of the DataFrame.")
    base_row = dict(df.iloc[0]) if template is None else {**dict(df.iloc[0]), **template}
    for name, keys in categories.items():
        if keys and template is None:
            base_row[name] = next(iter(keys))
    if privacy_unit:
        base_row[privacy_unit] = _fresh(df[privacy_unit], _NEW_UNIT)

    def row(**values: Any) -> dict[str, Any]:
        out = dict(base_row)
        out.update(values)
        return out

    def at(pick: Any) -> dict[str, Any]:
        return {name: pick(low, high) for name, (low, high) in bounds.items()}

    width = {name: max(high - low, 1.0) for name, (low, high) in bounds.items()}
    specs: list[tuple[str, list[dict[str, Any]], str]] = [
        ("high_bound", [row(**at(lambda lo, hi: hi))], "one row at the upper bounds"),
        ("low_bound", [row(**at(lambda lo, hi: lo))], "one row at the lower bounds"),
        (
            "above_bounds",
            [row(**{n: hi + beyond * width[n] for n, (lo, hi) in bounds.items()})],
            f"one row {beyond:g} bound widths above the upper bounds",
        ),
        (
            "below_bounds",
            [row(**{n: lo - beyond * width[n] for n, (lo, hi) in bounds.items()})],
            f"one row {beyond:g} bound widths below the lower bounds",
        ),
        ("nan", [row(**at(lambda lo, hi: math.nan))], "one row of NaN"),
        ("+inf", [row(**at(lambda lo, hi: math.inf))], "one row of +inf"),
        ("-inf", [row(**at(lambda lo, hi: -math.inf))], "one row of -inf"),
    ]
    if categories:
        new_keys = {name: _fresh(df[name], _NEW_KEY) for name in categories}
        specs.append(
            (
                "new_key",
                [row(**at(lambda lo, hi: hi), **new_keys)],
                "one row with an undeclared key, at the upper bounds",
            )
        )
    if privacy_unit and max_rows_per_unit:
        high_row = row(**at(lambda lo, hi: hi))
        specs.append(
            (
                "unit_at_limit",
                [dict(high_row) for _ in range(max_rows_per_unit)],
                f"a new person with {max_rows_per_unit} rows (the limit) at the upper bounds",
            )
        )
        specs.append(
            (
                "unit_over_limit",
                [dict(high_row) for _ in range(3 * max_rows_per_unit)],
                f"a new person with {3 * max_rows_per_unit} rows at the upper bounds",
            )
        )
    if queries:
        found = _flip_row(base_row, bounds, categories, list(df.columns), list(queries))
        if found is None:
            raise SchemaError(
                "neighbours(queries=...): no row built from the bounds and categories "
                "satisfies exactly one of the conditions; pass template= values that do."
            )
        flip, which = found
        specs.append(("flips_query", [flip], f"one row that satisfies only condition {which}"))
    return [NeighbourPair(name, df, _append(df, rows), text) for name, rows, text in specs]
