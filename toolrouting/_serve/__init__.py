"""``toolrouting serve``: OpenAI's chat completions in front of any backend, the tool decision routed.

``request`` reads a request body into a checked value (``choice``: its ``tool_choice``);
``conversation`` turns its messages into the conversation a routing run would send (an
assistant's call as its action, a tool message as the result message); ``plan`` says which
decision and which answer a request asks for; ``chat`` runs them on the backend, whole or
streamed, with ``calls`` handing out a streamed tool call as it is written; ``responses``
writes OpenAI's shapes, ``errors`` maps the error tree onto them; ``app`` is the Starlette
application and its uvicorn configuration.
"""

from .app import Admission, serve_app, server_config
from .chat import ServedChat
from .conversation import Conversation, action_text, arguments_text, conversation_of
from .errors import ErrorReply, error_reply
from .plan import Decision, decision_of
from .request import ChatRequest, decode_body, read_chat_request
from .responses import Piece, Reply, completion_body

__all__ = [
    "Admission",
    "ChatRequest",
    "Conversation",
    "Decision",
    "ErrorReply",
    "Piece",
    "Reply",
    "ServedChat",
    "action_text",
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
