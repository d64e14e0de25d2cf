"""What the chat completions front answers, in OpenAI's shapes: a completion, a stream's chunks
and their deltas, ``[DONE]`` after the last, and an error event for a failure that cuts the
stream (the error object itself is the one ``error_replies`` writes). Every body of that API is written
here and nowhere else, in the shapes ``shapes`` types.

The decision's thought, when the request asked for reasoning, is the message's
``reasoning_content`` (``delta.reasoning_content`` when streamed, before anything else), as
llama.cpp's and vLLM's servers write a model's reasoning.

A request that declared its tools as the legacy ``functions`` (``legacy=True``) has its call
written in the shape that went with them: ``message.function_call`` (``delta.function_call``
when streamed) with its name and arguments, no id, and ``finish_reason: "function_call"``.
"""

from __future__ import annotations

from typing import Literal

from ..._backends import Usage
from ..core import FinishReason, Piece, Reply, ReplyIds, ToolCall, server_sent_event
from ..error_replies import ErrorReply
from .shapes import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    ChatFinishReason,
    ChatToolCall,
    ChatUsage,
    ChunkChoice,
    Delta,
    FunctionCallDelta,
    ToolCallDelta,
)

__all__ = ["ChatWriter", "chunk_body", "completion_body", "delta_body", "usage_body"]


def usage_body(usage: Usage) -> ChatUsage:
    """OpenAI's usage object: the decision's tokens and the answer's, together, with the prompt's
    tokens the backend's prompt cache held (``prompt_tokens_details.cached_tokens``)."""
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
    }


def _tool_call(call: ToolCall) -> ChatToolCall:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


def _message(reply: Reply, legacy: bool) -> AssistantMessage:
    message: AssistantMessage = {"role": "assistant", "content": reply.content, "refusal": None}
    if reply.thought is not None:
        message["reasoning_content"] = reply.thought
    if reply.call is not None and legacy:
        message["function_call"] = {"name": reply.call.name, "arguments": reply.call.arguments}
    elif reply.call is not None:
        message["tool_calls"] = [_tool_call(call) for call in reply.calls]
    return message


def _finish(reason: FinishReason | None, legacy: bool) -> ChatFinishReason | None:
    return "function_call" if legacy and reason == "tool_calls" else reason


def completion_body(reply: Reply, ids: ReplyIds, *, legacy: bool = False) -> ChatCompletion:
    """A ``chat.completion`` object with one choice; ``legacy``: a call as ``function_call``."""
    return {
        "id": f"chatcmpl-{ids.key}",
        "object": "chat.completion",
        "created": ids.created,
        "model": ids.model,
        "choices": [
            {
                "index": 0,
                "message": _message(reply, legacy),
                "logprobs": None,
                "finish_reason": _finish(reply.finish_reason, legacy),
            }
        ],
        "usage": usage_body(reply.usage),
    }


def delta_body(piece: Piece, *, legacy: bool = False) -> Delta:
    """The ``delta`` of the chunk that carries ``piece``: the role rides on the first piece of an
    answer and on a call's head (and on a thought's parts); the finish reason's chunk has an
    empty one."""
    if piece.thought is not None:
        return {"role": "assistant", "reasoning_content": piece.thought}
    if piece.text is not None:
        return {"role": "assistant", "content": piece.text} if piece.first else {"content": piece.text}
    if piece.head is not None and legacy:
        return {
            "role": "assistant",
            "content": None,
            "function_call": {"name": piece.head.name, "arguments": ""},
        }
    if piece.head is not None:
        head = piece.head
        function: FunctionCallDelta = {"name": head.name, "arguments": head.arguments}
        call: ToolCallDelta = {"index": piece.index, "id": head.id, "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if piece.arguments is not None and legacy:
        return {"function_call": {"arguments": piece.arguments}}
    if piece.arguments is not None:
        return {"tool_calls": [{"index": piece.index, "function": {"arguments": piece.arguments}}]}
    return {}


def chunk_body(piece: Piece, ids: ReplyIds, *, legacy: bool = False) -> ChatCompletionChunk:
    """A ``chat.completion.chunk`` object: one choice with a delta, or (the usage chunk) none."""
    key, created, model = f"chatcmpl-{ids.key}", ids.created, ids.model
    kind: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    if piece.usage is not None:
        usage = usage_body(piece.usage)
        return {"id": key, "object": kind, "created": created, "model": model, "choices": [], "usage": usage}
    choice: ChunkChoice = {
        "index": 0,
        "delta": delta_body(piece, legacy=legacy),
        "logprobs": None,
        "finish_reason": _finish(piece.finish_reason, legacy),
    }
    return {"id": key, "object": kind, "created": created, "model": model, "choices": [choice]}


class ChatWriter:
    """One reply in OpenAI's chat completions shapes, whole or as a stream's chunks: the
    ``ReplyWriter`` of this front. ``legacy`` writes a call as ``function_call``;
    ``include_usage`` adds the usage chunk a stream leaves out by default."""

    def __init__(self, ids: ReplyIds, *, legacy: bool = False, include_usage: bool = False) -> None:
        self.ids = ids
        self.legacy = legacy
        self.include_usage = include_usage

    def whole(self, reply: Reply) -> ChatCompletion:
        """The ``chat.completion`` object."""
        return completion_body(reply, self.ids, legacy=self.legacy)

    def opening(self) -> list[bytes]:
        """Nothing: the first chunk is the first piece's."""
        return []

    def of(self, piece: Piece) -> list[bytes]:
        """The chunk that carries ``piece``; the usage only when the request asked for it."""
        if piece.usage is not None and not self.include_usage:
            return []
        return [server_sent_event(chunk_body(piece, self.ids, legacy=self.legacy))]

    def closing(self) -> list[bytes]:
        """``[DONE]``."""
        return [server_sent_event("[DONE]")]

    def failed(self, error: ErrorReply) -> list[bytes]:
        """The error object, as one event."""
        return [server_sent_event(error.body)]
