"""The Responses front's endpoints: ``POST /v1/responses``, and ``GET`` / ``DELETE`` of a stored
response by its id.

As every endpoint, they translate and hold no routing logic: the body is read within its limit
(``transport``), checked into the core's request (``responses_request``), served (``chat``) and
written back in the Responses shapes (``responses_shapes``); a response asked to be stored is kept
(``responses_store``) for a request that continues it. Errors are answered by the handlers that
``routes`` registers, in OpenAI's error shape, which the Responses API shares.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .._errors import ChatRequestError, ToolRoutingError
from .errors import error_reply
from .replies import Piece, Reply
from .request import decode_body
from .responses_request import ResponsesRequest, read_responses_request
from .responses_shapes import ResponseEvents, ResponseIds, deleted_body, event_bytes, response_body
from .responses_store import StoredResponse, continued
from .served import Served, served_of
from .transport import check_key, event_stream, gone, read_body, unless_gone

__all__ = ["create_response", "stored_response"]


def _served(request: Request) -> Served:
    """The application's ``Served``, once the request's key has been checked."""
    served = served_of(request)
    check_key(request, served.require_key)
    return served


async def create_response(request: Request) -> Response:
    """``POST /v1/responses``: a response, whole or as its stream of events."""
    served = _served(request)
    asked = read_responses_request(decode_body(await read_body(request)), served.responses.conversation)
    ids = ResponseIds.new(asked.chat.model or served.model, asked.echo)
    if asked.chat.stream:

        def events(first: Piece, pieces: AsyncGenerator[Piece]) -> AsyncGenerator[bytes]:
            return _events(first, pieces, ids, asked, served)

        return await event_stream(request, served.admission, served.chat.stream(asked.chat), events)
    with served.admission.place():
        reply = await unless_gone(request, lambda: served.chat.reply(asked.chat))
    if reply is None:
        return gone()
    body = response_body(ids, reply)
    _keep(served, asked, body, reply)
    return JSONResponse(body)


async def _events(
    first: Piece, pieces: AsyncGenerator[Piece], ids: ResponseIds, asked: ResponsesRequest, served: Served
) -> AsyncGenerator[bytes]:
    """The stream's events; a failure after the status went out is one ``error`` event that ends it."""
    events = ResponseEvents(ids)
    try:
        for event in events.opening():
            yield event_bytes(event)
        piece: Piece | None = first
        while piece is not None:
            for event in events.of(piece):
                yield event_bytes(event)
            piece = await anext(pieces, None)
    except ToolRoutingError as error:
        yield event_bytes(events.error(error_reply(error, served.secrets)))
        return
    if events.reply is not None and events.body is not None:
        _keep(served, asked, events.body, events.reply)


def _keep(served: Served, asked: ResponsesRequest, body: dict[str, object], reply: Reply) -> None:
    if asked.store:
        served.responses.keep(StoredResponse(body=body, conversation=continued(asked.history, reply)))


def _stored(request: Request, served: Served) -> StoredResponse:
    response_id = request.path_params["response_id"]
    stored = served.responses.get(response_id)
    if stored is None:
        raise ChatRequestError(
            f"no response with id {response_id[:80]!r} is stored", status=404, code="not_found"
        )
    return stored


async def stored_response(request: Request) -> Response:
    """``GET /v1/responses/{id}``: a stored response's object; ``DELETE``: forgets it."""
    served = _served(request)
    stored = _stored(request, served)
    if request.method != "DELETE":  # GET, or the HEAD Starlette takes with it
        return JSONResponse(stored.body)
    served.responses.delete(stored.body["id"])
    return JSONResponse(deleted_body(stored.body["id"]))
