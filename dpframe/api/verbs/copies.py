"""Row-level releases of one column: sanitized copies and the kernel density estimate.

Each function checks the arguments against the public schema and builds the
release node (nothing read, nothing charged).
"""

from __future__ import annotations

from typing import Literal

from dpframe.api.handle import SeriesHandle
from dpframe.api.verbs.requests import require_bounds
from dpframe.errors import SchemaError
from dpframe.mechanisms.models.kde import check_bandwidth
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import KernelDensity, SanitizedCopy

__all__ = ["copy_node", "kde_node"]


def copy_node(
    series: SeriesHandle,
    kind: Literal["rr", "laplace"],
    request: PrivacyRequest,
    length_share: object,
) -> SanitizedCopy:
    """A randomized-response or Laplace copy of a column."""
    from dpframe.mechanisms.copies.copy_family import check_length_share  # loaded with its family

    info = series.info
    share = check_length_share(length_share)
    if kind == "rr":
        if info.categories is None or len(info.categories) < 2:
            raise SchemaError(
                f"randomized_response() needs at least two declared categories for "
                f"{info.name!r}: declare categories={{{info.name!r}: [...]}}."
            )
        return SanitizedCopy(
            plan=series.plan,
            privacy=request,
            expr=series.expr,
            name=info.name,
            kind=kind,
            length_share=share,
            categories=tuple(info.categories),
        )
    bounds = require_bounds(info, "laplace_copy")
    if not bounds[1] > bounds[0]:
        raise SchemaError(f"laplace_copy() needs bounds with low < high for {info.name!r}.")
    return SanitizedCopy(
        plan=series.plan,
        privacy=request,
        expr=series.expr,
        name=info.name,
        kind=kind,
        length_share=share,
        bounds=bounds,
    )


def kde_node(
    series: SeriesHandle, bandwidth: float, grid: object, request: PrivacyRequest
) -> KernelDensity:
    """A kernel density estimate on a public grid."""
    from dpframe.mechanisms.models.model_family import kde_grid  # loaded with its family

    h = check_bandwidth(bandwidth)
    bounds = require_bounds(series.info, "kde")
    points = kde_grid(grid, bounds)
    return KernelDensity(
        plan=series.plan,
        privacy=request,
        expr=series.expr,
        bounds=bounds,
        bandwidth=h,
        points=tuple(float(p) for p in points),
    )
