"""What the Messages front answers, in Anthropic's shapes: a message, a stream's events, a token
count, an error. Every body of that API is written here and nowhere else.

The reply comes from the core (``exchange``) in no API's shape: its text is the message's one
content block, and each of its calls a ``tool_use`` block, index 0, 1, ... in the order the
decision wrote them. A stream is ``message_start`` and a ``ping``, then each block's
``content_block_start``, its deltas (``text_delta``, or ``input_json_delta`` for a call's
input) and ``content_block_stop``, then ``message_delta`` with the stop reason and the usage,
and ``message_stop``: the events ``messages.stream()`` rebuilds the same message from. Every
body and event is one of the shapes ``shapes`` types.
"""

from __future__ import annotations

import json
from typing import Any

from ..._backends import Usage
from ..core import FinishReason, Piece, Reply, ReplyIds, server_sent_event
from ..error_replies import ErrorReply
from ..reasoning import Signer
from .shapes import (
    BlockDelta,
    ContentBlock,
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    Message,
    MessagesError,
    MessagesUsage,
    StopReason,
    StreamEvent,
    ThinkingBlock,
    TokenCount,
)

__all__ = ["MessageWriter", "count_body", "message_body", "message_error_body"]

#: The core's finish reasons as Anthropic's stop reasons. An answer that ended at a stop
#: sequence is ``end_turn`` too: the backends do not say which of the two ended it.
_STOP_REASONS: dict[FinishReason, StopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
}

#: Anthropic's error type for each status the error table answers with (the SDK's ``ErrorType``);
#: any other 4xx is the request's fault, any other 5xx the server's.
_ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _usage(usage: Usage) -> MessagesUsage:
    # Anthropic's input_tokens are the prompt's tokens the cache did not hold; those it held
    # are cache_read_input_tokens, and the two together are the prompt.
    return {
        "input_tokens": usage.prompt_tokens - usage.cached_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "output_tokens": usage.completion_tokens,
    }


def _message(
    ids: ReplyIds, content: list[ContentBlock], stop_reason: StopReason | None, usage: Usage
) -> Message:
    return {
        "id": f"msg_{ids.key}",
        "type": "message",
        "role": "assistant",
        "model": ids.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _usage(usage),
    }


def message_body(reply: Reply, ids: ReplyIds, signer: Signer | None = None, *, shown: bool = True) -> Message:
    """A ``message`` object: a ``thinking`` block first when the decision reasoned (its text
    ``shown`` or left empty, signed by ``signer``), then a ``tool_use`` block for each call, else
    one ``text`` block."""
    blocks: list[ContentBlock] = [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)}
        for call in reply.calls
    ]
    content = blocks or [{"type": "text", "text": reply.content or ""}]
    if reply.thought and signer is not None:
        content = [_thinking_block(reply.thought, signer, shown), *content]
    return _message(ids, content, _STOP_REASONS[reply.finish_reason], reply.usage)


def _thinking_block(thought: str, signer: Signer, shown: bool) -> ThinkingBlock:
    return {"type": "thinking", "thinking": thought if shown else "", "signature": signer.sign(thought)}


def _input(arguments: str) -> dict[str, Any]:
    # The core accepts a call only when its arguments parse as a JSON object.
    parsed: dict[str, Any] = json.loads(arguments)
    return parsed


class MessageWriter:
    """One reply's message: whole, or its pieces as Anthropic's stream events, each named by its
    ``type``, in order: the ``ReplyWriter`` of this front. A thought is the ``thinking`` block,
    index 0, its text written as it comes (when ``shown``) and its ``signature`` (``signer``'s)
    once it is whole; the blocks after it take the indices after it."""

    def __init__(self, ids: ReplyIds, signer: Signer | None = None, *, shown: bool = True) -> None:
        self.ids = ids
        self.signer = signer
        self.shown = shown
        self._stop_reason: StopReason | None = None
        self._block = 0
        """The index of the block the pieces are writing."""
        self._thought: list[str] | None = None
        """The thinking block's text while it is open."""
        self._after = 0
        """How many blocks come before the reply's own: 1 after a thinking block."""

    def whole(self, reply: Reply) -> Message:
        """The whole reply's message, for a request that asked for no stream."""
        return message_body(reply, self.ids, self.signer, shown=self.shown)

    def opening(self) -> list[bytes]:
        """The events before the first piece: the empty message, then a ping."""
        return _written(
            {"type": "message_start", "message": _message(self.ids, [], None, Usage())},
            {"type": "ping"},
        )

    def of(self, piece: Piece) -> list[bytes]:
        """The events ``piece`` makes."""
        return _written(*self._events(piece))

    def closing(self) -> list[bytes]:
        """Nothing: the last piece's events closed the message."""
        return []

    def failed(self, error: ErrorReply) -> list[bytes]:
        """The ``error`` event, in Anthropic's shape."""
        return [server_sent_event(message_error_body(error), "error")]

    def _events(self, piece: Piece) -> list[StreamEvent]:
        """The events ``piece`` makes: the text's block is the first after the thinking block, a
        call's its index among the reply's calls after it; a call's head closes the block before it."""
        if piece.thought is not None:
            return self._thinking(piece.thought)
        events: list[StreamEvent] = [*self._thinking_stop()]
        after = self._after
        if piece.text is not None:
            if piece.first:
                self._block = after
                events.append(_block_start({"type": "text", "text": ""}, after))
            if piece.text:
                events.append(_delta({"type": "text_delta", "text": piece.text}, after))
            return events
        if piece.head is not None:
            block: ContentBlock = {
                "type": "tool_use",
                "id": piece.head.id,
                "name": piece.head.name,
                "input": {},
            }
            index = after + piece.index
            if index > self._block and not (after and index == after):
                events.append(_block_stop(self._block))
            self._block = index
            return [*events, _block_start(block, index)]
        if piece.arguments is not None:
            return [
                _delta({"type": "input_json_delta", "partial_json": piece.arguments}, after + piece.index)
            ]
        if piece.finish_reason is not None:
            self._stop_reason = _STOP_REASONS[piece.finish_reason]
            return [*events, _block_stop(self._block)]
        usage = piece.usage or Usage()
        return [
            {
                "type": "message_delta",
                "delta": {"stop_reason": self._stop_reason, "stop_sequence": None},
                "usage": _usage(usage),
            },
            {"type": "message_stop"},
        ]

    def _thinking(self, part: str) -> list[StreamEvent]:
        """The thinking block's events for a part of the thought: its start, with the first."""
        events: list[StreamEvent] = []
        if self._thought is None:
            self._thought = []
            self._after = 1
            events.append(_block_start({"type": "thinking", "thinking": "", "signature": ""}))
        self._thought.append(part)
        if self.shown and part:
            events.append(_delta({"type": "thinking_delta", "thinking": part}))
        return events

    def _thinking_stop(self) -> list[ContentBlockDelta | ContentBlockStop]:
        """The open thinking block's signature and its end, once something else comes."""
        if self._thought is None:
            return []
        signature = self.signer.sign("".join(self._thought)) if self.signer is not None else ""
        self._thought = None
        return [_delta({"type": "signature_delta", "signature": signature}), _block_stop(0)]


def _block_start(block: ContentBlock, index: int = 0) -> ContentBlockStart:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(delta: BlockDelta, index: int = 0) -> ContentBlockDelta:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _block_stop(index: int) -> ContentBlockStop:
    return {"type": "content_block_stop", "index": index}


def count_body(tokens: int) -> TokenCount:
    """The answer to ``count_tokens``."""
    return {"input_tokens": tokens}


def message_error_body(reply: ErrorReply) -> MessagesError:
    """The error table's answer (``error_replies``) in Anthropic's shape: its message, headed by the field
    it names, and the type its status is."""
    kind = _ERROR_TYPES.get(reply.status, "invalid_request_error" if reply.status < 500 else "api_error")
    if reply.messages_text is not None:  # Anthropic's own words for it
        return {"type": "error", "error": {"type": kind, "message": reply.messages_text}}
    error = reply.body["error"]
    message, param = error["message"], error.get("param")
    if param and not message.startswith(f"{param}: "):  # the shape has no param: the message names it
        message = f"{param}: {message}"
    return {"type": "error", "error": {"type": kind, "message": message}}


def _written(*events: StreamEvent) -> list[bytes]:
    """Events on the wire, each named by its type."""
    return [server_sent_event(event, event["type"]) for event in events]
