"""The Responses front, OpenAI's Responses API: its request read into the core's request
(``reader``, the conversation of ``input`` and ``previous_response_id`` in ``turns``), its
response and stream events written in the Responses shapes (``shapes``: the response object and
its items built by ``output``, the stream's events by ``writer``), the recent responses
kept for ``previous_response_id``, ``GET`` and ``DELETE`` (``store``), and its endpoints
(``endpoints``, imported by the app alone, as it needs Starlette)."""

from .reader import ResponsesRequest, read_responses_request
from .store import ResponseStore, StoredResponse
from .writer import ResponseWriter

__all__ = ["ResponseStore", "ResponseWriter", "ResponsesRequest", "StoredResponse", "read_responses_request"]
