"""The server's route table: ``/health``, ``/v1/models``, every front's endpoints (``chat``,
``responses``, ``messages``), and the handlers that answer every error in the shape of the front
whose endpoints reach the request's path (each front's ``FRONT`` gives its endpoints and its
error writer), OpenAI's where no front's do.

``error_replies`` is the one table from the error tree to those answers; Starlette's
``exception_handlers`` apply it once, so no endpoint catches an error of its own. A fourth front
is one more ``FRONT`` in :data:`FRONTS`: no handler here names an API's shape.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._errors import ToolRoutingError
from .chat import endpoints as chat
from .error_replies import ErrorReply, error_reply, http_error_reply
from .messages import endpoints as messages
from .request_log import record_of
from .responses import endpoints as responses
from .server_state import checked_state, state_of

__all__ = ["ENDPOINTS", "EXCEPTION_HANDLERS", "FRONTS"]

#: The fronts, each its endpoints and its error writer, in the order their endpoints are tried.
FRONTS = (chat.FRONT, messages.FRONT, responses.FRONT)


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def _models(request: Request) -> Response:
    state = checked_state(request)
    model = {"id": state.model, "object": "model", "created": 0, "owned_by": "toolrouting"}
    return JSONResponse({"object": "list", "data": [model]})


def _answer(request: Request, reply: ErrorReply) -> Response:
    """The error table's answer in the shape of the front the request came to."""
    front = next((front for front in FRONTS if front.holds(request.url.path)), None)
    body = reply.body if front is None else front.error_body(reply)
    record_of(request).failed(reply)
    return JSONResponse(body, status_code=reply.status, headers=reply.headers)


async def _error(request: Request, error: Exception) -> Response:
    return _answer(request, error_reply(error, state_of(request).secrets))


async def _http_error(request: Request, error: Exception) -> Response:
    status = error.status_code if isinstance(error, HTTPException) else 400
    detail = error.detail if isinstance(error, HTTPException) else str(error)
    headers = getattr(error, "headers", None)
    return _answer(request, http_error_reply(f"{request.method} {request.url.path}", status, detail, headers))


ENDPOINTS = [
    Route("/health", _health, methods=["GET"]),
    Route("/v1/models", _models, methods=["GET"]),
    *(route for front in FRONTS for route in front.endpoints),
]

# ToolRoutingError by name: Starlette hands Exception's handler to its outermost layer, which
# answers and then re-raises; ours are answered and done.
EXCEPTION_HANDLERS = {ToolRoutingError: _error, HTTPException: _http_error, Exception: _error}
