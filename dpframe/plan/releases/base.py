"""The base of every release node: identity by value, validation, sizing, labels."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any, TypeAlias

from dpframe.errors import InvalidArgumentError
from dpframe.plan.expressions import Expr
from dpframe.plan.keys import scalar_key
from dpframe.plan.nodes import Aggregate, Assign, Filter, GroupKey, Plan, Source, describe_plan
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.schema import Schema

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
class ReleaseNode:
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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse, when it is defined, a release kind without a schema check of its own."""
        super().__init_subclass__(**kwargs)
        if cls.check is ReleaseNode.check:
            raise TypeError(f"Release kind {cls.__name__} must define check(schema).")

    def check(self, schema: Schema) -> None:
        """Raise a :class:`SchemaError` if the node does not fit ``schema`` (the plan's end).

        Every kind defines it (enforced when the class is defined): the engine
        calls it before the charge, also for nodes that arrive over the wire
        without passing through the facade.
        """
        raise NotImplementedError


def scaled(privacy: PrivacyRequest, share: Fraction, delta: Fraction) -> PrivacyRequest:
    """``share`` of a request's ε or ρ, with ``delta`` as the δ (a part of a composite)."""
    epsilon = None if privacy.epsilon is None else privacy.epsilon * share
    rho = None if privacy.rho is None else privacy.rho * share
    return PrivacyRequest(epsilon=epsilon, delta=delta, rho=rho)
