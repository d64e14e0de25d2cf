"""What the server answers, in OpenAI's shapes: a completion, a stream's chunks, an error."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from typing import Any, Literal

from .._backends import Usage
from .request import ToolCall

__all__ = [
    "FinishReason",
    "Piece",
    "Reply",
    "ReplyIds",
    "chunk_body",
    "completion_body",
    "error_body",
    "server_sent_event",
    "usage_body",
]

FinishReason = Literal["stop", "length", "tool_calls"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Reply:
    """A whole reply: text, or one tool call, why it ended, and the tokens it took."""

    content: str | None
    call: ToolCall | None
    """The one tool call the reply makes: its id in the conversation, the tool, the arguments' JSON text."""
    finish_reason: FinishReason
    usage: Usage


@dataclasses.dataclass(frozen=True, kw_only=True)
class Piece:
    """One chunk of a streamed reply: a ``delta``, the finish reason on the last, or the usage alone."""

    delta: dict[str, Any] | None = None
    finish_reason: FinishReason | None = None
    usage: Usage | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReplyIds:
    """What every chunk of one reply repeats: its id, when it was made, the model named."""

    id: str
    created: int
    model: str

    @classmethod
    def new(cls, model: str) -> ReplyIds:
        """Fresh ids for one reply, made now."""
        return cls(id=f"chatcmpl-{uuid.uuid4().hex}", created=int(time.time()), model=model)


def usage_body(usage: Usage) -> dict[str, int]:
    """OpenAI's usage object: the decision's tokens and the answer's, together."""
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def _message(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
    if reply.call is not None:
        message["tool_calls"] = [
            {
                "id": reply.call.id,
                "type": "function",
                "function": {"name": reply.call.name, "arguments": reply.call.arguments},
            }
        ]
    return message


def completion_body(reply: Reply, ids: ReplyIds) -> dict[str, Any]:
    """A ``chat.completion`` object with one choice."""
    return {
        "id": ids.id,
        "object": "chat.completion",
        "created": ids.created,
        "model": ids.model,
        "choices": [
            {"index": 0, "message": _message(reply), "logprobs": None, "finish_reason": reply.finish_reason}
        ],
        "usage": usage_body(reply.usage),
    }


def chunk_body(piece: Piece, ids: ReplyIds) -> dict[str, Any]:
    """A ``chat.completion.chunk`` object: one choice with a delta, or (the usage chunk) none."""
    body: dict[str, Any] = {
        "id": ids.id,
        "object": "chat.completion.chunk",
        "created": ids.created,
        "model": ids.model,
    }
    if piece.usage is not None:
        body["choices"] = []
        body["usage"] = usage_body(piece.usage)
    else:
        body["choices"] = [
            {"index": 0, "delta": piece.delta or {}, "logprobs": None, "finish_reason": piece.finish_reason}
        ]
    return body


def error_body(message: str, type: str, param: str | None, code: str | None) -> dict[str, Any]:
    """OpenAI's error object."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def server_sent_event(data: dict[str, Any] | str) -> bytes:
    """One ``data:`` event; JSON is written on one line, so it is one event whatever it holds."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"data: {text}\n\n".encode()
