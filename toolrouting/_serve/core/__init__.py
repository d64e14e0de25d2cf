"""The server's one core, in no API's shape: what every front reads into and writes from, the
conversation a request's messages make, the decision and the answer it asks for, and the serving
of both on the backend, whole or streamed.

A front (``chat``, ``responses``, ``messages``) and the plumbing that carries its requests import
the core from here alone, never from its modules; nothing in the core imports a front.
"""

from .conversation import Conversation, arguments_text, conversation_of, ends_with_user
from .engine import RoutedEngine
from .exchange import (
    FinishReason,
    InMessage,
    OutputFormat,
    Piece,
    Reasoning,
    Reply,
    ReplyIds,
    ReplyWriter,
    ServeRequest,
    ToolCall,
    ToolChoice,
    body_too_large,
    decode_body,
    server_sent_event,
)
from .plan import Decision, checked_tools, decision_of

__all__ = [
    "Conversation",
    "Decision",
    "FinishReason",
    "InMessage",
    "OutputFormat",
    "Piece",
    "Reasoning",
    "Reply",
    "ReplyIds",
    "ReplyWriter",
    "RoutedEngine",
    "ServeRequest",
    "ToolCall",
    "ToolChoice",
    "arguments_text",
    "body_too_large",
    "checked_tools",
    "conversation_of",
    "decision_of",
    "decode_body",
    "ends_with_user",
    "server_sent_event",
]
