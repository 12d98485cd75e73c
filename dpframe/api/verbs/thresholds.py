"""Releases above a threshold: the sparse vector technique and private key discovery."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dpframe.api.handle import FrameHandle
from dpframe.api.verbs.columns import to_expr
from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import DiscoverKeys, SparseVector
from dpframe.plan.schema import infer_column

__all__ = ["discover_keys_node", "sparse_vector_node"]


def discover_keys_node(frame: FrameHandle, column: str, request: PrivacyRequest) -> DiscoverKeys:
    """The keys of one column that a private threshold lets through."""
    frame.schema.get(column)
    return DiscoverKeys(plan=frame.plan, privacy=request, column=column)


def sparse_vector_node(
    frame: FrameHandle,
    queries: object,
    threshold: float,
    max_hits: int,
    numeric: bool,
    request: PrivacyRequest,
) -> SparseVector:
    """Named row conditions for the sparse vector technique."""
    if isinstance(queries, Mapping):
        items = [(str(name), cond) for name, cond in queries.items()]
    elif isinstance(queries, Sequence) and not isinstance(queries, (str, bytes)):
        items = [(str(to_expr(cond, frame)), cond) for cond in queries]
    else:
        raise SchemaError(
            "above_threshold() needs a dict {name: condition} or a list of conditions."
        )
    if not items:
        raise SchemaError("above_threshold() needs at least one query.")
    named: list[tuple[str, Expr]] = []
    for name, cond in items:
        expr = to_expr(cond, frame)
        if infer_column(name, expr, frame.schema).kind != "boolean":
            raise SchemaError(f"Query {name!r} is not a row condition (comparison, isin, &, |, ~).")
        named.append((name, expr))
    return SparseVector(
        plan=frame.plan,
        privacy=request,
        conditions=tuple(named),
        threshold=threshold,
        max_hits=max_hits,
        numeric=numeric,
    )
