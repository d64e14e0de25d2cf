"""What the Responses front answers, in OpenAI's Responses shapes (``shapes``): the response object
whole (``output`` builds it), or the stream's events with their ``sequence_number``: each output
item added and done (``output_index`` 0, 1, ... in the order written), its text's or its
arguments' deltas, the response created, in progress and completed; and an error event. Every
body of that API is written here or in ``output`` and nowhere else; the error object itself is
the one ``error_replies`` writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Literal, TypedDict

from ..core import Piece, Reply, ReplyIds, ToolCall, server_sent_event
from ..error_replies import ErrorReply
from .output import (
    Namespaces,
    ReasoningOutput,
    call_item,
    call_item_id,
    message_item,
    reasoning_item,
    response_body,
    text_part,
)
from .shapes import (
    ContentPartEvent,
    OutputItem,
    OutputItemEvent,
    ReasoningSummaryPartEvent,
    ResponseEcho,
    ResponseObject,
    StreamEvent,
    SummaryText,
)

__all__ = ["ResponseWriter"]


#: The types of the events that carry an output item, the message's text part, a summary part,
#: and the response.
ItemEventType = Literal["response.output_item.added", "response.output_item.done"]
PartEventType = Literal["response.content_part.added", "response.content_part.done"]
SummaryEventType = Literal["response.reasoning_summary_part.added", "response.reasoning_summary_part.done"]
ResponseEventType = Literal[
    "response.created", "response.in_progress", "response.completed", "response.incomplete"
]


class _TextPlace(TypedDict):
    """Where the message's text part is: its item, the item's output index, the part's index."""

    item_id: str
    output_index: int
    content_index: int


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
        echo: ResponseEcho,
        keep: Callable[[ResponseObject, Reply], None] | None = None,
        namespaces: Namespaces | None = None,
        reasoning: ReasoningOutput | None = None,
    ) -> None:
        self.ids = ids
        self.echo = echo
        self.keep = keep
        self.namespaces = namespaces or {}
        self.reasoning = reasoning or ReasoningOutput()
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
        self.body: ResponseObject | None = None
        """The response object the closing event carries, once it is written."""

    def whole(self, reply: Reply) -> ResponseObject:
        """The ``response`` object, kept when the request asked to store it."""
        body = response_body(self.ids, self.echo, reply, self.namespaces, self.reasoning)
        if self.keep is not None:
            self.keep(body, reply)
        return body

    def opening(self) -> list[bytes]:
        """``response.created`` and ``response.in_progress``."""
        body = response_body(self.ids, self.echo, None)
        return _written(
            {"type": "response.created", "sequence_number": self._next(), "response": body},
            {"type": "response.in_progress", "sequence_number": self._next(), "response": body},
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
        number = self._next()
        return _written(
            {
                "type": "error",
                "sequence_number": number,
                "code": fields["code"],
                "message": fields["message"],
                "param": fields["param"],
            }
        )

    def _next(self) -> int:
        """The next event's ``sequence_number``."""
        self.sequence += 1
        return self.sequence - 1

    def _item(self, kind: ItemEventType, index: int, item: OutputItem) -> OutputItemEvent:
        """An output item's event, at ``index``."""
        return {"type": kind, "sequence_number": self._next(), "output_index": index, "item": item}

    def _text_event(self, kind: PartEventType, text: str) -> ContentPartEvent:
        """The message's text part's event, holding ``text``."""
        return {
            "type": kind,
            "sequence_number": self._next(),
            "item_id": f"msg_{self.ids.item}",
            "output_index": self.offset,
            "content_index": 0,
            "part": text_part(text),
        }

    def _events(self, piece: Piece) -> list[StreamEvent]:
        if piece.thought is not None:
            return self._reasoning(piece.thought)
        events = self._reasoning_done() if self.thought is not None and self.offset == 0 else []
        return [*events, *self._reply_events(piece)]

    def _reasoning(self, part: str) -> list[StreamEvent]:
        """A part of the thought: the reasoning item added with the first, then its text's delta
        (and its summary's, when one is asked)."""
        events: list[StreamEvent] = []
        item_id = f"rs_{self.ids.item}"
        if self.thought is None:
            self.thought = []
            item = reasoning_item(self.ids, "", ReasoningOutput(), "in_progress")
            events.append(self._item("response.output_item.added", 0, item))
            if self.reasoning.summary:
                events.append(self._summary_part("response.reasoning_summary_part.added", ""))
        self.thought.append(part)
        events.append(
            {
                "type": "response.reasoning_text.delta",
                "sequence_number": self._next(),
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": part,
            }
        )
        if self.reasoning.summary:
            events.append(
                {
                    "type": "response.reasoning_summary_text.delta",
                    "sequence_number": self._next(),
                    "item_id": item_id,
                    "output_index": 0,
                    "summary_index": 0,
                    "delta": part,
                }
            )
        return events

    def _summary_part(self, kind: SummaryEventType, text: str) -> ReasoningSummaryPartEvent:
        """The reasoning item's summary part's event, holding ``text``."""
        part: SummaryText = {"type": "summary_text", "text": text}
        return {
            "type": kind,
            "sequence_number": self._next(),
            "item_id": f"rs_{self.ids.item}",
            "output_index": 0,
            "summary_index": 0,
            "part": part,
        }

    def _reasoning_done(self) -> list[StreamEvent]:
        """The reasoning item's text done and the item done, once the reply's own pieces begin."""
        self.offset = 1
        text = "".join(self.thought or [])
        item_id = f"rs_{self.ids.item}"
        events: list[StreamEvent] = [
            {
                "type": "response.reasoning_text.done",
                "sequence_number": self._next(),
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "text": text,
            }
        ]
        if self.reasoning.summary:
            events.append(
                {
                    "type": "response.reasoning_summary_text.done",
                    "sequence_number": self._next(),
                    "item_id": item_id,
                    "output_index": 0,
                    "summary_index": 0,
                    "text": text,
                }
            )
            events.append(self._summary_part("response.reasoning_summary_part.done", text))
        item = reasoning_item(self.ids, text, self.reasoning)
        return [*events, self._item("response.output_item.done", 0, item)]

    def _reply_events(self, piece: Piece) -> list[StreamEvent]:
        if piece.text is not None:
            events: list[StreamEvent] = []
            if piece.first:
                item = message_item(self.ids, None, "in_progress")
                events.append(self._item("response.output_item.added", self.offset, item))
                events.append(self._text_event("response.content_part.added", ""))
            if piece.text:
                self.text.append(piece.text)
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "sequence_number": self._next(),
                        **self._part(),
                        "delta": piece.text,
                        "logprobs": [],
                    }
                )
            return events
        if piece.head is not None:
            # The call before this one is whole: its item is done before the next is added.
            done = self._call_done() if self.calls else []
            self.calls.append(piece.head)
            index = len(self.calls) - 1
            added = call_item(self.ids, piece.head, index, "in_progress", self.namespaces)
            return [*done, self._item("response.output_item.added", self.offset + index, added)]
        if piece.arguments is not None and self.calls:
            index = len(self.calls) - 1
            last = self.calls[index]
            self.calls[index] = dataclasses.replace(last, arguments=last.arguments + piece.arguments)
            return [
                {
                    "type": "response.function_call_arguments.delta",
                    "sequence_number": self._next(),
                    "output_index": self.offset + index,
                    "item_id": call_item_id(self.ids, index),
                    "delta": piece.arguments,
                }
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

    def _part(self) -> _TextPlace:
        return {"item_id": f"msg_{self.ids.item}", "output_index": self.offset, "content_index": 0}

    def _call_done(self) -> list[StreamEvent]:
        """The last call's ``function_call_arguments.done`` and ``output_item.done``."""
        index = len(self.calls) - 1
        call = self.calls[index]
        item = call_item(self.ids, call, index, "completed", self.namespaces)
        return [
            {
                "type": "response.function_call_arguments.done",
                "sequence_number": self._next(),
                "item_id": item["id"],
                "output_index": self.offset + index,
                "name": item["name"],
                "arguments": call.arguments,
            },
            self._item("response.output_item.done", self.offset + index, item),
        ]

    def _closing(self, reply: Reply) -> list[StreamEvent]:
        body = self.body = response_body(self.ids, self.echo, reply, self.namespaces, self.reasoning)
        if reply.calls:
            events = self._call_done()
        else:
            text = reply.content or ""  # the message item's text, as the body wrote it
            events = [
                {
                    "type": "response.output_text.done",
                    "sequence_number": self._next(),
                    **self._part(),
                    "text": text,
                    "logprobs": [],
                },
                self._text_event("response.content_part.done", text),
                self._item("response.output_item.done", self.offset, body["output"][self.offset]),
            ]
        kind: ResponseEventType = (
            "response.incomplete" if body["status"] == "incomplete" else "response.completed"
        )
        events.append({"type": kind, "sequence_number": self._next(), "response": body})
        return events


def _written(*events: StreamEvent) -> list[bytes]:
    """Events on the wire, each named by its type as OpenAI names its events."""
    return [server_sent_event(event, event["type"]) for event in events]
