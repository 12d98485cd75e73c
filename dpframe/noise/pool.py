"""Noise drawn ahead in batches, for repeated small releases at one noise parameter.

One exact draw of discrete Laplace noise costs about half a millisecond
(the timing-hardened kernels evaluate a fixed block of Bernoulli trials per
value), while a vectorized batch of 256 costs a few milliseconds in all.
An analysis session asks for the same noise again and again (every
``count(epsilon=1)`` needs discrete Laplace noise of scale 1), so a
:class:`NoisePool` keeps, per noise parameter, the unused rest of a batch
and hands it out; batches start small and double with use, so parameters
used only a few times (a mean's second sum, whose scale depends on its
centre) do not pay for 256 draws.

Privacy:
    Pooling changes neither the distribution nor the independence of the
    noise: the draws of a batch are i.i.d. from the exact sampler, and each
    is handed out exactly once (removed from the pool under a lock).  The
    pool is dropped in a forked child (checked by process id), so two
    processes never use the same draw.  When a refill happens depends only
    on how many draws of that parameter were requested before (public
    facts: the ledger lists them), never on data or on the noise values.

Accuracy:
    Not applicable: the draws are those of the sampler that fills the pool.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["NoisePool"]

IntArray = npt.NDArray[np.int64]
_V = TypeVar("_V")


class NoisePool:
    """Per-parameter stocks of pre-drawn integer noise (see the module docstring).

    The first request for a parameter is drawn directly (no batch cost for a
    one-off); from the second one on, the parameter gets a stock, refilled
    ``first`` draws at a time, then twice as many at each refill up to
    ``batch`` (a parameter used a few times costs little; one used often
    costs a few microseconds a draw).  At most ``kinds`` parameters keep a
    stock (least recently used dropped).  Requests larger than ``small``
    bypass the pool (they are vectorized already).

    Args:
        batch: the most draws per refill.
        kinds: parameters with a stock at once.
        small: the largest request served from the pool.
        first: draws in a parameter's first refill.
    """

    def __init__(self, batch: int = 256, kinds: int = 32, small: int = 16, first: int = 8) -> None:
        if min(batch, kinds, small, first) < 1:
            raise ValueError("batch, kinds, small and first must be positive")
        self._batch = batch
        self._kinds = kinds
        self._small = small
        self._first = min(first, batch)
        self._stock: OrderedDict[Hashable, IntArray] = OrderedDict()
        self._next: OrderedDict[Hashable, int] = OrderedDict()  # a parameter's next refill size
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def __repr__(self) -> str:
        return (
            f"NoisePool(batch={self._batch}, kinds={self._kinds}, small={self._small}, "
            f"first={self._first})"
        )

    def __reduce__(self) -> tuple[type[NoisePool], tuple[int, int, int, int]]:
        # A copy in another process starts empty: draws are never shared.
        return NoisePool, (self._batch, self._kinds, self._small, self._first)

    def take(self, key: Hashable, size: int, draw: Callable[[int], IntArray]) -> IntArray:
        """``size`` draws for parameter ``key``; ``draw(k)`` makes ``k`` fresh ones."""
        if size > self._small:
            return draw(size)
        with self._lock:
            if os.getpid() != self._pid:  # forked: forget the parent's draws
                self._stock.clear()
                self._next.clear()
                self._pid = os.getpid()
            stock = self._stock.get(key)
            if stock is None:
                if key not in self._next:  # a first request: no batch for a one-off
                    self._remember(self._next, key, self._first)
                    return draw(size)
                stock = np.empty(0, dtype=np.int64)
            if len(stock) < size:
                refill = self._next.get(key, self._first)
                stock = np.concatenate([stock, draw(max(refill, size))])
                self._remember(self._next, key, min(2 * refill, self._batch))
            out: IntArray = stock[:size].copy()
            if key in self._stock:
                self._stock[key] = stock[size:]
                self._stock.move_to_end(key)
            else:
                self._remember(self._stock, key, stock[size:])
            return out

    def _remember(self, table: OrderedDict[Hashable, _V], key: Hashable, value: _V) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > (self._kinds if table is self._stock else 4 * self._kinds):
            table.popitem(last=False)

    def stocked(self) -> int:
        """How many draws the pool holds in all (for tests and diagnostics)."""
        with self._lock:
            return sum(len(v) for v in self._stock.values())
