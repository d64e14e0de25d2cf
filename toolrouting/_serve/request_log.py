"""One line per request: what the server did with it, written once its response is finished.

:class:`RequestLog` (an ASGI middleware that ``serve_app`` puts around its routes when it is given
a ``request_log``) makes one :class:`RequestRecord` for each request but ``/health``, and keeps it
in the request's scope, where the transport, the core and the error handlers fill it in
(:func:`record_of`): the tools, the offer, the tokens, the decision, the error. Once the response's
last byte went out, or its client left (status 499), the record gets its status and seconds and
goes to the ``request_log`` callable, once. The line and the JSON object are written here and
nowhere else (:meth:`RequestRecord.line`, :meth:`RequestRecord.fields`).

A record holds counts, names of tools called, codes of errors and the API's name; never a key, a
message's text, a call's arguments or a tool's result.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._backends import Usage
from .error_replies import ErrorReply

if TYPE_CHECKING:  # Starlette is the serve extra's: the core imports the record without it
    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["API_NAMES", "CLIENT_LEFT", "DecisionKind", "RequestLog", "RequestRecord", "record_of"]

#: The API each path serves, as a record names it; ``/v1/responses/{id}`` is ``responses``, and a
#: path no route takes is ``other``.
API_NAMES = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
    "/v1/messages/count_tokens": "count_tokens",
    "/v1/models": "models",
}

#: What the server did with a request: made calls (``call``), answered (``none``), answered
#: because it abstained from the calls the decision made (``abstained``), refused it with a 4xx
#: (``refused``), or failed with a 5xx (``failed``).
DecisionKind = Literal["call", "none", "abstained", "refused", "failed"]

#: Where a request's record is kept in its ASGI scope.
_SCOPE_KEY = "toolrouting.request_record"
#: The status of a request whose client left before its response's last byte: nobody reads the
#: response (the transport closes it so), and its record says so.
CLIENT_LEFT = 499
#: The most characters of a path no route takes that its line shows.
_PATH_SHOWN = 100
#: The paths no line is written for: a health check, polled often, says nothing of a request.
_UNLOGGED = frozenset({"/health"})


@dataclasses.dataclass(kw_only=True)
class RequestRecord:
    """What the server did with one request (docs/serve-reference.md, "The request log"): filled in while it
    is served, handed to ``serve_app``'s ``request_log`` once its response is finished."""

    api: str
    """``chat``, ``responses``, ``messages``, ``count_tokens``, ``models``, or ``other`` for a path
    no route takes."""
    status: int = 0
    """The response's status; 499 when the client left before its last byte."""
    stream: bool = False
    """Whether the request asked for a stream."""
    tools: int = 0
    """The tools the request declared."""
    offered: int | None = None
    """The tools its decision offered, after its ``tool_choice`` and the shortlist; ``None`` when
    no decision was made."""
    prompt_tokens: int | None = None
    """The backend's prompt tokens, the decision's and the answer's together; ``None`` when no
    completion was made."""
    cached_tokens: int | None = None
    """Of them, those the backend's prompt cache held (0 where it does not say)."""
    completion_tokens: int | None = None
    """The tokens the backend wrote."""
    decision: DecisionKind | None = None
    """What the server did with the request; ``None`` for a request that asks for no reply
    (``models``, ``count_tokens``, a stored response)."""
    calls: list[str] = dataclasses.field(default_factory=list)
    """The tools called, in order, when ``decision`` is ``call``."""
    error: str | None = None
    """The error's code (its type where it has none) when the request was refused or failed."""
    seconds: float = 0.0
    """From the request's arrival to its response's last byte."""
    notes: list[str] = dataclasses.field(default_factory=list)
    """Other remarks on the request, each a short phrase, written at the end of the line."""

    def asked(self, *, tools: int, stream: bool) -> None:
        """What the request asks: its tools, and whether it streams."""
        self.tools, self.stream = tools, stream

    def answered(self, usage: Usage, calls: Sequence[str] = (), *, abstained: str | None = None) -> None:
        """The reply: the backend's tokens and the tools called (none: the answer); ``abstained``,
        why the server abstained from the decision's calls, is noted (a tool's and its
        arguments' names, never a value)."""
        self.prompt_tokens = usage.prompt_tokens
        self.cached_tokens = usage.cached_tokens
        self.completion_tokens = usage.completion_tokens
        self.calls = list(calls)
        self.decision = "call" if calls else "abstained" if abstained is not None else "none"
        if abstained is not None:
            self.notes.append(f"abstained: {abstained}")

    def failed(self, reply: ErrorReply) -> None:
        """The error the request was answered with (or its stream ended by)."""
        error = reply.body.get("error", {})
        self.error = str(error.get("code") or error.get("type") or reply.status)
        self.decision = "refused" if reply.status < 500 else "failed"

    def line(self) -> str:
        """The record as one line of text (docs/serve-reference.md, "The request log")."""
        words = [f"toolrouting: {self.api} {self.status}"]
        if self.stream:
            words.append("stream")
        if self.tools or self.offered is not None:
            words.append(f"tools={self.tools}")
        if self.offered is not None and self.offered != self.tools:
            words.append(f"offered={self.offered}")
        if self.prompt_tokens is not None:
            words.append(f"prompt={self.prompt_tokens} cached={self.cached_tokens or 0}")
            words.append(f"completion={self.completion_tokens or 0}")
        if self.decision is not None:
            words.append(f"decision={self._decided()}")
        words.append(f"{self.seconds:.2f}s")
        if self.notes:
            words.append("notes: " + "; ".join(_printable(note) for note in self.notes))
        return " ".join(words)

    def fields(self) -> dict[str, Any]:
        """The record as one JSON object, its keys the attributes' names (docs/serve-reference.md)."""
        fields = dataclasses.asdict(self)
        fields["seconds"] = round(self.seconds, 3)
        return fields

    def _decided(self) -> str:
        if self.decision == "call":
            return ",".join(_printable(name) for name in self.calls)
        if self.decision in ("refused", "failed"):
            return f"{self.decision}:{self.error}"
        return str(self.decision)


class RequestLog:
    """An ASGI middleware: each request but ``/health`` gets a :class:`RequestRecord`, handed to
    ``log`` once its response is finished or its client left."""

    def __init__(self, app: ASGIApp, log: Callable[[RequestRecord], None]) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in _UNLOGGED:
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        record = RequestRecord(api=API_NAMES.get(path) or _stored(path))
        if record.api == "other":  # a client sent to the wrong address: which it was
            record.notes.append(f"no route for {scope['method']} {path[:_PATH_SHOWN]}")
        scope[_SCOPE_KEY] = record
        started = time.perf_counter()
        finished = left = False

        async def receiving() -> Message:
            nonlocal left
            message = await receive()
            left = left or (message["type"] == "http.disconnect" and not finished)
            return message

        async def sending(message: Message) -> None:
            nonlocal finished
            if message["type"] == "http.response.start":
                record.status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        try:
            await self.app(scope, receiving, sending)
        finally:
            record.seconds = time.perf_counter() - started
            if left and not finished:
                record.status = CLIENT_LEFT
            elif not record.status:  # raised past the handlers: answered 500 outside this middleware
                record.status, record.decision = 500, "failed"
                record.error = record.error or "internal_error"
            self.log(record)


def record_of(request: Request) -> RequestRecord:
    """The record of ``request``, to fill in; one kept nowhere when the server logs no requests."""
    record = request.scope.get(_SCOPE_KEY)
    if not isinstance(record, RequestRecord):
        record = request.scope[_SCOPE_KEY] = RequestRecord(api=API_NAMES.get(request.url.path, "other"))
    return record


def _printable(text: str) -> str:
    """``text`` on one line of the log: a tool's name or a path is the client's, and may hold a
    line break or a control character, each written as ``?``."""
    return "".join(c if c.isprintable() else "?" for c in text)


def _stored(path: str) -> str:
    return "responses" if path.startswith("/v1/responses/") else "other"
