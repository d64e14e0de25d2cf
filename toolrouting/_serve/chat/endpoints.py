"""The chat completions front's endpoint: ``POST /v1/chat/completions``.

An endpoint translates and holds no routing logic: the body is read within its limit
(``transport``), read into the core's request (``reader``), served (``engine``) and written
back in OpenAI's shapes (``writer``). Errors are answered by the handlers the server's
``endpoints`` registers, in the error shape the front gives them (:data:`FRONT`): OpenAI's.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..core import ReplyIds, decode_body
from ..error_replies import openai_error_body
from ..front import Front
from ..server_state import checked_state
from ..transport import read_body
from .reader import read_chat_request
from .writer import ChatWriter

__all__ = ["FRONT"]


async def _chat_completions(request: Request) -> Response:
    state = checked_state(request)
    asked = read_chat_request(decode_body(await read_body(request)))
    ids = ReplyIds.new(asked.model or state.model)
    writer = ChatWriter(ids, legacy=asked.legacy_functions, include_usage=asked.include_usage)
    return await state.answer(request, asked, writer)


#: The chat completions front: its endpoint, and errors in OpenAI's shape.
FRONT = Front(
    endpoints=[Route("/v1/chat/completions", _chat_completions, methods=["POST"])],
    error_body=openai_error_body,
)
