"""The responses the Responses front keeps, so that a client can continue one by its id
(``previous_response_id``), read it back (``GET``) or delete it: in memory, at most
``SERVE_STORED_RESPONSES``, the oldest evicted first. A restart forgets them all."""

from __future__ import annotations

import collections
import dataclasses

from ..._limits import SERVE_STORED_RESPONSES
from ..core import InMessage, Reply
from .shapes import ResponseObject

__all__ = ["ResponseStore", "StoredResponse", "continued"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class StoredResponse:
    """One response kept: its object as it was answered, and the conversation a response
    continuing it starts from (its input and its output, without the instructions)."""

    body: ResponseObject
    conversation: tuple[InMessage, ...]


class ResponseStore:
    """At most ``limit`` responses by id, the oldest evicted when one more is kept."""

    def __init__(self, limit: int = SERVE_STORED_RESPONSES) -> None:
        self.limit = limit
        self._kept: collections.OrderedDict[str, StoredResponse] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, stored: StoredResponse) -> None:
        """Keeps ``stored`` under its body's id, evicting the oldest past the limit."""
        self._kept[stored.body["id"]] = stored
        while len(self._kept) > self.limit:
            self._kept.popitem(last=False)

    def get(self, response_id: str) -> StoredResponse | None:
        """The response kept under ``response_id``, ``None`` when none is."""
        return self._kept.get(response_id)

    def conversation(self, response_id: str) -> tuple[InMessage, ...] | None:
        """The conversation a response continuing ``response_id`` starts from, ``None`` when none is kept."""
        stored = self._kept.get(response_id)
        return None if stored is None else stored.conversation

    def delete(self, response_id: str) -> bool:
        """Forgets ``response_id``; whether it was kept."""
        return self._kept.pop(response_id, None) is not None


def continued(conversation: tuple[InMessage, ...], reply: Reply) -> tuple[InMessage, ...]:
    """``conversation`` with ``reply`` after it, as the assistant's message a client would send
    back: its text, or its calls, every one, in order, with the thought they began with."""
    answered = InMessage(
        role="assistant",
        content=reply.content or "",
        tool_calls=reply.calls,
        thought=reply.thought if reply.calls else None,
    )
    return (*conversation, answered)
