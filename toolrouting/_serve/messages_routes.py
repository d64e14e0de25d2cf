"""The Messages front's endpoints: ``POST /v1/messages`` and ``POST /v1/messages/count_tokens``.

An endpoint translates and holds no routing logic: the body is read within its limit
(``transport``), read into the core's request (``messages_request``), served (``chat``) and
written back in Anthropic's shapes (``messages_shapes``). ``anthropic-version`` and
``anthropic-beta`` are accepted and change nothing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import AsyncGenerator, Sequence

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._errors import ToolRoutingError
from .errors import error_reply
from .messages_request import read_messages_request
from .messages_shapes import MessageEvents, MessageIds, count_body, message_error_body
from .replies import Piece
from .request import decode_body
from .served import served_of
from .transport import check_key, event_stream, read_body, server_sent_event, whole_reply

__all__ = ["COUNTED_CHARS_PER_TOKEN", "MESSAGES_PATH", "MESSAGES_ROUTES"]

#: Where the front's endpoints live: an error under it is answered in Anthropic's shape.
MESSAGES_PATH = "/v1/messages"

#: ``count_tokens`` counts without a tokenizer (no backend offers one): one token for every
#: four characters of what the backend would be sent, rounded up, the rule of thumb for
#: English text under the usual BPE vocabularies. An estimate, never the backend's own count.
COUNTED_CHARS_PER_TOKEN = 4


async def _messages(request: Request) -> Response:
    served = served_of(request)
    check_key(request, served.require_key)
    body = decode_body(await read_body(request))
    chat_request = read_messages_request(body, spaced=served.chat.spaced)
    writer = MessageEvents(MessageIds.new(chat_request.model or served.model))
    if not chat_request.stream:
        return await whole_reply(
            request, served.admission, lambda: served.chat.reply(chat_request), writer.message
        )
    events = functools.partial(_events, writer=writer, secrets=served.secrets)
    return await event_stream(request, served.admission, served.chat.stream(chat_request), events)


async def _events(
    first: Piece, pieces: AsyncGenerator[Piece], *, writer: MessageEvents, secrets: Sequence[str]
) -> AsyncGenerator[bytes]:
    """The stream's events; a failure after the status went out is one ``error`` event that ends it."""
    try:
        for event in writer.start():
            yield server_sent_event(event, event["type"])
        piece: Piece | None = first
        while piece is not None:
            for event in writer.of(piece):
                yield server_sent_event(event, event["type"])
            piece = await anext(pieces, None)
    except ToolRoutingError as error:
        yield server_sent_event(message_error_body(error_reply(error, secrets)), "error")


async def _count_tokens(request: Request) -> Response:
    served = served_of(request)
    check_key(request, served.require_key)
    body = decode_body(await read_body(request))
    chat_request = read_messages_request(body, spaced=served.chat.spaced, counting=True)
    characters = sum(len(message["content"]) for message in served.chat.sent(chat_request))
    return JSONResponse(count_body(math.ceil(characters / COUNTED_CHARS_PER_TOKEN)))


MESSAGES_ROUTES = [
    Route(MESSAGES_PATH, _messages, methods=["POST"]),
    Route(f"{MESSAGES_PATH}/count_tokens", _count_tokens, methods=["POST"]),
]
