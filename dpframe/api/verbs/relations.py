"""Relations between columns and per-column shares, as pandas spells them.

* ``pf[["a", "b"]].corr(epsilon=...)`` / ``cov`` and ``pf["a"].corr(pf["b"], epsilon=...)``:
  one :class:`~dpframe.plan.releases.Moments` release (noisy moments,
  :mod:`dpframe.mechanisms.moments.moments_family`).
* ``pf.isna()`` / ``pf.notna()`` (free): a frame of missing / present flags;
  ``.sum(epsilon=...)`` on it gives integer counts per column (a noisy count
  of the rows whose flag is true: sensitivity 1 each) and ``.mean(epsilon=...)``
  the shares, both in one charge (:class:`~dpframe.plan.releases.Agg`).
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd

from dpframe.api.handle import FrameHandle, SeriesHandle
from dpframe.api.verbs.aggregates import true_count
from dpframe.api.verbs.columns import is_column, to_expr
from dpframe.api.verbs.frames import assign, select
from dpframe.api.verbs.transforms import dropna
from dpframe.errors import SchemaError
from dpframe.plan.expressions import Col, Expr, IsNull, Not
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import Agg, Moments

__all__ = [
    "CORR_DOC",
    "FRAME_DOC",
    "flags",
    "frame_cells_node",
    "moments_node",
    "pair_moments_node",
    "pair_value",
]


def moments_node(frame: FrameHandle, statistic: str, request: PrivacyRequest) -> Moments:
    """The ``corr`` or ``cov`` matrix of the frame's numeric columns (all need bounds)."""
    numeric = [c for c in frame.schema.columns if c.summable]
    unbounded = [c.name for c in numeric if c.bounds is None]
    if unbounded:
        raise SchemaError(
            f"{statistic}() needs public bounds for every numeric column; {unbounded!r} have "
            "none: declare bounds= when loading, pf.with_bounds(...), or select the columns: "
            f"pf[['a', 'b']].{statistic}(epsilon=...)."
        )
    if len(numeric) < 2:
        raise SchemaError(f"{statistic}() needs at least two numeric columns with bounds.")
    names = [c.name for c in numeric]
    kept = dropna(frame, names)  # listwise: rows where every column is present
    columns = tuple((c.name, cast("Expr", Col(c.name)), cast("Any", c.bounds)) for c in numeric)
    return Moments(plan=kept.plan, privacy=request, columns=columns, statistic=statistic)


def pair_moments_node(
    series: SeriesHandle, other: object, statistic: str, request: PrivacyRequest
) -> Moments:
    """``pf["a"].corr(pf["b"])`` (or ``cov``): the 2×2 matrix of two columns of one frame."""
    if not is_column(other):
        raise SchemaError(f"{statistic}() takes another column of the same frame.")
    frame = series.frame
    second = to_expr(other, frame)
    a, b = series.expr, second
    if isinstance(a, Col) and isinstance(b, Col) and a.name != b.name:
        pair = select(frame, [a.name, b.name])  # two columns: named as the user named them
    else:
        pair = select(assign(frame, {"_a": series, "_b": second}), ["_a", "_b"])
    return moments_node(pair, statistic, request)


def pair_value(matrix: pd.DataFrame) -> Any:
    """The off-diagonal entry of a released 2×2 matrix, with its interval (post-processing).

    A ``dp`` cell (:class:`~dpframe.mechanisms.answers.DPValue`): it prints as
    ``value ± half-width`` and ``dp.ci`` gives its interval.
    """
    return matrix.iloc[0, 1]


def flags(frame: FrameHandle, present: bool) -> FrameHandle:
    """A frame of missing (or present) flags, one per column (free)."""
    columns: dict[str, Any] = {}
    for name in frame.schema.names:
        missing = IsNull(Col(name))
        columns[name] = Not(missing) if present else missing
    return assign(frame, columns)


def frame_cells_node(frame: FrameHandle, statistic: str, request: PrivacyRequest) -> Agg:
    """Per-column sums (flags counted) or means of every boolean or bounded numeric column."""
    cells: list[Any] = []
    for info in frame.schema.columns:
        if statistic == "sum" and info.kind == "boolean":
            cells.append((info.name, true_count(Col(info.name)), "count", None))
        elif info.summable and info.bounds is not None:
            cells.append((info.name, Col(info.name), statistic, info.bounds))
    if not cells:
        raise SchemaError(f"{statistic}() needs boolean columns or numeric columns with bounds.")
    return Agg(plan=frame.plan, privacy=request, asked=tuple(cells), layout="row")


#: The docstring of ``corr`` and ``cov`` (formatted with ``what`` and ``name``).
CORR_DOC = """How the numeric columns move together: their {what} matrix, with noise.

    Example:
        >>> pf[["wage", "education"]].{name}(epsilon=1.0)  # doctest: +SKIP

    As ``pandas.DataFrame.{name}`` (Pearson; rows with a missing value in
    any column are left out: listwise, where pandas drops pairwise).  Every
    column needs declared bounds; select columns first:
    ``pf[["wage", "education"]].{name}(epsilon=1)``.

    Args:
        epsilon: privacy cost (or ``rho=`` in zCDP sessions).
        delta: must be 0 except in approximate-DP sessions.
        rho: zCDP cost.
        privacy: the cost as one ``dp.Privacy(...)``.
        fresh: True asks for a new, charged release; False (the default)
            answers a request the ledger already answered from it, free.

    Privacy: ε-DP (ρ-zCDP), one charge split equally over m = 1 + k + k(k+1)/2
    noisy moments of the k clamped columns (count, sums, sums of products;
    sensitivities 1, h_i, h_i·h_j with h_i the half-width of column i's
    bounds); the matrix is post-processing
    (:mod:`dpframe.mechanisms.moments.moments_family`).

    Accuracy: a covariance is off by about 1.4·m·h_i·h_j/(ε·n) for n rows and
    m parts (6 for two columns); a correlation by that over σ_i·σ_j.  Tight
    bounds and many rows matter.  ``dp.ci(result)`` (the ``±`` shown) gives
    each entry a conservative interval (Bonferroni over the m parts, then
    interval arithmetic); a correlation whose interval spans more than half
    of [−1, 1] warns, with the ε at which it would not.
    """

#: The docstring of the frame's ``sum`` and ``mean`` (formatted with ``name`` and ``detail``).
FRAME_DOC = """The {name} of every boolean or bounded numeric column, as ``DataFrame.{name}``.

    Example:
        >>> pf[["wage", "education"]].{name}(epsilon=0.2)  # doctest: +SKIP

    One charge split equally over the columns (sequential composition).
    {detail}

    Privacy: each column's cell is the {name} release at its share
    (count of true flags: sensitivity 1; a clamped sum: max(|L|, |U|); a mean
    as :meth:`PrivateSeries.mean`).

    Accuracy: k columns give each k times the noise scale of one alone.
    """
