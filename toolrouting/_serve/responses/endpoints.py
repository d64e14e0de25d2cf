"""The Responses front's endpoints: ``POST /v1/responses``, and ``GET`` / ``DELETE`` of a stored
response by its id.

As every endpoint, they translate and hold no routing logic: the body is read within its limit
(``transport``), read into the core's request (``reader``), served (``engine``) and written back
in the Responses shapes (``writer``, ``output``); a response asked to be stored is kept
(``store``) for a request that continues it. Errors are answered by the handlers the server's
``endpoints`` registers, in the error shape the front gives them (:data:`FRONT`): OpenAI's, which
the Responses API shares.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..._errors import ChatRequestError
from ..core import Reply, ReplyIds, decode_body
from ..error_replies import openai_error_body
from ..front import Front
from ..request_log import record_of
from ..server_state import checked_state
from ..transport import read_body
from .output import ReasoningOutput, deleted_body
from .reader import read_responses_request
from .shapes import ResponseObject
from .store import ResponseStore, StoredResponse, continued
from .writer import ResponseWriter

__all__ = ["FRONT", "OMITTED_HEADER"]

#: The header that names the hosted tools a response left out of the offer (this server runs
#: none): ``web_search``, or several, comma-separated, in the order sent.
OMITTED_HEADER = "x-toolrouting-omitted-tools"


async def _create(request: Request) -> Response:
    """``POST /v1/responses``: a response, whole or as its stream of events."""
    state, store = checked_state(request), _store(request)
    body = decode_body(await read_body(request))
    asked = read_responses_request(body, store.conversation, state.signer, state.engine.conversation)

    def keep(body: ResponseObject, reply: Reply) -> None:
        store.keep(StoredResponse(body=body, conversation=continued(asked.history, reply)))

    ids = ReplyIds.new(asked.request.model or state.model)
    reasoning = ReasoningOutput(summary=asked.summary, signer=state.signer if asked.encrypted else None)
    writer = ResponseWriter(ids, asked.echo, keep if asked.store else None, asked.namespaces, reasoning)
    response = await state.answer(request, asked.request, writer, asked.conversation)
    if asked.omitted:
        omitted = ", ".join(dict.fromkeys(asked.omitted))
        response.headers[OMITTED_HEADER] = omitted
        state.warn_omitted(asked.omitted)
        record_of(request).notes.append(f"left out hosted tools {omitted}")
    return response


def _store(request: Request) -> ResponseStore:
    """The responses this application keeps: the front's own, in no state another front reads."""
    store = getattr(request.app.state, "responses", None)
    if not isinstance(store, ResponseStore):
        store = request.app.state.responses = ResponseStore()
    return store


def _stored(request: Request) -> StoredResponse:
    response_id = request.path_params["response_id"]
    stored = _store(request).get(response_id)
    if stored is None:
        raise ChatRequestError(
            f"no response with id {response_id[:80]!r} is stored", status=404, code="not_found"
        )
    return stored


async def _stored_response(request: Request) -> Response:
    """``GET /v1/responses/{id}``: a stored response's object; ``DELETE``: forgets it."""
    checked_state(request)
    stored = _stored(request)
    if request.method != "DELETE":  # GET, or the HEAD Starlette takes with it
        return JSONResponse(stored.body)
    _store(request).delete(stored.body["id"])
    return JSONResponse(deleted_body(stored.body["id"]))


#: The Responses front: its endpoints, and errors in OpenAI's shape.
FRONT = Front(
    endpoints=[
        Route("/v1/responses", _create, methods=["POST"]),
        Route("/v1/responses/{response_id}", _stored_response, methods=["GET", "DELETE"]),
    ],
    error_body=openai_error_body,
)
