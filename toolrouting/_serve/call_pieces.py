"""A streamed decision handed out as tool-call pieces while it is written.

The route grammar writes the tool's name first, and only an offered name: so the call's head
(its id and name) can go out as soon as what is written of the name fits one
offered tool alone (``{"tool":"se`` when ``search`` is the only name beginning so), and the
arguments as they come once ``{"tool":NAME,"arguments":`` is whole. Only text that must
belong to the arguments is sent: closing braces and blanks at the end are held back, as the
last ``}`` closes the action, not the arguments. A reply in another layout (a server that does
not follow the grammar's) has its arguments handed out whole once parsed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .._errors import BackendResponseError
from .._names import NONE_TOOL
from .._route_schema import action_head
from .protocol import Piece, ToolCall

__all__ = ["CallStream", "several_pieces"]

_HELD = "} \t\n\r"


class CallStream:
    """Turns the pieces of a decision's text into a call's pieces as soon as they are certain."""

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

    def feed(self, text: str) -> list[Piece]:
        """The call's pieces that ``text``, the decision's next, makes certain, in order."""
        self._text += text
        pieces: list[Piece] = []
        if self._name is None:
            self._name = self._named()
            if self._name is not None:
                pieces.append(_head(self._call_id, self._name))
        head = None if self._name is None else self._heads[self._name]
        if head is not None and self._text.startswith(head):
            certain = self._text[len(head) :].rstrip(_HELD)
            if len(certain) > len(self._sent):
                pieces.append(Piece(arguments=certain[len(self._sent) :]))
                self._sent = certain
        return pieces

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

    def finish(self, call: ToolCall) -> list[Piece]:
        """The pieces still owed once the decision is whole and accepted as ``call``."""
        if self._name is not None and self._name != call.name:
            raise BackendResponseError(
                f"the backend wrote the name {call.name!r} after {self._name!r} began: "
                "it does not follow the route"
            )
        pieces = [] if self.started else [_head(call.id, call.name)]
        if not call.arguments.startswith(self._sent):
            # Cannot happen when the head matched: the arguments are then the reply's own text.
            raise BackendResponseError("the streamed arguments differ from the accepted action's")
        rest = call.arguments[len(self._sent) :]
        if rest:
            pieces.append(Piece(arguments=rest))
        return pieces


def several_pieces(calls: Sequence[ToolCall]) -> list[Piece]:
    """A decision's several calls, once whole: each call's head, then its arguments, under its index."""
    pieces: list[Piece] = []
    for index, call in enumerate(calls):
        pieces.append(Piece(head=ToolCall(id=call.id, name=call.name, arguments=""), index=index))
        if call.arguments:
            pieces.append(Piece(arguments=call.arguments, index=index))
    return pieces


def _head(call_id: str, name: str) -> Piece:
    return Piece(head=ToolCall(id=call_id, name=name, arguments=""))
