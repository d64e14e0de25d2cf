"""The Messages front, Anthropic's Messages API: its request read into the core's request
(``reader``, the ``system`` and ``messages`` in ``turns``), its message, stream events, token
count and errors written in Anthropic's shapes (``writer``), and its endpoints (``endpoints``,
imported by the app alone, as it needs Starlette)."""

from .reader import read_messages_request
from .writer import MessageWriter, message_error_body

__all__ = ["MessageWriter", "message_error_body", "read_messages_request"]
