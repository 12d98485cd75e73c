"""The curator's answers to what went wrong: fixed codes, HTTP statuses, data-free messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpframe.errors import WIRE_CODES, DPError
from dpframe.plan.codec import NodeFormatError
from dpframe.remote.wire import ProtocolError

__all__ = ["UNKNOWN_DATASET", "ServiceError", "classify", "error_payload"]


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


def error_payload(code: str, message: str) -> dict[str, Any]:
    """The JSON body of every error response."""
    return {"error": {"code": code, "message": message}}


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
