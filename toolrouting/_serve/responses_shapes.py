"""What the Responses front answers, in OpenAI's Responses shapes: the response object, its output
item (a ``message`` with one ``output_text`` part, or a ``function_call``), the stream's events
with their ``sequence_number``, a deleted response and an error event. Every body of that API is
written here and nowhere else; the error object itself is the one ``errors`` writes."""

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
    """The output item's id without its prefix: ``msg_`` for a message, ``fc_`` for a call."""
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


def _call(ids: ResponseIds, call: ToolCall, status: str) -> dict[str, Any]:
    return {
        "id": f"fc_{ids.item}",
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "status": status,
    }


def _output(reply: Reply, ids: ResponseIds) -> list[dict[str, Any]]:
    """The reply's output items: its calls (one today), or its answer as one message."""
    calls = [] if reply.call is None else [reply.call]
    if calls:
        return [_call(ids, call, "completed") for call in calls]
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
    gathered into the :class:`Reply` the closing event carries, the same object a whole reply gets."""

    def __init__(self, ids: ResponseIds) -> None:
        self.ids = ids
        self.sequence = 0
        self.text: list[str] = []
        self.call: ToolCall | None = None
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
        at = {"output_index": 0}
        if piece.text is not None:
            events = []
            if piece.first:
                item = _message(self.ids, "", "in_progress") | {"content": []}
                events.append(self._event("response.output_item.added", **at, item=item))
                events.append(self._event("response.content_part.added", **self._part(), part=_text_part("")))
            if piece.text:
                self.text.append(piece.text)
                events.append(
                    self._event("response.output_text.delta", **self._part(), delta=piece.text, logprobs=[])
                )
            return events
        if piece.head is not None:
            self.call = piece.head
            item = _call(self.ids, piece.head, "in_progress")
            return [self._event("response.output_item.added", **at, item=item)]
        if piece.arguments is not None and self.call is not None:
            self.call = dataclasses.replace(self.call, arguments=self.call.arguments + piece.arguments)
            item_id = f"fc_{self.ids.item}"
            return [
                self._event(
                    "response.function_call_arguments.delta", **at, item_id=item_id, delta=piece.arguments
                )
            ]
        if piece.finish_reason is not None:
            self.finish = piece
            return []
        if piece.usage is not None and self.finish is not None and self.finish.finish_reason is not None:
            content = None if self.call is not None else "".join(self.text)
            self.reply = Reply(
                content=content, call=self.call, finish_reason=self.finish.finish_reason, usage=piece.usage
            )
            return self._closing(self.reply)
        return []

    def _part(self) -> dict[str, Any]:
        return {"item_id": f"msg_{self.ids.item}", "output_index": 0, "content_index": 0}

    def _closing(self, reply: Reply) -> list[dict[str, Any]]:
        body = self.body = response_body(self.ids, reply)
        item = body["output"][0]
        if reply.call is not None:
            done = self._event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=0,
                name=reply.call.name,
                arguments=reply.call.arguments,
            )
            events = [done]
        else:
            text = item["content"][0]["text"]
            events = [
                self._event("response.output_text.done", **self._part(), text=text, logprobs=[]),
                self._event("response.content_part.done", **self._part(), part=_text_part(text)),
            ]
        events.append(self._event("response.output_item.done", output_index=0, item=item))
        kind = "response.incomplete" if body["status"] == "incomplete" else "response.completed"
        events.append(self._event(kind, response=body))
        return events

    def error(self, reply: ErrorReply) -> dict[str, Any]:
        """The ``error`` event a failure after the status went out ends the stream with."""
        error = reply.body["error"]
        return self._event("error", code=error["code"], message=error["message"], param=error["param"])
