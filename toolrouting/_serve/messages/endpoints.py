"""The Messages front's endpoints: ``POST /v1/messages`` and ``POST /v1/messages/count_tokens``.

An endpoint translates and holds no routing logic: the body is read within its limit
(``transport``), read into the core's request (``reader``), served (``engine``) and written
back in Anthropic's shapes (``writer``). ``anthropic-version`` and ``anthropic-beta`` are
accepted and change nothing. An error of a request to these endpoints, or to a path below them
(``/v1/messages/batches``), is answered by the handlers the server's ``endpoints`` registers, in
the error shape the front gives them (:data:`FRONT`): Anthropic's.
"""

from __future__ import annotations

import math

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..._limits import CHARS_PER_TOKEN
from ..core import ReplyIds, decode_body
from ..front import Front
from ..request_log import record_of
from ..server_state import checked_state
from ..transport import read_body
from .reader import read_messages_request
from .writer import MessageWriter, count_body, message_error_body

__all__ = ["FRONT", "MESSAGES_PATH"]

#: The Messages endpoint's path; ``count_tokens`` lies below it.
MESSAGES_PATH = "/v1/messages"


async def _messages(request: Request) -> Response:
    state = checked_state(request)
    body = decode_body(await read_body(request))
    asked = read_messages_request(body, signer=state.signer)
    shown = asked.reasoning is None or asked.reasoning.shown
    writer = MessageWriter(ReplyIds.new(asked.model or state.model), state.signer, shown=shown)
    return await state.answer(request, asked, writer)


async def _count_tokens(request: Request) -> Response:
    """Counts with the backend's tokenizer where it offers one (the embedded model's
    ``count_prompt_tokens``: the very count its context check refuses a prompt by); without one (a
    server's backend), estimates what the backend would be sent at ``CHARS_PER_TOKEN``, rounded up."""
    state = checked_state(request)
    body = decode_body(await read_body(request))
    asked = read_messages_request(body, counting=True, signer=state.signer)
    record_of(request).asked(tools=len(asked.tools), stream=False)
    counted = await state.engine.prompt_tokens(asked)
    if counted is None:
        characters = sum(len(message["content"]) for message in state.engine.sent(asked))
        counted = math.ceil(characters / CHARS_PER_TOKEN)
    return JSONResponse(count_body(counted))


#: The Messages front: its endpoints, and errors in Anthropic's shape.
FRONT = Front(
    endpoints=[
        Route(MESSAGES_PATH, _messages, methods=["POST"]),
        Route(f"{MESSAGES_PATH}/count_tokens", _count_tokens, methods=["POST"]),
    ],
    error_body=message_error_body,
)
