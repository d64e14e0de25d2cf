"""What every front reads into and writes from, in no API's shape.

A front reads its request body (:func:`decode_body`) into one :class:`ServeRequest`: its
messages (:class:`InMessage`, an assistant's calls as :class:`ToolCall`), its tools, the
offer its ``tool_choice`` makes (:class:`ToolChoice`), the answer's schema
(:class:`OutputFormat`) and the sampling asked. The core serves it as a :class:`Reply`, whole,
or as its :class:`Piece` s, and the front's writer (a :class:`ReplyWriter`) writes them in its
API's shapes, under the ids of :class:`ReplyIds`, a stream as server-sent events
(:func:`server_sent_event`). A field every front reads is a field of :class:`ServeRequest`, and
each reader fills it. (vLLM's ``protocol`` is one API's shapes: here those are each front's
``shapes``, and this module the exchange every front shares.)
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from ..._backends import Usage
from ..._errors import ChatRequestError
from ..._limits import SERVE_MAX_BODY_BYTES
from ..error_replies import ErrorReply

__all__ = [
    "FinishReason",
    "InMessage",
    "OutputFormat",
    "Piece",
    "Reasoning",
    "Reply",
    "ReplyIds",
    "ReplyWriter",
    "ServeRequest",
    "ToolCall",
    "ToolChoice",
    "body_too_large",
    "decode_body",
    "server_sent_event",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call of an assistant message, in a request or in a reply: its id, the tool and
    the arguments' text."""

    id: str
    name: str
    arguments: str
    input: Mapping[str, Any] | None = dataclasses.field(default=None, compare=False)
    """The arguments as an object, where the API sends one (a Messages ``tool_use``'s ``input``):
    the core writes them as the route grammar writes arguments, compact or spaced as the backend's
    settings say, so a call this server made comes back as the bytes the backend wrote."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class InMessage:
    """One message of the request, its content as text (text parts joined)."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    """Whether a tool message reports the tool's failure (a front whose results can say so)."""
    function_call: bool = False
    """The one call came as the legacy ``function_call``; a ``function`` message is read as a
    ``tool`` message that answers it."""
    thought: str | None = None
    """An assistant's reasoning before its calls, sent back (a thinking block, a reasoning item,
    ``reasoning_content``): the route's ``thought`` its first action is written with."""


@dataclasses.dataclass(frozen=True)
class ToolChoice:
    """A decision's offer: ``mode`` (``none`` asks no decision) over ``names``, every tool when ``None``."""

    mode: Literal["auto", "required", "none"]
    names: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputFormat:
    """The schema an answer is decoded under, with the name and strictness the server is sent."""

    schema: dict[str, Any]
    name: str
    strict: bool
    at: str
    """Where the schema came from, as a parameter path (an error names its keywords under it)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Reasoning:
    """The reasoning a request asks for before its decision: a budget of tokens, and whether the
    reply shows the thought's text (Messages' ``display: "omitted"`` shows only its signature)."""

    budget: int
    shown: bool = True
    asked: int | None = None
    """The budget the request asked for when it was over what the route's grammar bounds: served
    as ``budget`` tokens, its maximum (``SERVE_REASONING_CAP``); ``None`` when served as asked."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServeRequest:
    """What a request asks, on whichever front it came, checked."""

    model: str | None
    messages: tuple[InMessage, ...]
    tools: tuple[dict[str, Any], ...]
    """The declarations, as chat completions declares them: ``route_schema`` checks them and
    names a bad one by index."""
    tool_choice: ToolChoice
    max_tokens: int | None
    temperature: float | None
    top_p: float | None
    seed: int | None
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool
    top_k: int | None = None
    """Sampling's ``top_k``, for a front whose API has one (chat completions has none)."""
    legacy_functions: bool = False
    """The declarations came as the legacy ``functions``: a call is written back as ``function_call``."""
    response_format: OutputFormat | None = None
    """The schema the answer is decoded under; ``None`` for free text."""
    parallel_tool_calls: bool = True
    """Whether the decision may make several calls (up to the server's ``max_calls``)."""
    reasoning: Reasoning | None = None
    """The reasoning asked for before the decision; ``None``: none (the server adds none)."""


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
    thought: str | None = None
    """The decision's reasoning, when the request asked for it (``ServeRequest.reasoning``)."""
    withheld: tuple[str, ...] = ()
    """The tools the decision did not offer, past the repeat limit (``Decision.withheld``)."""
    abstained: str | None = None
    """Why the server abstained from the decision's calls (``--abstain``), when it did: the
    reply is then the answer written after it."""

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """Every call the reply makes, in order: none, ``call`` alone, or it and ``more_calls``."""
        return () if self.call is None else (self.call, *self.more_calls)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Piece:
    """One piece of a streamed reply, of exactly one kind.

    The tools the decision withheld (``Reply.withheld``; first of all, only when there are
    some: the front says so in its headers, and no event is written of it); why the server
    abstained from the decision's calls (``Reply.abstained``; before the answer's first text,
    said in the headers where no event went out before it, never an event); a part of the
    decision's ``thought`` (they come first after it); the answer's
    ``text`` (``first`` on the piece that begins it, whose text is empty when the answer is); a
    tool call's ``head``, its id and name, its arguments still empty; a part of
    that call's ``arguments`` text; the ``finish_reason`` that ends the reply; or the reply's
    ``usage``, alone and last.
    """

    thought: str | None = None
    text: str | None = None
    first: bool = False
    head: ToolCall | None = None
    arguments: str | None = None
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    withheld: tuple[str, ...] = ()
    abstained: str | None = None
    index: int = 0
    """Which of the reply's calls a ``head`` or ``arguments`` piece belongs to, from 0."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReplyIds:
    """What one reply is named by on every front: its random ``key`` (each front's id is it
    after the API's prefix), a second, ``item``, for what the reply holds where the API names
    that too, when it was made, and the model named."""

    key: str
    item: str
    created: int
    model: str

    @classmethod
    def new(cls, model: str) -> ReplyIds:
        """Fresh ids for one reply, made now."""
        return cls(key=uuid.uuid4().hex, item=uuid.uuid4().hex, created=int(time.time()), model=model)


class ReplyWriter(Protocol):
    """A front's writer of one reply in its API's shapes: the body of a whole reply, or a
    stream's events as bytes, in order: ``opening()``, ``of(piece)`` for each piece,
    ``closing()``; or, once a failure cuts the stream after its status went out, ``failed()``."""

    def whole(self, reply: Reply) -> Mapping[str, object]:
        """The whole reply's body, for a request that asked for no stream: one of the front's
        typed shapes (its ``shapes`` module)."""
        ...

    def opening(self) -> list[bytes]:
        """The events before the first piece."""
        ...

    def of(self, piece: Piece) -> list[bytes]:
        """The events ``piece`` makes."""
        ...

    def closing(self) -> list[bytes]:
        """The events after the last piece."""
        ...

    def failed(self, error: ErrorReply) -> list[bytes]:
        """The events that end a stream ``error`` cut."""
        ...


def server_sent_event(data: Mapping[str, object] | str, event: str | None = None) -> bytes:
    """One ``data:`` event, after its ``event:`` name when it has one; JSON is written on one
    line, so it is one event whatever it holds."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    named = "" if event is None else f"event: {event}\n"
    return f"{named}data: {text}\n\n".encode()


def decode_body(raw: bytes) -> Any:
    """The JSON value of a request body; anything else is a :class:`ChatRequestError`."""
    if len(raw) > SERVE_MAX_BODY_BYTES:
        raise body_too_large()
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except UnicodeDecodeError as error:
        raise ChatRequestError(f"the body is not UTF-8 JSON ({error.reason} at byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise ChatRequestError(f"the body is not valid JSON: {error.msg} (character {error.pos})") from None
    except RecursionError:
        raise ChatRequestError("the body nests too deeply to decode") from None
    except ValueError as error:  # a non-finite constant, or an integer too long to convert
        raise ChatRequestError(f"the body is not valid JSON: {error}") from None


def body_too_large() -> ChatRequestError:
    """The 413 a body over ``SERVE_MAX_BODY_BYTES`` is answered with."""
    return ChatRequestError(
        f"the body is over the limit of {SERVE_MAX_BODY_BYTES} bytes (SERVE_MAX_BODY_BYTES)",
        status=413,
        code="request_too_large",
    )


def _refuse_constant(literal: str) -> Any:
    raise ValueError(f"{literal} is not JSON")
