"""Relations between columns and per-column shares, as pandas spells them.

* ``pf[["a", "b"]].corr(epsilon=...)`` / ``cov`` and ``pf["a"].corr(pf["b"], epsilon=...)``:
  one :class:`~dpframe.plan.releases.Moments` release (noisy moments,
  :mod:`dpframe.mechanisms.moments_family`).
* ``pf.isna()`` / ``pf.notna()`` (free): a frame of missing / present flags;
  ``.sum(epsilon=...)`` on it gives integer counts per column (a noisy count
  of the rows whose flag is true: sensitivity 1 each) and ``.mean(epsilon=...)``
  the shares, both in one charge (:class:`~dpframe.plan.releases.Agg`).
  ``pf["x"].isna().sum(epsilon=...)`` is one such count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from dpframe.errors import SchemaError
from dpframe.plan.elementwise import Where
from dpframe.plan.expressions import Col, Expr, IsNull, Lit, Not
from dpframe.plan.releases import Agg, Moments

if TYPE_CHECKING:
    from dpframe.api.frame import PrivateFrame
    from dpframe.api.series import PrivateSeries
    from dpframe.mechanisms.results import Release
    from dpframe.plan.privacy import Number, Privacy, PrivacyRequest

__all__ = ["corr", "count_true", "cov", "frame_mean", "frame_sum", "isna", "notna"]


def _moments(frame: PrivateFrame, statistic: str, request: PrivacyRequest) -> pd.DataFrame:
    numeric = [c for c in frame._schema.columns if c.summable]
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
    kept = frame.dropna(subset=names)  # listwise: rows where every column is present
    columns = tuple((c.name, cast("Expr", Col(c.name)), cast("Any", c.bounds)) for c in numeric)
    node = Moments(plan=kept._plan, privacy=request, columns=columns, statistic=statistic)
    return cast("pd.DataFrame", frame._session.run(node))


_DOC = """The {what} matrix of the numeric columns (bounded), in one charge.

    As ``pandas.DataFrame.{name}`` (Pearson; rows with a missing value in
    any column are left out: listwise, where pandas drops pairwise).  Select
    columns first: ``pf[["wage", "age"]].{name}(epsilon=1)``.

    Privacy: ε-DP (ρ-zCDP), one charge split equally over 1 + k + k(k+1)/2
    noisy moments of the k clamped columns (count, sums, sums of products;
    sensitivities 1, h_i, h_i·h_j with h_i the half-width of column i's
    bounds); the matrix is post-processing
    (:mod:`dpframe.mechanisms.moments_family`).

    Accuracy: a covariance is off by about 1.4·m·h_i·h_j/(ε·n) for n rows and
    m parts (6 for two columns); a correlation by that over σ_i·σ_j.  Tight
    bounds and many rows matter.  ``ci()`` has no interval here.

    Args:
        epsilon: privacy cost (or ``rho=`` in zCDP sessions).
        delta: must be 0 except in approximate-DP sessions.
        rho: zCDP cost.
        privacy: the cost as one ``dp.Privacy(...)``.

    Example:
        >>> pf[["wage", "age"]].{name}(epsilon=1.0)  # doctest: +SKIP
    """


def corr(
    self: PrivateFrame,
    method: str = "pearson",
    *,
    epsilon: Number | None = None,
    delta: Number | None = None,
    rho: Number | None = None,
    privacy: Privacy | None = None,
) -> pd.DataFrame:
    """The correlation matrix of the bounded numeric columns, in one charge (see ``_DOC``)."""
    from dpframe.api.node_builders import request_of

    if method != "pearson":
        raise SchemaError("corr(): only method='pearson' is available privately.")
    return _moments(self, "corr", request_of(epsilon, delta, rho, privacy))


def cov(
    self: PrivateFrame,
    *,
    epsilon: Number | None = None,
    delta: Number | None = None,
    rho: Number | None = None,
    privacy: Privacy | None = None,
) -> pd.DataFrame:
    """The covariance matrix of the bounded numeric columns, in one charge (see ``_DOC``)."""
    from dpframe.api.node_builders import request_of

    return _moments(self, "cov", request_of(epsilon, delta, rho, privacy))


corr.__doc__ = _DOC.format(what="correlation", name="corr")
cov.__doc__ = _DOC.format(what="covariance", name="cov")


def series_relation(statistic: str) -> Any:
    """``pf["a"].corr(pf["b"], epsilon=...)`` (or ``cov``): one entry of the 2×2 matrix."""

    def relation(
        self: PrivateSeries,
        other: PrivateSeries,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> float:
        from dpframe.api.frame import _to_expr
        from dpframe.api.node_builders import request_of

        if not hasattr(other, "_to_expr"):
            raise SchemaError(f"{statistic}() takes another column of the same frame.")
        frame = self._frame
        pair = frame.assign(_a=self, _b=_to_expr(other, frame)).select(["_a", "_b"])
        matrix = _moments(pair, statistic, request_of(epsilon, delta, rho, privacy))
        return float(matrix.to_numpy(dtype=float)[0, 1])

    relation.__name__ = statistic
    relation.__doc__ = (
        f"The {statistic} of two columns, as ``Series.{statistic}`` (one charge; see "
        f"``PrivateFrame.{statistic}`` for Privacy and Accuracy)."
    )
    return relation


def _flags(self: PrivateFrame, present: bool) -> PrivateFrame:
    columns: dict[str, Any] = {}
    for name in self._schema.names:
        missing = IsNull(Col(name))
        columns[name] = Not(missing) if present else missing
    return self.assign(**columns)


def isna(self: PrivateFrame) -> PrivateFrame:
    """A frame of flags, True where a value is missing, as ``DataFrame.isna`` (free).

    ``pf.isna().sum(epsilon=...)`` counts the missing values per column (integers).
    """
    return _flags(self, present=False)


def notna(self: PrivateFrame) -> PrivateFrame:
    """A frame of flags, True where a value is present, as ``DataFrame.notna`` (free)."""
    return _flags(self, present=True)


def _true_count(expr: Expr) -> Expr:
    """1 where the boolean ``expr`` holds, missing elsewhere: its count is the true count."""
    return Where(Lit(1), expr)


def _frame_cells(self: PrivateFrame, statistic: str) -> tuple[Any, ...]:
    cells: list[Any] = []
    for info in self._schema.columns:
        if statistic == "sum" and info.kind == "boolean":
            cells.append((info.name, _true_count(Col(info.name)), "count", None))
        elif info.summable and info.bounds is not None:
            cells.append((info.name, Col(info.name), statistic, info.bounds))
    if not cells:
        raise SchemaError(f"{statistic}() needs boolean columns or numeric columns with bounds.")
    return tuple(cells)


_FRAME_DOC = """The {name} of every boolean or bounded numeric column, as ``DataFrame.{name}``.

    One charge split equally over the columns (sequential composition).
    {detail}

    Privacy: each column's cell is the {name} release at its share
    (count of true flags: sensitivity 1; a clamped sum: max(|L|, |U|); a mean
    as :meth:`PrivateSeries.mean`).

    Accuracy: k columns give each k times the noise scale of one alone.
    """


def frame_sum(
    self: PrivateFrame,
    *,
    epsilon: Number | None = None,
    delta: Number | None = None,
    rho: Number | None = None,
    privacy: Privacy | None = None,
) -> pd.Series:
    """Per-column sums in one charge (see ``_FRAME_DOC``)."""
    from dpframe.api.node_builders import request_of

    request = request_of(epsilon, delta, rho, privacy)
    node = Agg(plan=self._plan, privacy=request, asked=_frame_cells(self, "sum"), layout="row")
    return cast("pd.Series", self._session.run(node))


def frame_mean(
    self: PrivateFrame,
    *,
    epsilon: Number | None = None,
    delta: Number | None = None,
    rho: Number | None = None,
    privacy: Privacy | None = None,
) -> pd.Series:
    """Per-column means in one charge (see ``_FRAME_DOC``)."""
    from dpframe.api.node_builders import request_of

    request = request_of(epsilon, delta, rho, privacy)
    node = Agg(plan=self._plan, privacy=request, asked=_frame_cells(self, "mean"), layout="row")
    return cast("pd.Series", self._session.run(node))


frame_sum.__doc__ = _FRAME_DOC.format(
    name="sum", detail="A boolean column (``pf.isna()``) is summed as a count: whole numbers."
)
frame_mean.__doc__ = _FRAME_DOC.format(
    name="mean", detail="A boolean column gives the share of true flags (``pf.notna().mean``)."
)


def count_true(self: PrivateSeries, request: PrivacyRequest) -> Release:
    """The number of rows where a boolean column is true (``s.isna().sum(...)``): a count."""
    from dpframe.plan.nodes import Aggregate, describe_plan

    frame = self._frame
    label = f"sum({self._expr}){describe_plan(frame._plan)}"
    node = Aggregate(frame._plan, "count", _true_count(self._expr), None, (), label, request)
    return cast("Release", frame._session.run(node))
