"""``toolrouting serve``: OpenAI's chat completions and Responses APIs and Anthropic's Messages API
in front of any backend, the tool decision routed.

The core (``core``), in no API's shape, is one package the fronts call through what it exports:
``exchange`` is what every front reads into and writes from (the request, ``ServeRequest``; the
reply whole or in pieces; the writer a front writes them with; the body decoder);
``conversation`` turns a request's messages into the conversation a routing run would send (an
assistant's call as its action, a tool message as the result message); ``plan`` says which
decision and which answer a request asks for, and checks its tools; ``engine``
(``RoutedEngine``) runs them on the backend, whole or streamed, with ``call_pieces`` handing out
a streamed tool call as it is written and ``decision_reply`` reading a decision's reply;
``output_format`` checks an answer's schema against the backend's compiler.

A front is a subpackage of the same three jobs under the same names: ``reader`` reads a body
into a ``ServeRequest`` (its conversation in ``turns``), with the field checks every reader
shares (``fields``) and the reasoning each API asks for (``reasoning``), ``writer`` writes the
reply in its API's shapes, ``endpoints`` holds its endpoints and its error writer (a ``Front``,
``front``): ``chat`` for chat completions, ``responses`` for the Responses API (and ``store``,
its stored responses), ``messages`` for Anthropic's Messages API. ``error_replies`` maps the error tree
onto an error's status and OpenAI's error shape, which the Messages front writes in Anthropic's.

What every front shares on the wire (the queue, the body's limit, the key check, the disconnect,
the whole reply, the one loop that streams) is ``transport``'s, and what every endpoint reads
from the app ``server_state``'s, in no API's shape; ``endpoints`` is the route table of every
front and the error handlers; ``app`` builds the Starlette application and its uvicorn
configuration, importing both only when called; the server's own limits are named in
``_limits``; ``request_log`` is the line each request is logged with, made in one place from the
record the transport, the core and the error handlers fill in. No import climbs back up: the core
imports no front and nothing above it, and only the route table and the app import a front.
"""

from .._limits import SERVE_ANSWER_TOKENS
from .app import serve_app, server_config, stopping_server
from .chat import read_chat_request
from .core import (
    Conversation,
    Decision,
    Piece,
    Reply,
    RoutedEngine,
    ServeRequest,
    arguments_text,
    conversation_of,
    decision_of,
    decode_body,
)
from .error_replies import ErrorReply, error_reply
from .messages import read_messages_request
from .request_log import RequestRecord
from .responses import read_responses_request

__all__ = [
    "SERVE_ANSWER_TOKENS",
    "Conversation",
    "Decision",
    "ErrorReply",
    "Piece",
    "Reply",
    "RequestRecord",
    "RoutedEngine",
    "ServeRequest",
    "arguments_text",
    "conversation_of",
    "decision_of",
    "decode_body",
    "error_reply",
    "read_chat_request",
    "read_messages_request",
    "read_responses_request",
    "serve_app",
    "server_config",
    "stopping_server",
]
