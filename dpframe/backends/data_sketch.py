"""Keyed identity and similarity sketches of private data, in one chunked pass.

What a file ledger keeps about the data a session loads, for the budget guard
rails (:mod:`dpframe.engine.guard_rails`), computed here from the rows:

* **The identity** (:attr:`FrameSketch.identity`): an exact test of "the same
  data" (column names, dtypes and every value in row order), keyed.  It is the
  BLAKE2b of the backend's unkeyed fingerprint (:attr:`FrameSketch.fingerprint`,
  never recorded) under the user's key (:meth:`SketchKey.identity`).  The
  ledger names each release's data by it; an exact re-run cache can use it.
* **The row sketch**: each row is hashed, order-free across its cells, to one
  64-bit value; the sketch keeps the ``k`` = 256 smallest of them *as a
  multiset* (a row present twice keeps two entries), so it compares two data
  sets by similarity: :func:`shared` estimates the share of rows two data sets
  have in common, of the larger (1.0 for a shuffled copy, 0.99 for a 99%
  sample, (n - 1)/n or 1.0 for one row dropped or appended, 0 for unrelated
  rows).  Bottom-k sketches (Broder 1997; Cohen and Kaplan 2007).
* **Column digests** (exact multisets of one column's values) and **column
  sketches** (the same bottom-k, of one column's values, kept only for columns
  whose sketch is mostly distinct values: keys and measurements, not
  categories) recognize a copy made of some of the columns.

What a row hash normalizes (so a copy is recognized): the column names and
order (a row's cell hashes are added, so renamed or reordered columns give the
same row), the row order and the index, and the storage of each value
(:mod:`dpframe.backends.cell_hashes`): numbers and booleans by value (``3``,
``3.0``, ``True`` = 1 and ``np.int8(3)`` agree; ``-0.0`` is ``0.0``; every
missing number is one NaN), dates as UTC nanoseconds (time zone and unit
dropped), durations as nanoseconds, and everything else as text (``object``,
``str``, ``string`` and categorical storage agree, and every missing text is
one marker).  A categorical column is hashed once per category and gathered by
its codes.  Values are *not* rounded: a value changed in any digit is another
row.  Two columns of the same kind that swap values in every row give the same
row hashes.

Nothing recorded depends on the row count without the key: every tag, digest
and identity is a keyed BLAKE2b output (:class:`SketchKey`), and a sketch of
fewer than ``k`` rows is padded to ``k`` tags with keyed dummies.  Unkeyed, a
digest of a yes/no column is a function of n and of the count of yes only,
and both can be found by trying every pair (``tests/test_ledger_privacy.py``,
``benchmarks/ledger_file_attack.py``); with the key they still can, so the key
is kept outside the ledger's folder.

Cost, one pass in blocks of :data:`BLOCK_ROWS` rows (no whole column is ever
normalized at once): the per-column hashes of pandas' row hash (shared with
the fingerprint), one sum per column, one addition per cell for the row hash,
and a minimum per block and sketch; about the cost of the fingerprint alone
(``benchmarks/load_probe.py``).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import pandas as pd

from dpframe.backends.cell_hashes import KIND_OFFSETS, ColumnHasher
from dpframe.errors import InvalidArgumentError

__all__ = [
    "BLOCK_ROWS",
    "SKETCH_SIZE",
    "Bottom",
    "ColumnSketch",
    "FrameSketch",
    "PartialSketch",
    "SketchKey",
    "Sketchable",
    "finish_sketch",
    "merge_partials",
    "partial_sketch",
    "shared",
    "sketch_frame",
]

#: Entries (tags) per sketch.
SKETCH_SIZE = 256
#: Rows hashed at a time.
BLOCK_ROWS = 1 << 16
#: From this many rows the fingerprint's BLAKE2b runs on a thread beside the hashing.
BACKGROUND_ROWS = 4 * BLOCK_ROWS
#: A column sketch is kept when at least this share of its entries are distinct values.
DISTINCT_SHARE = 0.5

_U64 = npt.NDArray[np.uint64]
_U8MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
#: The mixing multiplier of a row hash (odd, so multiplying is a bijection).
_ROW_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
#: combine_hash_arrays of pandas (tupleobject.c's), for the fingerprint's row hashes.
_TUPLE_SEED, _TUPLE_MULT, _TUPLE_END = np.uint64(0x345678), 1000003, np.uint64(97531)


def _subkey(secret: bytes, name: str, size: int = 32) -> bytes:
    return hashlib.blake2b(
        name.encode(), key=secret, person=b"dpframe-key-v1", digest_size=size
    ).digest()


def _word(secret: bytes, name: str) -> np.uint64:
    word: np.uint64 = np.uint64(int.from_bytes(_subkey(secret, name, 8), "little"))
    return word


@dataclass(frozen=True)
class SketchKey:
    """Keys derived from the user's secret (see :mod:`dpframe.accounting.ledger_key`).

    Args:
        secret: the 32-byte key.

    Example::

        key = SketchKey(secrets.token_bytes(32))
        key.identity(fingerprint)  # 40 hex digits
    """

    secret: bytes = field(repr=False)
    _identity: bytes = field(init=False, repr=False)
    _tags: bytes = field(init=False, repr=False)
    _digests: bytes = field(init=False, repr=False)
    row_salt: np.uint64 = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.secret) != 32:
            raise InvalidArgumentError(
                f"A sketch key is 32 bytes, not {len(self.secret)}: pass the key file's secret."
            )
        for name in ("identity", "tags", "digests"):
            object.__setattr__(self, f"_{name}", _subkey(self.secret, name))
        object.__setattr__(self, "row_salt", _word(self.secret, "row"))

    def identity(self, fingerprint: str) -> str:
        """The keyed identity of data whose unkeyed fingerprint is ``fingerprint`` (40 hex)."""
        return hashlib.blake2b(fingerprint.encode(), key=self._identity, digest_size=20).hexdigest()

    def digest(self, kind: str, total: int) -> str:
        """A column digest: its kind and the sum of its cell hashes, keyed (32 hex digits)."""
        data = kind.encode() + b"\x00" + total.to_bytes(8, "little")
        return hashlib.blake2b(data, key=self._digests, digest_size=16).hexdigest()

    def tags(self, bottom: Bottom, domain: str, pad: str) -> tuple[int, ...]:
        """The :data:`SKETCH_SIZE` tags of ``bottom``: its entries keyed, then keyed dummies.

        An entry's tag covers its value and its occurrence (the second copy of a
        row is another tag).  Dummies (derived from ``pad``, the data's identity)
        fill a sketch of fewer rows, so the number of tags says nothing.

        Args:
            bottom: the smallest hashes.
            domain: ``"rows"``, or ``"column:"`` and the column's kind (tags of
                different domains never meet).
            pad: what the dummies are derived from.
        """
        values = bottom.values
        first = np.searchsorted(values, values, side="left")
        out: list[int] = []
        prefix = domain.encode() + b"\x00"
        for position, (value, start) in enumerate(
            zip(values.tolist(), first.tolist(), strict=True)
        ):
            data = (
                prefix + int(value).to_bytes(8, "little") + (position - start).to_bytes(4, "little")
            )
            out.append(_signed(hashlib.blake2b(data, key=self._tags, digest_size=8).digest()))
        for i in range(len(out), bottom.size):
            data = b"pad\x00" + prefix + pad.encode() + i.to_bytes(4, "little")
            out.append(_signed(hashlib.blake2b(data, key=self._tags, digest_size=8).digest()))
        return tuple(out)


def _signed(digest: bytes) -> int:
    """Eight bytes as a signed 64-bit integer (SQLite's INTEGER)."""
    return int.from_bytes(digest, "little", signed=True)


class Bottom:
    """The ``size`` smallest values seen, with repetition, sorted (a bottom-k sketch).

    Args:
        size: k.
    """

    __slots__ = ("size", "values")

    def __init__(self, size: int = SKETCH_SIZE) -> None:
        self.size = size
        self.values: _U64 = np.empty(0, dtype=np.uint64)

    def add(self, block: _U64) -> None:
        """Take the values of ``block`` into account."""
        if not len(block):
            return
        if len(self.values) >= self.size:
            top = self.values[-1]
            if block.min() >= top:  # the usual case once full: nothing smaller
                return
            block = block[block < top]  # equal to the k-th: the k smallest do not change
        if len(block) > self.size:
            block = np.partition(block, self.size - 1)[: self.size]
        self.values = np.sort(np.concatenate([self.values, block]))[: self.size]

    def merge(self, other: Bottom) -> Bottom:
        """The sketch of both inputs (the union of the multisets)."""
        out = Bottom(self.size)
        out.values = np.sort(np.concatenate([self.values, other.values]))[: self.size]
        return out

    @property
    def distinct_share(self) -> float:
        """The share of distinct values among the entries (0 when empty)."""
        if not len(self.values):
            return 0.0
        return float(len(np.unique(self.values))) / len(self.values)


@dataclass
class _ColumnPartial:
    kind: str = "text"
    total: int = 0
    open: bool = True  # whether its sketch is still kept (see _still_distinct)
    bottom: Bottom = field(default_factory=Bottom)


@dataclass
class PartialSketch:
    """What one piece of the rows contributes (mergeable: Dask partitions, pandas blocks).

    Holds hashes of private rows: it stays in this process (or moves between
    the workers of the analyst's own cluster) and is never recorded.
    """

    rows: Bottom = field(default_factory=Bottom)
    columns: dict[str, _ColumnPartial] = field(default_factory=dict)


@dataclass(frozen=True)
class ColumnSketch:
    """One column's keyed digest and, for a column of mostly distinct values, its tags."""

    digest: str
    tags: tuple[int, ...] | None
    entries: int


@dataclass(frozen=True)
class FrameSketch:
    """What the guard rails compare and record about one frame (see the module).

    Attributes:
        fingerprint: the unkeyed fingerprint (exact; in memory only, never
            recorded: older ledgers named data by it).
        identity: the keyed identity (the ledger's dataset key).
        rows: the row sketch's tags (:data:`SKETCH_SIZE`).
        entries: how many of ``rows`` are real (at most the row count; in memory only).
        columns: by column name.
    """

    fingerprint: str
    identity: str
    rows: tuple[int, ...]
    entries: int
    columns: dict[str, ColumnSketch]


@runtime_checkable
class Sketchable(Protocol):
    """A backend that sketches its own rows where they are (the Dask backend, on its workers)."""

    def data_sketch(self, key: SketchKey, units: tuple[str, int] | None = None) -> FrameSketch:
        """The keyed sketch of the backend's rows (its fingerprint included).

        ``units`` (a unit column and its bound) lets the same pass learn
        whether some unit has more rows than the bound, for the bounding that
        follows the load.
        """
        ...


def shared(common: int, entries: int) -> float:
    """The estimated share of rows two data sets have in common, of the larger.

    Args:
        common: tags the two sketches share.
        entries: real entries of this data's sketch (its row count, at most k).
    """
    return 0.0 if entries <= 0 else min(1.0, common / entries)


# -- the pass ----------------------------------------------------------------------------


def _blocks(rows: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, rows, size):
        yield start, min(rows, start + size)


def partial_sketch(
    frame: pd.DataFrame,
    row_salt: np.uint64,
    *,
    fingerprint: Any = None,
    block_rows: int = BLOCK_ROWS,
) -> PartialSketch:
    """The sketch contributions of ``frame``'s rows, block by block.

    Args:
        frame: the private rows (a whole frame, or one Dask partition).
        row_salt: the key's :attr:`SketchKey.row_salt`.
        fingerprint: a ``hashlib.blake2b`` object to feed with pandas' row
            hashes (the pandas backend's unkeyed fingerprint, bit for bit), or None.
        block_rows: rows per block.

    Raises:
        SchemaError: a column holds values that cannot be hashed (lists, dicts).
    """
    columns = [ColumnHasher(str(name), frame[name]) for name in frame.columns]
    out = PartialSketch(columns={c.name: _ColumnPartial(c.kind) for c in columns})
    # Each cell hash plus its kind's offset, added up: the row sum takes the offsets
    # once per column (folded into its salt), a column's sum once per row.
    shape = sum(KIND_OFFSETS[c.kind] for c in columns) % (1 << 64)
    salt = np.uint64(int(row_salt) ^ shape)
    for start, stop in _blocks(len(frame), block_rows):
        rows: _U64 | None = None
        fold = None if fingerprint is None else _Combine(stop - start, len(columns))
        for column in columns:
            cells = column.block(start, stop, fold)
            part = out.columns[column.name]
            offsets = (stop - start) * KIND_OFFSETS[column.kind]
            part.total = (part.total + int(cells.sum(dtype=np.uint64)) + offsets) % (1 << 64)
            if part.open:
                part.bottom.add(cells)
                part.open = _still_distinct(part.bottom)
            if rows is None:
                rows = cells  # the cells are not read again: add the others to them
            else:
                np.add(rows, cells, out=rows)
        if fold is not None:
            fingerprint.update(fold.finish())  # the block's own array: no bytes copy
        if rows is not None:
            np.bitwise_xor(rows, salt, out=rows)
            np.multiply(rows, _ROW_MULTIPLIER, out=rows)
            out.rows.add(rows)
    return out


def _still_distinct(bottom: Bottom) -> bool:
    """Whether a column's sketch may still be kept: not yet full, or mostly distinct values.

    More rows only repeat a column's values more often, so a full sketch of
    mostly repeated values is dropped at once (a category, a yes/no column):
    its column is then summed only.
    """
    return len(bottom.values) < bottom.size or bottom.distinct_share >= DISTINCT_SHARE


class _Combine:
    """pandas' ``combine_hash_arrays`` (CPython's tuple hash) of a block, column by column."""

    def __init__(self, rows: int, columns: int) -> None:
        self.out = np.full(rows, _TUPLE_SEED, dtype=np.uint64)
        self.columns = columns
        self.index = 0
        self.mult = _TUPLE_MULT

    def __call__(self, hashes: _U64) -> None:
        np.bitwise_xor(self.out, hashes, out=self.out)
        np.multiply(self.out, np.uint64(self.mult), out=self.out)
        self.mult = (self.mult + 82520 + 2 * (self.columns - self.index)) % (1 << 64)
        self.index += 1

    def finish(self) -> _U64:
        np.add(self.out, _TUPLE_END, out=self.out)
        return self.out


def merge_partials(*parts: PartialSketch) -> PartialSketch:
    """The contributions of all of ``parts`` (any order gives the same sketch)."""
    out = PartialSketch()
    for part in parts:
        out.rows = out.rows.merge(part.rows)
        for name, column in part.columns.items():
            mine = out.columns.setdefault(name, _ColumnPartial(column.kind))
            mine.total = (mine.total + column.total) % (1 << 64)
            mine.open = mine.open and column.open
            mine.bottom = mine.bottom.merge(column.bottom)
    return out


def finish_sketch(part: PartialSketch, key: SketchKey, fingerprint: str) -> FrameSketch:
    """The keyed sketch of the data whose contributions are ``part``.

    Args:
        part: every row's contribution (:func:`merge_partials`).
        key: the sketch key.
        fingerprint: the data's unkeyed fingerprint (its backend's).
    """
    identity = key.identity(fingerprint)
    columns = {}
    for name, column in part.columns.items():
        kept = column.open and column.bottom.distinct_share >= DISTINCT_SHARE
        domain = f"column:{column.kind}"
        tags = key.tags(column.bottom, domain, f"{identity}\x00{name}") if kept else None
        columns[name] = ColumnSketch(
            digest=key.digest(column.kind, column.total),
            tags=tags,
            entries=len(column.bottom.values),
        )
    return FrameSketch(
        fingerprint=fingerprint,
        identity=identity,
        rows=key.tags(part.rows, "rows", identity),
        entries=len(part.rows.values),
        columns=columns,
    )


def sketch_frame(
    frame: pd.DataFrame, key: SketchKey, *, block_rows: int = BLOCK_ROWS
) -> FrameSketch:
    """The keyed sketch of a pandas frame, in one pass (its fingerprint included).

    The fingerprint is the pandas backend's, bit for bit: BLAKE2b over the
    column names and dtypes and pandas' row hashes
    (``pd.util.hash_pandas_object(frame, index=False)``).

    Raises:
        SchemaError: a column holds values that cannot be hashed (lists, dicts).
    """
    digest = hashlib.blake2b(digest_size=20)
    for name, dtype in frame.dtypes.items():
        digest.update(f"{name}\x00{dtype}\x00".encode())
    if len(frame) < BACKGROUND_ROWS:
        part = partial_sketch(frame, key.row_salt, fingerprint=digest, block_rows=block_rows)
        return finish_sketch(part, key, digest.hexdigest())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpframe-fingerprint") as pool:
        feed = _BackgroundDigest(digest, pool)
        part = partial_sketch(frame, key.row_salt, fingerprint=feed, block_rows=block_rows)
        feed.wait()
    return finish_sketch(part, key, digest.hexdigest())


class _BackgroundDigest:
    """Feeds a digest on one worker thread, in the order of the blocks.

    ``hashlib`` releases the GIL while it hashes a large buffer, so the
    fingerprint's BLAKE2b of a block runs beside the hashing of the next
    ones (on another core when there is one).  A single worker keeps the
    blocks in order: the digest is the same, bit for bit.  At most
    ``WAITING`` blocks wait their turn (their memory is held until hashed).
    """

    WAITING = 8

    def __init__(self, digest: Any, pool: ThreadPoolExecutor) -> None:
        self._digest = digest
        self._pool = pool
        self._pending: deque[Future[None]] = deque()

    def update(self, block: Any) -> None:
        while len(self._pending) >= self.WAITING:
            self._pending.popleft().result()
        self._pending.append(self._pool.submit(self._digest.update, block))

    def wait(self) -> None:
        while self._pending:
            self._pending.popleft().result()
