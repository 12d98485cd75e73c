"""What a synthetic copy is, and its utility report (free: from the released marginals only).

:class:`SynthInfo` is stored in ``copy.attrs["dpframe_synth"]`` (as
:class:`~dpframe.mechanisms.copies.copy_family.CopyInfo` is for the one-column
copies); :func:`synth_report` turns it into a table with one row per
measured marginal (its noise, the error bars that noise puts on the
marginal, how far the fitted model lies from the measurement, and, for a
measured pair, how far it is from independence) and one row per pair of
columns the model did not measure, whose errors are left out: nothing
released bounds them, and a bound read from the data would cost budget.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import InvalidArgumentError
from dpframe.plan.privacy import Budget

__all__ = ["SynthInfo", "pair_status", "synth_report"]


@dataclass(frozen=True)
class SynthInfo:
    """What a synthetic copy is (stored in ``copy.attrs["dpframe_synth"]``).

    Attributes:
        method: ``MST`` or ``AIM``.
        columns: the columns modelled.
        edges: per column, its bin edges (empty for a keyed column).
        categories: per column, its declared keys (empty for a binned column).
        rows: the copy's length.
        rows_private: True when the length is the noisy row count of the
            marginals (False: ``rows=`` was given).
        total: the row count N̂ the fitted marginals add up to.
        pairs: the marginals measured after the 1-way ones (MST: the pairs of
            the tree, every other pair modelled as independent given the path
            between them; AIM: each round's chosen marginal, in order).
        one_way: per column, the released noisy counts of its cells (its
            missing cell last, when it has one).
        one_way_std: the noise standard deviation of each 1-way cell.
        kept: per column, the cells kept apart in the later measurements (MST:
            the others, each noisily below 3 standard deviations, form one
            cell, and a missing cell below it is dropped; AIM drops only such
            a missing cell).
        two_way: per marginal of ``pairs``, its released noisy counts over the
            cells its columns keep (MST: the kept cells, then the merged cell
            if any), flattened row-major.
        two_way_std: the noise standard deviation of the last of those marginals.
        selection_epsilon: the ε of each selection round.
        mechanism: the noise of the measurements.
        fit: per measurement (1-way then the others), the total variation
            distance between the fitted model's marginal and the noisy
            measurement (clipped at 0 and normalised).
        iterations: mirror-descent steps of the fit.
        cost: the budget charged for the whole copy.
        query: the ledger label.
        marginal_std: per marginal of ``pairs``, its noise standard deviation.
        shapes: per marginal of ``pairs``, the shape of its table.
        kinds: per column, its kind (``integer``, ``float``, ``boolean``,
            ``date``, ``text`` or ``category``).
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
    shapes: tuple[tuple[int, ...], ...] = ()
    kinds: tuple[str, ...] = ()


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


def _noise_tv_bound(cells: int, std: float, total: float, z: float) -> float:
    """An upper error bar on the noise's total variation: its mean plus z standard deviations.

    The sum over cells of |e_c| has mean cells·σ·sqrt(2/π) and variance
    cells·σ²·(1 − 2/π) (Gaussian cells; the normal approximation of a sum).
    """
    spread = math.sqrt(cells * (1 - 2 / math.pi)) * std / (2 * max(total, 1.0))
    return _noise_tv(cells, std, total) + z * spread


def pair_status(info: SynthInfo) -> dict[tuple[str, str], str]:
    """Each pair of columns: ``measured``, ``in a × b × c`` (in a triple) or ``not measured``."""
    found: dict[tuple[str, str], str] = {}
    for names in info.pairs:
        if len(names) == 2:
            found[(names[0], names[1])] = "measured"
    for names in info.pairs:
        if len(names) == 3:
            for a, b in itertools.combinations(names, 2):
                found.setdefault((a, b), f"in {' × '.join(names)}")
    return {
        (a, b): found.get((a, b), "not measured")
        for a, b in itertools.combinations(info.columns, 2)
    }


def _path(info: SynthInfo, a: str, b: str) -> str:
    """MST: the tree path between two columns, as the model links them."""
    adjacent: dict[str, list[str]] = {c: [] for c in info.columns}
    for x, y in info.pairs:
        adjacent[x].append(y)
        adjacent[y].append(x)
    parent = {a: a}
    queue = [a]
    while queue:
        node = queue.pop(0)
        for other in adjacent[node]:
            if other not in parent:
                parent[other] = node
                queue.append(other)
    if b not in parent:
        return "independent"
    path = [b]
    while path[-1] != a:
        path.append(parent[path[-1]])
    return "independent given " + " – ".join(path[::-1][1:-1])


def synth_report(copy: pd.DataFrame | SynthInfo, level: float = 0.95) -> pd.DataFrame:
    """How close a synthetic copy is to the data, marginal by marginal (free).

    Example:
        >>> copy = pf[["region", "parttime", "smsa"]].synthesize(epsilon=1.0)  # doctest: +SKIP
        >>> dp.synth_report(copy)  # doctest: +SKIP

    Read from the released marginals only, never the data.  One row per
    measured marginal (1-way, then the others in the order measured), then one
    row per pair of columns that was not measured as a pair: inside a measured
    triple its error bars follow from the triple's (the sum of its cells'
    noise); otherwise it has none (reading one from the data would need
    budget), only how the model links the two columns.

    Args:
        copy: a DataFrame returned by ``synthesize`` (or its ``attrs["dpframe_synth"]``).
        level: the coverage of the error bars.

    Returns:
        Columns ``marginal`` (the column or columns), ``kind`` (``1-way``,
        ``2-way`` or ``3-way``), ``status`` (``measured``; for a pair not
        measured itself ``in a × b × c`` when a measured triple holds it, else
        ``not measured``), ``model`` (how the model links a pair not
        measured: MST ``independent given`` the tree path between them),
        ``cells``, ``noise_std`` (per cell, rows), ``cell_error`` (the
        half-width that ``level`` of the cells' noise stays within, rows;
        normal approximation), ``tv_noise`` (the expected total variation
        error the noise puts on the marginal), ``tv_error_bar`` (the noise's
        total variation at ``level``: the measured marginal is within it of
        the truth), ``tv_fit`` (total variation between the model's marginal
        and the noisy measurement) and ``dependence`` (for a measured pair:
        total variation between it and the product of its margins).
    """
    info = copy.attrs.get("dpframe_synth") if isinstance(copy, pd.DataFrame) else copy
    if not isinstance(info, SynthInfo):
        raise InvalidArgumentError("synth_report() takes a copy returned by synthesize().")
    if not 0 < float(level) < 1:
        raise InvalidArgumentError("level must be in (0, 1).")
    z = NormalDist().inv_cdf(0.5 + float(level) / 2)
    bound = NormalDist().inv_cdf(float(level))  # one-sided: the TV is an upper error bar
    rows: list[dict[str, Any]] = []

    def measured(name: str, kind: str, cells: int, std: float, fit: float, dep: float) -> None:
        rows.append(
            {
                "marginal": name,
                "kind": kind,
                "status": "measured",
                "model": "",
                "cells": cells,
                "noise_std": std,
                "cell_error": z * std,
                "tv_noise": _noise_tv(cells, std, info.total),
                "tv_error_bar": _noise_tv_bound(cells, std, info.total, bound),
                "tv_fit": fit,
                "dependence": dep,
            }
        )

    for i, name in enumerate(info.columns):
        measured(name, "1-way", len(info.one_way[i]), info.one_way_std, info.fit[i], math.nan)
    d = len(info.columns)
    for k, names in enumerate(info.pairs):
        values = np.asarray(info.two_way[k], dtype=np.float64)
        table = np.clip(values.reshape(_shape(info, k)), 0, None)
        std = info.marginal_std[k] if info.marginal_std else info.two_way_std
        dep = _dependence(table) if len(names) == 2 else math.nan
        measured(" × ".join(names), f"{len(names)}-way", values.size, std, info.fit[d + k], dep)
    for (a, b), status in pair_status(info).items():
        if status == "measured":
            continue
        if status.startswith("in "):  # the sum of a measured triple: its noise, summed
            k = next(k for k, names in enumerate(info.pairs) if {a, b} <= set(names))
            names = info.pairs[k]
            table = np.asarray(info.two_way[k], dtype=np.float64).reshape(_shape(info, k))
            other = next(x for x, n in enumerate(names) if n not in (a, b))
            pair = np.clip(table.sum(axis=other), 0, None)
            std = (info.marginal_std[k] if info.marginal_std else info.two_way_std) * math.sqrt(
                table.shape[other]
            )
            measured(f"{a} × {b}", "2-way", pair.size, std, math.nan, _dependence(pair))
            rows[-1]["status"] = status
            continue
        link = _path(info, a, b) if info.method == "MST" else "the fitted model"
        rows.append({"marginal": f"{a} × {b}", "kind": "2-way", "status": status, "model": link})
    report: pd.DataFrame = pd.DataFrame(rows)
    return report


def _dependence(table: np.ndarray) -> float:
    """TV between a table and the product of its own 1-way margins."""
    product = np.ones(())
    for axis in range(table.ndim):
        others = tuple(a for a in range(table.ndim) if a != axis)
        margin = table.sum(axis=others)
        product = np.multiply.outer(product, margin / max(float(margin.sum()), 1e-300))
    return _tv(table, product)


def _shape(info: SynthInfo, k: int) -> tuple[int, ...]:
    """The table shape of the ``k``-th marginal of ``pairs``."""
    if info.shapes:
        return info.shapes[k]
    names = info.pairs[k]
    return tuple(_compressed_size(info, info.columns.index(n)) for n in names)


def _compressed_size(info: SynthInfo, i: int) -> int:
    """Cells of column ``i`` in the 2-way measurements (kept cells, plus one merged cell)."""
    kept = len(info.kept[i])
    return kept + (1 if kept < len(info.one_way[i]) else 0)
