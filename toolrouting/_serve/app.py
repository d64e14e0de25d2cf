"""The HTTP application: a routing table of three endpoints, and the error table applied once.

The endpoints translate and hold no routing logic: a body is read within its limit, checked
(``request``), served (``chat``) and written back in OpenAI's shape (``responses``). Every
error, from a bad field to a failed backend, becomes OpenAI's error object in one handler.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import TypeVar

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .._backends import AsyncBackend, AsyncEmbeddedLlama
from .._errors import ChatRequestError, ToolRoutingError
from .._limits import (
    DEFAULT_ROUTING_CAP,
    SERVE_ANSWER_TOKENS,
    SERVE_EMBEDDED_QUEUE,
    SERVE_MAX_BODY_BYTES,
    SERVE_MAX_IN_FLIGHT,
    SERVE_RETRY_AFTER,
)
from .chat import ServedChat
from .errors import error_reply
from .request import body_too_large, decode_body, read_chat_request
from .responses import Piece, ReplyIds, chunk_body, completion_body, error_body, server_sent_event

__all__ = ["Admission", "serve_app", "server_config"]

T = TypeVar("T")


class Admission:
    """At most ``limit`` requests in flight; the next is refused 429 with ``Retry-After``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self) -> Callable[[], None]:
        """A place, or a :class:`ChatRequestError`; the function returned gives it back (once)."""
        if self.held >= self.limit:
            raise ChatRequestError(
                f"the server holds {self.limit} requests already, its limit; retry after "
                f"{SERVE_RETRY_AFTER} s",
                status=429,
                code="server_busy",
                retry_after=SERVE_RETRY_AFTER,
            )
        self.held += 1
        given = False

        def release() -> None:
            nonlocal given
            if not given:
                given = True
                self.held -= 1

        return release

    @contextlib.contextmanager
    def place(self) -> Iterator[None]:
        """A place for the ``with`` block."""
        release = self.take()
        try:
            yield
        finally:
            release()


@dataclasses.dataclass(kw_only=True)
class _Served:
    chat: ServedChat
    admission: Admission
    model: str
    require_key: str | None
    secrets: tuple[str, ...]


def serve_app(
    backend: AsyncBackend,
    *,
    model: str = "toolrouting",
    cap: int = DEFAULT_ROUTING_CAP,
    answer_tokens: int = SERVE_ANSWER_TOKENS,
    in_flight: int | None = None,
    require_key: str | None = None,
    secrets: Sequence[str] = (),
    owned: bool = False,
) -> Starlette:
    """The chat completions server over ``backend``.

    ``model`` is the name ``/v1/models`` lists; ``require_key`` the bearer key every ``/v1``
    request must carry (none when ``None``); ``secrets`` are never written into an error.
    ``in_flight`` bounds the requests held at once: by default ``SERVE_EMBEDDED_QUEUE`` for the
    embedded model, which takes them in turn, and ``SERVE_MAX_IN_FLIGHT`` for any other backend.
    ``owned=True`` closes the backend when the server stops, in the event loop that served it
    (an HTTP backend's connections belong to that loop); otherwise the caller closes it.
    """

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owned:
                await backend.aclose()

    app = Starlette(
        lifespan=lifespan,
        routes=[
            Route("/health", _health, methods=["GET"]),
            Route("/v1/models", _models, methods=["GET"]),
            Route("/v1/chat/completions", _chat_completions, methods=["POST"]),
        ],
        # ToolRoutingError by name: Starlette hands Exception's handler to its outermost layer,
        # which answers and then re-raises; ours are answered and done.
        exception_handlers={ToolRoutingError: _error, HTTPException: _http_error, Exception: _error},
    )
    app.state.served = _Served(
        chat=ServedChat(backend, cap=cap, answer_tokens=answer_tokens),
        admission=Admission(in_flight or _in_flight(backend)),
        model=model,
        require_key=require_key,
        secrets=tuple(s for s in (*secrets, require_key) if s),
    )
    return app


def _in_flight(backend: AsyncBackend) -> int:
    return SERVE_EMBEDDED_QUEUE if isinstance(backend, AsyncEmbeddedLlama) else SERVE_MAX_IN_FLIGHT


def server_config(app: Starlette, *, host: str, port: int, log_level: str = "warning") -> uvicorn.Config:
    """The one uvicorn configuration the server runs under; the caller starts and stops it."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        h11_max_incomplete_event_size=SERVE_MAX_BODY_BYTES,
    )


def _served(request: Request) -> _Served:
    served: _Served = request.app.state.served
    return served


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _models(request: Request) -> Response:
    served = _served(request)
    _authorized(request, served)
    model = {"id": served.model, "object": "model", "created": 0, "owned_by": "toolrouting"}
    return JSONResponse({"object": "list", "data": [model]})


async def _chat_completions(request: Request) -> Response:
    served = _served(request)
    _authorized(request, served)
    chat_request = read_chat_request(decode_body(await _body(request)))
    ids = ReplyIds.new(chat_request.model or served.model)
    if not chat_request.stream:
        with served.admission.place():
            reply = await _unless_gone(request, lambda: served.chat.reply(chat_request))
        if reply is None:  # the client is gone; nobody reads this
            return Response(status_code=499)
        return JSONResponse(completion_body(reply, ids))
    release = served.admission.take()
    pieces = served.chat.stream(chat_request)
    try:
        # The first piece before the status: a request that fails early is answered with its 4xx/5xx.
        first = await _unless_gone(request, lambda: anext(pieces))
    except BaseException:
        release()
        await pieces.aclose()
        raise
    if first is None:  # the client left before the first piece
        release()
        await pieces.aclose()
        return Response(status_code=499)
    return _EventStream(_events(first, pieces, ids, chat_request.include_usage, release, served.secrets))


class _EventStream(Response):
    """Server-sent events written by the task that runs the endpoint.

    Starlette's ``StreamingResponse`` reads its iterator in a task of its own; the backends'
    streams hold locks that belong to the task that began them (the embedded model's turn),
    and the first piece was taken in the endpoint's. A client that leaves cancels the writing,
    which closes the backend's stream.
    """

    def __init__(self, events: AsyncGenerator[bytes]) -> None:
        # No Content-Length: the events are written as they come, in chunks.
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
        ]
        self.events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()

            group.start_soon(watch)
            try:
                async for event in self.events:
                    await send({"type": "http.response.body", "body": event, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            finally:
                group.cancel_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await self.events.aclose()


async def _events(
    first: Piece,
    pieces: AsyncGenerator[Piece],
    ids: ReplyIds,
    include_usage: bool,
    release: Callable[[], None],
    secrets: Sequence[str],
) -> AsyncGenerator[bytes]:
    """The stream's events; a failure after the status went out is one error event that ends it."""
    try:
        piece: Piece | None = first
        while piece is not None:
            if piece.usage is None or include_usage:
                yield server_sent_event(chunk_body(piece, ids))
            piece = await anext(pieces, None)
        yield server_sent_event("[DONE]")
    except ToolRoutingError as error:
        yield server_sent_event(error_reply(error, secrets).body)
    finally:
        release()
        with anyio.CancelScope(shield=True):
            await pieces.aclose()


async def _unless_gone(request: Request, work: Callable[[], Awaitable[T]]) -> T | None:
    """``work()``'s result, or ``None`` once the client disconnects, which cancels the work."""
    outcome: list[T] = []
    failure: list[Exception] = []

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        try:
            outcome.append(await work())
        except Exception as error:  # raised below, outside the group, so no ExceptionGroup wraps it
            failure.append(error)
        finally:
            group.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return outcome[0] if outcome else None


async def _body(request: Request) -> bytes:
    """The body, read only as far as its limit."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > SERVE_MAX_BODY_BYTES:
        raise body_too_large()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > SERVE_MAX_BODY_BYTES:
            raise body_too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def _authorized(request: Request, served: _Served) -> None:
    if served.require_key is None:
        return
    given = request.headers.get("authorization", "")
    scheme, _, key = given.partition(" ")
    expected = served.require_key.encode()
    if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), expected):
        raise ChatRequestError(
            "this server needs its key: send Authorization: Bearer KEY (the client's api_key)",
            status=401,
            code="invalid_api_key",
        )


async def _error(request: Request, error: Exception) -> Response:
    reply = error_reply(error, _served(request).secrets)
    return JSONResponse(reply.body, status_code=reply.status, headers=reply.headers)


async def _http_error(request: Request, error: Exception) -> Response:
    status = error.status_code if isinstance(error, HTTPException) else 400
    detail = error.detail if isinstance(error, HTTPException) else str(error)
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "invalid_request")
    body = error_body(f"{request.method} {request.url.path}: {detail}", "invalid_request_error", None, code)
    return JSONResponse(body, status_code=status, headers=getattr(error, "headers", None))
