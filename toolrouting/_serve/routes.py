"""The server's route table: ``/health``, ``/v1/models``, every front's endpoints (``chat``,
``responses``, ``messages``), and the handlers that answer every error in the shape of the front
its path is under: Anthropic's below ``/v1/messages``, OpenAI's elsewhere.

``errors`` is the one table from the error tree to those answers; Starlette's ``exception_handlers``
apply it once, so no endpoint catches an error of its own.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._errors import ToolRoutingError
from .chat.routes import CHAT_ROUTES
from .errors import ErrorReply, error_reply, http_error_reply
from .messages import message_error_body
from .messages.routes import MESSAGES_PATH, MESSAGES_ROUTES
from .request_log import record_of
from .responses.routes import RESPONSES_ROUTES
from .state import checked_state, state_of

__all__ = ["EXCEPTION_HANDLERS", "ROUTES"]


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _models(request: Request) -> Response:
    state = checked_state(request)
    model = {"id": state.model, "object": "model", "created": 0, "owned_by": "toolrouting"}
    return JSONResponse({"object": "list", "data": [model]})


def _answer(request: Request, reply: ErrorReply) -> Response:
    """The error table's answer in the shape of the front the request came to."""
    path = request.url.path
    front = path == MESSAGES_PATH or path.startswith(f"{MESSAGES_PATH}/")
    body = message_error_body(reply) if front else reply.body
    record_of(request).failed(reply)
    return JSONResponse(body, status_code=reply.status, headers=reply.headers)


async def _error(request: Request, error: Exception) -> Response:
    return _answer(request, error_reply(error, state_of(request).secrets))


async def _http_error(request: Request, error: Exception) -> Response:
    status = error.status_code if isinstance(error, HTTPException) else 400
    detail = error.detail if isinstance(error, HTTPException) else str(error)
    headers = getattr(error, "headers", None)
    return _answer(request, http_error_reply(f"{request.method} {request.url.path}", status, detail, headers))


ROUTES = [
    Route("/health", _health, methods=["GET"]),
    Route("/v1/models", _models, methods=["GET"]),
    *CHAT_ROUTES,
    *MESSAGES_ROUTES,
    *RESPONSES_ROUTES,
]

# ToolRoutingError by name: Starlette hands Exception's handler to its outermost layer, which
# answers and then re-raises; ours are answered and done.
EXCEPTION_HANDLERS = {ToolRoutingError: _error, HTTPException: _http_error, Exception: _error}
