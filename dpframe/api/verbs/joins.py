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

import math
from collections.abc import Sequence
from fractions import Fraction

from dpframe.api.handle import FrameHandle
from dpframe.api.verbs.aggregates import count_node
from dpframe.api.verbs.quantiles import grouped_quantile_node, quantile_node
from dpframe.errors import SchemaError
from dpframe.plan.expressions import Col
from dpframe.plan.joins import (
    PER_ID_ROWS,
    PER_KEY_RANK,
    PER_KEY_SIDE,
    default_max_rows,
    id_join,
    unit_of,
)
from dpframe.plan.nodes import GroupKey
from dpframe.plan.privacy import Number, PrivacyRequest

__all__ = ["AUTO_K_CANDIDATES", "AUTO_K_LEVEL", "AUTO_K_MOST", "AUTO_LEVEL", "private_merge"]

#: The quantile of rows per person that ``max_rows="auto"`` keeps, at least.
AUTO_LEVEL = 0.99
#: About this many people are left above the bound ``max_rows="auto"`` chooses.
AUTO_ABOVE = 5
#: The share of ``bound_epsilon`` that counts the people (the rest: the quantile).
AUTO_COUNT_SHARE = Fraction(1, 10)


def auto_level(people: float) -> Fraction:
    """The level of the quantile: all but :data:`AUTO_ABOVE` of ``people``, at least 0.99."""
    n = max(1, math.floor(people))
    level = Fraction(n - AUTO_ABOVE, n).limit_denominator(10**6)  # rank utilities stay in int64
    return max(Fraction(AUTO_LEVEL).limit_denominator(100), level)


#: The quantile of each side's rows' ranks within their key value that ``k="auto"`` keeps:
#: higher than :data:`AUTO_LEVEL`, because a join's rows concentrate in the largest key
#: values (a key value of c rows on both sides gives c² joined rows).
AUTO_K_LEVEL = 0.999
#: The largest k that ``k="auto"`` may choose (a key value's rows beyond it rank as it):
#: a public cap, so that a choice far above the truth costs at most that much noise.
AUTO_K_MOST = 100
#: The k ``k="auto"`` chooses among: 1 to 10, then steps of about a quarter (public; few
#: candidates, so that the quantile's choice among those far above the truth stays unlikely).
AUTO_K_CANDIDATES = tuple(
    sorted({*range(1, 11), *(min(AUTO_K_MOST, round(10 * 1.25**i)) for i in range(12))})
)
#: The most candidates of the bound's quantile listed one by one (beyond: the integer grid).
_LISTED = 10_000


def private_merge(
    left: FrameHandle,
    right: FrameHandle,
    how: str = "inner",
    on: str | Sequence[str] | None = None,
    left_on: str | Sequence[str] | None = None,
    right_on: str | Sequence[str] | None = None,
    suffixes: tuple[str, str] = ("_x", "_y"),
    max_rows: int | str | None = None,
    rows: str = "kept",
    bound_epsilon: Number | None = None,
    k: int | str | None = None,
    k_left: int | None = None,
    k_right: int | None = None,
) -> FrameHandle:
    """The private join of two frames of one session and ID space (see the module).

    On another key than the ID (``k=``, or ``k_left=`` and ``k_right=``): each
    side keeps at most that many rows per key value (a random subset), and a
    person then changes at most 2·(m_L·k_R + m_R·k_L) joined rows (m: the
    sides' row limits; docs/proofs/private_joins.md, "Joins on another key"):
    every later release counts that many, and the joined frame has no ID (no
    per-ID step, no further private join).  ``k="auto"`` (with
    ``bound_epsilon=``) chooses k_L and k_R privately: the :data:`AUTO_K_LEVEL`
    quantile of each side's rows per key value, released at ``bound_epsilon``
    in one charged release (docs/proofs/private_joins.md, "k chosen
    privately").

    Free, except ``max_rows="auto"``: the bound is then a value about
    :data:`AUTO_ABOVE` people exceed, chosen privately at ``bound_epsilon``
    in two releases on the table of the join's rows per person (before any
    truncation; one row per person): a count of the people n at
    :data:`AUTO_COUNT_SHARE` of it, then the quantile at level
    :func:`auto_level` (n) = max(0.99, 1 − 5/n) with the rest (sensitivity 1
    in rank), rounded up.  A count's error, the rows cut plus noise of
    standard deviation √2·k/ε, is smallest where about √2/ε people are above
    k (the first term falls by the number above k per unit of k, the second
    grows by √2/ε), whatever the number of people; a fixed level (0.99) left
    1% above it, too many for a large table (Amin, Kulesza, Muñoz Medina &
    Vassilvitskii 2019, "Bounding user contributions", study this
    trade-off).  Both releases are charged and recorded like any other
    (refused together, before either, when ``bound_epsilon`` does not fit),
    and the join is built with the released bound.

    Raises:
        SchemaError: frames of two sessions, or any refusal of
            :func:`dpframe.plan.joins.id_join` (before any charge).
    """
    if left.runner is not right.runner and not _same_curator(left, right):
        raise SchemaError(
            "merge() of private frames of two sessions is refused: one budget must cover "
            "both. Load both frames in one session."
        )
    auto_k = isinstance(k, str) and k == "auto"
    if auto_k and (max_rows is not None or rows != "kept"):
        raise SchemaError(
            "A join on another key (k='auto') keeps no ID: max_rows= and rows= are for "
            "joins on the ID; leave them out."
        )
    if auto_k:
        cuts = _auto_k(
            left, right, how, on, left_on, right_on, suffixes, k_left, k_right, bound_epsilon
        )
    else:
        cuts = _key_limits(k, k_left, k_right)
    if cuts != (0, 0):
        if not auto_k and (max_rows is not None or bound_epsilon is not None or rows != "kept"):
            raise SchemaError(
                "A join on another key (k=) keeps no ID: max_rows=, rows= and "
                "bound_epsilon= are for joins on the ID; leave them out."
            )
        return _joined(left, right, how, on, left_on, right_on, suffixes, None, "kept", cuts)
    if max_rows == "auto":
        max_rows = _auto_bound(left, right, how, on, left_on, right_on, suffixes, bound_epsilon)
    elif bound_epsilon is not None:
        raise SchemaError("bound_epsilon= is the cost of max_rows='auto'; give both or neither.")
    if isinstance(max_rows, str):
        raise SchemaError(
            "merge(max_rows=...) takes an integer >= 1, or 'auto' (chosen privately, with "
            "bound_epsilon=)."
        )
    return _joined(left, right, how, on, left_on, right_on, suffixes, max_rows, rows)


def _key_limits(k: int | str | None, k_left: int | None, k_right: int | None) -> tuple[int, int]:
    """The rows per key value each side keeps (0, 0: a join on the ID)."""
    if k is not None and (k_left is not None or k_right is not None):
        raise SchemaError("Give merge() k= (both sides), or k_left= and k_right=, not both.")
    if isinstance(k, str):
        raise SchemaError(
            "merge(k=...) takes an integer >= 1 (the most rows each side keeps per key value) "
            "or 'auto' (chosen privately, with bound_epsilon=)."
        )
    if k is not None:
        k_left = k_right = k
    if (k_left is None) != (k_right is None):
        raise SchemaError(
            "A join on another key bounds both sides: give k_left= and k_right= together "
            "(or one k=)."
        )
    if k_left is None or k_right is None:
        return 0, 0
    for value in (k_left, k_right):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SchemaError(
                "merge(k=...) takes an integer >= 1: the most rows each side keeps per key "
                "value (or k='auto': chosen privately, with bound_epsilon=)."
            )
    return k_left, k_right


def _same_curator(left: FrameHandle, right: FrameHandle) -> bool:
    """Two remote frames of one curator connection (their sessions say so: ``joins_with``).

    The join is sent to the left frame's dataset; the curator resolves both
    datasets from its catalog, checks their ID space and the analyst's grants,
    and charges the left frame's seat.
    """
    joins_with = getattr(left.runner, "joins_with", None)
    return bool(callable(joins_with) and joins_with(right.runner))


def _joined(
    left: FrameHandle,
    right: FrameHandle,
    how: str,
    on: str | Sequence[str] | None,
    left_on: str | Sequence[str] | None,
    right_on: str | Sequence[str] | None,
    suffixes: tuple[str, str],
    max_rows: int | None,
    rows: str,
    cuts: tuple[int, int] = (0, 0),
) -> FrameHandle:
    """The handle of the join of ``left`` and ``right`` (a ``Join`` step in the plan).

    ``cuts``: a join on another key keeps at most ``cuts[0]`` left and
    ``cuts[1]`` right rows per key value (``(0, 0)``: a join on the ID).
    """
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
        k_left=cuts[0],
        k_right=cuts[1],
    )
    return left.derive(plan=source, schema=schema)


def _auto_bound(
    left: FrameHandle,
    right: FrameHandle,
    how: str,
    on: str | Sequence[str] | None,
    left_on: str | Sequence[str] | None,
    right_on: str | Sequence[str] | None,
    suffixes: tuple[str, str],
    bound_epsilon: Number | None,
) -> int:
    """``max_rows="auto"``: the released quantile of rows per person (charged), rounded up."""
    if bound_epsilon is None:
        raise SchemaError(
            "max_rows='auto' chooses the bound with a private quantile of rows per person: "
            "give its cost, e.g. bound_epsilon=0.05 (a small share of the budget)."
        )
    most = default_max_rows(how, unit_of(left.plan), unit_of(right.plan))
    per_id = _joined(left, right, how, on, left_on, right_on, suffixes, most, "per_id")
    candidates = list(range(1, most + 1)) if most <= _LISTED else None
    rows, runner = per_id.column(PER_ID_ROWS), left.runner
    whole = quantile_node(rows, AUTO_LEVEL, PrivacyRequest(epsilon=bound_epsilon), candidates)
    if not runner.explain(whole).allowed:  # the two releases below cost at most this one
        released = runner.run(whole)  # refused by the budget: nothing read, nothing charged
    else:
        share = Fraction(str(bound_epsilon)) * AUTO_COUNT_SHARE
        people = runner.run(count_node(per_id, PrivacyRequest(epsilon=share)))
        rest = PrivacyRequest(epsilon=Fraction(str(bound_epsilon)) - share)
        released = runner.run(quantile_node(rows, auto_level(float(people)), rest, candidates))
    return max(1, min(most, math.ceil(float(released))))


def _auto_k(
    left: FrameHandle,
    right: FrameHandle,
    how: str,
    on: str | Sequence[str] | None,
    left_on: str | Sequence[str] | None,
    right_on: str | Sequence[str] | None,
    suffixes: tuple[str, str],
    k_left: int | None,
    k_right: int | None,
    bound_epsilon: Number | None,
) -> tuple[int, int]:
    """``k="auto"``: each side's released quantile of rows per key value (one charge), rounded up.

    The table read is one row per side row whose key is present, with its
    rank among its key value's rows on that side (``rows="per_key"``): a
    person of m_L left and m_R right rows removes at most m_L + m_R of its
    rows, so the grouped quantile (by side) is calibrated to m_L + m_R rows
    per unit and the two choices together cost ``bound_epsilon``.
    """
    if k_left is not None or k_right is not None:
        raise SchemaError("Give merge() k='auto' alone: it chooses k_left and k_right both.")
    if bound_epsilon is None:
        raise SchemaError(
            "k='auto' chooses the rows kept per key value with a private quantile of each "
            "side's rows per key value: give its cost, e.g. bound_epsilon=0.05 (a small "
            "share of the budget)."
        )
    cap = (AUTO_K_MOST, AUTO_K_MOST)
    ranks = _joined(left, right, how, on, left_on, right_on, suffixes, None, "per_key", cap)
    side = GroupKey(PER_KEY_SIDE, Col(PER_KEY_SIDE), ("left", "right"))
    node = grouped_quantile_node(
        ranks,
        (side,),
        PER_KEY_RANK,
        AUTO_K_LEVEL,
        PrivacyRequest(epsilon=bound_epsilon),
        list(AUTO_K_CANDIDATES),
    )
    released = left.runner.run(node)
    chosen = [max(1, min(AUTO_K_MOST, math.ceil(float(released[s])))) for s in ("left", "right")]
    return chosen[0], chosen[1]
