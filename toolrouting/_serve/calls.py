"""A streamed decision handed out as a tool call while it is written.

The route grammar writes the tool's name first, and only an offered name: so the call's head
(its index, id, type and name) can go out as soon as what is written of the name fits one
offered tool alone (``{"tool":"se`` when ``search`` is the only name beginning so), and the
arguments as they come once ``{"tool":NAME,"arguments":`` is whole. Only text that must
belong to the arguments is sent: closing braces and blanks at the end are held back, as the
last ``}`` closes the action, not the arguments. A reply in another layout (a server that does
not follow the grammar's) has its arguments handed out whole once parsed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._errors import BackendResponseError
from .._names import NONE_TOOL
from .conversation import action_head
from .request import ToolCall

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
        # What every action begins with, up to its name's opening quote: {"tool":"
        self._opening = action_head("", spaced=spaced).split('""', 1)[0] + '"'
        # Each action's name as the grammar writes it, with its closing quote, none's among them.
        self._quoted = {name: json.dumps(name, ensure_ascii=False)[1:] for name in [*names, NONE_TOOL]}
        self._call_id = call_id
        self._text = ""
        self._name: str | None = None
        self._sent = ""

    @property
    def started(self) -> bool:
        """Whether the call's head has gone out."""
        return self._name is not None

    def feed(self, piece: str) -> list[dict[str, Any]]:
        """The deltas that ``piece`` makes certain, in order."""
        self._text += piece
        deltas: list[dict[str, Any]] = []
        if self._name is None:
            self._name = self._named()
            if self._name is not None:
                deltas.append(call_delta(self._call_id, self._name, ""))
        head = None if self._name is None else self._heads[self._name]
        if head is not None and self._text.startswith(head):
            certain = self._text[len(head) :].rstrip(_HELD)
            if len(certain) > len(self._sent):
                deltas.append(call_delta(None, None, certain[len(self._sent) :]))
                self._sent = certain
        return deltas

    def _named(self) -> str | None:
        """The tool the text has begun to name, once no other action's name begins so."""
        if not self._text.startswith(self._opening):
            return None
        partial = self._text[len(self._opening) :]
        # The grammar allows only the offered names: once one alone fits what is written, it is the one.
        fits = [
            name
            for name, quoted in self._quoted.items()
            if quoted.startswith(partial) or partial.startswith(quoted)
        ]
        return fits[0] if len(fits) == 1 and fits[0] != NONE_TOOL else None

    def finish(self, call: ToolCall) -> list[dict[str, Any]]:
        """The deltas still owed once the decision is whole and accepted as ``call``."""
        if self._name is not None and self._name != call.name:
            raise BackendResponseError(
                f"the backend wrote the name {call.name!r} after {self._name!r} began: "
                "it does not follow the route"
            )
        deltas = [] if self.started else [call_delta(call.id, call.name, "")]
        if not call.arguments.startswith(self._sent):
            # Cannot happen when the head matched: the arguments are then the reply's own text.
            raise BackendResponseError("the streamed arguments differ from the accepted action's")
        rest = call.arguments[len(self._sent) :]
        if rest:
            deltas.append(call_delta(None, None, rest))
        return deltas
