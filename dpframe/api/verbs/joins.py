"""``merge`` of two private frames of one ID space, as pandas spells it (free).

``visits.merge(people, on="person_id", how="left")`` is a private join: both
frames were loaded with a privacy unit of one ID space
(``dp.PrivacyUnit("person_id", max_rows=5, id_space="persons")``), the keys
include the two ID columns, and the result is a private frame of the same ID
space whose every release counts at most ``max_rows`` rows per person (the
engine keeps a random subset of that many rows per ID after the join; default
the product of the two sides' limits, so nothing is dropped).  The checks and
the privacy argument are in :mod:`dpframe.plan.joins` and
docs/proofs/private_joins.md; nothing is charged here.
"""

from __future__ import annotations

from collections.abc import Sequence

from dpframe.api.handle import FrameHandle
from dpframe.errors import SchemaError
from dpframe.plan.joins import id_join

__all__ = ["private_merge"]


def private_merge(
    left: FrameHandle,
    right: FrameHandle,
    how: str = "inner",
    on: str | Sequence[str] | None = None,
    left_on: str | Sequence[str] | None = None,
    right_on: str | Sequence[str] | None = None,
    suffixes: tuple[str, str] = ("_x", "_y"),
    max_rows: int | None = None,
    rows: str = "kept",
) -> FrameHandle:
    """The private join of two frames of one session and ID space (free; see the module).

    Raises:
        SchemaError: frames of two sessions, or any refusal of
            :func:`dpframe.plan.joins.id_join` (before any charge).
    """
    if left.runner is not right.runner:
        raise SchemaError(
            "merge() of private frames of two sessions is refused: one budget must cover "
            "both. Load both frames in one session."
        )
    if isinstance(max_rows, str):
        raise SchemaError(
            "merge(max_rows=...) takes an integer >= 1 (a bound chosen privately, 'auto', "
            "is not available yet)."
        )
    source, schema = id_join(
        left.plan,
        left.schema,
        right.plan,
        right.schema,
        how=how,
        on=on,
        left_on=left_on,
        right_on=right_on,
        max_rows=max_rows,
        suffixes=suffixes,
        rows=rows,
    )
    return left.derive(plan=source, schema=schema)
