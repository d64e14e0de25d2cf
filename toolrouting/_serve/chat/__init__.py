"""The chat completions front, OpenAI's chat completions API: its request read into the core's
request (``reader``, the ``messages`` in ``turns``), its reply written in OpenAI's shapes
(``writer``), and its endpoint (``endpoints``, imported by the app alone, as it needs Starlette)."""

from .reader import read_chat_request
from .writer import ChatWriter

__all__ = ["ChatWriter", "read_chat_request"]
