"""The Responses front's endpoints: ``POST /v1/responses``, and ``GET`` / ``DELETE`` of a stored
response by its id.

As every endpoint, they translate and hold no routing logic: the body is read within its limit
(``transport``), read into the core's request (``reader``), served (``serving``) and written back
in the Responses shapes (``writer``, ``output``); a response asked to be stored is kept
(``store``) for a request that continues it. Errors are answered by the handlers the server's ``routes``
registers, in OpenAI's error shape, which the Responses API shares.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..._errors import ChatRequestError
from ..protocol import Reply, ReplyIds, decode_body
from ..request_log import record_of
from ..state import ServerState, checked_state
from ..transport import read_body
from .output import Thinking, deleted_body
from .reader import read_responses_request
from .shapes import ResponseObject
from .store import StoredResponse, continued
from .writer import ResponseWriter

__all__ = ["OMITTED_HEADER", "RESPONSES_ROUTES"]

#: The header that names the hosted tools a response left out of the offer (this server runs
#: none): ``web_search``, or several, comma-separated, in the order sent.
OMITTED_HEADER = "x-toolrouting-omitted-tools"


async def _create(request: Request) -> Response:
    """``POST /v1/responses``: a response, whole or as its stream of events."""
    state = checked_state(request)
    asked = read_responses_request(
        decode_body(await read_body(request)), state.responses.conversation, state.signer
    )

    def keep(body: ResponseObject, reply: Reply) -> None:
        state.responses.keep(StoredResponse(body=body, conversation=continued(asked.history, reply)))

    ids = ReplyIds.new(asked.request.model or state.model)
    thinking = Thinking(summary=asked.summary, signer=state.signer if asked.encrypted else None)
    writer = ResponseWriter(ids, asked.echo, keep if asked.store else None, asked.namespaces, thinking)
    response = await state.answer(request, asked.request, writer)
    if asked.omitted:
        omitted = ", ".join(dict.fromkeys(asked.omitted))
        response.headers[OMITTED_HEADER] = omitted
        state.warn_omitted(asked.omitted)
        record_of(request).notes.append(f"left out hosted tools {omitted}")
    return response


def _stored(request: Request, state: ServerState) -> StoredResponse:
    response_id = request.path_params["response_id"]
    stored = state.responses.get(response_id)
    if stored is None:
        raise ChatRequestError(
            f"no response with id {response_id[:80]!r} is stored", status=404, code="not_found"
        )
    return stored


async def _stored_response(request: Request) -> Response:
    """``GET /v1/responses/{id}``: a stored response's object; ``DELETE``: forgets it."""
    state = checked_state(request)
    stored = _stored(request, state)
    if request.method != "DELETE":  # GET, or the HEAD Starlette takes with it
        return JSONResponse(stored.body)
    state.responses.delete(stored.body["id"])
    return JSONResponse(deleted_body(stored.body["id"]))


RESPONSES_ROUTES = [
    Route("/v1/responses", _create, methods=["POST"]),
    Route("/v1/responses/{response_id}", _stored_response, methods=["GET", "DELETE"]),
]
