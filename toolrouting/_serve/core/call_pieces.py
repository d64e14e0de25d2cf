"""A streamed decision handed out as tool-call pieces while it is written.

The route grammar writes the tool's name first, and only an offered name: so the call's head
(its id and name) can go out as soon as what is written of the name fits one
offered tool alone (``{"tool":"se`` when ``search`` is the only name beginning so), and the
arguments as they come once ``{"tool":NAME,"arguments":`` is whole. Only text that must
belong to the arguments is sent: closing braces and blanks at the end are held back, as the
last ``}`` closes the action, not the arguments. A reply in another layout (a server that does
not follow the grammar's) has its arguments handed out whole once parsed. The pieces come from
the backend's stream where it has one, else from its whole completion (:func:`backend_pieces`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import TypeGuard

from ..._backends import AsyncBackend, AsyncStreamingBackend, Completion, Message, TextDelta
from ..._errors import BackendResponseError
from ..._names import NONE_TOOL
from ..._route_schema import action_head, route_separators
from .exchange import Piece, ToolCall

__all__ = ["CallStream", "ThoughtStream", "backend_pieces", "cut_thought", "several_pieces"]

_HELD = "} \t\n\r"
#: A JSON string's escape, whole: ``\n``, ``\"``, ``\u00e9``; a text that ends inside one waits.
_ESCAPE_LENGTH = {"u": 6}


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


class ThoughtStream:
    """The decision's text when the route has a ``thought`` slot: the thought's text handed out
    as it is written (the grammar writes it first), then the rest of the action as an action
    without the slot reads (``{"tool":...``), for the :class:`CallStream`. A text in another
    layout (a server that does not follow the grammar's) goes on as it is."""

    def __init__(self, *, spaced: bool) -> None:
        comma, colon = route_separators(spaced)
        self._opening = f'{{"thought"{colon}"'
        self._comma = comma
        self._raw = ""
        """The text so far, while the thought is being written."""
        self._sent = ""
        self._after: str | None = None
        """What followed the thought, while it is too short to hold the separator."""
        self._through = False
        """Whether the text goes on as it comes: the thought is behind it, or there is none."""

    def feed(self, text: str) -> tuple[list[str], str]:
        """The parts of the thought ``text`` makes certain, and what of the text follows the thought."""
        if self._through:
            return [], text
        if self._after is not None:
            return [], self._past(text)
        self._raw += text
        if not self._raw.startswith(self._opening):
            if self._opening.startswith(self._raw):
                return [], ""  # the opening is still being written
            self._through = True
            return [], self._raw
        body = self._raw[len(self._opening) :]
        end = _closing_quote(body)
        decoded = _decoded(body[:end] if end is not None else _whole_escapes(body))
        parts = [decoded[len(self._sent) :]] if len(decoded) > len(self._sent) else []
        self._sent = max(decoded, self._sent, key=len)
        if end is None:
            return parts, ""
        self._after = ""
        return parts, self._past(body[end + 1 :])

    def _past(self, text: str) -> str:
        """The text after the thought, its separator taken off, once the separator is whole."""
        after = (self._after or "") + text
        if len(after) < len(self._comma):
            self._after = after
            return ""
        self._through = True
        return "{" + after[len(self._comma) :] if after.startswith(self._comma) else after

    def finish(self, thought: str | None) -> list[str]:
        """The part of the accepted decision's ``thought`` not handed out yet."""
        if thought is None or not thought.startswith(self._sent) or thought == self._sent:
            return []
        rest = thought[len(self._sent) :]
        self._sent = thought
        return [rest]


def _closing_quote(body: str) -> int | None:
    """Where the JSON string whose content ``body`` begins with ends, ``None`` while it goes on."""
    escaped = False
    for index, char in enumerate(body):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return index
    return None


def _whole_escapes(literal: str) -> str:
    """``literal`` without an escape it ends in the middle of."""
    index = 0
    while index < len(literal):
        if literal[index] != "\\":
            index += 1
            continue
        length = _ESCAPE_LENGTH.get(literal[index + 1 : index + 2], 2)
        if index + length > len(literal):
            return literal[:index]
        index += length
    return literal


def _decoded(literal: str) -> str:
    try:
        text: str = json.loads(f'"{literal}"')
    except ValueError:
        return ""
    return text


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


def cut_thought(text: str, spaced: bool) -> str | None:
    """The thought of a reply the cap cut, when the thought itself was whole."""
    parts, rest = ThoughtStream(spaced=spaced).feed(text)
    return "".join(parts) if rest else None


async def backend_pieces(
    backend: AsyncBackend, messages: Sequence[Message]
) -> AsyncIterator[TextDelta | Completion]:
    """The backend's stream when it has one, else its whole completion as the only item.

    Left early (a client gone), the stream is closed at once, which ends the backend's request.
    """
    if not _streams(backend):
        yield await backend.complete(messages)
        return
    items = backend.stream(messages)
    try:
        async for item in items:
            yield item
    finally:
        close = getattr(items, "aclose", None)  # an async generator's, as every shipped stream is
        if close is not None:
            await close()


def _streams(backend: AsyncBackend) -> TypeGuard[AsyncStreamingBackend]:
    return callable(getattr(backend, "stream", None))
