"""A reply as the core gives it, in no API's shape: whole (:class:`Reply`) or in pieces (:class:`Piece`).

``chat`` makes them and each front writes them in its own API's shapes (``chat_shapes`` for
chat completions), so a front never rebuilds a call's head or an answer's text itself.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from .._backends import Usage
from .request import ToolCall

__all__ = ["FinishReason", "Piece", "Reply"]

#: Why a reply ended, named as chat completions names it: the answer ended (``stop``), the answer
#: was cut at its cap (``length``), or the reply is a tool call (``tool_calls``).
FinishReason = Literal["stop", "length", "tool_calls"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Reply:
    """A whole reply: text, or its tool calls, why it ended, and the tokens it took."""

    content: str | None
    call: ToolCall | None
    """The reply's (first) tool call: its id in the conversation, the tool, the arguments' JSON text."""
    finish_reason: FinishReason
    usage: Usage
    more_calls: tuple[ToolCall, ...] = ()
    """The calls after ``call`` when the decision made several (``parallel_tool_calls``)."""

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """Every call the reply makes, in order: none, ``call`` alone, or it and ``more_calls``."""
        return () if self.call is None else (self.call, *self.more_calls)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Piece:
    """One piece of a streamed reply, of exactly one kind.

    The answer's ``text`` (``first`` on the piece that begins it, whose text is empty when the
    answer is); a tool call's ``head``, its id and name, its arguments still empty; a part of
    that call's ``arguments`` text; the ``finish_reason`` that ends the reply; or the reply's
    ``usage``, alone and last.
    """

    text: str | None = None
    first: bool = False
    head: ToolCall | None = None
    arguments: str | None = None
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    index: int = 0
    """Which of the reply's calls a ``head`` or ``arguments`` piece belongs to, from 0."""
