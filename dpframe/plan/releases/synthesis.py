"""Synthetic data: a public table fitted to noisy marginals (MST or AIM)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Literal

from dpframe.errors import InvalidArgumentError, ResourceLimitError, SchemaError
from dpframe.plan.expressions import Bucket, Col, Expr, IsIn, IsNull, Logical, Not
from dpframe.plan.nodes import Filter, GroupKey, Plan
from dpframe.plan.releases.base import ReleaseNode
from dpframe.plan.schema import Schema, check_keys, infer_column

__all__ = [
    "MAX_AIM_MODEL_CELLS",
    "MAX_COLUMN_CELLS",
    "MAX_PAIR_CELLS",
    "MAX_SYNTH_COLUMNS",
    "MAX_SYNTH_ROWS",
    "MAX_TOTAL_PAIR_CELLS",
    "MAX_TRIPLE_CELLS",
    "Synthesize",
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
#: AIM's model size: the most cells of its junction tree's cliques together (AIM's
#: "max model size"); a copy whose 1-way marginals and largest pair do not fit is refused.
MAX_AIM_MODEL_CELLS = 2**15
#: The most cells of a 3-way marginal in AIM's workload.
MAX_TRIPLE_CELLS = 2**13
#: The longest synthetic copy (a public cap on the noisy row count, and on ``rows=``).
MAX_SYNTH_ROWS = 10**7


@dataclass(frozen=True, eq=False, kw_only=True)
class Synthesize(ReleaseNode):
    """A synthetic copy of whole rows (MST 2021 or AIM 2022, McKenna et al.): a public DataFrame.

    Attributes:
        columns: the columns modelled, in order.
        edges: per column, the public bin edges of a numeric column (empty for a
            categorical one); values are clamped into the end bins.
        categories: per column, the declared categories (empty for a binned one).
        integer: per column, True when its values are integers (drawn as integers).
        method: ``"mst"`` or ``"aim"``.
        rows: the copy's length; 0 draws a noisy row count from the marginals.
        progress: show progress while fitting (client-side only, never sent).
    """

    columns: tuple[str, ...]
    edges: tuple[tuple[float, ...], ...]
    categories: tuple[tuple[Hashable, ...], ...]
    integer: tuple[bool, ...]
    method: Literal["mst", "aim"] = "mst"
    rows: int = 0
    progress: bool = field(default=False, compare=False)  # client-side only: never sent

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method not in ("mst", "aim"):
            raise InvalidArgumentError("method must be 'mst' or 'aim'.")
        d = len(self.columns)
        if not 1 <= d <= MAX_SYNTH_COLUMNS:
            raise ResourceLimitError(
                f"synthesize() models 1 to {MAX_SYNTH_COLUMNS} columns; select fewer columns "
                "first (pf[[...]])."
            )
        if len(set(self.columns)) != d:
            raise SchemaError("synthesize() lists a column twice.")
        if not (len(self.edges) == len(self.categories) == len(self.integer) == d):
            raise SchemaError("synthesize() needs edges, categories and integer per column.")
        if isinstance(self.rows, bool) or not isinstance(self.rows, int):
            raise InvalidArgumentError("rows must be an integer.")
        if not 0 <= self.rows <= MAX_SYNTH_ROWS:
            raise InvalidArgumentError(
                f"rows must be a positive integer at most {MAX_SYNTH_ROWS:,} (or None for a "
                "private, noisy row count)."
            )
        for name, edges, keys in zip(self.columns, self.edges, self.categories, strict=True):
            if edges and keys:
                raise SchemaError(f"Column {name!r} is either binned or categorical, not both.")
            if keys:
                check_keys(name, keys)
                continue
            if len(edges) < 2 or not all(isinstance(e, float) and math.isfinite(e) for e in edges):
                raise SchemaError(f"Column {name!r} needs at least two finite bin edges.")
            if any(b <= a for a, b in itertools.pairwise(edges)):
                raise SchemaError(f"The bin edges of {name!r} must increase.")
        sizes = self.sizes()
        worst = max(sizes)
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
                f"AIM's model holds at most {MAX_AIM_MODEL_CELLS:,} (= 2**15) cells; the 1-way "
                f"marginals and the largest 2-way marginal of this copy need "
                f"{sum(sizes) + max(pairs):,}: use fewer bins (bins=), merge categories, or "
                "method='mst'."
            )

    def sizes(self) -> tuple[int, ...]:
        """How many values each column takes in the model (bins or categories)."""
        return tuple(
            len(keys) if keys else len(edges) - 1
            for edges, keys in zip(self.edges, self.categories, strict=True)
        )

    def keys(self) -> tuple[GroupKey, ...]:
        """Each column as a group key over its cells ``0 .. k-1`` (bins) or its categories."""
        found = []
        for name, edges, keys in zip(self.columns, self.edges, self.categories, strict=True):
            if keys:
                found.append(GroupKey(name, Col(name), keys))
            else:
                bucket = Bucket(Col(name), edges, clamp=True)
                found.append(GroupKey(name, bucket, tuple(range(len(edges) - 1))))
        return tuple(found)

    def complete(self) -> Plan:
        """The plan's rows with a cell in every column (the rows the copy models).

        A row with a missing value, or a category that is not declared, in any
        modelled column is left out of every marginal, so every marginal counts
        the same rows.
        """
        predicate: Expr | None = None
        for name, keys in zip(self.columns, self.categories, strict=True):
            plain = [k for k in keys if isinstance(k, (bool, int, float, str))]
            scalar = bool(keys) and len(plain) == len(keys)
            term: Expr = IsIn(Col(name), tuple(plain)) if scalar else Not(IsNull(Col(name)))
            predicate = term if predicate is None else Logical("&", predicate, term)
        assert predicate is not None
        return Filter(self.plan, predicate)

    def _what(self) -> str:
        return f"synthesize({', '.join(self.columns)}, {self.method})"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        complete = self.complete()
        assert isinstance(complete, Filter)
        return (*(key.expr for key in self.keys()), complete.predicate)

    def cells(self) -> int:
        """The cells computed: every 1-way and 2-way marginal (and AIM's 3-way workload)."""
        sizes = self.sizes()
        found = sum(sizes) + sum(a * b for i, a in enumerate(sizes) for b in sizes[i + 1 :])
        if self.method == "aim":
            triples = (math.prod(t) for t in itertools.combinations(sizes, 3))
            found += sum(c for c in triples if c <= MAX_TRIPLE_CELLS)
        return found

    def check(self, schema: Schema) -> None:  # noqa: D102
        for name, keys in zip(self.columns, self.categories, strict=True):
            info = infer_column(name, Col(name), schema)
            if not keys and not info.summable:
                raise SchemaError(
                    f"synthesize() bins a numeric column; {name!r} is {info.kind}: declare its "
                    "categories instead."
                )
