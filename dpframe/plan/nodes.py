"""Query plans: immutable trees of frozen dataclasses.

A plan is the non-private part of a query: a source, then filters and
derived columns.  An :class:`Aggregate` puts a statistic on top, with the
public clamping bounds and group keys it needs, so the whole query can be
validated, costed and serialized before any data is read.

Every node has :meth:`key`, a canonical hashable tuple (see
:mod:`dpframe.plan.keys`), and is compared and hashed by it: two nodes are
equal exactly when they are structurally equal (``==`` on expressions builds
conditions, so the generated dataclass comparison could not be used).  A
plan's key is flat: the source's fields, one table of the distinct
expression structures of all its steps, and the steps in order referring to
it; it is computed without recursion in time linear in the steps and the
distinct expression objects, once per node (cached on the object).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.keys import KeyTable, intern, scalar_key
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.schema import Schema, check_keys, check_node_bounds, keys_fit, value_fits

__all__ = [
    "JOIN_HOWS",
    "PUBLIC_VIEW",
    "Aggregate",
    "Assign",
    "Filter",
    "GroupKey",
    "Join",
    "Plan",
    "Source",
    "Statistic",
    "describe_plan",
    "lineage",
    "unit_rows",
]

Statistic = Literal["count", "sum", "mean", "var", "std"]

#: The joins of two private frames: pandas' four, and semi/anti joins (filters of the left side).
JOIN_HOWS = ("inner", "left", "right", "outer", "semi", "anti")


def _cached_key(node: object, build: Callable[[], tuple[Any, ...]]) -> tuple[Any, ...]:
    """``build()``, computed once per node and kept in its ``__dict__`` (frozen-safe)."""
    cached: tuple[Any, ...] | None = node.__dict__.get("_dp_key")
    if cached is None:
        cached = node.__dict__["_dp_key"] = build()
    return cached


def _node_eq(self: Any, other: Any) -> bool:
    if type(other) is not type(self):
        unknown: bool = NotImplemented
        return unknown
    mine: tuple[Any, ...] = self.key()
    theirs: tuple[Any, ...] = other.key()
    return self is other or mine == theirs


def _node_hash(self: Any) -> int:
    cached: int | None = self.__dict__.get("_dp_hash")
    if cached is None:
        cached = self.__dict__["_dp_hash"] = hash(self.key())
    return cached


def _plan_key(plan: Plan) -> tuple[Any, ...]:
    """``("plan", source fields, expression entries, steps)``; see the module docstring."""
    source, steps = lineage(plan)
    table = KeyTable()
    memo: dict[int, int] = {}
    written: list[tuple[Any, ...]] = []
    for step in steps:
        if isinstance(step, Filter):
            written.append(("filter", intern(step.predicate, table, memo)))
        else:
            written.append(("assign", step.name, intern(step.expr, table, memo)))
    fields = (source.dataset, source.unit_rows, source.view, source.unit_column, source.unit_groups)
    head: Any = scalar_key(fields)
    if source.id_space or source.join is not None:
        head = (head, source.id_space, None if source.join is None else source.join.key())
    return ("plan", head, tuple(table.entries), tuple(written))


@dataclass(frozen=True, eq=False)
class Source:
    """The rows of one registered dataset, identified by its fingerprint.

    ``unit_rows`` is the most rows one privacy unit can contribute (1 when
    each row is a person); every sensitivity is multiplied by it.  ``view``
    names a contribution-bounded copy of the dataset (empty: the data as
    loaded); the budget is always charged to ``dataset``.  ``unit_column``
    and ``unit_groups`` (0: no limit beyond ``unit_rows``) bound how many
    keys one unit may add when keys are discovered privately.  ``id_space``
    names the kind of identifier ``unit_column`` holds (frames of one ID
    space may be joined on it; empty: row-level data).  ``join``, when set,
    makes this source the rows of a private join (:class:`Join`), truncated
    to ``unit_rows`` rows per ID (the engine computes them).
    """

    dataset: str
    unit_rows: int = 1
    view: str = ""
    unit_column: str = ""
    unit_groups: int = 0
    id_space: str = ""
    join: Join | None = None

    __eq__ = _node_eq
    __hash__ = _node_hash

    def key(self) -> tuple[Any, ...]:
        """The canonical key of the plan (see the module docstring)."""
        return _cached_key(self, lambda: _plan_key(self))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out: dict[str, Any] = {
            "node": "source",
            "dataset": self.dataset,
            "unit_rows": self.unit_rows,
            "view": self.view,
            "unit_column": self.unit_column,
            "unit_groups": self.unit_groups,
        }
        if self.id_space:
            out["id_space"] = self.id_space
        if self.join is not None:
            out["join"] = self.join.to_dict()
        return out


@dataclass(frozen=True, eq=False)
class Filter:
    """Keep the rows where ``predicate`` is true (missing counts as false)."""

    child: Plan
    predicate: Expr

    __eq__ = _node_eq
    __hash__ = _node_hash

    def key(self) -> tuple[Any, ...]:
        """The canonical key of the plan (see the module docstring)."""
        return _cached_key(self, lambda: _plan_key(self))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "node": "filter",
            "child": self.child.to_dict(),
            "predicate": self.predicate.to_dict(),
        }


@dataclass(frozen=True, eq=False)
class Assign:
    """Add (or replace) the column ``name`` computed row by row from ``expr``."""

    child: Plan
    name: str
    expr: Expr

    __eq__ = _node_eq
    __hash__ = _node_hash

    def key(self) -> tuple[Any, ...]:
        """The canonical key of the plan (see the module docstring)."""
        return _cached_key(self, lambda: _plan_key(self))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "node": "assign",
            "child": self.child.to_dict(),
            "name": self.name,
            "expr": self.expr.to_dict(),
        }


Plan: TypeAlias = Source | Filter | Assign


@dataclass(frozen=True, eq=False)
class Join:
    """The rows of two private frames of one ID space, matched on keys that include the ID.

    The engine evaluates ``left`` and ``right`` (each already bounded per ID
    when loaded), matches their rows as ``pandas.merge`` does (missing keys
    never match), then keeps at most ``max_rows`` rows per ID, a uniformly
    random subset, once per session: every release on the result counts
    ``max_rows`` rows per person (docs/proofs/private_joins.md).

    Attributes:
        left: the left frame's plan.
        right: the right frame's plan.
        left_on: the left key columns (one of them the left frame's ID column).
        right_on: the right key columns, paired in order (the right ID column at
            the same position as the left one).
        how: inner, left, right, outer, semi or anti (semi/anti: left rows whose
            key is / is not in the right frame; the left columns only).
        max_rows: the most rows one ID keeps after the join.
        left_columns: the left frame's columns kept (its public schema's names).
        right_columns: the right frame's columns kept (its keys are not repeated).
        suffixes: added to other columns present in both, as pandas.
        rows: ``"kept"`` (the join's rows, at most ``max_rows`` per ID) or
            ``"dropped"`` (the rows the truncation dropped from the same
            draw: a count of them is the charged answer to "how many rows did
            the bound cut?"), or ``"per_id"`` (one row per ID: the ID and
            ``rows``, its number of joined rows before the truncation; one
            row per person, for choosing ``max_rows`` privately), or, on
            another key, ``"per_key"`` (for choosing ``k`` privately: one row
            per row of either side whose key is present, ``side`` "left" or
            "right" and ``rank``, its place within its key value's rows on
            that side, 1, 2, ..., at most ``k_left``: removing a person removes
            at most m_L + m_R such rows).
        k_left: a join on another key (household, store): each side is first
            cut to at most ``k_left`` (left) and ``k_right`` (right) rows per
            key value, a random subset; no truncation per ID follows and the
            joined rows belong to no single ID (docs/proofs/private_joins.md,
            "Joins on another key").  0 for both: a join on the ID.
        k_right: see ``k_left``.
    """

    left: Plan
    right: Plan
    left_on: tuple[str, ...]
    right_on: tuple[str, ...]
    how: str
    max_rows: int
    left_columns: tuple[str, ...]
    right_columns: tuple[str, ...]
    suffixes: tuple[str, str] = ("_x", "_y")
    rows: str = "kept"
    k_left: int = 0
    k_right: int = 0

    __eq__ = _node_eq
    __hash__ = _node_hash

    @property
    def on_key(self) -> bool:
        """A join on another key than the ID (each side cut to k rows per key value)."""
        return self.k_left > 0

    def __post_init__(self) -> None:
        ks = (self.k_left, self.k_right)
        if any(isinstance(k, bool) or not isinstance(k, int) or k < 0 for k in ks) or (
            min(ks) == 0 < max(ks)
        ):
            raise SchemaError(
                "merge(k=...) (or k_left= and k_right=, both) takes integers >= 1: the most "
                "rows each side keeps per key value."
            )
        if self.rows not in ("kept", "dropped", "per_id", "per_key"):
            raise SchemaError("merge(rows=...) takes 'kept' (default) or 'dropped'.")
        if self.how not in JOIN_HOWS:
            raise SchemaError(f"merge(how=...) takes one of {', '.join(JOIN_HOWS)}.")
        if (
            isinstance(self.max_rows, bool)
            or not isinstance(self.max_rows, int)
            or self.max_rows < 1
        ):
            raise SchemaError(
                "merge(max_rows=...) must be an integer >= 1: the most rows one ID keeps "
                "after the join."
            )
        if not self.left_on or len(self.left_on) != len(self.right_on):
            raise SchemaError("A join needs as many left keys as right keys (at least one).")
        names = (*self.left_on, *self.right_on, *self.left_columns, *self.right_columns)
        if not all(isinstance(n, str) and n for n in names):
            raise SchemaError("Join keys and columns are column names.")
        if len(set(self.left_on)) != len(self.left_on):
            raise SchemaError("A join key is named twice.")
        if len(self.suffixes) != 2 or not all(isinstance(x, str) for x in self.suffixes):
            raise SchemaError("suffixes= is a pair of strings, as pandas.")
        if self.suffixes[0] == self.suffixes[1]:
            raise SchemaError("suffixes= needs two different strings, as pandas.")

    def key(self) -> tuple[Any, ...]:
        """``("join", left plan, right plan, fields...)``."""

        def build() -> tuple[Any, ...]:
            fields = (
                self.left_on,
                self.right_on,
                self.how,
                self.max_rows,
                self.left_columns,
                self.right_columns,
                self.suffixes,
                self.rows,
                self.k_left,
                self.k_right,
            )
            return ("join", self.left.key(), self.right.key(), scalar_key(fields))

        return _cached_key(self, build)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "node": "join",
            "left": self.left.to_dict(),
            "right": self.right.to_dict(),
            "left_on": list(self.left_on),
            "right_on": list(self.right_on),
            "how": self.how,
            "max_rows": self.max_rows,
            "left_columns": list(self.left_columns),
            "right_columns": list(self.right_columns),
            "suffixes": list(self.suffixes),
            "rows": self.rows,
            "k_left": self.k_left,
            "k_right": self.k_right,
        }


def unit_rows(plan: Plan) -> int:
    """The most rows one privacy unit contributes to ``plan`` (the sensitivity multiplier)."""
    return lineage(plan)[0].unit_rows


def lineage(plan: Plan) -> tuple[Source, tuple[Filter | Assign, ...]]:
    """The source and the steps applied to it, in order."""
    steps: list[Filter | Assign] = []
    node: Plan = plan
    while not isinstance(node, Source):
        steps.append(node)
        node = node.child
    return node, tuple(reversed(steps))


@dataclass(frozen=True, eq=False)
class GroupKey:
    """A group-by key: an expression and its declared (public) categories."""

    name: str
    expr: Expr
    categories: tuple[Hashable, ...]

    __eq__ = _node_eq
    __hash__ = _node_hash

    def key(self) -> tuple[Any, ...]:
        """``("groupkey", name, expression key, category keys)``."""
        return _cached_key(
            self,
            lambda: ("groupkey", self.name, self.expr.key(), scalar_key(tuple(self.categories))),
        )


@dataclass(frozen=True, eq=False)
class Aggregate:
    """A statistic of a plan, optionally per group of public keys.

    Attributes:
        plan: the rows to aggregate.
        statistic: count, sum, mean, var or std.
        expr: the value expression (None for a row count).
        bounds: the public clamping bounds of ``expr`` (None for a row count).
        by: group keys; empty for a scalar release.
        label: a human-readable description for the ledger.
        privacy: the privacy cost requested (None: a query used inside another
            release, e.g. argmax's utilities, never released on its own).
        undeclared: also release, free, a noisy count of the kept rows whose key
            is present but outside ``by`` (one more disjoint cell, never an index
            entry; see docs/proofs/undeclared_cell.md).  Set by the group-by
            facade over declared keys; never for keys discovered privately.
        moment_weights: var/std only: the adaptive path's four shares (first
            count, midpoint sum, sum around the centre, squares around it);
            empty for the default (``ADAPTIVE_WEIGHTS`` of
            :mod:`dpframe.mechanisms.moments.variance`); a first share of 0 releases
            the count, sum and squares around the bounds' midpoint in the
            other three shares (``describe``, which also reports the mean).
    """

    plan: Plan
    statistic: Statistic
    expr: Expr | None
    bounds: tuple[float, float] | None
    by: tuple[GroupKey, ...]
    label: str
    privacy: PrivacyRequest | None = None
    undeclared: bool = False
    moment_weights: tuple[int, ...] = ()

    __eq__ = _node_eq
    __hash__ = _node_hash

    def __post_init__(self) -> None:
        if self.statistic not in ("count", "sum", "mean", "var", "std"):
            raise SchemaError("statistic must be count, sum, mean, var or std.")
        if self.undeclared and not self.by:
            raise SchemaError("undeclared=True counts rows outside group keys: give keys (by=).")
        weights = self.moment_weights
        if weights and (
            self.statistic not in ("var", "std")
            or len(weights) != 4
            or not all(isinstance(w, int) and not isinstance(w, bool) for w in weights)
            or not all(w > 0 for w in weights[1:])
            or weights[0] < 0
        ):
            raise SchemaError(
                "moment_weights are four integers for var or std only: the first count's "
                "share (0: no first pass, the midpoint only), then three positive shares."
            )
        if self.statistic != "count":
            if self.expr is None:
                raise SchemaError(f"{self.statistic}() needs a value expression.")
            check_node_bounds(self.bounds, f"{self.statistic}()")
        for key in self.by:
            check_keys(key.name, key.categories)

    def key(self) -> tuple[Any, ...]:
        """The canonical key: ``("aggregate", plan, statistic, expr, bounds, ...)``.

        Then keys, label, privacy, undeclared and moment_weights.
        """

        def build() -> tuple[Any, ...]:
            expr = None if self.expr is None else self.expr.key()
            bounds = None if self.bounds is None else scalar_key(tuple(self.bounds))
            by = tuple(k.key() for k in self.by)
            privacy = (
                None
                if self.privacy is None
                else (self.privacy.epsilon, self.privacy.delta, self.privacy.rho)
            )
            return (
                "aggregate",
                self.plan.key(),
                self.statistic,
                expr,
                bounds,
                by,
                self.label,
                privacy,
                self.undeclared,
                self.moment_weights,
            )

        return _cached_key(self, build)

    def expressions(self) -> tuple[Expr | None, ...]:
        """The value and group-key expressions (for sizing the request)."""
        return (self.expr, *(k.expr for k in self.by))

    def cells(self) -> int:
        """The cells released (:attr:`n_groups`)."""
        return self.n_groups

    def check(self, schema: Schema) -> None:
        """Raise a :class:`SchemaError` unless the keys fit and a summed value is numeric."""
        for key in self.by:
            if not key.categories:
                raise SchemaError(f"Grouping by {key.name!r} needs at least one public key.")
        keys_fit(self.by, schema)
        if self.expr is not None:
            value_fits(self.expr, schema, self.statistic)

    @property
    def n_groups(self) -> int:
        """Number of cells released (product of key cardinalities)."""
        size = 1
        for key in self.by:
            size *= len(key.categories)
        return size


#: The view of a public table's source (a merge with a public table whose keys repeat).
PUBLIC_VIEW = "public"

#: The longest plan summary in a label (the ledger stores labels; a long plan is elided).
_PLAN_TEXT = 500


def describe_plan(plan: Plan) -> str:
    """A readable summary of a plan's filters and derived columns, for labels in the ledger."""
    source, steps = lineage(plan)
    parts: list[str] = []
    if source.join is not None:
        join = source.join
        keys = ", ".join(join.left_on)
        article = "an" if join.how in ("inner", "outer", "anti") else "a"
        joined = f"{article} {join.how} join on {keys}"
        table = lineage(join.right)[0]
        if table.view == PUBLIC_VIEW and table.join is None:
            parts.append(
                f"of {article} {join.how} merge on {keys} with a public table whose keys repeat "
                f"up to {table.unit_rows} times (at most {source.unit_rows} rows per "
                f"{'ID' if source.unit_column else 'row of the frame'})"
            )
        elif join.on_key and join.rows == "per_key":
            parts.append(f"of the rows per key value of each side of {joined}")
        elif join.on_key:
            parts.append(
                f"of {joined} (at most {join.k_left} and {join.k_right} rows per key value; "
                f"at most {source.unit_rows} rows change with one person)"
            )
        elif join.rows == "per_id":
            parts.append(f"of the rows per ID of {joined}")
        elif join.rows == "dropped":
            parts.append(f"of the rows dropped from {joined} (over {join.max_rows} per ID)")
        else:
            parts.append(f"of {joined} (at most {join.max_rows} rows per ID)")
    size = 0
    for step in steps:
        if isinstance(step, Filter):
            parts.append(f"where {step.predicate}")
        else:
            parts.append(f"with {step.name} = {step.expr}")
        size += len(parts[-1]) + 1
        if size > _PLAN_TEXT:
            parts.append(f"… ({len(steps)} steps)")
            break
    return (" " + " ".join(parts))[: _PLAN_TEXT + 40] if parts else ""
