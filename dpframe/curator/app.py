"""The curator's HTTP API (FastAPI): JSON plans in, releases and budget state out.

Endpoints (all but ``/v1/health`` need ``Authorization: Bearer <token>``):

* ``GET  /v1/datasets`` — the datasets granted to the analyst;
* ``GET  /v1/datasets/{name}`` — public schema and the analyst's budget;
* ``GET  /v1/datasets/{name}/budget`` — total, spent, remaining;
* ``GET  /v1/datasets/{name}/ledger`` — the analyst's own releases;
* ``POST /v1/datasets/{name}/query`` — one release node (see :mod:`dpframe.plan.codec`).

Every error is ``{"error": {"code": ..., "message": ...}}`` with a fixed code;
messages never hold data values.  Bodies over :data:`MAX_BODY` bytes are
refused with 413 before they are parsed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from dpframe.curator.catalog import Analyst, Catalog
from dpframe.curator.codes import classify
from dpframe.curator.service import LEDGER_PAGE, Curator, ServiceError, error_payload
from dpframe.errors import DPError
from dpframe.plan.codec import node_type_names
from dpframe.remote.wire import ProtocolError, duplicate_key

__all__ = ["MAX_BODY", "create_app"]

_log = logging.getLogger("dpframe.curator")

#: Largest request body accepted, in bytes.
MAX_BODY = 256 * 1024

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Privacy(BaseModel):
    """ε, δ and ρ as exact decimal strings (at most 40 significant digits) or fractions."""

    model_config = ConfigDict(extra="forbid")
    epsilon: str | None = Field(default=None, max_length=200)
    delta: str = Field(max_length=200)
    rho: str | None = Field(default=None, max_length=200)


class Node(BaseModel):
    """A release node (``dpframe.plan.codec``): its type, plan, privacy and type's fields."""

    model_config = ConfigDict(extra="allow")
    type: str = Field(max_length=64, json_schema_extra={"enum": list(node_type_names())})
    plan: list[dict[str, Any]] = Field(max_length=1_000)
    privacy: Privacy

    @field_validator("type")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in node_type_names():  # the node types are the allow-list
            raise ValueError(f"type must be one of {', '.join(node_type_names())}")
        return value


class QueryRequest(BaseModel):
    """One release node, versioned; ``explain`` asks for its cost and accuracy only.

    ``fresh`` asks for a new, charged release even when the analyst's ledger
    already answered the same request (which is otherwise answered from it, free).
    """

    model_config = ConfigDict(extra="forbid")
    v: StrictInt = Field(ge=1, le=1)  # not Literal[1]: pydantic takes true for 1
    node: Node
    explain: StrictBool = False  # "yes" is not true
    fresh: StrictBool = False


class ErrorBody(BaseModel):
    """A fixed error code and a message without data values."""

    code: str
    message: str


class ErrorResponse(BaseModel):
    """Every error response."""

    error: ErrorBody


def _error(exc: ServiceError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
    return JSONResponse(
        error_payload(exc.code, exc.message), exc.status, headers={**headers, **exc.headers}
    )


class BodyLimit:
    """ASGI middleware: refuse bodies over ``limit`` bytes (413) or with a JSON key twice (400).

    A declared ``Content-Length`` over the limit is refused before any byte is
    read.  Otherwise the body is read here, up to the limit (a chunked body
    has no declared length), and handed to the app whole; one byte more and
    the request is answered 413 without reaching the app (before issue 16 a
    chunked body over the limit got 400 from the app's body parser).  A JSON
    body with a key twice in one object is answered 400 ``invalid_json``
    (the app's parser would keep the last value, another parser the first;
    before issue 27 the last one was used).  Without a valid token the answer
    is 401 either way.
    """

    def __init__(self, app: ASGIApp, curator: Curator, limit: int = MAX_BODY) -> None:
        self.app = app
        self.curator = curator
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(headers, send)
            return
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                await self._refuse(headers, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = duplicate_key(body)
        if problem is not None:
            await self._refuse(headers, send, problem)
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: a disconnect, when it comes

        await self.app(scope, replay, send)

    async def _refuse(
        self, headers: dict[bytes, bytes], send: Send, problem: ProtocolError | None = None
    ) -> None:
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        try:
            self.curator.authenticate(authorization)
        except ServiceError as exc:  # no token: 401 whatever the body
            await _send(send, exc.status, error_payload(exc.code, exc.message))
            return
        if problem is not None:
            await _send(send, 400, error_payload(problem.code, str(problem)))
            return
        await _too_large(send)


async def _too_large(send: Send) -> None:
    await _send(
        send, 413, error_payload("too_large", f"The request body is over {MAX_BODY} bytes.")
    )


async def _send(send: Send, status: int, payload: dict[str, Any]) -> None:
    response = JSONResponse(payload, status)
    await send({"type": "http.response.start", "status": status, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse} for status in (400, 401, 403, 404, 409, 413, 422, 429)
}


def create_app(
    catalog: Catalog | Curator, *, docs: bool = True, threads: int | None = None
) -> FastAPI:
    """The curator's ASGI application for ``catalog`` (serve it with uvicorn).

    ``docs=False`` leaves out the interactive pages (``/docs``, ``/redoc``);
    the machine-readable ``/openapi.json`` stays.  ``threads`` sets the
    number of worker threads that compute releases and read ledgers (default:
    anyio's 40); ``/v1/health`` and the latency quantum's wait use none.
    """
    curator = catalog if isinstance(catalog, Curator) else Curator(catalog)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if threads is not None:
            anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        try:
            yield
        finally:
            curator.close()  # the worker processes

    app = FastAPI(
        title="dpframe curator",
        version="1",
        description="Differentially private releases of a data owner's tables.",
        responses=_ERRORS,
        docs_url="/docs" if docs else None,
        redoc_url="/redoc" if docs else None,
        lifespan=lifespan,
    )
    app.state.curator = curator

    def analyst(authorization: str | None = Header(default=None)) -> Analyst:
        return curator.authenticate(authorization)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return _error(exc)

    @app.exception_handler(DPError)
    async def _dp_error(request: Request, exc: DPError) -> JSONResponse:
        # e.g. a LedgerError opening a seat on a budget, schema or ledger read: its code
        # (409 ledger), not a 500 "outside the protocol"; the owner's log says what
        _log.warning("%s on %s: %s", type(exc).__name__, request.url.path, exc)
        return _error(classify(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = f"Invalid request at {where}: {first.get('type', 'invalid')}."
        return _error(ServiceError(422, "invalid_request", message))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _error(ServiceError(exc.status_code, code, str(exc.detail)))

    @app.get("/v1/health")
    async def health() -> dict[str, str | None]:
        """Liveness check (no token needed, no data), answered off the worker threads.

        ``public_key``: the Ed25519 key (base64) that signs the chain heads of responses.
        """
        signer = curator.signer
        return {"status": "ok", "public_key": None if signer is None else signer.public_key}

    @app.get("/v1/datasets")
    def datasets(who: Analyst = Depends(analyst)) -> dict[str, list[str]]:  # noqa: B008
        """The datasets granted to the analyst."""
        return {"datasets": curator.datasets(who)}

    @app.get("/v1/datasets/{name}")
    def describe(name: str, who: Analyst = Depends(analyst)) -> dict[str, Any]:  # noqa: B008
        """The dataset's public schema and the analyst's budget on it."""
        return curator.describe(who, name)

    @app.get("/v1/datasets/{name}/budget")
    def budget(name: str, who: Analyst = Depends(analyst)) -> dict[str, Any]:  # noqa: B008
        """The analyst's budget: total, spent and remaining (exact fractions)."""
        return curator.budget(who, name)

    @app.get("/v1/datasets/{name}/ledger")
    def ledger(
        name: str,
        after: int = Query(default=0, ge=0, le=2**62),
        limit: int | None = Query(default=None, ge=1, le=LEDGER_PAGE),
        who: Analyst = Depends(analyst),  # noqa: B008
    ) -> dict[str, Any]:
        """One page of the analyst's own releases on the dataset, oldest first.

        Rows with an id above ``after``, at most ``limit``; ``next`` is the
        ``after`` of the next page (None after the last).
        """
        return curator.ledger(who, name, after=after, limit=limit)

    @app.get("/v1/datasets/{name}/releases/{release_id}")
    def recover(
        name: str,
        release_id: int = Path(ge=1, le=2**62),
        who: Analyst = Depends(analyst),  # noqa: B008
    ) -> dict[str, Any]:
        """The answer of one of the analyst's charged releases, again, free (by ledger id)."""
        return curator.recover(who, name, release_id)

    @app.post("/v1/datasets/{name}/query")
    async def query(
        name: str,
        request: QueryRequest,
        who: Analyst = Depends(analyst),  # noqa: B008
    ) -> dict[str, Any]:
        """One release: charged to the analyst's budget only if it is released.

        429 ``busy`` (with ``Retry-After``), uncharged, while another release of
        the analyst on this dataset runs.
        """
        body = request.model_dump(exclude_unset=True, exclude_none=False)
        started = curator.now()
        try:
            return await run_in_threadpool(curator.answer, who, name, body)
        finally:
            wait = curator.padding(started)
            if wait > 0:
                await anyio.sleep(wait)  # the latency quantum holds no thread

    app.add_middleware(BodyLimit, curator=curator)
    return app
