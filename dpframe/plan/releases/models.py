"""Models: the kernel density estimate and the regressions."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from dpframe.errors import InvalidArgumentError, SchemaError
from dpframe.plan.expressions import Col, Expr
from dpframe.plan.releases.base import Bounds, ReleaseNode
from dpframe.plan.schema import Schema, check_node_bounds, numeric


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
