"""What the Responses front answers, in OpenAI's Responses shapes: the response object, its output
items (a ``message`` with one ``output_text`` part, or one ``function_call`` for each call the
decision made, ``output_index`` 0, 1, ... in the order written), the stream's events with their
``sequence_number``, a deleted response and an error event. Every body of that API is written here
and nowhere else; the error object itself is the one ``errors`` writes."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Mapping
from typing import Any

from .._backends import Usage
from .errors import ErrorReply
from .replies import Piece, Reply
from .request import ToolCall
from .transport import server_sent_event

__all__ = ["ResponseEvents", "ResponseIds", "deleted_body", "event_bytes", "response_body"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResponseIds:
    """What one response's object and events repeat: its id, its output item's, when it was made,
    the model named and the request's fields it echoes."""

    id: str
    item: str
    """The first output item's id without its prefix: ``msg_`` for a message, ``fc_`` for a call
    (the calls after the first add their index, :meth:`call_item_id`)."""
    created_at: int
    model: str
    echo: Mapping[str, Any]

    @classmethod
    def new(cls, model: str, echo: Mapping[str, Any]) -> ResponseIds:
        """Fresh ids for one response, made now."""
        return cls(
            id=f"resp_{uuid.uuid4().hex}",
            item=uuid.uuid4().hex,
            created_at=int(time.time()),
            model=model,
            echo=echo,
        )

    def call_item_id(self, index: int) -> str:
        """The id of the output item of the response's call at ``index`` (from 0), each its own."""
        return f"fc_{self.item}" if index == 0 else f"fc_{self.item}_{index}"


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.total_tokens,
    }


def _message(ids: ResponseIds, text: str, status: str) -> dict[str, Any]:
    return {
        "id": f"msg_{ids.item}",
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [_text_part(text)],
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _call(ids: ResponseIds, call: ToolCall, index: int, status: str) -> dict[str, Any]:
    return {
        "id": ids.call_item_id(index),
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "status": status,
    }


def _output(reply: Reply, ids: ResponseIds) -> list[dict[str, Any]]:
    """The reply's output items: one for each of its calls, in order, or its answer as one message."""
    if reply.calls:
        return [_call(ids, call, index, "completed") for index, call in enumerate(reply.calls)]
    status = "incomplete" if reply.finish_reason == "length" else "completed"
    return [_message(ids, reply.content or "", status)]


def response_body(ids: ResponseIds, reply: Reply | None) -> dict[str, Any]:
    """A ``response`` object: in progress (no reply yet, no output), or the reply's, ``incomplete``
    when the answer was cut at its cap."""
    cut = reply is not None and reply.finish_reason == "length"
    status = "in_progress" if reply is None else "incomplete" if cut else "completed"
    return {
        "id": ids.id,
        "object": "response",
        "created_at": ids.created_at,
        "status": status,
        "completed_at": None if reply is None or cut else int(time.time()),
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "model": ids.model,
        "output": [] if reply is None else _output(reply, ids),
        "reasoning": {"effort": None, "summary": None},
        "usage": None if reply is None else _usage(reply.usage),
        "user": None,
        **ids.echo,
        "metadata": ids.echo.get("metadata") or {},
    }


def deleted_body(response_id: str) -> dict[str, Any]:
    """What ``DELETE /v1/responses/{id}`` answers."""
    return {"id": response_id, "object": "response", "deleted": True}


def event_bytes(event: Mapping[str, Any]) -> bytes:
    """One event on the wire, named by its type as OpenAI names its events."""
    return f"event: {event['type']}\n".encode() + server_sent_event(dict(event))


class ResponseEvents:
    """The stream's events of one response, numbered from 0 as they are written; the pieces
    gathered into the :class:`Reply` the closing event carries, the same object a whole reply gets.

    A decision of several calls comes as each call's head, then its arguments, under its index:
    each call is one output item, added, its arguments written and done, and the item done before
    the next call's is added."""

    def __init__(self, ids: ResponseIds) -> None:
        self.ids = ids
        self.sequence = 0
        self.text: list[str] = []
        self.calls: list[ToolCall] = []
        """The calls so far, in the order of their output items; the last one still open."""
        self.finish: Piece | None = None
        self.reply: Reply | None = None
        self.body: dict[str, Any] | None = None
        """The response object the closing event carries, once it is written."""

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def opening(self) -> list[dict[str, Any]]:
        """``response.created`` and ``response.in_progress``."""
        body = response_body(self.ids, None)
        return [
            self._event("response.created", response=body),
            self._event("response.in_progress", response=body),
        ]

    def of(self, piece: Piece) -> list[dict[str, Any]]:
        """The events ``piece`` makes."""
        if piece.text is not None:
            events = []
            if piece.first:
                item = _message(self.ids, "", "in_progress") | {"content": []}
                events.append(self._event("response.output_item.added", output_index=0, item=item))
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
            item = _call(self.ids, piece.head, index, "in_progress")
            return [*events, self._event("response.output_item.added", output_index=index, item=item)]
        if piece.arguments is not None and self.calls:
            index = len(self.calls) - 1
            last = self.calls[index]
            self.calls[index] = dataclasses.replace(last, arguments=last.arguments + piece.arguments)
            return [
                self._event(
                    "response.function_call_arguments.delta",
                    output_index=index,
                    item_id=self.ids.call_item_id(index),
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
            )
            return self._closing(self.reply)
        return []

    def _part(self) -> dict[str, Any]:
        return {"item_id": f"msg_{self.ids.item}", "output_index": 0, "content_index": 0}

    def _call_done(self) -> list[dict[str, Any]]:
        """The last call's ``function_call_arguments.done`` and ``output_item.done``."""
        index = len(self.calls) - 1
        call = self.calls[index]
        item = _call(self.ids, call, index, "completed")
        return [
            self._event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=call.name,
                arguments=call.arguments,
            ),
            self._event("response.output_item.done", output_index=index, item=item),
        ]

    def _closing(self, reply: Reply) -> list[dict[str, Any]]:
        body = self.body = response_body(self.ids, reply)
        if reply.calls:
            events = self._call_done()
        else:
            item = body["output"][0]
            text = item["content"][0]["text"]
            events = [
                self._event("response.output_text.done", **self._part(), text=text, logprobs=[]),
                self._event("response.content_part.done", **self._part(), part=_text_part(text)),
                self._event("response.output_item.done", output_index=0, item=item),
            ]
        kind = "response.incomplete" if body["status"] == "incomplete" else "response.completed"
        events.append(self._event(kind, response=body))
        return events

    def error(self, reply: ErrorReply) -> dict[str, Any]:
        """The ``error`` event a failure after the status went out ends the stream with."""
        error = reply.body["error"]
        return self._event("error", code=error["code"], message=error["message"], param=error["param"])
