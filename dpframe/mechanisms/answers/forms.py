"""Each released cell as an affine form over independent errors, and its interval at any level.

A released value v is the truth plus an error.  For a count or a sum the
error is one draw Z of known noise (discrete Laplace or Gaussian on a
public grid); for a mean, a variance or a quantile it is a bounded error
whose interval the release's own model computes (:class:`Block`).  A cell
derived from releases by pandas post-processing (a sum of two counts, a
cumulative sum, a consistent table's cell) is ``v = truth + Σ_j a_j e_j``
over the errors e_j of its releases, with public coefficients a_j: an
*affine form*.  Carrying the form, not a value and a variance, keeps
correlated cells exact (``s - s`` has no error; a margin of released cells
sums their noises once each).

:class:`Forms` holds the forms of many cells as a sparse matrix over the
terms of its blocks; :meth:`Forms.intervals` turns each row into an
interval from public facts only: the exact distribution of the combined
additive noise (or a valid Chernoff or union bound:
:func:`~dpframe.mechanisms.calibration.noise_sums.half_width`), plus the bounded errors
by interval arithmetic, the failure probability split evenly between the
parts (a union bound: coverage at least the level asked).

Everything here is post-processing of released values and public noise
parameters: free of privacy cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from dpframe.errors import DPError, InvalidArgumentError
from dpframe.mechanisms.calibration.additive import NoiseSpec
from dpframe.mechanisms.calibration.noise_sums import half_width

if TYPE_CHECKING:
    from scipy import sparse

__all__ = ["Block", "BoxModel", "Forms", "check_level"]

FloatArray = npt.NDArray[np.float64]


class BoxModel(Protocol):
    """A release's model of its cells' truth: ``interval(level)`` per cell (each at ``level``)."""

    def interval(self, level: float) -> tuple[FloatArray, FloatArray]:
        """Lower and upper ends of the truth per cell."""
        ...


def check_level(level: object) -> float:
    """A coverage level strictly between 0 and 1, or an :class:`InvalidArgumentError`."""
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InvalidArgumentError("level must be a number strictly between 0 and 1.")
    return float(level)


@dataclass(frozen=True, eq=False)
class Block:
    """The independent errors of one release's cells (compared by identity).

    Exactly one of ``noise`` and ``model`` is given:

    * ``noise``: ``size`` independent draws of this noise (a count's or a
      sum's cells), symmetric around 0;
    * ``model``: the cells' truth lies in ``model.interval(level)`` (each cell
      at that level), so cell k's error ``released[k] - truth`` lies in
      ``[released[k] - high[k], released[k] - low[k]]``.

    Attributes:
        size: the number of errors (cells of the release).
        noise: the noise of every cell, for additive releases.
        model: the interval model, for other releases.
        released: the released values of the model's cells.
        reason: why the cells have no value interval (``model`` is None and
            ``noise`` is None): e.g. a quantile's accuracy is a rank error.
    """

    size: int
    noise: NoiseSpec | None = None
    model: BoxModel | None = None
    released: FloatArray | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        kinds = sum(x is not None for x in (self.noise, self.model, self.reason))
        if kinds != 1:
            raise ValueError("A block has a noise, a model or a reason, exactly one.")
        if self.model is not None and (self.released is None or len(self.released) != self.size):
            raise ValueError("A model block needs the released value of each cell.")

    def error_bounds(self, level: float) -> tuple[FloatArray, FloatArray]:
        """Per cell, the (low, high) ends of ``released - truth`` at ``level`` (model blocks)."""
        assert self.model is not None
        assert self.released is not None
        low, high = self.model.interval(level)
        with np.errstate(invalid="ignore"):  # an unbounded end (a ratio over 0) stays unbounded
            return self.released - np.asarray(high, float), self.released - np.asarray(low, float)


def _sparse() -> Any:
    from scipy import sparse  # imported where first needed (import dpframe stays light)

    return sparse


class Forms:
    """The affine forms of ``n`` cells over the terms of ``blocks`` (an ``n × Σ size`` matrix).

    Row i holds cell i's coefficients: the cell is ``released_i = truth_i +
    Σ_j matrix[i, j] · e_j``.  A row of zeros is an exact public value.

    Immutable (compared by identity).  A release's own cells
    (:meth:`of_block`: the identity over one block) build their matrix only
    when something asks for it: their intervals, the most common question
    (every release's "too thin" check), need none.
    """

    __slots__ = ("_matrix", "blocks")

    def __init__(self, blocks: tuple[Block, ...], matrix: sparse.csr_array) -> None:
        self.blocks = blocks
        self._matrix: sparse.csr_array | None = matrix

    # -- building ---------------------------------------------------------------

    @staticmethod
    def of_block(block: Block) -> Forms:
        """The forms of a release's own cells: cell k is its own error k."""
        forms = Forms.__new__(Forms)
        forms.blocks = (block,)
        forms._matrix = None  # the identity, built when first asked for (:attr:`matrix`)
        return forms

    @property
    def matrix(self) -> sparse.csr_array:
        """The coefficients, one row per cell and one column per term (CSR)."""
        if self._matrix is None:
            size = self.blocks[0].size
            self._matrix = _sparse().identity(size, format="csr").tocsr()
        return self._matrix

    def _own(self) -> Block | None:
        """The block whose own cells these are (:meth:`of_block`'s identity), else None."""
        return self.blocks[0] if self._matrix is None else None

    def __getstate__(self) -> tuple[tuple[Block, ...], sparse.csr_array]:
        return self.blocks, self.matrix

    def __setstate__(self, state: tuple[tuple[Block, ...], sparse.csr_array]) -> None:
        self.blocks, self._matrix = state

    @staticmethod
    def exact(n: int) -> Forms:
        """``n`` public values with no error."""
        return Forms((), _sparse().csr_array((n, 0)))

    @property
    def cells(self) -> int:
        """The number of cells (rows)."""
        own = self._own()
        return own.size if own is not None else int(self.matrix.shape[0])

    def _offsets(self) -> dict[int, int]:
        offsets, start = {}, 0
        for block in self.blocks:
            offsets[id(block)] = start
            start += block.size
        return offsets

    def over(self, blocks: tuple[Block, ...]) -> sparse.csr_array:
        """This matrix with its columns placed among ``blocks``' (a superset of its own)."""
        sparse = _sparse()
        target: dict[int, int] = {}
        start = 0
        for block in blocks:
            target[id(block)] = start
            start += block.size
        if blocks == self.blocks:
            return self.matrix
        mapping = np.empty(sum(b.size for b in self.blocks), dtype=np.int64)
        at = 0
        for block in self.blocks:
            mapping[at : at + block.size] = target[id(block)] + np.arange(block.size)
            at += block.size
        coo = self.matrix.tocoo()
        return sparse.csr_array((coo.data, (coo.row, mapping[coo.col])), shape=(self.cells, start))

    @staticmethod
    def union(parts: Sequence[Forms]) -> tuple[Block, ...]:
        """Every block of ``parts``, each once, in order of appearance."""
        seen: dict[int, Block] = {}
        for part in parts:
            for block in part.blocks:
                seen.setdefault(id(block), block)
        return tuple(seen.values())

    def take(self, rows: npt.NDArray[np.int64]) -> Forms:
        """The rows ``rows`` (a row −1 is an empty, exact row: a missing value's)."""
        rows = np.asarray(rows, dtype=np.int64)
        missing = rows < 0
        if self.cells == 0 or missing.all():
            return Forms(self.blocks, _sparse().csr_array((len(rows), self.matrix.shape[1])))
        if not missing.any():
            return Forms(self.blocks, self.matrix[rows])
        picked = self.matrix[np.where(missing, 0, rows)].tolil()
        for i in np.nonzero(missing)[0]:
            picked.rows[i] = []
            picked.data[i] = []
        return Forms(self.blocks, _sparse().csr_array(picked))

    @staticmethod
    def concat(parts: Sequence[Forms]) -> Forms:
        """The rows of every part, stacked over their blocks' union."""
        blocks = Forms.union(parts)
        matrices = [part.over(blocks) for part in parts]
        if not matrices:
            return Forms.exact(0)
        return Forms(blocks, _sparse().vstack(matrices, format="csr"))

    @staticmethod
    def combine(first: Forms, a: float, second: Forms, b: float) -> Forms:
        """Row by row, ``a · first + b · second`` (the same number of rows)."""
        blocks = Forms.union([first, second])
        return Forms(blocks, (first.over(blocks) * a + second.over(blocks) * b).tocsr())

    def scaled(self, factor: float) -> Forms:
        """Every row times the public ``factor``."""
        return Forms(self.blocks, (self.matrix * factor).tocsr())

    def mixed(self, weights: sparse.csr_array) -> Forms:
        """Rows that are public linear combinations of these rows (``weights @ matrix``)."""
        return Forms(self.blocks, (weights @ self.matrix).tocsr())

    # -- intervals ----------------------------------------------------------------

    def reasons(self) -> list[str]:
        """Why some cells have no interval (their blocks' reasons), each once."""
        if all(b.reason is None for b in self.blocks):  # the common case: nothing to look up
            return []
        used = self._used_blocks()
        return list(dict.fromkeys(b.reason for b in used if b.reason is not None))

    def _used_blocks(self) -> list[Block]:
        """The blocks some cell's form uses (a term with a stored coefficient)."""
        own = self._own()
        if own is not None:  # the identity: its block, unless it has no cell
            return [own] if own.size else []
        offsets = self._offsets()
        columns = np.unique(self.matrix.tocoo().col)
        used = []
        for b in self.blocks:
            first = int(np.searchsorted(columns, offsets[id(b)]))
            if first < columns.size and columns[first] < offsets[id(b)] + b.size:
                used.append(b)
        return used

    def intervals(self, values: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
        """Per cell, (low, high) containing the truth with probability at least ``level``.

        A cell with a term that has no value interval (a quantile's) raises a
        :class:`DPError` with the reason; a missing value gives NaN ends.
        """
        level = check_level(level)
        values = np.asarray(values, dtype=float)
        reasons = self.reasons()
        if reasons:
            raise DPError(reasons[0])
        own = self._own()
        if own is not None:  # a release's own cells: one term each, coefficient 1
            return _own_intervals(own, values, level)
        matrix = self.matrix.tocsr()
        bounds: dict[tuple[int, float], tuple[FloatArray, FloatArray]] = {}

        def box(block: Block, at: float) -> tuple[FloatArray, FloatArray]:
            key = (id(block), at)
            if key not in bounds:
                bounds[key] = block.error_bounds(at)
            return bounds[key]

        low = np.array(values, dtype=float)
        high = np.array(values, dtype=float)
        done = self._single_terms(matrix, level, box, low, high)
        kinds: list[tuple[Block, int]] = []
        if not done.all():  # cells with several terms: one by one
            for block in self.blocks:
                kinds.extend((block, k) for k in range(block.size))
        for i in np.flatnonzero(~done):
            start, end = matrix.indptr[i], matrix.indptr[i + 1]
            columns, coefs = matrix.indices[start:end], matrix.data[start:end]
            noisy = [(c, kinds[j][0].noise) for j, c in zip(columns, coefs, strict=True)]
            noisy = [(c, n) for c, n in noisy if n is not None and c != 0]
            boxed = [
                (c, kinds[j]) for j, c in zip(columns, coefs, strict=True) if kinds[j][0].model
            ]
            parts = (1 if noisy else 0) + len(boxed)
            if parts == 0:
                continue
            alpha = (1 - level) / parts
            if noisy:
                if len(noisy) == 1:
                    coef, noise = noisy[0]
                    half = abs(coef) * (noise.abs_quantile(1 - alpha) + noise.rounding)
                else:
                    row = np.array([c for c, _ in noisy])
                    half = half_width(row, tuple(n for _, n in noisy), alpha)
                low[i] -= half
                high[i] += half
            for coef, (block, k) in boxed:
                e_low, e_high = box(block, 1 - alpha)
                ends = (coef * e_low[k], coef * e_high[k])
                # truth = released - Σ coef·e: subtract the error's largest and smallest values.
                low[i] -= max(ends)
                high[i] -= min(ends)
        return low, high

    def _single_terms(
        self,
        matrix: Any,
        level: float,
        box: Callable[[Block, float], tuple[FloatArray, FloatArray]],
        low: FloatArray,
        high: FloatArray,
    ) -> npt.NDArray[np.bool_]:
        """The cells with one error term, widened at once, block by block (in place).

        The same interval as the loop of :meth:`intervals` gives such a cell
        (one part: the whole ``1 - level`` on its term), computed for all of a
        block's cells together: a grouped release's cells have one term each.
        Returns which cells are done.
        """
        done = np.zeros(self.cells, dtype=bool)
        at = 1 - (1 - level)  # as the loop computes it: one part takes all of 1 - level
        only = self.blocks[0] if len(self.blocks) == 1 else None
        one_each = matrix.nnz == self.cells and bool(np.all(np.diff(matrix.indptr) == 1))
        if only is not None and only.noise is not None and not only.model and one_each:
            # A release's own cells (or a selection of them): one noise term each.
            noise = only.noise
            half = np.abs(np.asarray(matrix.data, dtype=float))
            half *= noise.abs_quantile(at) + noise.rounding
            low -= half
            high += half
            done[:] = True
            return done
        rows = np.flatnonzero(np.diff(matrix.indptr) == 1)
        if rows.size == 0:
            return done
        terms = matrix.indices[matrix.indptr[rows]]
        coefs = np.asarray(matrix.data[matrix.indptr[rows]], dtype=float)
        sizes = [block.size for block in self.blocks]
        owners = np.repeat(np.arange(len(self.blocks)), sizes)[terms]
        offsets = np.concatenate([np.arange(size) for size in sizes])[terms]
        for b in np.unique(owners):
            block, chosen = self.blocks[int(b)], owners == b
            cells, coef = rows[chosen], coefs[chosen]
            if block.noise is not None and not block.model:
                half = np.abs(coef) * (block.noise.abs_quantile(at) + block.noise.rounding)
                low[cells] -= half
                high[cells] += half
            elif block.model and block.noise is None:
                e_low, e_high = box(block, at)
                ends = (coef * e_low[offsets[chosen]], coef * e_high[offsets[chosen]])
                low[cells] -= np.maximum(*ends)
                high[cells] -= np.minimum(*ends)
            else:
                continue
            done[cells] = True
        return done


def _own_intervals(block: Block, values: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    """:meth:`Forms.intervals` of a block's own cells (the identity), without its matrix.

    The same arithmetic, bit for bit, as :meth:`Forms._single_terms` on the
    identity (a coefficient of 1.0 multiplies exactly): each cell widened by
    its own term at the whole ``level``.
    """
    at = 1 - (1 - level)  # as the loop computes it: one part takes all of 1 - level
    if block.noise is None and not block.model:  # no cell (a reason's block has no interval)
        return np.array(values, dtype=float), np.array(values, dtype=float)
    if block.noise is not None:
        half = block.noise.abs_quantile(at) + block.noise.rounding
        return values - half, values + half
    e_low, e_high = block.error_bounds(at)
    return values - np.maximum(e_low, e_high), values - np.minimum(e_low, e_high)
