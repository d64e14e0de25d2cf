"""A streamed decision handed out as a tool call while it is written.

The route grammar writes the tool's name first, so the call's head (its index, id, type and
name) can go out as soon as ``{"tool":NAME,"arguments":`` is whole, and the arguments as they
come. Only text that must belong to the arguments is sent: closing braces and blanks at the
end are held back, as the last ``}`` closes the action, not the arguments. A reply in another
layout (a server that does not follow the grammar's) is handed out whole once parsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import BackendResponseError
from .conversation import action_head
from .responses import OutCall

__all__ = ["CallStream", "call_delta"]

_HELD = "} \t\n\r"


def call_delta(call_id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
    """The ``delta`` of a chunk that carries a tool call's head (id and name) or its arguments."""
    entry: dict[str, Any] = {"index": 0}
    function: dict[str, Any] = {"arguments": arguments}
    if call_id is not None:
        entry["id"] = call_id
        entry["type"] = "function"
        function = {"name": name, "arguments": arguments}
    entry["function"] = function
    delta: dict[str, Any] = {"tool_calls": [entry]}
    if call_id is not None:
        delta = {"role": "assistant", "content": None, **delta}
    return delta


class CallStream:
    """Turns the pieces of a decision into tool-call deltas as soon as they are certain."""

    def __init__(self, names: Sequence[str], call_id: str, *, spaced: bool) -> None:
        self._heads = {name: action_head(name, spaced=spaced) for name in names}
        self._call_id = call_id
        self._text = ""
        self._head: str | None = None
        self._sent = ""

    @property
    def started(self) -> bool:
        """Whether the call's head has gone out."""
        return self._head is not None

    def feed(self, piece: str) -> list[dict[str, Any]]:
        """The deltas that ``piece`` makes certain, in order."""
        self._text += piece
        deltas: list[dict[str, Any]] = []
        if self._head is None:
            for name, head in self._heads.items():
                if self._text.startswith(head):
                    self._head = head
                    deltas.append(call_delta(self._call_id, name, ""))
                    break
        if self._head is not None:
            body = self._text[len(self._head) :]
            certain = body.rstrip(_HELD)
            if len(certain) > len(self._sent):
                deltas.append(call_delta(None, None, certain[len(self._sent) :]))
                self._sent = certain
        return deltas

    def finish(self, call: OutCall) -> list[dict[str, Any]]:
        """The deltas still owed once the decision is whole and accepted as ``call``."""
        deltas = [] if self.started else [call_delta(call.id, call.name, "")]
        if not call.arguments.startswith(self._sent):
            # Cannot happen when the head matched: the arguments are then the reply's own text.
            raise BackendResponseError("the streamed arguments differ from the accepted action's")
        rest = call.arguments[len(self._sent) :]
        if rest:
            deltas.append(call_delta(None, None, rest))
        return deltas
