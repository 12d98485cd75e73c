"""The curator client's transport: JSON over HTTP(S) with a bearer token, and its errors.

Split from :mod:`dpframe.remote.client` (its size).  Standard library only
(``urllib``); each protocol error code becomes a :class:`~dpframe.DPError`
subclass (:data:`ERROR_CLASSES`).
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpframe.errors import (
    WIRE_CODES,
    BudgetExceededError,
    DPError,
    InvalidArgumentError,
    LedgerError,
    QueryFailedError,
)
from dpframe.remote.wire import ProtocolError, dumps, loads

if TYPE_CHECKING:
    import ssl

__all__ = [
    "ERROR_CLASSES",
    "AuthenticationError",
    "CuratorBusyError",
    "CuratorUnavailableError",
    "Http",
    "RateLimitedError",
    "SeatSuspendedError",
    "error_from",
    "tls_context",
]


class AuthenticationError(DPError):
    """The curator did not accept the token."""


class CuratorUnavailableError(DPError):
    """The curator could not be reached or answered outside the protocol."""


class CuratorBusyError(DPError):
    """Another release of this analyst on this dataset was still running; nothing was charged.

    The client waits and sends the release again for up to ``busy_wait``
    seconds (``dp.connect(..., busy_wait=...)``) before raising this.

    Attributes:
        retry_after: the seconds the curator asked to wait.
    """

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimitedError(DPError):
    """The analyst made the most releases the curator allows per minute; nothing was charged.

    Attributes:
        retry_after: the seconds until one more release is allowed.
    """

    def __init__(self, message: str, retry_after: float = 60.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class SeatSuspendedError(DPError):
    """The curator suspended this seat (analyst, dataset) after repeated abandoned releases."""


#: Error codes of the protocol and the error class the client raises for each.
ERROR_CLASSES: Mapping[str, type[DPError]] = {
    **{code: cls for cls, _, code in WIRE_CODES},
    "unauthorized": AuthenticationError,
    "busy": CuratorBusyError,
    "pending": CuratorBusyError,  # a release still computing: asked again after a wait
    "unknown_release": InvalidArgumentError,
    "rate_limited": RateLimitedError,
    "limit_exceeded": QueryFailedError,  # not completed: charged, recorded as abandoned
    "suspended": SeatSuspendedError,
    "ledger_full": LedgerError,
    "dataset_cap": BudgetExceededError,  # the data owner's cap over all analysts (409)
    "release_cap": BudgetExceededError,  # the data owner's cap on one release (409)
}


class Http:
    """JSON over HTTP with a bearer token; errors become :class:`DPError` subclasses."""

    def __init__(
        self,
        url: str,
        token: str,
        timeout: float,
        busy_wait: float = 30.0,
        cafile: str | os.PathLike[str] | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise InvalidArgumentError(f"{url!r} is not an http(s) URL of a dpframe curator.")
        if not isinstance(token, str) or not token:
            raise InvalidArgumentError(
                "token= must be the non-empty token the data owner gave you."
            )
        self.url = url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._busy_wait = busy_wait
        self._context = tls_context(cafile, parsed.scheme)

    def __repr__(self) -> str:
        return f"Http({self.url!r}, token=<hidden>)"

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """Send one request; a ``busy`` answer (nothing charged) is sent again after a wait."""
        waited = 0.0
        while True:
            try:
                return self._request(method, path, body)
            except CuratorBusyError as busy:
                pause = min(max(busy.retry_after, 0.05), 5.0)
                if waited + pause > self._busy_wait:
                    raise
                time.sleep(pause)
                waited += pause

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        import http.client  # imported where first needed (import time: email, http, ssl)
        import urllib.request

        data = None if body is None else dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self._token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(
                request, timeout=self._timeout, context=self._context
            ) as response:
                return loads(response.read())
        except urllib.error.HTTPError as exc:
            raise error_from(exc) from None
        except (
            urllib.error.URLError,
            TimeoutError,
            ConnectionError,
            http.client.HTTPException,  # e.g. the answer cut off (IncompleteRead)
        ) as exc:
            if isinstance(exc, http.client.HTTPException):
                reason: object = f"its answer was cut off ({type(exc).__name__})"
            else:
                reason = getattr(exc, "reason", exc)
            raise CuratorUnavailableError(
                f"Cannot reach the curator at {self.url}: {reason}."
            ) from None


def tls_context(cafile: str | os.PathLike[str] | None, scheme: str) -> ssl.SSLContext | None:
    """The TLS context that trusts ``cafile`` (a PEM bundle) besides nothing else; None: default.

    The system's certificate authorities are not added: with ``cafile=`` the
    curator's certificate must chain to one of the file's (an organisation's
    own CA), as ``curl --cacert`` does.
    """
    if cafile is None:
        return None
    import ssl  # imported where first needed (import time)

    if scheme != "https":
        raise InvalidArgumentError("cafile= is for an https:// curator address.")
    path = Path(cafile)
    if not path.is_file():
        raise InvalidArgumentError(f"cafile={str(cafile)!r}: no such file (a PEM CA certificate).")
    try:
        return ssl.create_default_context(cafile=str(path))
    except (ssl.SSLError, ValueError) as exc:
        raise InvalidArgumentError(
            f"cafile={str(cafile)!r} holds no PEM certificate that can be read ({exc})."
        ) from None


def error_from(exc: urllib.error.HTTPError) -> DPError:
    """The error an HTTP error answer stands for (its protocol code's class, or unavailable)."""
    try:
        payload = loads(exc.read())
        error = payload["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ProtocolError, KeyError, TypeError):
        return CuratorUnavailableError(
            f"The curator answered HTTP {exc.code} outside the protocol."
        )
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        return ProtocolError(code, message)
    if cls is CuratorBusyError or cls is RateLimitedError:
        try:
            retry_after = float(exc.headers.get("Retry-After", "1"))
        except ValueError:
            retry_after = 1.0
        return cls(message, retry_after)
    return cls(message)
