"""The endpoints: ``/health``, ``/v1/models``, the chat completions front and the other fronts'
routes (``messages_routes``), and the handlers that answer every error in the shape of the
front its path is under: Anthropic's below ``/v1/messages``, OpenAI's elsewhere.

An endpoint translates and holds no routing logic: the body is read within its limit
(``transport``), checked (``request``), served (``chat``) and written back in OpenAI's shapes
(``chat_shapes``); ``errors`` is the one table from the error tree to those shapes.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._errors import ToolRoutingError
from .chat_shapes import ReplyIds, chunk_body, completion_body
from .errors import ErrorReply, error_reply, http_error_reply
from .messages_routes import MESSAGES_PATH, MESSAGES_ROUTES
from .messages_shapes import message_error_body
from .replies import Piece
from .request import ChatRequest, decode_body, read_chat_request
from .responses_routes import create_response, stored_response
from .served import served_of
from .transport import check_key, event_stream, read_body, server_sent_event, whole_reply

__all__ = ["EXCEPTION_HANDLERS", "ROUTES"]


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _models(request: Request) -> Response:
    served = served_of(request)
    check_key(request, served.require_key)
    model = {"id": served.model, "object": "model", "created": 0, "owned_by": "toolrouting"}
    return JSONResponse({"object": "list", "data": [model]})


async def _chat_completions(request: Request) -> Response:
    served = served_of(request)
    check_key(request, served.require_key)
    chat_request = read_chat_request(decode_body(await read_body(request)))
    ids = ReplyIds.new(chat_request.model or served.model)
    if chat_request.stream:

        def events(first: Piece, pieces: AsyncGenerator[Piece]) -> AsyncGenerator[bytes]:
            return _events(first, pieces, ids, chat_request, served.secrets)

        return await event_stream(request, served.admission, served.chat.stream(chat_request), events)
    return await whole_reply(
        request,
        served.admission,
        lambda: served.chat.reply(chat_request),
        lambda reply: completion_body(reply, ids, legacy=chat_request.legacy_functions),
    )


async def _events(
    first: Piece, pieces: AsyncGenerator[Piece], ids: ReplyIds, asked: ChatRequest, secrets: Sequence[str]
) -> AsyncGenerator[bytes]:
    """The stream's chunks; a failure after the status went out is one error event that ends it."""
    try:
        piece: Piece | None = first
        while piece is not None:
            if piece.usage is None or asked.include_usage:
                yield server_sent_event(chunk_body(piece, ids, legacy=asked.legacy_functions))
            piece = await anext(pieces, None)
        yield server_sent_event("[DONE]")
    except ToolRoutingError as error:
        yield server_sent_event(error_reply(error, secrets).body)


def _answer(request: Request, reply: ErrorReply) -> Response:
    """The error table's answer in the shape of the front the request came to."""
    path = request.url.path
    front = path == MESSAGES_PATH or path.startswith(f"{MESSAGES_PATH}/")
    body = message_error_body(reply) if front else reply.body
    return JSONResponse(body, status_code=reply.status, headers=reply.headers)


async def _error(request: Request, error: Exception) -> Response:
    return _answer(request, error_reply(error, served_of(request).secrets))


async def _http_error(request: Request, error: Exception) -> Response:
    status = error.status_code if isinstance(error, HTTPException) else 400
    detail = error.detail if isinstance(error, HTTPException) else str(error)
    headers = getattr(error, "headers", None)
    return _answer(request, http_error_reply(f"{request.method} {request.url.path}", status, detail, headers))


ROUTES = [
    Route("/health", _health, methods=["GET"]),
    Route("/v1/models", _models, methods=["GET"]),
    Route("/v1/chat/completions", _chat_completions, methods=["POST"]),
    *MESSAGES_ROUTES,
    Route("/v1/responses", create_response, methods=["POST"]),
    Route("/v1/responses/{response_id}", stored_response, methods=["GET", "DELETE"]),
]

# ToolRoutingError by name: Starlette hands Exception's handler to its outermost layer, which
# answers and then re-raises; ours are answered and done.
EXCEPTION_HANDLERS = {ToolRoutingError: _error, HTTPException: _http_error, Exception: _error}
