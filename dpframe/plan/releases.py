"""Release nodes: every kind of differentially private release, as plain data.

A release node is a frozen dataclass that says *what* to release (the plan of
rows, the columns and public parameters) and *at what privacy cost* (its
:class:`~dpframe.plan.privacy.PrivacyRequest`).  It holds no data and no
callables, so it can be compared by value (``key()``), explained, sized,
serialized and sent to a curator before anything is read.  The engine
(:meth:`dpframe.Session.run`) turns a node into a release:
validate → privacy map → charge → compute → release → record → notify.

Count, sum, mean, var and std (overall or per group, histograms and value
counts included) are :class:`~dpframe.plan.nodes.Aggregate` nodes; the other
kinds are defined here.  Composite nodes (:class:`Describe`,
:class:`DiscoverThenAggregate`) are charged once for their total; their parts
and the budget split between them are part of the node (:meth:`parts`).

Every node validates its public parameters in ``__post_init__`` (structure,
ranges and types); checks that need the schema or a mechanism's limits run in
the engine, still before the charge.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Hashable
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any, ClassVar, Literal, TypeAlias

from dpframe.errors import InvalidArgumentError, SchemaError
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.keys import scalar_key
from dpframe.plan.nodes import (
    Aggregate,
    Assign,
    Filter,
    GroupKey,
    Plan,
    Source,
    Statistic,
    describe_plan,
)
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.schema import (
    Schema,
    check_keys,
    check_node_bounds,
    infer_column,
    keys_fit,
    numeric,
    value_fits,
)

__all__ = [
    "QUANTILE_BINS",
    "ArgMax",
    "Describe",
    "DiscoverKeys",
    "DiscoverThenAggregate",
    "KernelDensity",
    "Mode",
    "Quantile",
    "Regression",
    "ReleaseNode",
    "SanitizedCopy",
    "SparseVector",
    "canonical",
    "privacy_key",
]

Bounds: TypeAlias = tuple[float, float]

#: Quantiles choose among the bin edges of this many equal bins over the bounds
#: (4,097 public candidates).
QUANTILE_BINS = 2**12


def privacy_key(privacy: PrivacyRequest | None) -> tuple[Any, ...]:
    """The exact identity of a privacy request (fractions, never floats)."""
    if privacy is None:
        return ("privacy", None)
    return ("privacy", privacy.epsilon, privacy.delta, privacy.rho)


def canonical(value: Any) -> Hashable:
    """A canonical hashable form of a node field: nodes by their keys, scalars exactly."""
    if isinstance(value, (Expr, ReleaseNode, GroupKey, Aggregate, Source, Filter, Assign)):
        return ("node", value.key())
    if isinstance(value, PrivacyRequest):
        return privacy_key(value)
    if isinstance(value, tuple):
        return ("tuple", tuple(canonical(v) for v in value))
    return scalar_key(value)


@dataclass(frozen=True, eq=False, kw_only=True)
class ReleaseNode(ABC):
    """Base class of the release kinds defined here.

    Attributes:
        plan: the rows released from (source, filters, derived columns).
        privacy: the privacy cost requested (ε, δ, or ρ in zCDP sessions).
    """

    plan: Plan
    privacy: PrivacyRequest

    def __post_init__(self) -> None:
        if not isinstance(self.privacy, PrivacyRequest):
            raise InvalidArgumentError("privacy= must be a PrivacyRequest.")

    def key(self) -> tuple[Any, ...]:
        """A canonical hashable identity: equal nodes have equal keys."""
        compared = [f for f in fields(self) if f.compare]
        return (
            type(self).__name__,
            *((f.name, canonical(getattr(self, f.name))) for f in compared),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReleaseNode):
            return NotImplemented
        return type(self) is type(other) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    @property
    def label(self) -> str:
        """A human-readable description for the ledger."""
        return f"{self._what()}{describe_plan(self.plan)}"

    def _what(self) -> str:
        return type(self).__name__

    def parts(self) -> tuple[Aggregate | ReleaseNode, ...]:
        """The sub-releases of a composite node (empty for a simple one)."""
        return ()

    def templates(self) -> frozenset[int]:
        """Which parts are templates, completed from an earlier part's release."""
        return frozenset()

    def expressions(self) -> tuple[Expr | None, ...]:
        """Every expression the release evaluates on its plan (for sizing; None: none)."""
        return ()

    def cells(self) -> int:
        """How many cells the release computes (declared keys, bins, points; 1: a scalar)."""
        return 1

    @abstractmethod
    def check(self, schema: Schema) -> None:
        """Raise a :class:`SchemaError` if the node does not fit ``schema`` (the plan's end).

        Every kind defines it: the engine calls it before the charge, also for
        nodes that arrive over the wire without passing through the facade.
        """


@dataclass(frozen=True, eq=False, kw_only=True)
class Quantile(ReleaseNode):
    """Quantiles of a bounded column by the exponential mechanism (one or several levels q)."""

    expr: Expr
    bounds: Bounds
    levels: tuple[Fraction, ...]
    scalar: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_node_bounds(self.bounds, "quantile()")
        if not self.levels:
            raise SchemaError("quantile() needs at least one level q in [0, 1].")
        if not all(isinstance(q, Fraction) and 0 <= q <= 1 for q in self.levels):
            raise SchemaError("Quantile levels must be exact numbers in [0, 1].")
        if self.scalar and len(self.levels) != 1:
            raise SchemaError("A scalar quantile has exactly one level.")

    def _what(self) -> str:
        shown = ", ".join(f"{float(q):g}" for q in self.levels)
        return f"quantile({self.expr}, q=[{shown}])"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.expr,)

    def cells(self) -> int:  # noqa: D102
        return QUANTILE_BINS + 1

    def check(self, schema: Schema) -> None:  # noqa: D102
        numeric(self.expr, schema, "quantile")


@dataclass(frozen=True, eq=False, kw_only=True)
class Mode(ReleaseNode):
    """The most frequent declared category (report noisy max); only the key is released."""

    group: GroupKey

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.group.categories:
            raise SchemaError(f"mode() needs the public categories of {self.group.name!r}.")
        check_keys(self.group.name, self.group.categories)

    def _what(self) -> str:
        return f"mode({self.group.expr})"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.group.expr,)

    def cells(self) -> int:  # noqa: D102
        return len(self.group.categories)

    def check(self, schema: Schema) -> None:  # noqa: D102
        keys_fit((self.group,), schema)


@dataclass(frozen=True, eq=False, kw_only=True)
class ArgMax(ReleaseNode):
    """The group of public keys whose count, sum or mean is largest; only the key is released."""

    tag: ClassVar[str] = "argmax"  # its name on the wire

    keys: tuple[GroupKey, ...]
    agg: Literal["count", "sum", "mean"]
    expr: Expr | None = None
    column: str | None = None
    bounds: Bounds | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.agg not in ("count", "sum", "mean"):
            raise SchemaError("argmax(agg=...) must be 'count', 'sum' or 'mean'.")
        if not self.keys or not all(k.categories for k in self.keys):
            raise SchemaError("argmax needs declared keys for every group-by column.")
        for key in self.keys:
            check_keys(key.name, key.categories)
        if self.agg != "count":
            if self.expr is None:
                raise SchemaError(
                    f"argmax('{self.agg}') needs a column: argmax('{self.agg}', column='...')."
                )
            check_node_bounds(self.bounds, f"argmax('{self.agg}')")

    def _what(self) -> str:
        by = ", ".join(k.name for k in self.keys)
        return f"argmax {self.agg}({self.column or ''}) by {by}"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.expr, *(k.expr for k in self.keys))

    def cells(self) -> int:  # noqa: D102
        return math.prod(len(k.categories) for k in self.keys)

    def check(self, schema: Schema) -> None:  # noqa: D102
        keys_fit(self.keys, schema)
        if self.expr is not None:
            what = "count" if self.agg == "count" else f"argmax('{self.agg}')"
            value_fits(self.expr, schema, what)


@dataclass(frozen=True, eq=False, kw_only=True)
class SparseVector(ReleaseNode):
    """Which row conditions hold for more than ``threshold`` rows (sparse vector technique)."""

    conditions: tuple[tuple[str, Expr], ...]
    threshold: float
    max_hits: int = 1
    numeric: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.conditions:
            raise SchemaError("above_threshold() needs at least one query.")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)):
            raise SchemaError("threshold must be a number.")
        if not math.isfinite(self.threshold):
            raise SchemaError("threshold must be a finite number.")
        if abs(self.threshold) >= 2**53:
            raise SchemaError("threshold must be below 2**53 in absolute value.")
        if isinstance(self.max_hits, bool) or not isinstance(self.max_hits, int):
            raise SchemaError("max_hits must be an integer >= 1.")
        if self.max_hits < 1:
            raise SchemaError("max_hits must be an integer >= 1.")

    def _what(self) -> str:
        return (
            f"above_threshold({len(self.conditions)} queries, threshold={self.threshold:g}, "
            f"max_hits={self.max_hits}{', numeric' if self.numeric else ''})"
        )

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return tuple(expr for _, expr in self.conditions)

    def cells(self) -> int:  # noqa: D102
        return len(self.conditions)

    def check(self, schema: Schema) -> None:  # noqa: D102
        for name, expr in self.conditions:
            if infer_column(name, expr, schema).kind != "boolean":
                raise SchemaError(
                    f"Query {name!r} is not a row condition (comparison, isin, &, |, ~)."
                )


@dataclass(frozen=True, eq=False, kw_only=True)
class DiscoverKeys(ReleaseNode):
    """Noisy counts of the keys of ``column`` that clear a private threshold (needs δ > 0)."""

    column: str

    def _what(self) -> str:
        return f"discover keys of {self.column}"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (Col(self.column),)

    def check(self, schema: Schema) -> None:  # noqa: D102
        schema.get(self.column)


_HALF = Fraction(1, 2)


def _scaled(privacy: PrivacyRequest, share: Fraction, delta: Fraction) -> PrivacyRequest:
    epsilon = None if privacy.epsilon is None else privacy.epsilon * share
    rho = None if privacy.rho is None else privacy.rho * share
    return PrivacyRequest(epsilon=epsilon, delta=delta, rho=rho)


@dataclass(frozen=True, eq=False, kw_only=True)
class DiscoverThenAggregate(ReleaseNode):
    """A group-by over keys found privately: discovery, then an aggregate over the keys found.

    The split is part of the node: ``weights[0]`` of ε (or ρ) and all of δ
    discover the keys, ``weights[1]`` of ε (or ρ) releases the aggregate.
    """

    column: str
    statistic: Statistic
    value: Expr | None = None
    bounds: Bounds | None = None
    weights: tuple[Fraction, Fraction] = (_HALF, _HALF)

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.weights) != 2 or sum(self.weights) != 1 or min(self.weights) <= 0:
            raise InvalidArgumentError("weights must be two positive fractions adding to 1.")
        if self.statistic != "count" and self.value is None:
            raise SchemaError(f"Select a column first: grouped['column'].{self.statistic}(...).")
        if self.statistic != "count":
            check_node_bounds(self.bounds, f"{self.statistic}()")

    def _what(self) -> str:
        what = "" if self.value is None else str(self.value)
        return f"{self.statistic}({what}) by {self.column}, keys discovered privately"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (Col(self.column), self.value)

    def check(self, schema: Schema) -> None:  # noqa: D102
        schema.get(self.column)
        if self.value is not None:
            value_fits(self.value, schema, self.statistic)

    def parts(self) -> tuple[Aggregate | ReleaseNode, ...]:
        """The discovery, and the aggregate with no keys yet (they come from the discovery)."""
        discover = DiscoverKeys(
            plan=self.plan,
            privacy=_scaled(self.privacy, self.weights[0], self.privacy.delta),
            column=self.column,
        )
        return (discover, self.aggregate(()))

    def templates(self) -> frozenset[int]:
        """The aggregate part gets its keys from the discovery."""
        return frozenset({1})

    def aggregate(self, keys: tuple[Hashable, ...]) -> Aggregate:
        """The aggregate part over ``keys`` (found by the discovery part)."""
        from dpframe.plan.expressions import Col

        by = (GroupKey(self.column, Col(self.column), keys),)
        what = "count()" if self.value is None else f"{self.statistic}({self.value})"
        label = f"{what} by {self.column}{describe_plan(self.plan)}"
        privacy = _scaled(self.privacy, self.weights[1], Fraction(0))
        expr = self.value
        return Aggregate(self.plan, self.statistic, expr, self.bounds, by, label, privacy)


@dataclass(frozen=True, eq=False, kw_only=True)
class Describe(ReleaseNode):
    """count, mean, std and quartiles of bounded numeric columns, in one charge.

    The request is split evenly over the columns; within a column, half goes
    to the moments (one ``var`` aggregate) and half to the three quartiles
    (one :class:`Quantile`).
    """

    columns: tuple[tuple[str, Expr, Bounds], ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.columns:
            raise SchemaError("describe() needs numeric columns with declared bounds.")
        for name, _, bounds in self.columns:
            check_node_bounds(bounds, f"describe() of {name!r}")

    @property
    def share(self) -> Fraction:
        """Each part's share of the request."""
        return Fraction(1, 2 * len(self.columns))

    def _what(self) -> str:
        return f"describe({', '.join(name for name, _, _ in self.columns)})"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return tuple(expr for _, expr, _ in self.columns)

    def cells(self) -> int:  # noqa: D102
        return len(self.columns) * (QUANTILE_BINS + 1)

    def check(self, schema: Schema) -> None:  # noqa: D102
        for _, expr, _ in self.columns:
            numeric(expr, schema, "describe")

    def parts(self) -> tuple[Aggregate | ReleaseNode, ...]:
        """Per column: a ``var`` aggregate and a quartiles :class:`Quantile`."""
        privacy = _scaled(self.privacy, self.share, self.privacy.delta * self.share)
        found: list[Aggregate | ReleaseNode] = []
        for _, expr, bounds in self.columns:
            label = f"var({expr}){describe_plan(self.plan)}"
            found.append(Aggregate(self.plan, "var", expr, bounds, (), label, privacy))
            quartiles = tuple(Fraction(k, 4) for k in (1, 2, 3))
            found.append(
                Quantile(
                    plan=self.plan,
                    privacy=privacy,
                    expr=expr,
                    bounds=bounds,
                    levels=quartiles,
                    scalar=False,
                )
            )
        return tuple(found)


@dataclass(frozen=True, eq=False, kw_only=True)
class SanitizedCopy(ReleaseNode):
    """A randomized-response (``rr``) or Laplace copy of one column: a public Series."""

    expr: Expr
    name: str
    kind: Literal["rr", "laplace"]
    length_share: Fraction
    categories: tuple[Hashable, ...] = ()
    bounds: Bounds = (0.0, 0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind not in ("rr", "laplace"):
            raise InvalidArgumentError("A sanitized copy is 'rr' or 'laplace'.")
        if not isinstance(self.length_share, Fraction) or not 0 < self.length_share < 1:
            raise InvalidArgumentError(
                "length_share must be in (0, 1): the share of the request that hides the row count."
            )
        if self.kind == "rr" and len(self.categories) < 2:
            raise SchemaError(
                f"randomized_response() needs at least two declared categories for {self.name!r}."
            )
        check_keys(self.name, self.categories)
        if self.kind == "laplace":
            check_node_bounds(self.bounds, "laplace_copy()")
            if not self.bounds[1] > self.bounds[0]:
                raise SchemaError(f"laplace_copy() needs bounds with low < high for {self.name!r}.")

    def _what(self) -> str:
        return f"{'randomized_response' if self.kind == 'rr' else 'laplace_copy'}({self.expr})"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.expr,)

    def check(self, schema: Schema) -> None:  # noqa: D102
        if self.kind == "laplace":
            numeric(self.expr, schema, "laplace_copy")
        else:
            infer_column(self.name, self.expr, schema)


@dataclass(frozen=True, eq=False, kw_only=True)
class KernelDensity(ReleaseNode):
    """A Gaussian kernel density estimate of a bounded column on public grid points."""

    expr: Expr
    bounds: Bounds
    bandwidth: float
    points: tuple[float, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        check_node_bounds(self.bounds, "kde()")
        if not (math.isfinite(self.bandwidth) and self.bandwidth > 0):
            raise InvalidArgumentError("bandwidth must be a positive finite number.")
        if not 1e-100 <= self.bandwidth <= 1e100:
            raise InvalidArgumentError("bandwidth must be between 1e-100 and 1e100.")
        if not self.points or not all(math.isfinite(p) for p in self.points):
            raise InvalidArgumentError("kde() needs at least one finite grid point.")

    def _what(self) -> str:
        return f"kde({self.expr}, h={self.bandwidth:g}, {len(self.points)} points)"

    def expressions(self) -> tuple[Expr | None, ...]:  # noqa: D102
        return (self.expr,)

    def cells(self) -> int:  # noqa: D102
        return len(self.points)

    def check(self, schema: Schema) -> None:  # noqa: D102
        numeric(self.expr, schema, "kde")


@dataclass(frozen=True, eq=False, kw_only=True)
class Regression(ReleaseNode):
    """A linear or logistic model by noisy projected gradient descent."""

    loss: Literal["squared", "logistic"]
    features: tuple[str, ...]
    feature_bounds: tuple[Bounds, ...]
    target: str
    target_bounds: Bounds
    analysis: Literal["rdp", "iteration"] = "rdp"
    radius: float = 2.0
    steps: int = 50
    passes: int = 1
    step_size: float | None = None
    progress: bool = field(default=False, compare=False)  # client-side only: never sent

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.loss not in ("squared", "logistic"):
            raise InvalidArgumentError("loss must be 'squared' or 'logistic'.")
        if self.analysis not in ("rdp", "iteration"):
            raise InvalidArgumentError("analysis= must be 'rdp' or 'iteration'.")
        if not self.features or len(self.features) != len(self.feature_bounds):
            raise SchemaError("features= takes a list of column names.")
        if len(set(self.features)) != len(self.features):
            raise SchemaError("features= lists a column twice.")
        if self.target in self.features:
            raise SchemaError("The target cannot also be a feature.")
        for name, bounds in (
            *zip(self.features, self.feature_bounds, strict=True),
            (self.target, self.target_bounds),
        ):
            check_node_bounds(bounds, f"regression column {name!r}")
            if not bounds[1] > bounds[0]:
                raise SchemaError(f"Regression column {name!r} needs bounds with low < high.")
        if self.loss == "logistic" and not (
            self.target_bounds[0] >= 0 and self.target_bounds[1] <= 1
        ):
            raise SchemaError(
                f"A logistic target must be boolean or bounded in [0, 1]; {self.target!r} has "
                f"bounds {self.target_bounds}."
            )
        for name, value, upper in (("steps", self.steps, 10_000), ("passes", self.passes, 100)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= upper:
                raise InvalidArgumentError(f"{name} must be an integer in [1, {upper}].")
        if not (math.isfinite(self.radius) and self.radius > 0):
            raise InvalidArgumentError(f"radius must be a positive number, got {self.radius!r}.")
        if self.step_size is not None:
            largest = 2.0 if self.loss == "squared" else 8.0  # 2/β: β = 1 or 1/4
            if not (math.isfinite(self.step_size) and 0 < self.step_size <= largest):
                raise InvalidArgumentError(f"step_size must be in (0, {largest:g}] (2/β).")

    def check(self, schema: Schema) -> None:  # noqa: D102
        for name in (*self.features, self.target):
            numeric(Col(name), schema, "regression")

    def _what(self) -> str:
        kind = "linear" if self.loss == "squared" else "logistic"
        return f"{kind}_regression({self.target} ~ {' + '.join(self.features)}, {self.analysis})"
