"""The curator's answers to what went wrong: fixed codes, HTTP statuses, data-free messages."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dpframe.errors import WIRE_CODES, DPError
from dpframe.plan.codec import NodeFormatError
from dpframe.remote.wire import MAX_ECHO, ProtocolError, short_name

__all__ = ["UNKNOWN_DATASET", "ServiceError", "classify", "cut_echoes", "error_payload"]

#: Where a quoted name may open (after these or at the start) and close (before these or at
#: the end), as ``repr`` writes one in a sentence; an apostrophe inside a word does neither.
_OPENS_AFTER = frozenset(" \t\n([{,:=")
_CLOSES_BEFORE = frozenset(" \t\n.,;:)]}")
#: A run of more than :data:`MAX_ECHO` characters without a space (e.g. ``body.<name>``).
_LONG_WORD = re.compile(rf"\S{{{MAX_ECHO + 1},}}")


class ServiceError(Exception):
    """An error with a fixed code and HTTP status, safe to send to the analyst.

    Args:
        status: the HTTP status.
        code: the fixed, machine-readable code.
        message: what was wrong, without any data value.
        headers: HTTP headers of the answer (e.g. ``Retry-After``).
    """

    def __init__(
        self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


UNKNOWN_DATASET = ServiceError(404, "unknown_dataset", "No dataset of this name is granted to you.")


def cut_echoes(message: str) -> str:
    """``message`` with every name longer than :data:`MAX_ECHO` characters cut to that length.

    Error messages repeat the names a request used (an unknown column, field
    or expression): a name of any length would come back whole, so an
    analyst could make the curator echo, and log, megabytes.  Quoted names
    (``'...'`` or ``"..."``) and runs without a space longer than
    :data:`MAX_ECHO` characters are cut (``…`` marks a cut); the fixed text
    of a message is never that long.  Linear in the message's length.
    """
    pieces: list[str] = []
    start, n = 0, len(message)
    closers = {q: _closers(message, q) for q in "'\""}
    i = 0
    while i < n:
        q = message[i]
        if q in closers and (i == 0 or message[i - 1] in _OPENS_AFTER):
            end = closers[q][i + 1] if i + 1 < n else -1
            if end >= 0 and end - i - 1 > MAX_ECHO:
                pieces.append(_cut_words(message[start:i]))
                pieces.append(q + short_name(message[i + 1 : end]) + q)
                start = i = end + 1
                continue
        i += 1
    pieces.append(_cut_words(message[start:]))
    return "".join(pieces)


def _cut_words(text: str) -> str:
    return _LONG_WORD.sub(lambda m: short_name(m[0]), text)


def _closers(message: str, quote: str) -> list[int]:
    """For each position, the next position at or after it where ``quote`` closes a name (-1)."""
    n = len(message)
    found = [-1] * (n + 1)
    for j in range(n - 1, -1, -1):
        closes = (
            message[j] == quote
            and message[j - 1 : j] != "\\"
            and (j + 1 == n or message[j + 1] in _CLOSES_BEFORE)
        )
        found[j] = j if closes else found[j + 1]
    return found


def error_payload(code: str, message: str) -> dict[str, Any]:
    """The JSON body of every error response (names in ``message`` cut: :func:`cut_echoes`)."""
    return {"error": {"code": code, "message": cut_echoes(message)}}


def classify(exc: Exception) -> ServiceError:
    """Map an exception raised while serving a call to a fixed code.

    Errors that dpframe raises on purpose carry messages written never to
    hold private values; anything else gets a fixed message (and is logged
    on the curator's side for the data owner).
    """
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, ProtocolError):
        return ServiceError(413 if exc.code == "too_large" else 400, exc.code, str(exc))
    if isinstance(exc, NodeFormatError):
        return ServiceError(400, "invalid_query", str(exc))
    for cls, status, code in WIRE_CODES:
        if isinstance(exc, cls):
            return ServiceError(status, code, str(exc))
    if isinstance(exc, DPError):
        return ServiceError(400, "dp_error", str(exc))
    return ServiceError(
        400,
        "invalid_query",
        "The query could not be evaluated; check its arguments against the API. "
        "Nothing was charged.",
    )
