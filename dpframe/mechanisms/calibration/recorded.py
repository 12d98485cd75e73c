"""The noise calibrations a release used, collected for its ledger row (public inputs only).

While :func:`recording` is active (the engine holds it around a release),
every call of :func:`~dpframe.mechanisms.calibration.additive.noise_for`
notes its inputs (sensitivity, quantum, allocation, spread) and the noise it
chose; :func:`encode` gives the JSON text the ledger stores in the row's
``noise`` column, which ``dpframe ledger verify`` recomputes with the same
function.  Everything noted is public (declared bounds and the privacy
parameters); nothing is computed from the data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["current", "encode", "recording"]

#: The calibrations of the release running in this context (None: not recording).
_CALIBRATIONS: ContextVar[list[dict[str, Any]] | None] = ContextVar(
    "dpframe_calibrations", default=None
)


@contextmanager
def recording() -> Iterator[list[dict[str, Any]]]:
    """Collect the calibrations made in this context until the block ends."""
    entries: list[dict[str, Any]] = []
    token = _CALIBRATIONS.set(entries)
    try:
        yield entries
    finally:
        _CALIBRATIONS.reset(token)


def current() -> list[dict[str, Any]] | None:
    """The current recording's list (append plain JSON data to it), or None if not recording."""
    return _CALIBRATIONS.get()


def encode(entries: list[dict[str, Any]]) -> str | None:
    """The JSON text of distinct calibrations, in first-seen order (None for none)."""
    seen: dict[str, dict[str, Any]] = {}
    for entry in entries:
        seen.setdefault(json.dumps(entry, sort_keys=True), entry)
    if not seen:
        return None
    return json.dumps(list(seen.values()), sort_keys=True, separators=(",", ":"))
