"""Re-running a notebook spends nothing twice: a request already answered is answered again.

A release whose request equals one the ledger recorded (the same node by
value, the same privacy parameters, the same data) is answered from the
ledger: the same values and intervals, rebuilt from the stored answer,
charged nothing, and marked (``from the ledger, recorded 14:02``;
:mod:`dpframe.engine.recorded`).  This is post-processing of a release
already made, so it costs no privacy, under three conditions (the proof note
is ``docs/rerun-cache.md``):

1. what is stored is the released output (the answer as returned, encoded by
   :mod:`dpframe.engine.wire`), never a seed or noise to apply again;
2. a hit needs exact identity (:func:`request_key`): the node by value (its
   plan, filters, expressions, parameters and privacy request), the privacy
   unit, the declared schema, and the data's identity: embedded, the keyed
   identity of the rows the ledger already records; in a curator, the
   catalog's declared name and version (never anything computed from the rows);
3. a hit reads no data, and the path to it depends on the key alone.

The lookup runs after validation and costing and before the charge
(:meth:`dpframe.engine.release_path.ReleasePath.run`).  ``fresh=True`` on a
release method (:func:`fresh_release`) asks for a new, charged release.  An
answer that encodes to more than :data:`MAX_KEPT_BYTES` is not
kept: asked again, it is charged again (a warning says so when it is made).
"""

from __future__ import annotations

import hashlib
import warnings
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import pandas as pd

from dpframe.engine.recorded import mark, recorded_note
from dpframe.engine.wire import decode_response, dumps, encode_response, loads
from dpframe.errors import DPError, InvalidArgumentError, caller_stacklevel
from dpframe.plan.codec import encode_node
from dpframe.plan.nodes import Source
from dpframe.plan.privacy import Budget
from dpframe.plan.schema import Schema

__all__ = [
    "KEY_VERSION",
    "MAX_KEPT_BYTES",
    "MAX_KEPT_CELLS",
    "asked_fresh",
    "fresh_release",
    "pack",
    "request_key",
    "unpack",
]

#: The version of :func:`request_key`'s input; a new version never matches an old key.
KEY_VERSION = 2  # 2: the schema enters as its digest
#: The largest answer kept (bytes of JSON): a larger one is answered, not kept.
MAX_KEPT_BYTES = 8 * 2**20
#: The most values (cells) of a released table or series kept for re-runs.
MAX_KEPT_CELLS = 10_000

#: True while a release method called with ``fresh=True`` runs (this context only).
_FRESH: ContextVar[bool] = ContextVar("dpframe_fresh", default=False)


@contextmanager
def fresh_release(fresh: bool) -> Iterator[None]:
    """Inside the block, releases ask for a new, charged answer when ``fresh`` is True."""
    if not isinstance(fresh, bool):
        raise InvalidArgumentError(
            "fresh= takes True (a new, charged release) or False (the default)."
        )
    token = _FRESH.set(fresh or _FRESH.get())
    try:
        yield
    finally:
        _FRESH.reset(token)


def asked_fresh() -> bool:
    """True inside a release method called with ``fresh=True``."""
    return _FRESH.get()


def request_key(node: Any, source: Source, schema: Schema) -> str | None:
    """The SHA-256 (hex) identifying a request exactly; None for one never answered again.

    Its input is canonical JSON of: the node as the wire encodes it (every
    field that defines the node's equality, its plan's filters and derived
    columns, its privacy request in exact fractions), the source's data
    identity and privacy unit (not its per-load view name), and the declared
    schema's digest (:attr:`~dpframe.plan.schema.Schema.declared_digest`).
    A private join (which the wire does not encode) has no key.

    Args:
        node: a validated release node.
        source: the source its plan reads.
        schema: the public schema of that source.
    """
    if source.join is not None:
        return None
    try:
        body = encode_node(node)
        unit = [source.unit_rows, source.unit_column, source.unit_groups, source.id_space]
        text = dumps(
            {
                "v": KEY_VERSION,
                "node": body,
                "data": source.dataset,
                "unit": unit,
                "schema": schema.declared_digest,
            }
        )
    except (DPError, TypeError, ValueError):  # not encodable: never answered again
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def pack(result: Any, cost: Budget, label: str) -> bytes | None:
    """The stored form of an answer (a curator keeps the same form); None if not kept.

    None when the result cannot be encoded, when it holds more than
    :data:`MAX_KEPT_CELLS` values (checked before encoding: encoding costs
    about 9 µs a cell, 2 s for a 240,000-cell group-by), or when its
    JSON is over :data:`MAX_KEPT_BYTES`; a warning says so: asking
    again charges again.
    """
    cells = result.size if isinstance(result, (pd.Series, pd.DataFrame)) else 1
    if cells > MAX_KEPT_CELLS:
        warnings.warn(
            f"This release has {cells:,} values, over the {MAX_KEPT_CELLS:,} the ledger "
            "keeps for re-runs: it is not kept, so asking for it again will charge again "
            "(keep the result in a variable instead).",
            RuntimeWarning,
            stacklevel=caller_stacklevel(),
        )
        return None
    try:
        kept = {"result": encode_response(result), "cost": encode_response(cost), "query": label}
    except Exception:  # not encodable: answered, not kept (the release must never be lost)
        return None
    # Stored as JSON, not compressed: arrays are already base64 bytes, on which zlib
    # spent 0.8 ms of a 1,000-group answer's 1.2 ms to save 75% of 62 KB.
    body = dumps(kept).encode()
    if len(body) > MAX_KEPT_BYTES:
        warnings.warn(
            f"This release's answer is {len(body) / 2**20:.1f} MiB, over the "
            f"{MAX_KEPT_BYTES / 2**20:.0f} MiB the ledger keeps: it is not kept, so asking "
            "for it again will charge again.",
            RuntimeWarning,
            stacklevel=caller_stacklevel(),
        )
        return None
    return body


def unpack(body: bytes, recorded_at: float) -> tuple[Any, str] | None:
    """The result an answer stored by :func:`pack` rebuilds, marked, and its note.

    None when the stored answer cannot be read (then the request is released anew).
    """
    try:
        # JSON since answers stopped being compressed; zlib before (ledgers kept both).
        kept = loads(body if body[:1] == b"{" else zlib.decompress(body))
        result = decode_response(kept["result"])
    except (DPError, zlib.error, KeyError, TypeError, ValueError):
        return None
    note = recorded_note(recorded_at)
    return mark(result, note), note
