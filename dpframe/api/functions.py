"""The facade's module-level functions, as pandas spells them: ``cut``, ``qcut``, ``crosstab``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from dpframe.api.fresh import fresh_aware
from dpframe.api.handle import handle_of
from dpframe.api.series import PrivateSeries, series_of
from dpframe.api.verbs import binning, tables
from dpframe.api.verbs.requests import request_of

__all__ = ["crosstab", "cut", "qcut"]


def _wrapped(found: Any, retbins: bool) -> Any:
    return (series_of(found[0]), found[1]) if retbins else series_of(found)


def cut(
    x: PrivateSeries,
    bins: int | Sequence[float],
    right: bool = True,
    labels: Sequence[Any] | bool | None = None,
    retbins: bool = False,
    precision: int = 3,
    include_lowest: bool = False,
    duplicates: str = "raise",
    ordered: bool = True,
) -> Any:
    """Bin a numeric column into public bins, as :func:`pandas.cut` (free: nothing is charged).

    Example:
        >>> dp.cut(pf["wage"], [0, 500, 1000, 5000]).value_counts(epsilon=0.1)  # doctest: +SKIP

    Privacy: none spent; the bins are public, never derived from the data.
    """
    found = binning.cut(
        handle_of(x), bins, right, labels, retbins, precision, include_lowest, duplicates, ordered
    )
    return _wrapped(found, retbins)


def qcut(
    x: PrivateSeries,
    q: int | Sequence[float],
    labels: Sequence[Any] | bool | None = None,
    retbins: bool = False,
    precision: int = 3,
    duplicates: str = "drop",
    *,
    epsilon: Any = None,
    delta: Any = None,
    rho: Any = None,
    privacy: Any = None,
) -> Any:
    """Bin a column into groups of about equal size, as :func:`pandas.qcut` (charged once).

    Example:
        >>> quartiles = dp.qcut(pf["wage"], 4, epsilon=0.2)  # doctest: +SKIP

    Privacy: the cost of one ``quantile(levels, epsilon=...)`` release over the
    interior levels; the cut itself is free.

    Accuracy: each edge as :meth:`PrivateSeries.quantile` at its share of ε.
    """
    found = binning.qcut(
        handle_of(x),
        q,
        labels,
        retbins,
        precision,
        duplicates,
        epsilon=epsilon,
        delta=delta,
        rho=rho,
        privacy=privacy,
    )
    return _wrapped(found, retbins)


@fresh_aware
def crosstab(
    index: PrivateSeries,
    columns: PrivateSeries,
    *,
    normalize: bool | str = False,
    margins: bool = False,
    margins_name: str = "All",
    epsilon: Any = None,
    delta: Any = None,
    rho: Any = None,
    privacy: Any = None,
) -> pd.DataFrame:
    """Counts of rows per pair of keys, as ``pandas.crosstab``, with noise.

    Example:
        >>> dp.crosstab(pf["region"], pf["parttime"], margins=True, epsilon=0.2)  # doctest: +SKIP

    ``margins=True`` adds row and column totals (sums of the released cells:
    free); ``normalize`` (True or "all", "index", "columns") gives shares
    (free).  Both columns need public keys (declared categories, or a cut).

    Privacy: one grouped count over the key pairs: sensitivity 1 per cell,
    cells disjoint; discrete Laplace (ε) or Gaussian (ρ).

    Accuracy: each cell's noise scale is 1/ε (Laplace); a margin over m
    cells sums m noises; ``dp.ci(table)`` gives every interval.
    """
    return tables.crosstab(
        handle_of(index),
        handle_of(columns),
        request_of(epsilon, delta, rho, privacy),
        normalize=normalize,
        margins=margins,
        margins_name=margins_name,
    )


cut.__doc__ = binning.cut.__doc__
qcut.__doc__ = binning.qcut.__doc__
