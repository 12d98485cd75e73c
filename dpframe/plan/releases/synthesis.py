"""Synthetic data: a public table fitted to noisy marginals (MST or AIM).

Each column of a copy has a *kind* (:data:`KINDS`), decided by the facade from
the public schema (the declaration, or in embedded mode the dtype of the
frame the analyst passed: only the kind, never a value): ``integer``,
``float`` and ``date`` columns are binned on public edges (dates by day, in
the code of :func:`date_code`), ``boolean``, ``text`` and ``category``
columns (and numeric ones given ``categories=``) take their declared keys.
A column that may hold missing values has one more cell, the last, for
them: the copy's missing values are synthesized like any other value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd

from dpframe.errors import InvalidArgumentError, ResourceLimitError, SchemaError
from dpframe.plan.expressions import Arith, Bucket, Col, Expr, IsNull, Lit
from dpframe.plan.recode import Recode
from dpframe.plan.releases.base import ReleaseNode
from dpframe.plan.schema import Schema, check_keys, infer_column
from dpframe.plan.temporal import DtField

__all__ = [
    "BINNED_KINDS",
    "KINDS",
    "MAX_AIM_GROWN_CELLS",
    "MAX_AIM_MODEL_CELLS",
    "MAX_COLUMN_CELLS",
    "MAX_PAIR_CELLS",
    "MAX_SYNTH_COLUMNS",
    "MAX_SYNTH_ROWS",
    "MAX_TOTAL_PAIR_CELLS",
    "MAX_TRIPLE_CELLS",
    "Synthesize",
    "code_date",
    "date_code",
]

#: The most columns a synthetic copy models (every pair is a candidate edge).
MAX_SYNTH_COLUMNS = 32
#: The most values (bins or categories) of one column.
MAX_COLUMN_CELLS = 1_000
#: The most cells of one 2-way marginal (the product of two columns' sizes): the
#: model's tables are 2-way, and the fit visits each of them hundreds of times.
MAX_PAIR_CELLS = 2**16
#: The most cells over all 2-way marginals (every pair is computed for the selection).
MAX_TOTAL_PAIR_CELLS = 2**21
#: AIM's first model: a copy whose 1-way marginals and largest pair do not fit in this
#: many cells (its junction tree's cliques together) is refused.
MAX_AIM_MODEL_CELLS = 2**15
#: AIM's model size: the most cells its junction tree's cliques may grow to as the
#: selection adds marginals (AIM's "max model size"; four times the first model's limit).
#: At 2**15 the model was full after about ten of CPS's 14 rounds and experience x region
#: could no longer be added: measured in 0 to 1 of 10 copies, its TV 0.028 to 0.030 against
#: independence's 0.0217; at 2**17 it is measured in 8 to 10 of 10, at 0.012 to 0.016
#: (issue 26; at 2**16 still 0.027 to 0.028).
MAX_AIM_GROWN_CELLS = 2**17
#: The most cells of a 3-way marginal in AIM's workload.
MAX_TRIPLE_CELLS = 2**13
#: The longest synthetic copy (a public cap on the noisy row count, and on ``rows=``).
MAX_SYNTH_ROWS = 10**7


#: The kinds of a column of a copy (the dtype it comes back as: ``Int64``,
#: ``float64``, ``bool`` (``boolean`` when it may be missing), ``datetime64[ns]``,
#: pandas' text dtype, a Categorical of the declared categories).
KINDS = ("integer", "float", "boolean", "date", "text", "category")
#: The kinds that may be binned on edges (the others take declared keys).
BINNED_KINDS = ("integer", "float", "date")
#: Days of a month and months of a year in :func:`date_code` (every month 31 days).
_MONTH_DAYS, _YEAR_CODES = 31, 372
#: The offset of :func:`date_code` (January 1st of year 0 has code 0).
_CODE_OFFSET = _MONTH_DAYS + 1
_FIRST_DATE, _LAST_DATE = pd.Timestamp.min.ceil("D"), pd.Timestamp.max.floor("D")


def date_code(stamp: pd.Timestamp) -> int:
    """A date's day code ``372·year + 31·month + day − 32``: increasing with the date.

    Every month has 31 codes (the codes of days a month lacks are never
    taken); a row's code is computed from its ``.dt`` fields (:meth:`Synthesize.code`).
    """
    return _YEAR_CODES * stamp.year + _MONTH_DAYS * stamp.month + stamp.day - _CODE_OFFSET


def code_date(code: int) -> pd.Timestamp:
    """The date of a day code (:func:`date_code`); a day a month lacks is its last day."""
    months, day = divmod(int(code), _MONTH_DAYS)
    year, month = divmod(months, 12)
    first = pd.Timestamp(year=year, month=month + 1, day=1)
    found: pd.Timestamp = first + pd.Timedelta(days=min(day, first.days_in_month - 1))
    return found


def _date_edge(name: str, edge: float) -> None:
    """A date column's edge: a half code (code − 0.5) of a date within pandas' range."""
    code = edge + 0.5
    low, high = date_code(_FIRST_DATE), date_code(_LAST_DATE) + 1
    if not (code.is_integer() and low <= code <= high):
        raise SchemaError(f"The bin edges of the date column {name!r} must be day codes.")


def _plain_key(key: object) -> bool:
    return isinstance(key, (bool, int, float, str))


@dataclass(frozen=True, eq=False, kw_only=True)
class Synthesize(ReleaseNode):
    """A synthetic copy of whole rows (MST 2021 or AIM 2022, McKenna et al.): a public DataFrame.

    Attributes:
        columns: the columns modelled, in order.
        edges: per column, the public bin edges of a binned column (empty for
            one with keys); values are clamped into the end bins.  A date
            column's edges are in the day code of :func:`date_code` (code − 0.5).
        categories: per column, the declared keys (empty for a binned one).
        kinds: per column, its kind (:data:`KINDS`): what the copy holds.
        missing: per column, True when it has a cell for missing values (the
            last); otherwise rows missing it are left out of every marginal.
        method: ``"mst"`` or ``"aim"``.
        rows: the copy's length; 0 draws a noisy row count from the marginals.
        progress: show progress while fitting (client-side only, never sent).
    """

    columns: tuple[str, ...]
    edges: tuple[tuple[float, ...], ...]
    categories: tuple[tuple[Hashable, ...], ...]
    kinds: tuple[str, ...]
    missing: tuple[bool, ...]
    method: Literal["mst", "aim"] = "mst"
    rows: int = 0
    progress: bool = field(default=False, compare=False)  # client-side only: never sent

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.method, str) or self.method not in ("mst", "aim"):
            raise InvalidArgumentError("method must be 'mst' or 'aim'.")
        d = len(self.columns)
        if not 1 <= d <= MAX_SYNTH_COLUMNS:
            raise ResourceLimitError(
                f"synthesize() models 1 to {MAX_SYNTH_COLUMNS} columns; select fewer columns "
                "first (pf[[...]])."
            )
        if len(set(self.columns)) != d:
            raise SchemaError("synthesize() lists a column twice.")
        if not (
            len(self.edges) == len(self.categories) == len(self.kinds) == len(self.missing) == d
        ):
            raise SchemaError("synthesize() needs edges, categories, kinds and missing per column.")
        if isinstance(self.rows, bool) or not isinstance(self.rows, int):
            raise InvalidArgumentError("rows must be an integer.")
        if not 0 <= self.rows <= MAX_SYNTH_ROWS:
            raise InvalidArgumentError(
                f"rows must be a positive integer at most {MAX_SYNTH_ROWS:,} (or None for a "
                "private, noisy row count)."
            )
        for name, edges, keys, kind, missing in zip(
            self.columns, self.edges, self.categories, self.kinds, self.missing, strict=True
        ):
            self._check_column(name, edges, keys, kind, missing)
        self._check_sizes()

    @staticmethod
    def _check_column(
        name: str, edges: tuple[float, ...], keys: tuple[Hashable, ...], kind: str, missing: bool
    ) -> None:
        if kind not in KINDS:
            raise SchemaError(f"The kind of {name!r} must be one of {', '.join(KINDS)}.")
        if not isinstance(missing, bool):
            raise SchemaError(f"missing for {name!r} must be true or false.")
        if edges and keys:
            raise SchemaError(f"Column {name!r} is either binned or categorical, not both.")
        if keys:
            check_keys(name, keys)
            if not all(_plain_key(k) for k in keys):
                raise SchemaError(
                    f"The keys of {name!r} are not plain numbers, strings or booleans (intervals "
                    "or periods of a derived column): synthesize the column it is derived from, "
                    "with bins= for its bins."
                )
            if kind == "date":
                raise SchemaError(f"The date column {name!r} is binned by day, not keyed.")
            return
        if kind not in BINNED_KINDS:
            raise SchemaError(f"Column {name!r} ({kind}) needs its declared keys.")
        if len(edges) < 2 or not all(isinstance(e, float) and math.isfinite(e) for e in edges):
            raise SchemaError(f"Column {name!r} needs at least two finite bin edges.")
        if any(b <= a for a, b in itertools.pairwise(edges)):
            raise SchemaError(f"The bin edges of {name!r} must increase.")
        if kind == "date":
            for edge in edges:
                _date_edge(name, edge)

    def _check_sizes(self) -> None:
        sizes = self.sizes()
        worst = max(size - int(missing) for size, missing in zip(sizes, self.missing, strict=True))
        if worst > MAX_COLUMN_CELLS:
            raise ResourceLimitError(
                f"A column of a synthetic copy has at most {MAX_COLUMN_CELLS:,} bins or "
                f"categories; one here has {worst:,}: use fewer bins (bins=)."
            )
        pairs = [a * b for i, a in enumerate(sizes) for b in sizes[i + 1 :]]
        if pairs and max(pairs) > MAX_PAIR_CELLS:
            raise ResourceLimitError(
                f"The largest 2-way marginal of this copy has {max(pairs):,} cells; the "
                f"limit is {MAX_PAIR_CELLS:,} (= 2**16): use fewer bins (bins=) or merge "
                "categories (map) for the largest columns."
            )
        if sum(pairs) > MAX_TOTAL_PAIR_CELLS:
            raise ResourceLimitError(
                f"The 2-way marginals of this copy have {sum(pairs):,} cells together; the "
                f"limit is {MAX_TOTAL_PAIR_CELLS:,} (= 2**21): use fewer columns or bins."
            )
        if self.method == "aim" and pairs and sum(sizes) + max(pairs) > MAX_AIM_MODEL_CELLS:
            raise ResourceLimitError(
                f"AIM's first model holds at most {MAX_AIM_MODEL_CELLS:,} (= 2**15) cells; "
                f"the 1-way marginals and the largest 2-way marginal of this copy need "
                f"{sum(sizes) + max(pairs):,}: use fewer bins (bins=), merge categories, or "
                "method='mst'."
            )

    def sizes(self) -> tuple[int, ...]:
        """How many cells each column takes in the model (bins or keys, and a missing cell)."""
        return tuple(
            (len(keys) if keys else len(edges) - 1) + int(missing)
            for edges, keys, missing in zip(self.edges, self.categories, self.missing, strict=True)
        )

    def code(self, i: int) -> Expr:
        """Column ``i``'s cell per row as a number (missing: no cell, or not declared).

        A binned column: the bin of its value (clamped into the end bins; a
        date by its day code); a keyed one: the position of its value among
        the keys (missing for a value not declared).
        """
        name, edges, keys = self.columns[i], self.edges[i], self.categories[i]
        column = Col(name)
        if keys:
            return Recode(column, tuple(keys), tuple(range(len(keys))))  # type: ignore[arg-type]
        value: Expr = column
        if self.kinds[i] == "date":
            year, month, day = (DtField(column, f) for f in ("year", "month", "day"))
            value = Arith(
                "+",
                Arith("+", Arith("*", year, Lit(_YEAR_CODES)), Arith("*", month, Lit(_MONTH_DAYS))),
                Arith("-", day, Lit(_CODE_OFFSET)),
            )
        return Bucket(value, edges, clamp=True)

    def null(self, i: int) -> Expr | None:
        """Where column ``i`` is missing, when its code cannot tell (a keyed column's missing cell).

        A keyed column's code is missing both for a missing value and for a
        value not declared; only the first has the missing cell.
        """
        if self.missing[i] and self.categories[i]:
            return IsNull(Col(self.columns[i]))
        return None

    def _what(self) -> str:
        return f"synthesize({', '.join(self.columns)}, {self.method})"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        nulls = (self.null(i) for i in range(len(self.columns)))
        return (
            *(self.code(i) for i in range(len(self.columns))),
            *(n for n in nulls if n is not None),
        )

    def cells(self) -> int:
        """The cells computed: every 1-way and 2-way marginal (and AIM's 3-way workload)."""
        sizes = self.sizes()
        found = sum(sizes) + sum(a * b for i, a in enumerate(sizes) for b in sizes[i + 1 :])
        if self.method == "aim":
            triples = (math.prod(t) for t in itertools.combinations(sizes, 3))
            found += sum(c for c in triples if c <= MAX_TRIPLE_CELLS)
        return found

    def check(self, schema: Schema) -> None:  # noqa: D102
        for name, keys, kind in zip(self.columns, self.categories, self.kinds, strict=True):
            info = infer_column(name, Col(name), schema)
            if keys:
                continue
            if kind == "date" and info.kind != "datetime":
                raise SchemaError(
                    f"synthesize() bins {name!r} as dates; it is {info.kind}: declare date "
                    "bounds or its categories."
                )
            if kind != "date" and not info.summable:
                raise SchemaError(
                    f"synthesize() bins a numeric column; {name!r} is {info.kind}: declare its "
                    "categories instead."
                )
