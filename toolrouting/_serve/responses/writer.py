"""What the Responses front answers, in OpenAI's Responses shapes: the response object, its output
items (a ``message`` with one ``output_text`` part, or one ``function_call`` for each call the
decision made, ``output_index`` 0, 1, ... in the order written), the stream's events with their
``sequence_number``, a deleted response and an error event. Every body of that API is written here
and nowhere else; the error object itself is the one ``errors`` writes.

The response's id is ``resp_`` and the reply's key; its output items' are ``msg_`` or ``fc_`` and
the reply's item key (the calls after the first add their index, :func:`call_item_id`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..._backends import Usage
from ..errors import ErrorReply
from ..limits import SERVE_REASONING_CHARS_PER_TOKEN
from ..protocol import Piece, Reply, ReplyIds, ToolCall, server_sent_event
from ..reasoning import Signer

__all__ = ["ResponseWriter", "Thinking", "call_item_id", "deleted_body", "response_body"]


def call_item_id(ids: ReplyIds, index: int) -> str:
    """The id of the output item of the response's call at ``index`` (from 0), each its own."""
    return f"fc_{ids.item}" if index == 0 else f"fc_{ids.item}_{index}"


def _usage(usage: Usage, thought: str | None = None) -> dict[str, Any]:
    # The backends count the decision's tokens whole: the thought's share is estimated from its
    # characters, at the rule of thumb its budget was turned into characters by.
    reasoning = (
        0
        if not thought
        else min(math.ceil(len(thought) / SERVE_REASONING_CHARS_PER_TOKEN), usage.completion_tokens)
    )
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": usage.total_tokens,
    }


def _message(ids: ReplyIds, text: str, status: str) -> dict[str, Any]:
    return {
        "id": f"msg_{ids.item}",
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [_text_part(text)],
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


#: A namespace's tools by the name they are offered under (``NAMESPACE.NAME``): the two a call of
#: one is written back as.
Namespaces = Mapping[str, tuple[str, str]]


def _call(ids: ReplyIds, call: ToolCall, index: int, status: str, namespaces: Namespaces) -> dict[str, Any]:
    space, name = namespaces.get(call.name, (None, call.name))
    return {
        "id": call_item_id(ids, index),
        "type": "function_call",
        "call_id": call.id,
        "name": name,
        **({} if space is None else {"namespace": space}),
        "arguments": call.arguments,
        "status": status,
    }


@dataclasses.dataclass(frozen=True, kw_only=True)
class Thinking:
    """How a reply's thought is written: with its ``summary`` too (``reasoning.summary`` asked),
    and its signature as ``encrypted_content`` (``include`` asked for it), by ``signer``."""

    summary: bool = False
    signer: Signer | None = None


def _reasoning(ids: ReplyIds, thought: str, thinking: Thinking, status: str = "completed") -> dict[str, Any]:
    """The reasoning item of a thought: its text as ``reasoning_text``, the summary when asked (the
    bounded thought is its own summary), the signed thought when asked."""
    item: dict[str, Any] = {
        "id": f"rs_{ids.item}",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": thought}] if thinking.summary and thought else [],
        "content": [{"type": "reasoning_text", "text": thought}] if thought else [],
        "status": status,
    }
    if thinking.signer is not None:
        item["encrypted_content"] = thinking.signer.sign(thought)
    return item


def _output(reply: Reply, ids: ReplyIds, namespaces: Namespaces, thinking: Thinking) -> list[dict[str, Any]]:
    """The reply's output items: its reasoning first when it has a thought, then one for each of
    its calls, in order, or its answer as one message."""
    first = [] if reply.thought is None else [_reasoning(ids, reply.thought, thinking)]
    if reply.calls:
        return [
            *first,
            *(_call(ids, call, index, "completed", namespaces) for index, call in enumerate(reply.calls)),
        ]
    status = "incomplete" if reply.finish_reason == "length" else "completed"
    return [*first, _message(ids, reply.content or "", status)]


def response_body(
    ids: ReplyIds,
    echo: Mapping[str, Any],
    reply: Reply | None,
    namespaces: Namespaces | None = None,
    thinking: Thinking | None = None,
) -> dict[str, Any]:
    """A ``response`` object, with the request's fields it ``echo`` es: in progress (no reply yet,
    no output), or the reply's, ``incomplete`` when the answer was cut at its cap; a call of a
    namespace's tool is written with its ``namespace`` (``namespaces``)."""
    cut = reply is not None and reply.finish_reason == "length"
    status = "in_progress" if reply is None else "incomplete" if cut else "completed"
    return {
        "id": f"resp_{ids.key}",
        "object": "response",
        "created_at": ids.created,
        "status": status,
        "completed_at": None if reply is None or cut else int(time.time()),
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "model": ids.model,
        "output": [] if reply is None else _output(reply, ids, namespaces or {}, thinking or Thinking()),
        "reasoning": {"effort": None, "summary": None},
        "usage": None if reply is None else _usage(reply.usage, reply.thought),
        "user": None,
        **echo,
        "metadata": echo.get("metadata") or {},
    }


def deleted_body(response_id: str) -> dict[str, Any]:
    """What ``DELETE /v1/responses/{id}`` answers."""
    return {"id": response_id, "object": "response", "deleted": True}


class ResponseWriter:
    """One response, whole or as the stream's events, numbered from 0 as they are written: the
    ``ReplyWriter`` of this front. A stream's pieces are gathered into the :class:`Reply` the
    closing event carries, the same object a whole reply gets; ``keep`` is given that object and
    the reply once it is whole (the store keeps them), none when the request asked not to store.

    A decision of several calls comes as each call's head, then its arguments, under its index:
    each call is one output item, added, its arguments written and done, and the item done before
    the next call's is added."""

    def __init__(
        self,
        ids: ReplyIds,
        echo: Mapping[str, Any],
        keep: Callable[[dict[str, Any], Reply], None] | None = None,
        namespaces: Namespaces | None = None,
        thinking: Thinking | None = None,
    ) -> None:
        self.ids = ids
        self.echo = echo
        self.keep = keep
        self.namespaces = namespaces or {}
        self.thinking = thinking or Thinking()
        self.thought: list[str] | None = None
        """The thought's parts so far, once its reasoning item is added."""
        self.offset = 0
        """The output index of the reply's own first item: 1 after a reasoning item."""
        self.sequence = 0
        self.text: list[str] = []
        self.calls: list[ToolCall] = []
        """The calls so far, in the order of their output items; the last one still open."""
        self.finish: Piece | None = None
        self.reply: Reply | None = None
        self.body: dict[str, Any] | None = None
        """The response object the closing event carries, once it is written."""

    def whole(self, reply: Reply) -> dict[str, Any]:
        """The ``response`` object, kept when the request asked to store it."""
        body = response_body(self.ids, self.echo, reply, self.namespaces, self.thinking)
        if self.keep is not None:
            self.keep(body, reply)
        return body

    def opening(self) -> list[bytes]:
        """``response.created`` and ``response.in_progress``."""
        body = response_body(self.ids, self.echo, None)
        return _written(
            self._event("response.created", response=body),
            self._event("response.in_progress", response=body),
        )

    def of(self, piece: Piece) -> list[bytes]:
        """The events ``piece`` makes."""
        return _written(*self._events(piece))

    def closing(self) -> list[bytes]:
        """No event (the last piece's closed the response), but the response kept, once whole."""
        if self.keep is not None and self.reply is not None and self.body is not None:
            self.keep(self.body, self.reply)
        return []

    def failed(self, error: ErrorReply) -> list[bytes]:
        """The ``error`` event a failure after the status went out ends the stream with."""
        fields = error.body["error"]
        return _written(
            self._event("error", code=fields["code"], message=fields["message"], param=fields["param"])
        )

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def _events(self, piece: Piece) -> list[dict[str, Any]]:
        if piece.thought is not None:
            return self._thinking(piece.thought)
        events = self._thinking_done() if self.thought is not None and self.offset == 0 else []
        return [*events, *self._reply_events(piece)]

    def _thinking(self, part: str) -> list[dict[str, Any]]:
        """A part of the thought: the reasoning item added with the first, then its text's delta
        (and its summary's, when one is asked)."""
        events = []
        at = {"item_id": f"rs_{self.ids.item}", "output_index": 0}
        if self.thought is None:
            self.thought = []
            item = _reasoning(self.ids, "", Thinking(), "in_progress")
            events.append(self._event("response.output_item.added", output_index=0, item=item))
            if self.thinking.summary:
                empty = {"type": "summary_text", "text": ""}
                events.append(
                    self._event("response.reasoning_summary_part.added", **at, summary_index=0, part=empty)
                )
        self.thought.append(part)
        events.append(self._event("response.reasoning_text.delta", **at, content_index=0, delta=part))
        if self.thinking.summary:
            events.append(
                self._event("response.reasoning_summary_text.delta", **at, summary_index=0, delta=part)
            )
        return events

    def _thinking_done(self) -> list[dict[str, Any]]:
        """The reasoning item's text done and the item done, once the reply's own pieces begin."""
        self.offset = 1
        text = "".join(self.thought or [])
        at = {"item_id": f"rs_{self.ids.item}", "output_index": 0}
        events = [self._event("response.reasoning_text.done", **at, content_index=0, text=text)]
        if self.thinking.summary:
            done = {"type": "summary_text", "text": text}
            events.append(
                self._event("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
            )
            events.append(
                self._event("response.reasoning_summary_part.done", **at, summary_index=0, part=done)
            )
        item = _reasoning(self.ids, text, self.thinking)
        return [*events, self._event("response.output_item.done", output_index=0, item=item)]

    def _reply_events(self, piece: Piece) -> list[dict[str, Any]]:
        if piece.text is not None:
            events = []
            if piece.first:
                item = _message(self.ids, "", "in_progress") | {"content": []}
                events.append(self._event("response.output_item.added", output_index=self.offset, item=item))
                events.append(self._event("response.content_part.added", **self._part(), part=_text_part("")))
            if piece.text:
                self.text.append(piece.text)
                events.append(
                    self._event("response.output_text.delta", **self._part(), delta=piece.text, logprobs=[])
                )
            return events
        if piece.head is not None:
            # The call before this one is whole: its item is done before the next is added.
            events = self._call_done() if self.calls else []
            self.calls.append(piece.head)
            index = len(self.calls) - 1
            item = _call(self.ids, piece.head, index, "in_progress", self.namespaces)
            added = self._event("response.output_item.added", output_index=self.offset + index, item=item)
            return [*events, added]
        if piece.arguments is not None and self.calls:
            index = len(self.calls) - 1
            last = self.calls[index]
            self.calls[index] = dataclasses.replace(last, arguments=last.arguments + piece.arguments)
            return [
                self._event(
                    "response.function_call_arguments.delta",
                    output_index=self.offset + index,
                    item_id=call_item_id(self.ids, index),
                    delta=piece.arguments,
                )
            ]
        if piece.finish_reason is not None:
            self.finish = piece
            return []
        if piece.usage is not None and self.finish is not None and self.finish.finish_reason is not None:
            calls = tuple(self.calls)
            self.reply = Reply(
                content=None if calls else "".join(self.text),
                call=calls[0] if calls else None,
                more_calls=calls[1:],
                finish_reason=self.finish.finish_reason,
                usage=piece.usage,
                thought=None if self.thought is None else "".join(self.thought),
            )
            return self._closing(self.reply)
        return []

    def _part(self) -> dict[str, Any]:
        return {"item_id": f"msg_{self.ids.item}", "output_index": self.offset, "content_index": 0}

    def _call_done(self) -> list[dict[str, Any]]:
        """The last call's ``function_call_arguments.done`` and ``output_item.done``."""
        index = len(self.calls) - 1
        call = self.calls[index]
        item = _call(self.ids, call, index, "completed", self.namespaces)
        return [
            self._event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=self.offset + index,
                name=item["name"],
                arguments=call.arguments,
            ),
            self._event("response.output_item.done", output_index=self.offset + index, item=item),
        ]

    def _closing(self, reply: Reply) -> list[dict[str, Any]]:
        body = self.body = response_body(self.ids, self.echo, reply, self.namespaces, self.thinking)
        if reply.calls:
            events = self._call_done()
        else:
            item = body["output"][self.offset]
            text = item["content"][0]["text"]
            events = [
                self._event("response.output_text.done", **self._part(), text=text, logprobs=[]),
                self._event("response.content_part.done", **self._part(), part=_text_part(text)),
                self._event("response.output_item.done", output_index=self.offset, item=item),
            ]
        kind = "response.incomplete" if body["status"] == "incomplete" else "response.completed"
        events.append(self._event(kind, response=body))
        return events


def _written(*events: dict[str, Any]) -> list[bytes]:
    """Events on the wire, each named by its type as OpenAI names its events."""
    return [server_sent_event(event, event["type"]) for event in events]
