"""``toolrouting serve``: OpenAI's chat completions and Anthropic's Messages API in front of any
backend, the tool decision routed.

The core, in no API's shape: ``conversation`` turns a request's messages into the conversation
a routing run would send (an assistant's call as its action, a tool message as the result
message); ``plan`` says which decision and which answer a request asks for; ``chat`` runs them
on the backend, whole or streamed, with ``calls`` handing out a streamed tool call as it is
written, as the ``replies`` it gives.

The chat completions front: ``request`` reads a request body into a checked value (``choice``:
its ``tool_choice``, ``output_format``: its ``response_format``, the schema checked against the
backend's grammar compiler); ``chat_shapes`` writes OpenAI's shapes, ``errors`` maps the error tree onto
them; ``routes`` holds the endpoints. The Messages front, Anthropic's API: ``messages_request``
reads its body into the same ``ChatRequest``, ``messages_shapes`` writes Anthropic's message,
stream events and errors, ``messages_routes`` holds its endpoints. The Responses front:
``responses_request`` reads a body into the same ``ChatRequest``; ``responses_shapes`` writes the
response object and its events, ``responses_store`` keeps recent responses for
``previous_response_id``; ``responses_routes`` holds its endpoints.

What every front shares on the wire (the queue, the body's limit, the key check, the
disconnect, the whole reply, the event stream) is ``transport``'s; ``app`` builds the
Starlette application and its uvicorn configuration, importing both only when called;
``limits`` names the server's own limits.
"""

from .app import serve_app, server_config
from .chat import ServedChat
from .chat_shapes import completion_body
from .conversation import Conversation, arguments_text, conversation_of
from .errors import ErrorReply, error_reply
from .limits import SERVE_ANSWER_TOKENS
from .plan import Decision, decision_of
from .replies import Piece, Reply
from .request import ChatRequest, decode_body, read_chat_request

__all__ = [
    "SERVE_ANSWER_TOKENS",
    "ChatRequest",
    "Conversation",
    "Decision",
    "ErrorReply",
    "Piece",
    "Reply",
    "ServedChat",
    "arguments_text",
    "completion_body",
    "conversation_of",
    "decision_of",
    "decode_body",
    "error_reply",
    "read_chat_request",
    "serve_app",
    "server_config",
]
