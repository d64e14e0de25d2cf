"""What every front's endpoints share on the wire: the bounded queue, the body's limit, the key
check, the client's disconnect, and the one loop that streams a reply.

A front reads its request with :func:`read_body` after :func:`check_key`, and :func:`answer`
serves it: a whole reply with :func:`whole_reply` (:func:`unless_gone` inside an
:class:`Admission` place), a streamed one with :func:`event_stream`, its pieces written as
server-sent events by the front's writer (``protocol.ReplyWriter``).
"""

from __future__ import annotations

import contextlib
import functools
import hmac
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from .._errors import ChatRequestError, ToolRoutingError
from .._limits import SERVE_MAX_BODY_BYTES, SERVE_RETRY_AFTER
from .core import Conversation, Piece, Reply, ReplyWriter, RoutedEngine, ServeRequest, body_too_large
from .error_replies import error_reply
from .request_log import CLIENT_LEFT, RequestRecord, record_of
from .stopping import Stopping, cut_short, raced

__all__ = [
    "REASONING_HEADER",
    "WITHHELD_HEADER",
    "Admission",
    "EventStream",
    "answer",
    "check_key",
    "event_stream",
    "gone",
    "read_body",
    "unless_gone",
    "whole_reply",
]

T = TypeVar("T")

#: The header that names the tools a decision withheld, past the repeat limit
#: (``Reply.withheld``): comma-separated, in catalogue order; absent when none was.
WITHHELD_HEADER = "x-toolrouting-withheld"
#: The header that says why the server abstained from the decision's calls (``Reply.abstained``,
#: ``--abstain``): the tool and the arguments the conversation does not give, in printable
#: ASCII; absent when it did not abstain.
ABSTAINED_HEADER = "x-toolrouting-abstained"
#: The most characters of the abstention's reason its header carries.
_ABSTAINED_SHOWN = 200
#: The header that says a reasoning budget over what the route's grammar bounds was served within
#: it: ``served=N asked=M``; absent when the budget was served as asked.
REASONING_HEADER = "x-toolrouting-reasoning-budget"


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


async def read_body(request: Request) -> bytes:
    """The body, read only as far as its limit (``SERVE_MAX_BODY_BYTES``), past which it is a 413."""
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


def check_key(request: Request, key: str | None) -> None:
    """Refuses (401) a request without ``Authorization: Bearer KEY`` or ``x-api-key: KEY`` (what
    Anthropic's clients send); every request passes when ``key`` is ``None``. The key is
    compared in constant time and never written back."""
    if key is None:
        return
    scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
    sent = [request.headers.get("x-api-key", "")]
    if scheme.lower() == "bearer":
        sent.append(bearer)
    if not any(hmac.compare_digest(given.strip().encode(), key.encode()) for given in sent):
        raise ChatRequestError(
            "this server needs its key: send Authorization: Bearer KEY or x-api-key: KEY "
            "(the client's api_key)",
            status=401,
            code="invalid_api_key",
        )


async def _watch(receive: Receive, scope: anyio.CancelScope) -> None:
    """Cancels ``scope`` once the client disconnects."""
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def unless_gone(
    request: Request, work: Callable[[], Awaitable[T]], stopping: Stopping | None = None
) -> T | None:
    """``work()``'s result, or ``None`` once the client disconnects, which cancels the work (as
    the server's stop does once its grace is past, raising :meth:`Stopping.error`)."""
    outcome: list[T] = []
    with cut_short(stopping) as stopped:
        outcome = await raced(work, functools.partial(_watch, request.receive))
    if stopped and not outcome:
        raise Stopping.error()
    return outcome[0] if outcome else None


async def whole_reply(
    request: Request,
    admission: Admission,
    work: Callable[[], Awaitable[T]],
    body: Callable[[T], Mapping[str, object]],
    headers: Callable[[T], dict[str, str]] | None = None,
    stopping: Stopping | None = None,
) -> Response:
    """``work()``'s reply, made holding a place in ``admission`` and written as JSON by ``body``,
    with the ``headers`` it has; a client gone by then gets none, and one the server's stop cut
    short the error it raises."""
    with admission.place():
        reply = await unless_gone(request, work, stopping)
    if reply is None:
        return gone()
    return JSONResponse(body(reply), headers=None if headers is None else headers(reply))


def gone() -> Response:
    """The answer to a request whose client left: nobody reads it."""
    return Response(status_code=CLIENT_LEFT)


async def answer(
    request: Request,
    admission: Admission,
    engine: RoutedEngine,
    asked: ServeRequest,
    writer: ReplyWriter,
    secrets: Sequence[str],
    built: Conversation | None = None,
    stopping: Stopping | None = None,
) -> Response:
    """The reply ``engine`` makes to ``asked``, whole or streamed as it asks, in ``writer``'s
    shapes; ``secrets`` never appear in an error written into the stream; ``built`` is the
    request's conversation where its front built it already; ``stopping`` cuts it short once the
    server has been stopping for its grace. The headers say what
    was served otherwise than asked: the tools withheld, a reasoning budget served within the cap.
    The request's record (``request_log``) is told what it asked and what it was answered, and
    notes the tools withheld."""
    record = record_of(request)
    record.asked(tools=len(asked.tools), stream=asked.stream)
    if asked.stream:
        pieces = engine.stream(asked, record, built)
        response = await event_stream(request, admission, pieces, writer, secrets, record, stopping)
    else:

        def withheld(reply: Reply) -> dict[str, str]:
            return _withheld(reply.withheld, record) | _abstained(reply.abstained)

        async def work() -> Reply:
            return await engine.reply(asked, record, built)

        response = await whole_reply(request, admission, work, writer.whole, withheld, stopping)
    reasoning = asked.reasoning
    if reasoning is not None and reasoning.asked is not None and response.status_code != CLIENT_LEFT:
        response.headers[REASONING_HEADER] = f"served={reasoning.budget} asked={reasoning.asked}"
        record.notes.append(f"reasoning budget served {reasoning.budget} of {reasoning.asked} asked")
    return response


def _abstained(reason: str | None) -> dict[str, str]:
    """The header that says why the server abstained; none where it did not. A header carries
    printable ASCII only: any other character of a name is written ``?``."""
    if reason is None:
        return {}
    shown = "".join(char if " " <= char <= "~" else "?" for char in reason[:_ABSTAINED_SHOWN])
    return {ABSTAINED_HEADER: shown}


def _withheld(tools: Sequence[str], record: RequestRecord) -> dict[str, str]:
    """The header that names the tools withheld, noted in the request's record; none where none was."""
    if not tools:
        return {}
    record.notes.append(f"repeated call withheld: {', '.join(tools)}")
    return {WITHHELD_HEADER: ", ".join(tools)}


async def event_stream(
    request: Request,
    admission: Admission,
    pieces: AsyncGenerator[Piece],
    writer: ReplyWriter,
    secrets: Sequence[str],
    record: RequestRecord | None = None,
    stopping: Stopping | None = None,
) -> Response:
    """A reply streamed as the events ``writer`` writes of its pieces, holding a place in
    ``admission`` until the stream ends; ``record`` is told of a failure that ends it, the
    server's stop past its grace included.

    The first piece is awaited before the status goes out, so a request that fails early is
    answered with its own status (a piece is never ``None``); a client gone by then gets none.
    A piece that names the tools withheld (only ever the first) is said in the headers.
    """
    release = admission.take()
    try:
        opened = await unless_gone(request, lambda: _opening(pieces), stopping)
    except BaseException:
        release()
        await pieces.aclose()
        raise
    if opened is None:  # the client left before the first piece
        release()
        await pieces.aclose()
        return gone()
    first, withheld, abstained = opened
    record = record or RequestRecord(api="")

    def failed(error: ToolRoutingError) -> list[bytes]:
        failure = error_reply(error, secrets)
        record.failed(failure)
        return writer.failed(failure)

    response = EventStream(_held(_written(first, pieces, writer, failed), pieces, release), failed, stopping)
    response.headers.update(_withheld(withheld, record) | _abstained(abstained))
    return response


async def _opening(pieces: AsyncGenerator[Piece]) -> tuple[Piece, tuple[str, ...], str | None]:
    """The stream's first piece to write, and what the pieces before it say for the headers:
    the tools withheld, and why the server abstained."""
    withheld: tuple[str, ...] = ()
    abstained = None
    first = await anext(pieces)
    while first.withheld or first.abstained is not None:
        withheld = first.withheld or withheld
        abstained = first.abstained if first.abstained is not None else abstained
        first = await anext(pieces)
    return first, withheld, abstained


async def _written(
    first: Piece,
    pieces: AsyncGenerator[Piece],
    writer: ReplyWriter,
    failed: Callable[[ToolRoutingError], list[bytes]],
) -> AsyncGenerator[bytes]:
    """The stream's events, the one loop every front's stream is written by; a failure after the
    status went out is the writer's events of the failure (``failed``), which end it."""
    try:
        for event in writer.opening():
            yield event
        piece: Piece | None = first
        while piece is not None:
            # Why the server abstained, after a thought went out: said in the request's log
            # alone, as no header can follow the status.
            for event in [] if piece.abstained is not None else writer.of(piece):
                yield event
            piece = await anext(pieces, None)
        for event in writer.closing():
            yield event
    except ToolRoutingError as error:
        for event in failed(error):
            yield event


async def _held(
    events: AsyncGenerator[bytes], pieces: AsyncGenerator[Any], release: Callable[[], None]
) -> AsyncGenerator[bytes]:
    """``events``, the place given back and the pieces closed when they end, however they end."""
    try:
        async for event in events:
            yield event
    finally:
        release()
        with anyio.CancelScope(shield=True):
            await events.aclose()
            await pieces.aclose()


class EventStream(Response):
    """Server-sent events written by the task that runs the endpoint.

    Starlette's ``StreamingResponse`` reads its iterator in a task of its own; the backends'
    streams hold locks that belong to the task that began them (the embedded model's turn),
    and the first piece was taken in the endpoint's. A client that leaves cancels the writing,
    which closes the backend's stream; the server's stop past its grace (``stopping``) cancels
    it too, and ends the stream with ``failed``'s events of :meth:`Stopping.error`.
    """

    def __init__(
        self,
        events: AsyncGenerator[bytes],
        failed: Callable[[ToolRoutingError], list[bytes]],
        stopping: Stopping | None = None,
    ) -> None:
        # No Content-Length: the events are written as they come, in chunks.
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
        ]
        self.events = events
        self.failed = failed
        self.stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})

        async def written() -> None:
            async for event in self.events:
                await send({"type": "http.response.body", "body": event, "more_body": True})

        ended: list[None] = []
        with cut_short(self.stopping) as stopped:
            try:
                ended = await raced(written, functools.partial(_watch, receive))
            finally:
                with anyio.CancelScope(shield=True):
                    await self.events.aclose()
        if stopped and not ended:
            for event in self.failed(Stopping.error()):
                await send({"type": "http.response.body", "body": event, "more_body": True})
            ended = [None]
        if ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
