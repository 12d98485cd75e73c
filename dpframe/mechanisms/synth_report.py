"""What a synthetic copy is, and its utility report (free: from the released marginals only).

:class:`SynthInfo` is stored in ``copy.attrs["dpframe_synth"]`` (as
:class:`~dpframe.mechanisms.copy_family.CopyInfo` is for the one-column
copies); :func:`synth_report` turns it into a table with one row per
measured marginal: its noise, the error bars that noise puts on the
marginal, how far the fitted model lies from the measurement, and, for the
pairs the model kept, how far the measured pair is from independence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import InvalidArgumentError
from dpframe.plan.privacy import Budget

__all__ = ["SynthInfo", "synth_report"]


@dataclass(frozen=True)
class SynthInfo:
    """What a synthetic copy is (stored in ``copy.attrs["dpframe_synth"]``).

    Attributes:
        method: ``MST`` or ``AIM``.
        columns: the columns modelled.
        edges: per column, its bin edges (empty for a categorical column).
        categories: per column, its declared categories (empty for a binned column).
        rows: the copy's length.
        rows_private: True when the length is the noisy row count of the
            marginals (False: ``rows=`` was given).
        total: the row count N̂ the fitted marginals add up to.
        pairs: the marginals measured after the 1-way ones (MST: the pairs of
            the tree, every other pair modelled as independent given the path
            between them; AIM: each round's chosen marginal, in order).
        one_way: per column, the released noisy counts of its cells.
        one_way_std: the noise standard deviation of each 1-way cell.
        kept: per column, the cells kept apart in the 2-way measurements (the
            others, each noisily below 3 standard deviations, form one cell).
        two_way: per marginal of ``pairs``, its released noisy counts over the
            kept cells (each column's kept cells and then its merged cell, if
            any; AIM keeps every cell), flattened row-major.
        two_way_std: the noise standard deviation of each cell of those
            marginals (AIM: of the last stage's).
        selection_epsilon: the ε of each selection round.
        mechanism: the noise of the measurements.
        fit: per measurement (1-way then 2-way), the total variation distance
            between the fitted model's marginal and the noisy measurement
            (clipped at 0 and normalised).
        iterations: mirror-descent steps of the fit.
        cost: the budget charged for the whole copy.
        query: the ledger label.
        marginal_std: per marginal of ``pairs``, its noise standard deviation
            when they differ (AIM: by stage; empty: ``two_way_std`` for all).
    """

    method: str
    columns: tuple[str, ...]
    edges: tuple[tuple[float, ...], ...]
    categories: tuple[tuple[Any, ...], ...]
    rows: int
    rows_private: bool
    total: float
    pairs: tuple[tuple[str, ...], ...]
    one_way: tuple[tuple[float, ...], ...]
    one_way_std: float
    kept: tuple[tuple[int, ...], ...]
    two_way: tuple[tuple[float, ...], ...]
    two_way_std: float
    selection_epsilon: float
    mechanism: str
    fit: tuple[float, ...]
    iterations: int
    cost: Budget
    query: str = ""
    marginal_std: tuple[float, ...] = ()


def _tv(a: np.ndarray, b: np.ndarray) -> float:
    """Total variation distance between two nonnegative tables, each normalised."""
    a = np.clip(np.asarray(a, dtype=np.float64), 0, None)
    b = np.clip(np.asarray(b, dtype=np.float64), 0, None)
    if a.sum() <= 0 or b.sum() <= 0:
        return 1.0
    return float(0.5 * np.abs(a / a.sum() - b / b.sum()).sum())


def _noise_tv(cells: int, std: float, total: float) -> float:
    """The expected total variation error that per-cell noise puts on a marginal.

    Each cell's error has mean absolute value about σ·sqrt(2/π) (exact for a
    Gaussian, within 15% for a discrete Laplace); the TV is half the sum over
    cells, divided by the row count.
    """
    return cells * std * math.sqrt(2 / math.pi) / (2 * max(total, 1.0))


def synth_report(copy: pd.DataFrame | SynthInfo, level: float = 0.95) -> pd.DataFrame:
    """The utility report of a synthetic copy: one row per measured marginal (free).

    Computed from the released noisy marginals alone (no privacy cost).

    Args:
        copy: a DataFrame returned by ``synthesize`` (or its ``attrs["dpframe_synth"]``).
        level: the coverage of the per-cell error bars.

    Returns:
        Columns ``marginal`` (the column or pair), ``kind`` (``1-way``, ``2-way`` or
        ``3-way``), ``cells``, ``noise_std`` (per cell, rows), ``cell_error``
        (the half-width that ``level`` of the cells' noise stays within, rows,
        normal approximation), ``tv_noise`` (the expected total variation
        error the noise puts on the marginal), ``tv_fit`` (total variation
        between the model's marginal and the noisy measurement) and
        ``dependence`` (for a kept pair: total variation between the measured
        pair and the product of its margins; how much the pair adds over
        independence).
    """
    info = copy.attrs.get("dpframe_synth") if isinstance(copy, pd.DataFrame) else copy
    if not isinstance(info, SynthInfo):
        raise InvalidArgumentError("synth_report() takes a copy returned by synthesize().")
    if not 0 < float(level) < 1:
        raise InvalidArgumentError("level must be in (0, 1).")
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + float(level) / 2)
    rows: list[dict[str, Any]] = []
    for i, name in enumerate(info.columns):
        cells = len(info.one_way[i])
        rows.append(
            {
                "marginal": name,
                "kind": "1-way",
                "cells": cells,
                "noise_std": info.one_way_std,
                "cell_error": z * info.one_way_std,
                "tv_noise": _noise_tv(cells, info.one_way_std, info.total),
                "tv_fit": info.fit[i],
                "dependence": math.nan,
            }
        )
    d = len(info.columns)
    for k, names in enumerate(info.pairs):
        values = np.asarray(info.two_way[k], dtype=np.float64)
        shape = tuple(_compressed_size(info, info.columns.index(n)) for n in names)
        table = np.clip(values.reshape(shape), 0, None)
        std = info.marginal_std[k] if info.marginal_std else info.two_way_std
        product = np.ones(())
        for axis in range(len(shape)):  # the product of the table's own 1-way margins
            others = tuple(a for a in range(len(shape)) if a != axis)
            margin = table.sum(axis=others)
            product = np.multiply.outer(product, margin / max(float(margin.sum()), 1e-300))
        rows.append(
            {
                "marginal": " × ".join(names),
                "kind": f"{len(names)}-way",
                "cells": int(values.size),
                "noise_std": std,
                "cell_error": z * std,
                "tv_noise": _noise_tv(int(values.size), std, info.total),
                "tv_fit": info.fit[d + k],
                "dependence": _tv(table, product),
            }
        )
    report: pd.DataFrame = pd.DataFrame(rows)
    return report


def _compressed_size(info: SynthInfo, i: int) -> int:
    """Cells of column ``i`` in the 2-way measurements (kept cells, plus one merged cell)."""
    kept = len(info.kept[i])
    return kept + (1 if kept < len(info.one_way[i]) else 0)
