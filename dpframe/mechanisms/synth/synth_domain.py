"""MST's domain compression: rare cells merged, a dropped missing cell, and the way back.

Post-processing of the released noisy 1-way marginals (no data read): each
column's cells with a noisy count of at least :data:`~dpframe.mechanisms.synth.synth_rows.SUPPORT`
standard deviations stay apart, the others are merged into one cell
(MST's ``compress_domain``), and a missing cell below that count is dropped
(:func:`~dpframe.mechanisms.synth.synth_rows.live_cells`).  The 2-way tables are
measured on the compressed cells; a sampled merged cell becomes one of its
cells in proportion to their noisy counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dpframe.mechanisms.synth.synth_rows import SUPPORT

__all__ = ["Compressed", "squash"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Compressed:
    """One column's compressed domain.

    Attributes:
        mapping: per original cell, its compressed cell (−1: dropped).
        kept: how many cells stay apart (compressed cells ``0 .. kept-1``).
        size: the compressed cells (``kept``, plus one when some cells are merged).
        weights: per original cell, its share of its compressed cell (from
            the noisy counts; uniform among merged cells with none above 0).
    """

    mapping: IntArray
    kept: int
    size: int
    weights: FloatArray

    @classmethod
    def of(cls, noisy: FloatArray, std: float, live: int) -> Compressed:
        """Cells ``0 .. live-1`` compressed by their noisy counts; the cells after them dropped."""
        n = len(noisy)
        inside = np.arange(n) < live
        keep = inside & (noisy >= SUPPORT * std)
        kept = int(keep.sum())
        merged = inside & ~keep
        mapping = np.full(n, -1, dtype=np.int64)
        mapping[keep] = np.arange(kept)
        mapping[merged] = kept
        weights = np.where(keep, 1.0, 0.0)
        if merged.any():
            share = np.clip(noisy[merged], 0.0, None)
            total = float(share.sum())
            weights[merged] = share / total if total > 0 else 1.0 / int(merged.sum())
        return cls(mapping, kept, kept + int(merged.any()), weights)

    def one_way(self, noisy: FloatArray, variance: float) -> tuple[FloatArray, FloatArray]:
        """The noisy counts and per-cell noise variances summed into the compressed cells."""
        inside = self.mapping >= 0
        cells = self.mapping[inside]
        values = np.bincount(cells, weights=noisy[inside], minlength=self.size)
        counts = np.bincount(cells, minlength=self.size).astype(np.float64)
        return values.astype(np.float64), counts * variance

    def expand(self, cells: IntArray, gen: np.random.Generator) -> IntArray:  # not privacy noise
        """Original cells from compressed ones: a merged cell becomes one of its cells."""
        out = np.zeros(len(cells), dtype=np.int64)
        apart = np.flatnonzero((self.mapping >= 0) & (self.mapping < self.kept))
        is_apart = cells < self.kept
        out[is_apart] = apart[cells[is_apart]]
        merged = np.flatnonzero(self.mapping == self.kept)
        rare = ~is_apart
        if len(merged) and rare.any():
            share = self.weights[merged]
            out[rare] = merged[gen.choice(len(merged), size=int(rare.sum()), p=share / share.sum())]
        return out


def squash(table: FloatArray, rows: Compressed, cols: Compressed) -> FloatArray:
    """A 2-way table summed into the compressed cells of its two columns (dropped ones left out)."""
    r, c = rows.mapping >= 0, cols.mapping >= 0
    out = np.zeros((rows.size, cols.size))
    inner = table[np.ix_(r, c)]
    np.add.at(out, (rows.mapping[r][:, None], cols.mapping[c][None, :]), inner)
    return out
